// csrc/rank.c: design rows, the ranking of one matrix's configurations, spmv_rank()
// SPDX-License-Identifier: BSD-3-Clause
//
// The same source serves the library and every exported model header (pyspmv.export_c), so that a
// model gives the same numbers in Python, in the core and in a header.
#include "spmv_internal.h"

#include <math.h>
#include <stdlib.h>
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

/* ---- design rows ---- */

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
    double feat[SPMV_NFEATURES];
    int rc = spmv_features_compute(A, dev, feat, err);
    if (rc) return rc;
    int64_t stride = SPMV_NCOLS + C->nextra, nnz = A->indptr[A->nrows];
    for (int32_t j = 0; j < C->n; j++) {
        double *r = rows + j * stride;
        memcpy(r, feat, sizeof feat);
        for (int k = 0; k < SPMV_NPCOLS; k++)
            r[SPMV_COL_P_TPV + k] = C->p[(int64_t)j * SPMV_NPCOLS + k];
        r[SPMV_COL_VALUE_BYTES] = value_bytes;
        r[SPMV_COL_LAUNCHES] = C->launches[j];
        for (int32_t k = 0; k < C->nextra; k++)
            r[SPMV_NCOLS + k] = C->extra[(int64_t)j * C->nextra + k];
        int32_t same = 0; /* an earlier configuration with the same format: reuse */
        while (same < j &&
               !(C->format[same] == C->format[j] && C->param[2 * same] == C->param[2 * j] &&
                 C->param[2 * same + 1] == C->param[2 * j + 1] && C->unread[same] == C->unread[j]))
            same++;
        if (same < j) {
            r[SPMV_COL_BYTES_MOVED] = rows[same * stride + SPMV_COL_BYTES_MOVED];
            r[SPMV_COL_PADDING_RATIO] = rows[same * stride + SPMV_COL_PADDING_RATIO];
            continue;
        }
        spmv_fmt F;
        memset(&F, 0, sizeof F);
        F.format = C->format[j];
        F.param[0] = C->param[2 * j];
        F.param[1] = C->param[2 * j + 1];
        F.max_fill = max_fill;
        rc = spmv_fmt_size_checked(A, &F, err); /* A: validated by the features */
        if (rc == SPMV_ENOTAPPLICABLE) {
            r[SPMV_COL_BYTES_MOVED] = r[SPMV_COL_PADDING_RATIO] = NAN;
            continue;
        }
        if (rc) return rc;
        int64_t idx = 0, slots = 0;
        for (int k = 0; k < SPMV_MAXIDX; k++)
            if (!((C->unread[j] >> k) & 1)) idx += 4 * F.nidx[k];
        for (int k = 0; k < SPMV_MAXVAL; k++) slots += F.nval[k];
        /* as pyspmv.config_features: integers first, one conversion to double */
        r[SPMV_COL_BYTES_MOVED] = (double)(idx + value_bytes * (slots + A->nrows + A->ncols));
        r[SPMV_COL_PADDING_RATIO] = nnz ? (double)slots / (double)nnz : 1.0;
    }
    return SPMV_OK;
}

/* ---- ranking ---- */

typedef struct {
    double ms;
    int32_t i;
} ranked;

static inline int ranked_cmp(const ranked *x, const ranked *y) {
    int xn = isnan(x->ms), yn = isnan(y->ms);
    if (xn != yn) return xn - yn; /* NaN last */
    if (!xn && x->ms != y->ms) return x->ms < y->ms ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* Bottom-up merge sort of a[n] by ranked_cmp's order (tmp[n] workspace); returns the sorted copy.
 * qsort's calls through a comparator cost more than the model on a hundred configurations. */
static const ranked *ranked_sort(ranked *a, ranked *tmp, int32_t n) {
    for (int32_t w = 1; w < n; w *= 2) {
        for (int32_t lo = 0; lo < n; lo += 2 * w) {
            int32_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int32_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) tmp[k++] = ranked_cmp(&a[j], &a[i]) < 0 ? a[j++] : a[i++];
            while (i < mid) tmp[k++] = a[i++];
            while (j < hi) tmp[k++] = a[j++];
        }
        ranked *t = a;
        a = tmp;
        tmp = t;
    }
    return a;
}

static int rank_check(const spmv_configs *C, const spmv_model *M, int32_t *order, double *ms,
                      spmv_err *err) {
    if (C == NULL || M == NULL || (C->n > 0 && (order == NULL || ms == NULL || C->group == NULL)))
        return spmv_fail(err, SPMV_EINVAL, -1, -1, -1,
                         "rank needs configurations (with groups), a model, order and ms arrays, "
                         "not NULL");
    if (M->ncols != SPMV_NCOLS + C->nextra)
        return spmv_fail(err, SPMV_EINVAL, -1, M->ncols, SPMV_NCOLS + C->nextra,
                         "the model reads %d columns, the configurations give %d", (int)M->ncols,
                         (int)(SPMV_NCOLS + C->nextra));
    for (int32_t j = 0; j < C->n; j++)
        if (C->group[j] < -1 || C->group[j] >= M->ngroups)
            return spmv_fail(err, SPMV_EINVAL, j, C->group[j], M->ngroups,
                             "configuration %d has group %d, outside [-1, %d)", (int)j,
                             (int)C->group[j], (int)M->ngroups);
    return SPMV_OK;
}

int spmv_rank_rows(const spmv_configs *C, const spmv_model *M, const double *rows,
                   const double *add_ms, int32_t *order, double *ms, spmv_err *err) {
    int rc = rank_check(C, M, order, ms, err);
    if (rc) return rc;
    int32_t n = C->n;
    ranked *r = spmv_malloc(2 * (int64_t)n, sizeof(ranked), err);
    if (r == NULL) return SPMV_ENOMEM;
    rc = spmv_model_predict_rows(M, rows, n, M->ncols, C->group, 1, ms, NULL, err); /* shared */
    if (rc) goto done;
    for (int32_t j = 0; j < n; j++) {
        if (isnan(rows[(int64_t)j * M->ncols + SPMV_COL_BYTES_MOVED]))
            ms[j] = HUGE_VAL;
        else if (add_ms != NULL)
            ms[j] += add_ms[j];
        r[j].ms = ms[j];
        r[j].i = j;
    }
    const ranked *s = ranked_sort(r, r + n, n);
    for (int32_t j = 0; j < n; j++) order[j] = s[j].i;
done:
    spmv_free(r);
    return rc;
}

int spmv_rank(const spmv_csr *A, const spmv_gpu_props *dev, const spmv_configs *C,
              const spmv_model *M, int value_bytes, const double *add_ms, int32_t *order,
              double *ms, spmv_err *err) {
    int rc = rank_check(C, M, order, ms, err);
    if (rc) return rc;
    double *rows = spmv_malloc((int64_t)C->n * M->ncols, sizeof(double), err);
    if (rows == NULL) return SPMV_ENOMEM;
    rc = spmv_design_rows(A, dev, C, value_bytes, 0, rows, err);
    if (rc == 0) rc = spmv_rank_rows(C, M, rows, add_ms, order, ms, err);
    spmv_free(rows);
    return rc;
}
