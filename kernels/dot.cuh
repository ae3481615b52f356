// kernels/dot.cuh: internal to kernels/ — a product's dot x . y finished in the product's own launch
// (spmv_cuda_dot, kern.h)
// SPDX-License-Identifier: BSD-3-Clause
//
// A Krylov iteration takes p . (A p) right after the product: made in the product's pass, it costs
// the reads of p the rows' owners make (in cache: the product gathered them) instead of a pass of
// its own over p and A p (two vectors' worth of memory traffic an iteration).
#ifndef SPMV_DOT_CUH
#define SPMV_DOT_CUH

#include "kern.h"

/* Sum of v over the block (blockDim.x a multiple of 32, at most 1024), on thread 0: warps by
 * shuffles, then their sums in warp order. */
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

/* Every thread of the block calls this once with its share acc: the block's sum goes to
 * d.part[blockIdx.x]; the last block to finish adds the partials in index order into *d.out. */
__device__ __forceinline__ void spmv_dot_finish(double acc, spmv_cuda_dot d) {
    __shared__ double ws[32];
    __shared__ bool last;
    double s = spmv_block_sum(acc, ws);
    if (threadIdx.x == 0) {
        d.part[blockIdx.x] = s;
        __threadfence();
        last = atomicAdd(d.count, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    double t = 0;
    for (unsigned i = threadIdx.x; i < gridDim.x; i += blockDim.x) t += __ldcg(&d.part[i]);
    t = spmv_block_sum(t, ws);
    if (threadIdx.x == 0) {
        *d.out = t;
        *d.count = 0;
    }
}

#endif /* SPMV_DOT_CUH */
