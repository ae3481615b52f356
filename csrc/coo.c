// csrc/coo.c: COO — size query, conversion from CSR, back to CSR, CPU kernel
// SPDX-License-Identifier: BSD-3-Clause
//
// Layout (spmv_fmt with format SPMV_FMT_COO): idx[0] = row[nnz], idx[1] = col[nnz],
// val[0] = values[nnz], in CSR's row-major order (rows non-decreasing, columns increasing within a
// row).  No parameters, no scalars, no padding.  Kernel variant 0: y = 0, then each thread takes a
// contiguous run of about nnz/threads entries whose ends are moved to row boundaries, so every row
// is summed by one thread in one order: no atomics, and the same bits for any thread count.
#include "spmv_internal.h"

#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static int coo_size(const spmv_csr *A, spmv_fmt *F, spmv_err *err) {
    (void)A;
    (void)err;
    F->nidx[0] = F->nnz;
    F->nidx[1] = F->nnz;
    F->nval[0] = F->nnz;
    return SPMV_OK;
}

/* Start of thread t's run of entries: the nominal split nnz*t/nt pushed forward past the rest of
 * the row it falls in.  row[] is non-decreasing, so a binary search finds the next row's start. */
int64_t spmv_coo_chunk(const int32_t *row, int64_t nnz, int t, int nt) {
    int64_t b = nnz * t / nt;
    if (b <= 0 || b >= nnz) return b <= 0 ? 0 : nnz;
    return spmv_lower_bound(row, b, nnz, (int64_t)row[b - 1] + 1);
}

#define SPMV_REAL float
#define SPMV_NAME(x) x##_f32
#include "coo_impl.h"
#define SPMV_REAL double
#define SPMV_NAME(x) x##_f64
#include "coo_impl.h"

static int coo_check(const spmv_fmt *F, spmv_err *err) {
    static const char *const what[] = {"row", "col", NULL, NULL, "values", NULL};
    int64_t nidx[SPMV_MAXIDX] = {F->nnz, F->nnz}, nval[SPMV_MAXVAL] = {F->nnz}, prev = -1;
    int rc = spmv_fmt_lengths(F, nidx, nval, what, err);
    const int32_t *row = F->idx[0], *col = F->idx[1];
    for (int64_t p = 0; rc == SPMV_OK && p < F->nnz; p++) {
        if (row[p] < 0 || row[p] >= F->nrows || (p > 0 && row[p] < row[p - 1]))
            return spmv_fail(err, SPMV_EINDEX, p, row[p], F->nrows,
                             "coo: row[%lld] = %d is outside [0, nrows = %d) or below the row "
                             "before it (rows must not decrease)",
                             (long long)p, row[p], F->nrows);
        if (p > 0 && row[p] != row[p - 1]) prev = -1;
        rc = spmv_fmt_col(F, row[p], col[p], &prev, "col", err);
    }
    return rc;
}

static int coo_size_summary(spmv_summary *S, spmv_fmt *F, spmv_err *err) {
    return coo_size(S->A, F, err);
}

SPMV_API const spmv_format_ops spmv_coo_ops = {
    .size = coo_size,
    .fill_f32 = coo_fill_f32,
    .fill_f64 = coo_fill_f64,
    .to_csr_f32 = coo_to_csr_f32,
    .to_csr_f64 = coo_to_csr_f64,
    .mv_f32 = coo_mv_f32,
    .mv_f64 = coo_mv_f64,
    .check = coo_check,
    .size_summary = coo_size_summary,
};
