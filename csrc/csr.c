// csrc/csr.c: CSR as a storage format (its state check, conversion, CPU kernels) and HYB's width rule
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
    int64_t *hist = (int64_t *)spmv_calloc((int64_t)maxlen + 1, sizeof(int64_t), err);
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
    .check = csr_check_fmt,
    .size_summary = csr_size_summary,
};
