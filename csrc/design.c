// csrc/design.c: design rows -- features and every configuration's bytes moved from one pass
// SPDX-License-Identifier: BSD-3-Clause
//
// One pass over the entries (csrc/pass.c, through spmv_features_summary) gives the features and a
// summary of A; each distinct (format, parameters) then takes its size from that summary through
// its format's size_summary op, in O(nrows) or less, with the same result and the same refusals as
// its size query.  The same source serves the library and every exported model header.
#include "spmv_internal.h"

#include <math.h>
#include <string.h>

int spmv_check_range(const int32_t *a, int64_t n, int64_t lo, int64_t hi, const char *what,
                     spmv_err *err) {
    if (n > 0 && a == NULL)
        return spmv_fail(err, SPMV_ESCHEMA, -1, -1, -1, "%s is NULL but should hold %lld entries",
                         what, (long long)n);
    for (int64_t i = 0; i < n; i++)
        if (a[i] < lo || a[i] >= hi)
            return spmv_fail(err, SPMV_ESCHEMA, i, a[i], hi,
                             "%s[%lld] = %d is outside [%lld, %lld)", what, (long long)i, (int)a[i],
                             (long long)lo, (long long)hi);
    return SPMV_OK;
}

static int same_size(const spmv_configs *C, int32_t a, int32_t b) {
    return C->format[a] == C->format[b] && C->param[2 * a] == C->param[2 * b] &&
           C->param[2 * a + 1] == C->param[2 * b + 1] && C->unread[a] == C->unread[b];
}

static void fmt_of(const spmv_configs *C, int32_t j, double max_fill, spmv_fmt *F) {
    memset(F, 0, sizeof *F);
    F->format = C->format[j];
    F->param[0] = C->param[2 * j];
    F->param[1] = C->param[2 * j + 1];
    F->max_fill = max_fill;
}

/* Whether configuration a sorts before b: by format, then parameters from the last, so that the
 * formats' scratch (SELL's sorted windows) serves runs of configurations. */
static int before(const spmv_configs *C, int32_t a, int32_t b) {
    if (C->format[a] != C->format[b]) return C->format[a] < C->format[b];
    if (C->param[2 * a + 1] != C->param[2 * b + 1])
        return C->param[2 * a + 1] < C->param[2 * b + 1];
    return C->param[2 * a] < C->param[2 * b];
}

