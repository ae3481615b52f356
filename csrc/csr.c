// csrc/csr.c: CSR — the pattern check at the door, CSR as a storage format, its CPU kernels
// SPDX-License-Identifier: BSD-3-Clause
//
// Layout (spmv_fmt with format SPMV_FMT_CSR): idx[0] = indptr[nrows+1], idx[1] = indices[nnz],
// val[0] = values[nnz]; no parameters, no scalars.  Kernel variants: 0 = row-parallel (rows split
// evenly across threads), 1 = nnz-balanced (each thread gets a contiguous run of rows holding about
// nnz/threads entries, so a few long rows do not leave the other threads idle).
#include "spmv_internal.h"

#include <math.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

int spmv_csr_check(const spmv_csr *A, int64_t indptr_len, int64_t indices_len, spmv_err *err) {
    if (A == NULL || A->indptr == NULL || (A->indices == NULL && indices_len > 0))
        return spmv_fail(err, SPMV_EINVAL, -1, -1, -1, "CSR arrays must not be NULL");
    if (A->nrows < 1)
        return spmv_fail(err, SPMV_EINVAL, -1, A->nrows, 1,
                         "nrows is %d; an empty matrix (no rows) cannot be multiplied", A->nrows);
    if (A->ncols < 1)
        return spmv_fail(err, SPMV_EINVAL, -1, A->ncols, 1,
                         "ncols is %d; an empty matrix (no columns) cannot be multiplied",
                         A->ncols);
    if (indptr_len != (int64_t)A->nrows + 1)
        return spmv_fail(err, SPMV_EINVAL, -1, indptr_len, (int64_t)A->nrows + 1,
                         "indptr has length %lld; it must be nrows+1 = %lld", (long long)indptr_len,
                         (long long)A->nrows + 1);
    /* The whole of indptr first: a row's bounds are read as indices only once every bound is known
     * to lie within [0, indices_len], so a bad indptr can neither make this check read past
     * indices nor print what lies there. */
    if (A->indptr[0] != 0)
        return spmv_fail(err, SPMV_EINDEX, 0, A->indptr[0], 0, "indptr[0] is %d; it must be 0",
                         A->indptr[0]);
    if ((int64_t)A->indptr[A->nrows] != indices_len)
        return spmv_fail(err, SPMV_EINVAL, A->nrows, A->indptr[A->nrows], indices_len,
                         "indptr[nrows] = %d but indices has length %lld", A->indptr[A->nrows],
                         (long long)indices_len);
    for (int32_t i = 0; i < A->nrows; i++)
        if (A->indptr[i + 1] < A->indptr[i])
            return spmv_fail(err, SPMV_EINDEX, (int64_t)i + 1, A->indptr[i + 1], A->indptr[i],
                             "indptr decreases at position %lld: %d after %d", (long long)i + 1,
                             A->indptr[i + 1], A->indptr[i]);
    for (int32_t i = 0; i < A->nrows; i++) {
        int32_t p0 = A->indptr[i], p1 = A->indptr[i + 1];
        for (int32_t p = p0; p < p1; p++) {
            int32_t j = A->indices[p];
            if (j < 0 || j >= A->ncols)
                return spmv_fail(err, SPMV_EINDEX, i, j, A->ncols,
                                 "column index %d in row %d is outside [0, ncols = %d)", j, i,
                                 A->ncols);
            if (p > p0 && j <= A->indices[p - 1])
                return spmv_fail(err, SPMV_EUNSORTED, i, j, A->indices[p - 1],
                                 "row %d has column %d after column %d: indices must be sorted "
                                 "and free of duplicates (canonicalise with sum_duplicates())",
                                 i, j, A->indices[p - 1]);
        }
    }
    return SPMV_OK;
}

int32_t spmv_hyb_width_hist(const int64_t *hist, int32_t maxlen, int32_t nrows) {
    int64_t third = ((int64_t)nrows + 2) / 3, target = third > 4096 ? third : 4096, atleast = 0;
    if (target > nrows) target = nrows;
    int32_t k = maxlen;
    for (; k > 0; k--) { /* atleast = rows with length >= k */
        atleast += hist[k];
        if (atleast >= target) break;
    }
    return k;
}

int spmv_hyb_width(const spmv_csr *A, int32_t *width, spmv_err *err) {
    int32_t maxlen = 0, n = A->nrows;
    for (int32_t i = 0; i < n; i++)
        if (A->indptr[i + 1] - A->indptr[i] > maxlen) maxlen = A->indptr[i + 1] - A->indptr[i];
    int64_t *hist = spmv_calloc((int64_t)maxlen + 1, sizeof(int64_t), err);
    if (hist == NULL) return SPMV_ENOMEM;
    for (int32_t i = 0; i < n; i++) hist[A->indptr[i + 1] - A->indptr[i]]++;
    *width = spmv_hyb_width_hist(hist, maxlen, n);
    spmv_free(hist);
    return SPMV_OK;
}

static int csr_size(const spmv_csr *A, spmv_fmt *F, spmv_err *err) {
    (void)err;
    F->nidx[0] = (int64_t)A->nrows + 1;
    F->nidx[1] = F->nnz;
    F->nval[0] = F->nnz;
    return SPMV_OK;
}

#define SPMV_REAL float
#define SPMV_NAME(x) x##_f32
#include "csr_impl.h"
#define SPMV_REAL double
#define SPMV_NAME(x) x##_f64
#include "csr_impl.h"

static int csr_check_fmt(const spmv_fmt *F, spmv_err *err) {
    static const char *const what[] = {"indptr", "indices", NULL, NULL, "values", NULL};
    int64_t nidx[SPMV_MAXIDX] = {(int64_t)F->nrows + 1, F->nnz}, nval[SPMV_MAXVAL] = {F->nnz};
    int rc = spmv_fmt_lengths(F, nidx, nval, what, err);
    spmv_csr A = {F->nrows, F->ncols, F->idx[0], F->idx[1]};
    return rc ? rc : spmv_csr_check(&A, nidx[0], F->nnz, err);
}

/* Nothing beyond the shape: the size query itself. */
static int csr_size_summary(spmv_summary *S, spmv_fmt *F, spmv_err *err) {
    return csr_size(S->A, F, err);
}

SPMV_API const spmv_format_ops spmv_csr_ops = {
    .size = csr_size,
    .fill_f32 = csr_fill_f32,
    .fill_f64 = csr_fill_f64,
    .to_csr_f32 = csr_to_csr_f32,
    .to_csr_f64 = csr_to_csr_f64,
    .mv_f32 = csr_mv_f32,
    .mv_f64 = csr_mv_f64,
    .nkernels = 2,
    .check = csr_check_fmt,
    .size_summary = csr_size_summary,
};
