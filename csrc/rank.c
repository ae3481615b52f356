// csrc/rank.c: the ranking of one matrix's configurations, spmv_rank() and spmv_rank_features()
// SPDX-License-Identifier: BSD-3-Clause
//
// The same source serves the library and every exported model header (pyspmv.export_c), so that a
// model gives the same numbers in Python, in the core and in a header.
#include "spmv_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- ranking ---- */

typedef struct {
    double ms;
    int32_t i;
} ranked;

/* Stable bottom-up merge sort of a[n] by ms, lowest first, into a or tmp (returned); equal times
 * keep their input (index) order.  NaN are moved to the end first, in index order, so that the
 * merge compares plain doubles: qsort's calls through a comparator, or a comparator that tests
 * for NaN at every step, cost more than the model on a hundred configurations. */
static const ranked *ranked_sort(ranked *a, ranked *tmp, int32_t n) {
    int32_t m = 0, k = 0;
    for (int32_t j = 0; j < n; j++) {
        if (isnan(a[j].ms))
            tmp[k++] = a[j];
        else
            a[m++] = a[j];
    }
    for (int32_t j = 0; j < k; j++) a[m + j] = tmp[j];
    for (int32_t j = m; j < n; j++) tmp[j] = a[j]; /* either buffer may be the result */
    for (int32_t w = 1; w < m; w *= 2) {
        for (int32_t lo = 0; lo < m; lo += 2 * w) {
            int32_t mid = lo + w < m ? lo + w : m, hi = lo + 2 * w < m ? lo + 2 * w : m;
            int32_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi) tmp[o++] = a[j].ms < a[i].ms ? a[j++] : a[i++];
            while (i < mid) tmp[o++] = a[i++];
            while (j < hi) tmp[o++] = a[j++];
        }
        ranked *t = a;
        a = tmp;
        tmp = t;
    }
    return a;
}

static int rank_check_groups(const spmv_configs *C, const spmv_model *M, int32_t *order, double *ms,
                             spmv_err *err) {
    if (C == NULL || M == NULL || (C->n > 0 && (order == NULL || ms == NULL || C->group == NULL)))
        return spmv_fail(err, SPMV_EINVAL, -1, -1, -1,
                         "rank needs configurations (with groups), a model, order and ms arrays, "
                         "not NULL");
    for (int32_t j = 0; j < C->n; j++)
        if (C->group[j] < -1 || C->group[j] >= M->ngroups)
            return spmv_fail(err, SPMV_EINVAL, j, C->group[j], M->ngroups,
                             "configuration %d has group %d, outside [-1, %d)", (int)j,
                             (int)C->group[j], (int)M->ngroups);
    return SPMV_OK;
}

static int rank_check(const spmv_configs *C, const spmv_model *M, int32_t *order, double *ms,
                      spmv_err *err) {
    int rc = rank_check_groups(C, M, order, ms, err);
    if (rc == 0 && M->ncols != SPMV_NCOLS + C->nextra)
        rc = spmv_fail(err, SPMV_EINVAL, -1, M->ncols, SPMV_NCOLS + C->nextra,
                       "the model reads %d columns, the configurations give %d", (int)M->ncols,
                       (int)(SPMV_NCOLS + C->nextra));
    return rc;
}

/* order[n] from the keys r[0..n).ms (r[2n] workspace) */
static void rank_sorted(ranked *r, int32_t n, int32_t *order) {
    for (int32_t j = 0; j < n; j++) r[j].i = j;
    const ranked *s = ranked_sort(r, r + n, n);
    for (int32_t j = 0; j < n; j++) order[j] = s[j].i;
}

/* order[n] from ms[n] (r[2n] workspace) */
static void rank_order(const double *ms, int32_t n, ranked *r, int32_t *order) {
    for (int32_t j = 0; j < n; j++) r[j].ms = ms[j];
    rank_sorted(r, n, order);
}

/* The bytes design row `row`'s configuration moves per byte of the matrix's values: a ranking
 * with rank_bytes_pow = p orders by predicted ms * q^p (q not finite and > 0, as with no entries:
 * by ms alone).  A model's near-ties are within its own error, and a large matrix's product is
 * bound by the bytes it moves (studies/2026-11-24-pick-rules/pick_rules_h100.md). */
static double rank_bytes_per_value(const double *row) {
    return row[SPMV_COL_BYTES_MOVED] / (row[SPMV_FEATURE_NNZ] * row[SPMV_COL_VALUE_BYTES]);
}

