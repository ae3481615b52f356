// kernels/dot.cuh: internal to kernels/ — a product's dot w . y made in the product's own launch, as
// one partial sum per block (spmv_cuda_dot, kern.h), and those partials added up
// SPDX-License-Identifier: BSD-3-Clause
//
// A Krylov iteration takes p . (A p) right after the product: made in the product's pass, it costs
// the reads of p the rows' owners make (in cache: the product gathered them) instead of a pass of
// its own over p and A p (two vectors' worth of memory traffic an iteration).  The product's blocks
// only write their partials: a last block adding them all (the threadfence reduction) would hold
// the whole launch for a tail of dependent loads (a 4e6-row JAD product has 15,625 blocks: on the
// H200 the iteration took 16 us longer that way than with the dot as a pass of its own); a block
// of 1024 threads adds them afterwards in a few microseconds.
#ifndef SPMV_DOT_CUH
#define SPMV_DOT_CUH

#include "kern.h"

/* Sum of v over the block (blockDim.x a multiple of 32, at most 1024), on thread 0: warps by
 * shuffles, then their sums in warp order.  ws: 32 doubles of shared memory. */
__device__ __forceinline__ double spmv_block_sum(double v, double *ws) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) ws[threadIdx.x >> 5] = v;
    __syncthreads();
    double s = 0;
    if (threadIdx.x == 0)
        for (unsigned w = 0; w < (blockDim.x + 31) / 32; w++) s += ws[w];
    __syncthreads(); /* ws may be reused */
    return s;
}

/* y[i] = sum; returns the row's share of w . y where DOT (w_i sum, A square; w is d.w, or x where
 * that is NULL), else 0. */
template <bool DOT, typename T>
__device__ __forceinline__ double spmv_row_store(T *y, const T *x, spmv_cuda_dot d, int64_t i,
                                                 T sum) {
    y[i] = sum;
    if (!DOT) return 0.0;
    const T *w = d.w != NULL ? (const T *)d.w : x;
    return (double)__ldg(w + i) * sum;
}

/* Every thread of the block calls this once with its share acc; the block's sum goes to
 * d.part[blockIdx.x]. */
__device__ __forceinline__ void spmv_dot_partial(double acc, spmv_cuda_dot d) {
    __shared__ double ws[32];
    double s = spmv_block_sum(acc, ws);
    if (threadIdx.x == 0) d.part[blockIdx.x] = s;
}

/* The n partials added by one block (every thread calls it; thread 0 gets the sum), in an order
 * fixed by n and the block size; four accumulators a thread keep four loads in flight (eight took
 * 10.8 us against 6.5-7.3 for 15,625 partials on the H200, ncu). */
__device__ __forceinline__ double spmv_sum_partials(const double *part, int64_t n) {
    __shared__ double ws[32];
    double a[4] = {0, 0, 0, 0};
    const int64_t step = blockDim.x;
    int64_t i = threadIdx.x;
    for (; i + 3 * step < n; i += 4 * step)
        for (int j = 0; j < 4; j++) a[j] += part[i + j * step];
    for (; i < n; i += step) a[0] += part[i];
    return spmv_block_sum((a[0] + a[1]) + (a[2] + a[3]), ws);
}

#endif /* SPMV_DOT_CUH */
