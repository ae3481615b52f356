// kernels/jad.cu: JAD on the GPU — one thread per permuted row, across the jagged diagonals
// SPDX-License-Identifier: BSD-3-Clause
//
// Thread r takes permuted row r, whose entry k sits at jd_ptr[k] + r: consecutive threads read
// consecutive slots of each jagged diagonal, so the column and value streams coalesce with no
// padding at all.  Rows are sorted by length, so diagonal lengths never grow with k and row r's
// length is the number of diagonals longer than r: a binary search over jd_ptr (shared by the
// whole warp, so L1 hits) finds it first, and the loop over the row's entries then has no
// data-dependent exit and keeps several loads in flight.  Row sums run in diagonal order:
// deterministic.
#include "kern.h"

template <typename T>
__global__ void __launch_bounds__(1024)
    jad_row_kernel(int32_t nrows, int32_t njd, const int32_t *__restrict__ perm,
                   const int32_t *__restrict__ jd_ptr, const int32_t *__restrict__ col,
                   const T *__restrict__ val, const T *__restrict__ x, T *__restrict__ y) {
    int64_t r64 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r64 >= nrows) return;
    int32_t r = (int32_t)r64, len = 0, hi = njd;
    while (len < hi) { /* first diagonal not longer than r */
        int32_t mid = len + (hi - len) / 2;
        if (__ldg(jd_ptr + mid + 1) - __ldg(jd_ptr + mid) > r)
            len = mid + 1;
        else
            hi = mid;
    }
    T sum = 0;
#pragma unroll 4
    for (int32_t k = 0; k < len; k++) {
        int32_t q = __ldg(jd_ptr + k) + r; /* < jd_ptr[k+1] <= nnz: fits int32 */
        sum += __ldcs(val + q) * __ldg(x + __ldcs(col + q));
    }
    y[__ldg(perm + r)] = sum;
}

template <typename T>
static cudaError_t jad_run(const spmv_dfmt *D, const spmv_launch *L, const void *aux, const T *x,
                           T *y, cudaStream_t s) {
    (void)aux;
    jad_row_kernel<T><<<spmv_cuda_blocks(D->nrows, L->block), L->block, 0, s>>>(
        D->nrows, (int32_t)D->scalar[0], D->idx[0], D->idx[1], D->idx[2], (const T *)D->val[0], x,
        y);
    return cudaGetLastError();
}

SPMV_CUDA_KERNEL(jad, NULL, NULL, jad_run);
