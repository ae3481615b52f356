// kernels/cidx.cu: CIDX on the GPU — CSR's scalar and vector kernels on compressed column indices
// SPDX-License-Identifier: BSD-3-Clause
//
// The layout (csrc/cidx.c) keeps CSR's row pointers and values and gives any entry p its column
// from base[p / 32] and off[p] (an 8- or 16-bit load), or for an escape chunk (base < 0) from
// hi[32 e + p % 32] << bits | off[p]: so the kernels are csr.cu's scalar and vector kernels with
// the column load replaced.  The lanes of a warp read consecutive entries, which share one or two
// base words (broadcast) and read off as 32 or 64 consecutive bytes; hi is read only in escape
// chunks, coalesced the same way.  The words of off and hi are read as uint8/uint16 arrays, which
// is how the host packed them (little-endian, as every CUDA host is).  Both kernels sum a row in
// a fixed order: deterministic.
#include <cstdint>

#include "kern.h"

template <int BITS> struct cidx_types;
template <> struct cidx_types<8> {
    typedef uint8_t off;
    typedef uint32_t hi; /* a column >> 8 needs up to 23 bits */
};
template <> struct cidx_types<16> {
    typedef uint16_t off;
    typedef uint16_t hi; /* a column >> 16 < 2^15 */
};

/* Column of entry p. */
template <int BITS>
__device__ __forceinline__ int32_t cidx_col(const int32_t *__restrict__ base,
                                            const typename cidx_types<BITS>::off *__restrict__ off,
                                            const typename cidx_types<BITS>::hi *__restrict__ hi,
                                            int64_t p) {
    int32_t b = __ldg(base + (p >> 5));
    uint32_t o = __ldg(off + p);
    if (b >= 0) return b + (int32_t)o;
    uint32_t h = __ldg(hi + ((int64_t)(-1 - b) << 5) + (p & 31));
    return (int32_t)(h << BITS | o);
}

/* The arrays of D as the kernels read them. */
template <int BITS> struct cidx_arrays {
    const int32_t *ptr, *base;
    const typename cidx_types<BITS>::off *off;
    const typename cidx_types<BITS>::hi *hi;
};

template <int BITS> static cidx_arrays<BITS> arrays_of(const spmv_dfmt *D) {
    cidx_arrays<BITS> a;
    a.ptr = D->idx[0];
    a.base = D->idx[1];
    a.off = reinterpret_cast<const typename cidx_types<BITS>::off *>(D->idx[2]);
    a.hi = reinterpret_cast<const typename cidx_types<BITS>::hi *>(D->idx[3]);
    return a;
}

/* Sum over the w lanes of an aligned group (a power of two <= 32); lane 0 gets it, in a fixed tree
 * order (csr.cu's). */
template <typename T> __device__ __forceinline__ T cidx_group_sum(T s, int w) {
    unsigned mask = w == 32 ? 0xffffffffu : ((1u << w) - 1u) << ((threadIdx.x & 31) & ~(w - 1));
    for (int o = w / 2; o > 0; o /= 2) s += __shfl_down_sync(mask, s, o, w);
    return s;
}

/* ---- scalar: thread i sums row i ---------------------------------------------------------------- */

template <typename T, int BITS>
__global__ void __launch_bounds__(1024)
    cidx_scalar_kernel(int32_t nrows, cidx_arrays<BITS> a, const T *__restrict__ val,
                       const T *__restrict__ x, T *__restrict__ y) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nrows) return;
    int32_t end = __ldg(a.ptr + i + 1);
    T sum = 0;
    for (int64_t p = __ldg(a.ptr + i); p < end; p++)
        sum += __ldg(val + p) * __ldg(x + cidx_col<BITS>(a.base, a.off, a.hi, p));
    y[i] = sum;
}

template <typename T>
static cudaError_t scalar_run(const spmv_dfmt *D, const spmv_launch *L, const void *aux, const T *x,
                              T *y, cudaStream_t s) {
    (void)aux;
    unsigned grid = spmv_cuda_blocks(D->nrows, L->block);
    if (D->param[0] == 8)
        cidx_scalar_kernel<T, 8>
            <<<grid, L->block, 0, s>>>(D->nrows, arrays_of<8>(D), (const T *)D->val[0], x, y);
    else
        cidx_scalar_kernel<T, 16>
            <<<grid, L->block, 0, s>>>(D->nrows, arrays_of<16>(D), (const T *)D->val[0], x, y);
    return cudaGetLastError();
}