int spmv_rank_rows(const spmv_configs *C, const spmv_model *M, const double *rows,
                   const double *add_ms, int32_t *order, double *ms, const spmv_interrupt *intr,
                   spmv_err *err) {
    int rc = rank_check(C, M, order, ms, err);
    if (rc) return rc;
    int32_t n = C->n;
    /* neighbouring configurations (one format's kernels and block sizes) move the same bytes: one
     * pow() for each run of them, not one per configuration */
    double q_last = NAN, f_last = 1;
    ranked *r = (ranked *)spmv_malloc(2 * (int64_t)n, sizeof(ranked), err);
    if (r == NULL) return SPMV_ENOMEM;
    rc = spmv_model_predict_rows(M, rows, n, M->ncols, C->group, 1, ms, NULL, intr,
                                 err); /* shared */
    if (rc) goto done;
    for (int32_t j = 0; j < n; j++) {
        const double *row = rows + (int64_t)j * M->ncols;
        if (isnan(row[SPMV_COL_BYTES_MOVED])) {
            ms[j] = r[j].ms = HUGE_VAL;
            continue;
        }
        double add = add_ms != NULL ? add_ms[j] : 0, f = 1;
        if (M->rank_bytes_pow != 0) {
            double q = rank_bytes_per_value(row);
            if (q != q_last) f_last = q > 0 && isfinite(q) ? pow(q, M->rank_bytes_pow) : 1;
            q_last = q;
            f = f_last;
        }
        r[j].ms = ms[j] * f + add;
        ms[j] += add;
    }
    rank_sorted(r, n, order);
done:
    spmv_free(r);
    return rc;
}

int spmv_rank(const spmv_csr *A, const spmv_gpu_props *dev, const spmv_configs *C,
              const spmv_model *M, int value_bytes, const double *add_ms, int32_t *order,
              double *ms, const spmv_interrupt *intr, spmv_err *err) {
    int rc = rank_check(C, M, order, ms, err);
    if (rc) return rc;
    double *rows = (double *)spmv_malloc((int64_t)C->n * M->ncols, sizeof(double), err);
    if (rows == NULL) return SPMV_ENOMEM;
    rc = spmv_design_rows(A, dev, C, value_bytes, 0, rows, err);
    if (rc == 0) rc = spmv_rank_rows(C, M, rows, add_ms, order, ms, intr, err);
    spmv_free(rows);
    return rc;
}

int spmv_rank_features(const spmv_configs *C, const spmv_model *M, const double *features,
                       int32_t nfeatures, const double *add_ms, int32_t *order, double *ms,
                       const spmv_interrupt *intr, spmv_err *err) {
    if (C == NULL || M == NULL || nfeatures < 0 || (nfeatures > 0 && features == NULL) ||
        (C->nextra > 0 && C->n > 0 && C->extra == NULL))
        return spmv_fail(err, SPMV_EINVAL, -1, nfeatures, -1,
                         "rank_features needs configurations, a model and the feature vector");
    if (M->ncols != (int64_t)nfeatures + C->nextra)
        return spmv_fail(err, SPMV_EINVAL, -1, M->ncols, (int64_t)nfeatures + C->nextra,
                         "the model reads %d columns, %d features and %d configuration columns "
                         "give %d",
                         (int)M->ncols, (int)nfeatures, (int)C->nextra,
                         (int)(nfeatures + C->nextra));
    int rc = rank_check_groups(C, M, order, ms, err);
    if (rc) return rc;
    if (M->rank_bytes_pow != 0)
        return spmv_fail(err, SPMV_EINVAL, -1, -1, -1,
                         "the model ranks by bytes moved (rank_bytes_pow = %g), which a feature "
                         "vector does not give: rank design rows (spmv_rank)",
                         M->rank_bytes_pow);
    int32_t n = C->n, nc = M->ncols;
    double *rows = (double *)spmv_malloc((int64_t)n * nc, sizeof(double), err);
    ranked *r = rows == NULL ? NULL : (ranked *)spmv_malloc(2 * (int64_t)n, sizeof(ranked), err);
    if (r == NULL) {
        spmv_free(rows);
        return SPMV_ENOMEM;
    }
    for (int32_t j = 0; j < n; j++) {
        double *row = rows + (int64_t)j * nc;
        for (int32_t k = 0; k < nfeatures; k++) row[k] = features[k];
        for (int32_t e = 0; e < C->nextra; e++)
            row[nfeatures + e] = C->extra[(int64_t)j * C->nextra + e];
    }
    /* not shared: the model's matrix inputs are not at the design row's places */
    rc = spmv_model_predict_rows(M, rows, n, nc, C->group, 0, ms, NULL, intr, err);
    if (rc == 0) {
        if (add_ms != NULL)
            for (int32_t j = 0; j < n; j++) ms[j] += add_ms[j];
        rank_order(ms, n, r, order);
    }
    spmv_free(r);
    spmv_free(rows);
    return rc;
}
