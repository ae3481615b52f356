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

SPMV_API const spmv_format_ops spmv_coo_ops = {
    coo_size, coo_fill_f32, coo_fill_f64, coo_to_csr_f32, coo_to_csr_f64, coo_mv_f32, coo_mv_f64, 1,
};