/* ---- vector: TPV consecutive lanes stride over a row ------------------------------------------- */

template <typename T, int BITS, int TPV>
__global__ void __launch_bounds__(1024)
    cidx_vector_kernel(int32_t nrows, cidx_arrays<BITS> a, const T *__restrict__ val,
                       const T *__restrict__ x, T *__restrict__ y) {
    int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, row = t / TPV;
    if (row >= nrows) return; /* the whole group leaves: its mask stays whole */
    int lane = (int)(t & (TPV - 1));
    int32_t end = __ldg(a.ptr + row + 1);
    T sum = 0;
    for (int64_t p = (int64_t)__ldg(a.ptr + row) + lane; p < end; p += TPV)
        sum += __ldg(val + p) * __ldg(x + cidx_col<BITS>(a.base, a.off, a.hi, p));
    sum = cidx_group_sum(sum, TPV);
    if (lane == 0) y[row] = sum;
}

template <typename T, int BITS, int TPV>
static void vector_launch(const spmv_dfmt *D, const spmv_launch *L, const T *x, T *y,
                          cudaStream_t s) {
    cidx_vector_kernel<T, BITS, TPV>
        <<<spmv_cuda_blocks((int64_t)D->nrows * TPV, L->block), L->block, 0, s>>>(
            D->nrows, arrays_of<BITS>(D), (const T *)D->val[0], x, y);
}

template <typename T, int BITS>
static cudaError_t vector_bits(const spmv_dfmt *D, const spmv_launch *L, const T *x, T *y,
                               cudaStream_t s) {
    switch (L->tpv) {
    case 2:
        vector_launch<T, BITS, 2>(D, L, x, y, s);
        break;
    case 4:
        vector_launch<T, BITS, 4>(D, L, x, y, s);
        break;
    case 8:
        vector_launch<T, BITS, 8>(D, L, x, y, s);
        break;
    case 16:
        vector_launch<T, BITS, 16>(D, L, x, y, s);
        break;
    case 32:
        vector_launch<T, BITS, 32>(D, L, x, y, s);
        break;
    default:
        return cudaErrorInvalidValue; /* prepare refused it */
    }
    return cudaGetLastError();
}

template <typename T>
static cudaError_t vector_run(const spmv_dfmt *D, const spmv_launch *L, const void *aux, const T *x,
                              T *y, cudaStream_t s) {
    (void)aux;
    return D->param[0] == 8 ? vector_bits<T, 8>(D, L, x, y, s) : vector_bits<T, 16>(D, L, x, y, s);
}

/* ---- the mapping checks ------------------------------------------------------------------------- */

static int check_common(const spmv_fmt *H, const spmv_launch *L, const char *kernel,
                        spmv_err *err) {
    if (H->param[0] != 8 && H->param[0] != 16)
        return spmv_cuda_fail(err, SPMV_EINVAL,
                              "The 'bits' parameter of %s must be 8 or 16. Got %d instead.", kernel,
                              (int)H->param[0]);
    if (L->block < 32 || L->block > 1024 || L->block % 32 != 0)
        return spmv_cuda_fail(err, SPMV_EINVAL,
                              "The 'bs' parameter of %s must be a multiple of 32 in [32, 1024]. "
                              "Got %d instead.",
                              kernel, (int)L->block);
    return SPMV_OK;
}

static int scalar_prepare(const spmv_fmt *H, const spmv_launch *L, int64_t *aux_bytes,
                          spmv_err *err) {
    *aux_bytes = 0;
    return check_common(H, L, "cidx/scalar", err);
}

static int vector_prepare(const spmv_fmt *H, const spmv_launch *L, int64_t *aux_bytes,
                          spmv_err *err) {
    *aux_bytes = 0;
    int32_t v = L->tpv;
    if (v != 2 && v != 4 && v != 8 && v != 16 && v != 32)
        return spmv_cuda_fail(err, SPMV_EINVAL,
                              "The 'tpv' parameter of cidx/vector must be 2, 4, 8, 16 or 32. "
                              "Got %d instead.",
                              (int)v);
    return check_common(H, L, "cidx/vector", err);
}

SPMV_CUDA_KERNEL(cidx_scalar, scalar_prepare, NULL, scalar_run);
SPMV_CUDA_KERNEL(cidx_vector, vector_prepare, NULL, vector_run);
