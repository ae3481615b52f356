// kernels/broell.cu: BRO-ELL on the GPU — one thread per row, decoding its packed column deltas
// SPDX-License-Identifier: BSD-3-Clause
//
// Thread i takes row i: lane i % h of slice i / h.  Word w of a lane sits at word_ptr[s] + w*h +
// lane and value j at val_ptr[s] + j*h + lane, so the lanes of a slice read consecutive words of
// both streams, as in ELL, with the column stream shrunk to b_s bits per entry.  A slice may span
// two blocks (threads share nothing), so any h works with any block size.  Symbols never straddle
// words, and a row's symbols are all >= 1 and followed only by zeros, so the highest set bit of a
// word tells how many of its symbols are real: a lane loads its values and x for those without a
// per-symbol test, and stops at the first word that is not full.  Row sums run in entry order:
// deterministic.
#include "kern.h"

template <typename T>
__global__ void __launch_bounds__(1024)
    broell_row_kernel(int32_t nrows, int lgh, const int32_t *__restrict__ word_ptr,
                      const int32_t *__restrict__ val_ptr, const int32_t *__restrict__ info,
                      const int32_t *__restrict__ words, const T *__restrict__ val,
                      const T *__restrict__ x, T *__restrict__ y) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nrows) return;
    int64_t s = i >> lgh, lane = i & ((1 << lgh) - 1);
    int32_t width = __ldg(info + 2 * s), b = __ldg(info + 2 * s + 1), spw = 32 / b;
    uint32_t mask = 0xffffffffu >> (32 - b);        /* b in [1, 32]: never a 32-bit shift */
    const int32_t *wp = words + __ldg(word_ptr + s) + lane;
    const T *vp = val + __ldg(val_ptr + s) + lane;
    int32_t col = -1;
    T sum = 0;
    for (int32_t j0 = 0; j0 < width; j0 += spw, wp += (int64_t)1 << lgh) {
        uint32_t word = (uint32_t)__ldcs(wp);
        int32_t m = min(spw, width - j0);
        int32_t n = min(m, (32 - __clz((int)word) + b - 1) / b); /* symbols up to the top bit */
#pragma unroll 4
        for (int32_t t = 0; t < n; t++) {
            col += (int32_t)((word >> (t * b)) & mask);
            sum += __ldcs(vp + ((int64_t)(j0 + t) << lgh)) * __ldg(x + col);
        }
        if (n < m) break;                           /* a zero symbol: the row ended here */
    }
    y[i] = sum;
}

static int log2_exact(int32_t v) {
    int lg = 0;
    while (lg < 31 && (1 << lg) < v) lg++;
    return lg;
}

/* The kernel divides by h with shifts: h must be the power of two the conversion guarantees. */
static int broell_prepare(const spmv_fmt *H, const spmv_launch *L, int64_t *aux_bytes,
                          spmv_err *err) {
    (void)L;
    *aux_bytes = 0;
    int32_t h = H->param[0];
    if (h < 1 || h > 1024 || (h & (h - 1)) != 0)
        return spmv_cuda_fail(err, SPMV_EINVAL,
                              "The 'h' parameter of bro_ell must be a power of two in [1, 1024]. "
                              "Got %d instead.", (int)h);
    return SPMV_OK;
}

template <typename T>
static cudaError_t broell_run(const spmv_dfmt *D, const spmv_launch *L, const T *x, T *y,
                              cudaStream_t s) {
    broell_row_kernel<T><<<spmv_cuda_blocks(D->nrows, L->block), L->block, 0, s>>>(
        D->nrows, log2_exact(D->param[0]), D->idx[0], D->idx[1], D->idx[2], D->idx[3],
        (const T *)D->val[0], x, y);
    return cudaGetLastError();
}

static cudaError_t broell_run_f32(const spmv_dfmt *D, const spmv_launch *L, const void *aux,
                                  const float *x, float *y, cudaStream_t s) {
    (void)aux;
    return broell_run(D, L, x, y, s);
}

static cudaError_t broell_run_f64(const spmv_dfmt *D, const spmv_launch *L, const void *aux,
                                  const double *x, double *y, cudaStream_t s) {
    (void)aux;
    return broell_run(D, L, x, y, s);
}

extern "C" const spmv_cuda_kernel spmv_cu_broell = {
    SPMV_FMT_BROELL, 0, broell_prepare, NULL, broell_run_f32, broell_run_f64,
};
