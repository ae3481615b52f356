// kernels/sell.cu: SELL-C-sigma on the GPU — one thread per row of a slice
// SPDX-License-Identifier: BSD-3-Clause
//
// Thread t takes sorted row t: lane t % C of slice t / C.  Slot k of a lane sits at
// slice_ptr[s] + k*C + lane, so the C threads of a slice read C consecutive words per slot: whole
// 128-byte lines for C >= 32 (float) and half-warps on two slices for C = 16.  No thread talks to
// another, so a slice may span two blocks and any C works with any block size.  Each lane reads
// its slots in batches of SELL_BATCH column indices before touching values and x, which keeps
// several loads in flight per thread; it stops after the batch holding its first padding slot,
// so padding beyond that is not read.  Row sums run in slot order: deterministic.
#include "kern.h"

/* Slots per batch: enough loads in flight to cover HBM latency at full occupancy.  On the H100, 8
 * was no faster than 4 on a 2-D stencil and a 21-diagonal band; other shapes untried. */
#define SELL_BATCH 4

template <typename T>
__global__ void __launch_bounds__(1024)
    sell_slice_kernel(int32_t nrows, int lgc, const int32_t *__restrict__ perm,
                      const int32_t *__restrict__ slice_ptr, const int32_t *__restrict__ col,
                      const T *__restrict__ val, const T *__restrict__ x, T *__restrict__ y) {
    int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= nrows) return;
    int64_t s = r >> lgc;
    int32_t p0 = __ldg(slice_ptr + s), w = (__ldg(slice_ptr + s + 1) - p0) >> lgc;
    int64_t base = p0 + (r & ((1 << lgc) - 1));
    T sum = 0;
    for (int32_t k = 0; k < w; k += SELL_BATCH) {
        int32_t c[SELL_BATCH];
#pragma unroll
        for (int u = 0; u < SELL_BATCH; u++)
            c[u] = k + u < w ? __ldcs(col + base + ((int64_t)(k + u) << lgc)) : -1;
#pragma unroll
        for (int u = 0; u < SELL_BATCH; u++)
            if (c[u] >= 0) sum += __ldcs(val + base + ((int64_t)(k + u) << lgc)) * __ldg(x + c[u]);
        if (c[SELL_BATCH - 1] < 0) break; /* padding only follows a row's entries */
    }
    y[__ldg(perm + r)] = sum;
}

/* The kernel divides by C with shifts: C must be the power of two the conversion guarantees. */
static int sell_prepare(const spmv_fmt *H, const spmv_launch *L, int64_t *aux_bytes,
                        spmv_err *err) {
    (void)L;
    *aux_bytes = 0;
    return spmv_cuda_pow2_param(H->param[0], "c", "sell", err);
}

template <typename T>
static cudaError_t sell_run(const spmv_dfmt *D, const spmv_launch *L, const void *aux, const T *x,
                            T *y, cudaStream_t s) {
    (void)aux;
    sell_slice_kernel<T><<<spmv_cuda_blocks(D->nrows, L->block), L->block, 0, s>>>(
        D->nrows, spmv_cuda_log2(D->param[0]), D->idx[0], D->idx[1], D->idx[2],
        (const T *)D->val[0], x, y);
    return cudaGetLastError();
}

SPMV_CUDA_KERNEL(sell, sell_prepare, NULL, sell_run);
