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

// ---- Device conversion from a resident CSR (kernels/convert.cu dispatches) ----
//
// The host's arrays (csrc/cidx.c), bit for bit: a thread per chunk finds its extremes and whether it
// escapes, a scan numbers the escape chunks (their count read back: it sizes hi), then a thread per
// chunk writes its base, its `bits` words of offsets and, escaping, its words of high parts whole,
// padding fields 0, so that no word is written twice.  indptr and values are copies.
#include "convert.cuh"
#include <cub/cub.cuh>

__global__ void cidx_chunk_kernel(int64_t nchunks, int64_t nnz, int bits,
                                  const int32_t *__restrict__ col, int32_t *__restrict__ lo,
                                  int32_t *__restrict__ esc) {
    SPMV_CONV_LOOP(c, nchunks) {
        int64_t p0 = c * 32, p1 = p0 + 32 < nnz ? p0 + 32 : nnz;
        int32_t mn = col[p0], mx = mn;
        for (int64_t p = p0 + 1; p < p1; p++) {
            int32_t v = col[p];
            mn = v < mn ? v : mn;
            mx = v > mx ? v : mx;
        }
        lo[c] = mn;
        esc[c] = (mx - mn) >> bits != 0;
    }
}

__global__ void cidx_words_kernel(int64_t nchunks, int64_t nnz, int bits,
                                  const int32_t *__restrict__ col, const int32_t *__restrict__ lo,
                                  const int32_t *__restrict__ esc, const int32_t *__restrict__ eidx,
                                  int32_t *__restrict__ base, uint32_t *__restrict__ off,
                                  uint32_t *__restrict__ hi) {
    SPMV_CONV_LOOP(c, nchunks) {
        int64_t p0 = c * 32;
        int n = nnz - p0 < 32 ? (int)(nnz - p0) : 32, e = esc[c];
        uint32_t m = (uint32_t)lo[c], mask = (1u << bits) - 1u;
        int per = 32 / bits; /* fields a word */
        base[c] = e ? -1 - eidx[c] : lo[c];
        for (int w = 0; w < bits; w++) {
            uint32_t word = 0;
            for (int f = 0; f < per; f++) {
                int j = w * per + f;
                uint32_t v = (uint32_t)col[p0 + (j < n ? j : 0)];
                if (j < n) word |= (e ? v & mask : v - m) << (f * bits);
            }
            off[c * bits + w] = word;
        }
        if (!e) continue;
        int eb = bits == 16 ? 16 : 32, eper = 32 / eb;
        int64_t h0 = (int64_t)eidx[c] * eb;
        for (int w = 0; w < eb; w++) {
            uint32_t word = 0;
            for (int f = 0; f < eper; f++) {
                int j = w * eper + f;
                if (j < n) word |= ((uint32_t)col[p0 + j] >> bits) << (f * eb % 32);
            }
            hi[h0 + w] = word;
        }
    }
}

static int cidx_copy(spmv_conv *C, void *dst, const void *src, int64_t bytes, spmv_err *err) {
    if (bytes <= 0) return SPMV_OK;
    return spmv_cuda_status(
        cudaMemcpyAsync(dst, src, (size_t)bytes, cudaMemcpyDeviceToDevice, C->s),
        "device copy of a cidx array", err);
}

int spmv_conv_cidx(spmv_conv *C, spmv_err *err) {
    int32_t bits = C->D.param[0];
    if (bits != 8 && bits != 16) {
        int rc = spmv_cuda_fail(err, SPMV_EINVAL,
                                "The 'bits' parameter of cidx must be 8 or 16. Got %d instead.",
                                (int)bits);
        if (err) err->value = bits, err->limit = 16;
        return rc;
    }
    int64_t n = C->nrows, nnz = C->nnz, nchunks = (nnz + 31) / 32;
    if (nchunks * 32 > INT32_MAX) {
        int rc =
            spmv_cuda_fail(err, SPMV_ENOTAPPLICABLE,
                           "cidx needs %lld entry slots (chunks of %d), past the int32 limit %d",
                           (long long)(nchunks * 32), 32, INT32_MAX);
        if (err) err->value = nchunks * 32, err->limit = INT32_MAX;
        return rc;
    }
    int32_t *lo = nullptr, *esc = nullptr, *eidx = nullptr, tail[2] = {0, 0};
    int64_t nesc = 0, eb = bits == 16 ? 16 : 32;
    cudaStream_t s = C->s;
    int rc = SPMV_OK;
    if (nchunks > 0) {
        rc = spmv_conv_tmp(C, nchunks * 4, "cidx chunk minima", (void **)&lo, err);
        if (!rc) rc = spmv_conv_tmp(C, nchunks * 4, "cidx escape flags", (void **)&esc, err);
        if (!rc) rc = spmv_conv_tmp(C, nchunks * 4, "cidx escape numbers", (void **)&eidx, err);
        if (rc) return rc;
        cidx_chunk_kernel<<<spmv_conv_grid(nchunks, 256), 256, 0, s>>>(nchunks, nnz, bits, C->col,
                                                                       lo, esc);
        rc = spmv_conv_launched("cidx chunk extremes", err);
        if (!rc)
            rc = spmv_conv_cub(
                C, "cidx escape numbers",
                [&](void *t, size_t &b) {
                    return cub::DeviceScan::ExclusiveSum(t, b, esc, eidx, (int)nchunks, s);
                },
                err);
        if (!rc) rc = spmv_conv_get(C, &tail[0], eidx + nchunks - 1, 4, err);
        if (!rc) rc = spmv_conv_get(C, &tail[1], esc + nchunks - 1, 4, err);
        if (rc) return rc;
        nesc = (int64_t)tail[0] + tail[1];
    }
    C->D.scalar[0] = nchunks;
    C->D.scalar[1] = nesc;
    rc = spmv_conv_out(C, 0, 0, n + 1, "cidx indptr", err);
    if (!rc) rc = spmv_conv_out(C, 0, 1, nchunks, "cidx base", err);
    if (!rc) rc = spmv_conv_out(C, 0, 2, bits * nchunks, "cidx off", err);
    if (!rc) rc = spmv_conv_out(C, 0, 3, eb * nesc, "cidx hi", err);
    if (!rc) rc = spmv_conv_out(C, 1, 0, nnz, "cidx values", err);
    if (!rc) rc = cidx_copy(C, C->dev[0], C->ptr, (n + 1) * 4, err);
    if (!rc) rc = cidx_copy(C, C->dev[SPMV_MAXIDX], C->val, nnz * C->elem_size, err);
    if (rc || nchunks == 0) return rc;
    cidx_words_kernel<<<spmv_conv_grid(nchunks, 256), 256, 0, s>>>(
        nchunks, nnz, bits, C->col, lo, esc, eidx, (int32_t *)C->dev[1], (uint32_t *)C->dev[2],
        (uint32_t *)C->dev[3]);
    return spmv_conv_launched("cidx offsets", err);
}