int spmv_design_rows(const spmv_csr *A, const spmv_gpu_props *dev, const spmv_configs *C,
                     int value_bytes, double max_fill, double *rows, spmv_err *err) {
    if (A == NULL || dev == NULL || C == NULL || (C->n > 0 && rows == NULL))
        return spmv_fail(err, SPMV_EINVAL, -1, -1, -1,
                         "design rows need a matrix, GPU properties, "
                         "configurations and an output array, not NULL");
    if (value_bytes != 4 && value_bytes != 8)
        return spmv_fail(err, SPMV_EINVAL, -1, value_bytes, 8,
                         "value_bytes must be 4 or 8. Got %d instead.", value_bytes);
    if (C->n < 0 || C->nextra < 0 ||
        (C->n > 0 && (C->format == NULL || C->param == NULL || C->unread == NULL || C->p == NULL ||
                      C->launches == NULL || (C->nextra > 0 && C->extra == NULL))))
        return spmv_fail(err, SPMV_EINVAL, -1, C->n, -1,
                         "configurations: n = %d, nextra = %d, "
                         "and every array of n entries must be given",
                         (int)C->n, (int)C->nextra);
    for (int32_t j = 0; j < C->n; j++)
        if (C->format[j] < 0 || C->format[j] >= SPMV_NFORMATS)
            return spmv_fail(err, SPMV_EINVAL, j, C->format[j], SPMV_NFORMATS,
                             "configuration %d has format code %d, not in [0, %d)", (int)j,
                             (int)C->format[j], SPMV_NFORMATS);
    int rc = SPMV_OK;
    int64_t stride = SPMV_NCOLS + C->nextra, nnz = 0;
    double feat[SPMV_NFEATURES];
    spmv_summary S;
    spmv_fmt F;
    memset(&S, 0, sizeof S);
    /* rep[j]: the first configuration of j's size; uniq[0..nu): the distinct ones, sorted; size
     * results per distinct one: its code, bytes moved and padding ratio. */
    int32_t *rep = spmv_malloc(C->n > 0 ? C->n : 1, sizeof(int32_t), err), nu = 0;
    int32_t *uniq = rep ? spmv_malloc(C->n > 0 ? C->n : 1, sizeof(int32_t), err) : NULL;
    int *code = uniq ? spmv_malloc(C->n > 0 ? C->n : 1, sizeof(int), err) : NULL;
    double *bytes =
        code ? spmv_malloc(2 * (int64_t)(C->n > 0 ? C->n : 1), sizeof(double), err) : NULL;
    if (bytes == NULL) {
        rc = SPMV_ENOMEM;
        goto done;
    }
    for (int32_t j = 0; j < C->n; j++) {
        int32_t r = 0;
        while (r < nu && !same_size(C, uniq[r], j)) r++;
        if (r < nu) {
            rep[j] = uniq[r];
            continue;
        }
        rep[j] = j;
        int32_t at = nu++; /* insertion sort: a few dozen distinct sizes */
        for (; at > 0 && before(C, j, uniq[at - 1]); at--) uniq[at] = uniq[at - 1];
        uniq[at] = j;
        fmt_of(C, j, max_fill, &F);
        rc = spmv_fmt_need(&S, &F, err);
        if (rc) goto done;
    }
    rc = spmv_features_summary(A, dev, feat, &S, err);
    if (rc) goto done;
    nnz = A->indptr[A->nrows];
    for (int32_t u = 0; u < nu; u++) {
        int32_t j = uniq[u];
        fmt_of(C, j, max_fill, &F);
        code[j] = spmv_fmt_size_summary(&S, &F, NULL);
        if (code[j] != SPMV_OK) continue;
        int64_t idx = 0, slots = 0;
        for (int k = 0; k < SPMV_MAXIDX; k++)
            if (!((C->unread[j] >> k) & 1)) idx += 4 * F.nidx[k];
        for (int k = 0; k < SPMV_MAXVAL; k++) slots += F.nval[k];
        /* as the format's size query and pyspmv.config_features: integers first, one conversion
         * to double */
        bytes[2 * j] = (double)(idx + value_bytes * (slots + A->nrows + A->ncols));
        bytes[2 * j + 1] = nnz ? (double)slots / (double)nnz : 1.0;
    }
    for (int32_t j = 0; j < C->n; j++) {
        int32_t s = rep[j];
        if (code[s] != SPMV_OK && code[s] != SPMV_ENOTAPPLICABLE) {
            /* the first failing configuration in C's order names its error, as one size query
             * after another would */
            fmt_of(C, s, max_fill, &F);
            rc = spmv_fmt_size_summary(&S, &F, err);
            goto done;
        }
        double *r = rows + j * stride;
        memcpy(r, feat, sizeof feat);
        for (int k = 0; k < SPMV_NPCOLS; k++)
            r[SPMV_COL_P_TPV + k] = C->p[(int64_t)j * SPMV_NPCOLS + k];
        r[SPMV_COL_VALUE_BYTES] = value_bytes;
        r[SPMV_COL_LAUNCHES] = C->launches[j];
        for (int32_t k = 0; k < C->nextra; k++)
            r[SPMV_NCOLS + k] = C->extra[(int64_t)j * C->nextra + k];
        r[SPMV_COL_BYTES_MOVED] = code[s] ? NAN : bytes[2 * s];
        r[SPMV_COL_PADDING_RATIO] = code[s] ? NAN : bytes[2 * s + 1];
    }
done:
    spmv_summary_free(&S);
    spmv_free(bytes);
    spmv_free(code);
    spmv_free(uniq);
    spmv_free(rep);
    return rc;
}
