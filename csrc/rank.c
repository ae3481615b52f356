// csrc/rank.c: the ranking of one matrix's configurations, spmv_rank()
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
