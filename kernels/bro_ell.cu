// kernels/bro_ell.cu: BRO-ELL on the GPU — one thread per row, decoding its packed column deltas
// SPDX-License-Identifier: BSD-3-Clause
//
// Thread i takes row i: lane i % h of slice i / h.  Word w of a lane sits at word_ptr[s] + w*h +
// lane and value j at val_ptr[s] + j*h + lane, so the lanes of a slice read consecutive words of
// both streams, as in ELL, with the column stream shrunk to b_s bits per entry.  A slice may span
// two blocks (threads share nothing), so any h works with any block size.  A lane decodes
// BRO_ELL_BATCH symbols (loading a word whenever it starts one; symbols never straddle words)
// before it loads their values and x, so that a batch costs two memory round trips however the
// symbols pack.  That matters most for b_s > 16, one symbol per word, which a slice gets as soon
// as one of its rows starts at column 65535 or later (a row's first symbol is its column + 1).
// Every real symbol is >= 1 and only zeros follow a row's last, so a lane stops after the batch
// holding its first zero.  Row sums run in entry order: deterministic.
#include "kern.h"

/* Entries decoded per batch.  On the H100, 8 ran 5-25% slower than 4. */
#define BRO_ELL_BATCH 4

template <typename T>
__global__ void __launch_bounds__(1024)
    bro_ell_row_kernel(int32_t nrows, int lgh, const int32_t *__restrict__ word_ptr,
                       const int32_t *__restrict__ val_ptr, const int32_t *__restrict__ info,
                       const int32_t *__restrict__ words, const T *__restrict__ val,
                       const T *__restrict__ x, T *__restrict__ y) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nrows) return;
    int64_t s = i >> lgh, lane = i & ((1 << lgh) - 1);
    int32_t width = __ldg(info + 2 * s), b = __ldg(info + 2 * s + 1), spw = 32 / b;
    uint32_t mask = 0xffffffffu >> (32 - b); /* b in [1, 32]: never a 32-bit shift */
    int64_t wq = __ldg(word_ptr + s) + lane, vq = __ldg(val_ptr + s) + lane;
    int32_t col = -1, t = 0; /* t: next symbol's place in its word */
    uint32_t word = 0;
    T sum = 0;
    for (int32_t j0 = 0; j0 < width; j0 += BRO_ELL_BATCH) {
        int32_t c[BRO_ELL_BATCH];
#pragma unroll
        for (int u = 0; u < BRO_ELL_BATCH; u++) {
            uint32_t sym = 0;
            if (j0 + u < width) {
                if (t == 0) {
                    word = (uint32_t)__ldcs(words + wq);
                    wq += (int64_t)1 << lgh;
                }
                sym = (word >> (t * b)) & mask; /* t*b <= 32 - b */
                t = t + 1 == spw ? 0 : t + 1;
            }
            col += (int32_t)sym;
            c[u] = sym != 0 ? col : -1;
        }
#pragma unroll
        for (int u = 0; u < BRO_ELL_BATCH; u++)
            if (c[u] >= 0) sum += __ldcs(val + vq + ((int64_t)(j0 + u) << lgh)) * __ldg(x + c[u]);
        if (c[BRO_ELL_BATCH - 1] < 0) break; /* the row ended in this batch */
    }
    y[i] = sum;
}

/* The kernel divides by h with shifts: h must be the power of two the conversion guarantees. */
static int bro_ell_prepare(const spmv_fmt *H, const spmv_launch *L, int64_t *aux_bytes,
                           spmv_err *err) {
    (void)L;
    *aux_bytes = 0;
    return spmv_cuda_pow2_param(H->param[0], "h", "bro_ell", err);
}

template <typename T>
static cudaError_t bro_ell_run(const spmv_dfmt *D, const spmv_launch *L, const void *aux,
                               const T *x, T *y, cudaStream_t s) {
    (void)aux;
    bro_ell_row_kernel<T><<<spmv_cuda_blocks(D->nrows, L->block), L->block, 0, s>>>(
        D->nrows, spmv_cuda_log2(D->param[0]), D->idx[0], D->idx[1], D->idx[2], D->idx[3],
        (const T *)D->val[0], x, y);
    return cudaGetLastError();
}

SPMV_CUDA_KERNEL(bro_ell, bro_ell_prepare, NULL, bro_ell_run);
