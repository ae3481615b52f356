// kernels/csr.cu: CSR on the GPU — scalar, vector (CUSP's) and adaptive (CSR-Adaptive) kernels
// SPDX-License-Identifier: BSD-3-Clause
//
// scalar: thread i sums row i.  A warp's loads are not coalesced, but they fall in the few lines
// that its 32 neighbouring rows span, which L1 keeps between iterations: fast for short rows of
// even length (a 7-point stencil ran at 0.96 of copy bandwidth on the H100), slow for long or
// uneven ones.
//
// vector (CUSP's csr_vector): TPV consecutive lanes share a row and stride over it, so they read
// TPV consecutive words of indices and values; warp shuffles within the group reduce, lane 0
// writes.  Its matrix loads keep the default caching: with TPV < 32 a step touches lines that the
// next steps read again, which evict-first loads (__ldcs) lose (half the bandwidth on that
// stencil with TPV = 2).
//
// adaptive (CSR-Adaptive, Greathouse & Daga, SC14, made deterministic): the host cuts the rows
// into work items of about the same size, one per thread block.  An item of short rows streams
// their entries coalesced into shared memory (thread t takes entries t, t + bs, ...), multiplied
// by x, then reduces each row there with a power-of-two group of threads per row (CSR-stream).  A
// long row is cut into chunks that whole blocks reduce (CSR-vector over the block); the chunks'
// sums are added in chunk order by whichever block finishes last, so a row of millions of entries
// spreads over many SMs and still sums the same way every time.
//
// Every sum runs in an order fixed by the matrix and the block size: all three are deterministic.
#include <cstdint>
#include <cstdlib>
#include <type_traits>

#include "ell_coo.cuh"
#include "kern.h"

/* The lanes of this thread's aligned group of w (a power of two <= 32) within its warp. */
__device__ __forceinline__ unsigned group_mask(int w) {
    return w == 32 ? 0xffffffffu : ((1u << w) - 1u) << ((threadIdx.x & 31) & ~(w - 1));
}

/* Sum over the w lanes of a group; lane 0 of the group gets the total, in a fixed tree order. */
template <typename T> __device__ __forceinline__ T group_sum(T s, int w, unsigned mask) {
    for (int o = w / 2; o > 0; o /= 2) s += __shfl_down_sync(mask, s, o, w);
    return s;
}

#include "csr_rows.cuh" /* scalar and vector */

/* Block sizes every kernel here can take: whole warps, at most 32 of them. */
static int check_block(const spmv_launch *L, const char *kernel, spmv_err *err) {
    if (L->block < 32 || L->block > 1024 || L->block % 32 != 0)
        return spmv_cuda_fail(err, SPMV_EINVAL,
                              "The 'bs' parameter of %s must be a multiple of 32 in [32, 1024]. "
                              "Got %d instead.",
                              kernel, (int)L->block);
    return SPMV_OK;
}

static int check_tpv(const spmv_launch *L, const char *kernel, spmv_err *err) {
    int32_t v = L->tpv;
    if (v != 2 && v != 4 && v != 8 && v != 16 && v != 32)
        return spmv_cuda_fail(err, SPMV_EINVAL,
                              "The 'tpv' parameter of %s must be 2, 4, 8, 16 or 32. "
                              "Got %d instead.",
                              kernel, (int)v);
    return check_block(L, kernel, err);
}

/* The layout's value table (csrc/csr.c's vals): one of 0, 8, 16 where the kernel reads a table
 * (table), else none. */
static int check_vals(const spmv_fmt *H, int table, const char *kernel, spmv_err *err) {
    int32_t v = H->param[1];
    if (table && v != 0 && v != 8 && v != 16)
        return spmv_cuda_fail(err, SPMV_EINVAL,
                              "The 'vals' parameter of %s must be 0, 8 or 16. Got %d instead.",
                              kernel, (int)v);
    if (!table && v != 0)
        return spmv_cuda_fail(err, SPMV_ENOTAPPLICABLE,
                              "%s reads the values as they are; this CSR keeps them as a table "
                              "(vals=%d): csr/vector and csr/adaptive read one",
                              kernel, (int)v);
    return SPMV_OK;
}

static int scalar_prepare(const spmv_fmt *H, const spmv_launch *L, int64_t *aux_bytes,
                          spmv_err *err) {
    (void)L;
    *aux_bytes = 0;
    return check_vals(H, 0, "csr/scalar", err);
}

static int vector_prepare(const spmv_fmt *H, const spmv_launch *L, int64_t *aux_bytes,
                          spmv_err *err) {
    *aux_bytes = 0;
    int rc = check_vals(H, 1, "csr/vector", err);
    return rc ? rc : check_tpv(L, "csr/vector", err);
}

/* ---- wide: vector with 128-bit loads --------------------------------------------------------- */

/* Words of T in 16 bytes, and the vector types of V values and V indices. */
template <typename T> struct wide_t;
template <> struct wide_t<float> {
    enum { V = 4 };
    typedef float4 vals;
    typedef int4 cols;
    static __device__ __forceinline__ float dot(float4 v, int4 c, const float *__restrict__ x) {
        return v.x * __ldg(x + c.x) + v.y * __ldg(x + c.y) + v.z * __ldg(x + c.z) +
               v.w * __ldg(x + c.w);
    }
};
template <> struct wide_t<double> {
    enum { V = 2 };
    typedef double2 vals;
    typedef int2 cols;
    static __device__ __forceinline__ double dot(double2 v, int2 c, const double *__restrict__ x) {
        return v.x * __ldg(x + c.x) + v.y * __ldg(x + c.y);
    }
};

/* vector's mapping (TPV lanes a row), but the lanes read the row's aligned middle V entries at a
 * time (16 bytes of values, V indices) and two such loads each before using them: four times the
 * bytes in flight of vector's loads for float, twice for double.  The unaligned head and tail (fewer
 * than V entries each) go one entry a lane.  A lane's sum runs in a fixed order: deterministic. */
template <typename T, int TPV>
__global__ void __launch_bounds__(1024)
    csr_wide_kernel(int32_t nrows, const int32_t *__restrict__ ptr, const int32_t *__restrict__ col,
                    const T *__restrict__ val, const T *__restrict__ x, T *__restrict__ y) {
    typedef wide_t<T> W;
    const int V = W::V;
    int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, row = t / TPV;
    if (row >= nrows) return;
    int lane = (int)(t & (TPV - 1));
    int64_t p0 = __ldg(ptr + row), p1 = __ldg(ptr + row + 1);
    int64_t a = (p0 + V - 1) / V * V, b = p1 / V * V;
    if (a > b) a = b = p1; /* no aligned middle: all head */
    T sum = 0;
    for (int64_t h = p0 + lane; h < a; h += TPV) sum += __ldg(val + h) * __ldg(x + __ldg(col + h));
    const typename W::vals *vv = reinterpret_cast<const typename W::vals *>(val);
    const typename W::cols *cv = reinterpret_cast<const typename W::cols *>(col);
    int64_t q = a / V + lane, qe = b / V;
    for (; q + TPV < qe; q += 2 * TPV) {
        typename W::vals v0 = __ldg(vv + q), v1 = __ldg(vv + q + TPV);
        typename W::cols c0 = __ldg(cv + q), c1 = __ldg(cv + q + TPV);
        sum += W::dot(v0, c0, x);
        sum += W::dot(v1, c1, x);
    }
    if (q < qe) sum += W::dot(__ldg(vv + q), __ldg(cv + q), x);
    for (int64_t h = b + lane; h < p1; h += TPV) sum += __ldg(val + h) * __ldg(x + __ldg(col + h));
    sum = group_sum(sum, TPV, group_mask(TPV));
    if (lane == 0) y[row] = sum;
}

template <typename T, int TPV>
static void wide_launch(const spmv_dfmt *D, const spmv_launch *L, const T *x, T *y,
                        cudaStream_t s) {
    csr_wide_kernel<T, TPV>
        <<<spmv_cuda_blocks((int64_t)D->nrows * TPV, L->block), L->block, 0, s>>>(
            D->nrows, D->idx[0], D->idx[1], (const T *)D->val[0], x, y);
}

static int wide_prepare(const spmv_fmt *H, const spmv_launch *L, int64_t *aux_bytes,
                        spmv_err *err) {
    *aux_bytes = 0;
    int rc = check_vals(H, 0, "csr/wide", err);
    return rc ? rc : check_tpv(L, "csr/wide", err);
}

/* A CSR that lives on the device may start anywhere (a view into a larger array): without 16-byte
 * alignment of both arrays, vector's loads run instead. */
template <typename T>
static cudaError_t wide_run(const spmv_dfmt *D, const spmv_launch *L, const void *aux, const T *x,
                            T *y, cudaStream_t s) {
    if (((uintptr_t)D->idx[1] | (uintptr_t)D->val[0]) % 16 != 0)
        return vector_launch_any<T>(D, L, aux, x, y, NULL, s);
    return by_tpv(L->tpv, [&](auto w) { wide_launch<T, decltype(w)::value>(D, L, x, y, s); });
}

/* ---- adaptive -------------------------------------------------------------------------------- */

/* The host turns indptr into work items, one thread block each (blocks loop when there are more):
 * - stream {r0, r1, -1 - n, indptr[r0]}: rows [r0, r1), all short, n <= w entries and at most w
 *   rows together, cut greedily in row order (n and indptr[r0] travel in the item so that the
 *   stream starts one dependent load earlier);
 * - chunk {R, k, m, base}: entries [k ch, (k+1) ch) of a long row R (more than w entries) cut into
 *   m chunks of ch = 2w.  Chunk k leaves its block sum in partial[base + k]; the block that counts
 *   the m-th arrival adds partial[base, base + m) up in index order and writes y[R], so the sum
 *   does not depend on which block comes last.  An atomic counts arrivals; no value is ever added
 *   atomically.  A row of one chunk writes y directly.
 * Chunks come first, so that the longest work starts first.  The grid is ceil((nrows + nnz) / w),
 * about the number of items, since run_* cannot read the workspace to learn it. */
/* w = min(bs * K, ADAPTIVE_MAXW) entries a stream item holds in shared memory, K the entries a thread streams
 * (the configuration's ept, in the launch's tpv slot): 32 KB of doubles at most, inside the 48 KB a block
 * gets without opting in, and at most 128 KB an SM at full occupancy.  More entries a thread amortise an
 * item's dependent loads over more streaming (K = 8 ran a 7-point stencil 1.2 times as fast as K = 4 on the
 * H100); fewer make more, smaller items (on the H200's irregular matrices K = 4 ran a median 1.12 times as
 * fast as 8, 2 and 16 slower: studies/2026-11-30-adaptive-entries-per-thread). */
#define ADAPTIVE_MAXW 4096
/* Loads in flight per thread while streaming (a long row's chunks always; a stream item's unless
 * adaptive_one_round says 8). */
#define ADAPTIVE_BATCH 4

static int32_t adaptive_width(const spmv_launch *L) {
    int64_t w = (int64_t)L->block * L->tpv;
    return (int32_t)(w < ADAPTIVE_MAXW ? w : ADAPTIVE_MAXW);
}

/* The workspace: int32 header {n_items, n_partials, 0, 0}, int4 items[n_items], 8-byte
 * partial[n_partials] (float or double), int32 arrived[n_partials] (0 between products). */
static int64_t adaptive_aux_bytes(int64_t n_items, int64_t n_partials) {
    return 16 + 16 * n_items + 12 * n_partials;
}

/* Block sum of s, in thread 0; a fixed tree.  Ends with warp 0 reading warp_part. */
template <typename T> __device__ __forceinline__ T block_sum(T s, T *warp_part) {
    const int tid = threadIdx.x;
    s = group_sum(s, 32, 0xffffffffu);
    if ((tid & 31) == 0) warp_part[tid >> 5] = s;
    __syncthreads();
    if (tid < 32) {
        s = tid < (int)(blockDim.x >> 5) ? warp_part[tid] : T(0);
        s = group_sum(s, 32, 0xffffffffu);
    }
    return s;
}

/* CSR-stream: entries of rows [r0, r1) into shared memory (thread t takes t, t + bs, ...: one
 * coalesced sweep), multiplied by x, then each row summed there by a group of tpr threads, the
 * most (up to a warp) that still gives every row a group.  VB: as vector_row_kernel's; NB: the
 * loads a thread has in flight (adaptive_run chooses). */
template <typename T, int VB, int NB>
__device__ __forceinline__ void
stream_rows(int32_t r0, int32_t r1, int32_t b0, int32_t n, const int32_t *__restrict__ ptr,
            const int32_t *__restrict__ col, const T *__restrict__ val,
            const void *__restrict__ vix, const T *__restrict__ x, T *__restrict__ y, T *prod) {
    const int bs = blockDim.x, tid = threadIdx.x;
    const int32_t nr = r1 - r0;
    int tpr = 1;
    while (tpr < 32 && 2 * tpr * nr <= bs) tpr *= 2;
    const int ng = bs / tpr, lane = tid & (tpr - 1);
    const unsigned mask = group_mask(tpr);
    int32_t r = r0 + tid / tpr, pa = 0, pb = 0;
    if (r < r1) pa = __ldg(ptr + r) - b0, pb = __ldg(ptr + r + 1) - b0; /* in flight meanwhile */
    for (int32_t j0 = tid; j0 < n; j0 += NB * bs) {
        int32_t c[NB] = {0};
        T v[NB] = {0};
#pragma unroll
        for (int u = 0; u < NB; u++)
            if (j0 + u * bs < n)
                c[u] = __ldcs(col + b0 + j0 + u * bs),
                v[u] = spmv_value<T, VB, true>(val, vix, b0 + j0 + u * bs);
#pragma unroll
        for (int u = 0; u < NB; u++)
            if (j0 + u * bs < n) prod[j0 + u * bs] = v[u] * __ldg(x + c[u]);
    }
    __syncthreads();
    for (; r < r1; r += ng) { /* a group's lanes share r: whole masks */
        T sum = 0;
        for (int32_t p = pa + lane; p < pb; p += tpr) sum += prod[p];
        sum = group_sum(sum, tpr, mask);
        if (lane == 0) y[r] = sum;
        if (r + ng < r1) pa = __ldg(ptr + r + ng) - b0, pb = __ldg(ptr + r + ng + 1) - b0;
    }
}

/* CSR-vector over the block for chunk k of m of row R: coalesced strides of bs. */
template <typename T, int VB>
__device__ __forceinline__ void
row_chunk(int4 d, int64_t ch, const int32_t *__restrict__ ptr, const int32_t *__restrict__ col,
          const T *__restrict__ val, const void *__restrict__ vix, const T *__restrict__ x,
          T *__restrict__ y, T *partial, int32_t *arrived, T *warp_part, int *is_last) {
    const int bs = blockDim.x, tid = threadIdx.x;
    const int32_t R = d.x, k = d.y, m = d.z, base = d.w;
    const int64_t beg = __ldg(ptr + R) + k * ch, rend = __ldg(ptr + R + 1);
    const int64_t end = beg + ch < rend ? beg + ch : rend;
    T sum = 0;
    int64_t p = beg + tid;
    for (; p + (int64_t)(ADAPTIVE_BATCH - 1) * bs < end; p += (int64_t)ADAPTIVE_BATCH * bs) {
        int32_t c[ADAPTIVE_BATCH];
        T v[ADAPTIVE_BATCH];
#pragma unroll
        for (int u = 0; u < ADAPTIVE_BATCH; u++)
            c[u] = __ldcs(col + p + u * bs), v[u] = spmv_value<T, VB, true>(val, vix, p + u * bs);
#pragma unroll
        for (int u = 0; u < ADAPTIVE_BATCH; u++) sum += v[u] * __ldg(x + c[u]);
    }
    for (; p < end; p += bs)
        sum += spmv_value<T, VB, true>(val, vix, p) * __ldg(x + __ldcs(col + p));
    sum = block_sum(sum, warp_part);
    if (m == 1) {
        if (tid == 0) y[R] = sum;
        return;
    }
    if (tid == 0) {
        partial[base + k] = sum;
        __threadfence(); /* the partial lands before the count */
        *is_last = atomicAdd(arrived + base, 1) == m - 1;
    }
    __syncthreads();
    if (!*is_last) return;
    __threadfence();
    sum = 0;
    for (int32_t j = tid; j < m; j += bs) sum += __ldcg(partial + base + j); /* L2: other SMs' */
    sum = block_sum(sum, warp_part);
    if (tid == 0) {
        y[R] = sum;
        arrived[base] = 0; /* ready for the next product */
    }
}

/* aux is the workspace above; partial[] and arrived[] are written here (arrived returns to 0). */
template <typename T, int VB, int NB>
__global__ void __launch_bounds__(1024, 2) /* 32 registers: a full SM at any block size */
    csr_adaptive_kernel(const int32_t *aux, int32_t w, const int32_t *__restrict__ ptr,
                        const int32_t *__restrict__ col, const T *__restrict__ val,
                        const void *__restrict__ vix, const T *__restrict__ x, T *__restrict__ y) {
    extern __shared__ __align__(16) unsigned char smem[];
    __shared__ T warp_part[32];
    __shared__ int is_last;
    const int32_t n_items = __ldg(aux), n_partials = __ldg(aux + 1);
    const int4 *items = reinterpret_cast<const int4 *>(aux + 4);
    double *slots = const_cast<double *>(reinterpret_cast<const double *>(items + n_items));
    int32_t *arrived = reinterpret_cast<int32_t *>(slots + n_partials);
    for (int64_t it = blockIdx.x; it < n_items; it += gridDim.x) {
        const int4 d = __ldg(items + it);
        if (d.z < 0)
            stream_rows<T, VB, NB>(d.x, d.y, d.w, -1 - d.z, ptr, col, val, vix, x, y,
                                   reinterpret_cast<T *>(smem));
        else
            row_chunk<T, VB>(d, 2 * (int64_t)w, ptr, col, val, vix, x, y,
                             reinterpret_cast<T *>(slots), arrived, warp_part, &is_last);
        __syncthreads(); /* the next item reuses shared memory */
    }
}

/* Items of H for width w into out (NULL: count only); their number, and slots in *n_partials. */
static int64_t adaptive_items(const spmv_fmt *H, int32_t w, int4 *out, int64_t *n_partials) {
    const int32_t *ptr = H->idx[0];
    const int64_t ch = 2 * (int64_t)w;
    int64_t n = 0, np = 0;
    for (int32_t i = 0; i < H->nrows; i++) {
        int64_t len = (int64_t)ptr[i + 1] - ptr[i];
        if (len <= w) continue;
        int64_t m = (len + ch - 1) / ch;
        for (int64_t k = 0; k < m; k++, n++)
            if (out) out[n] = make_int4(i, (int)k, (int)m, m > 1 ? (int)np : 0);
        if (m > 1) np += m;
    }
    int32_t r0 = 0;
    int64_t held = -1; /* entries of the open stream item, -1: none */
    for (int32_t i = 0; i <= H->nrows; i++) {
        int64_t len = i < H->nrows ? (int64_t)ptr[i + 1] - ptr[i] : 0;
        if (held >= 0 && (i == H->nrows || len > w || held + len > w || i - r0 >= w)) {
            if (out) out[n] = make_int4(r0, i, -1 - (int)held, ptr[r0]);
            n++;
            held = -1;
        }
        if (i == H->nrows || len > w) continue; /* a long row breaks the run: its chunks */
        if (held < 0) r0 = i, held = 0;
        held += len;
    }
    *n_partials = np;
    return n;
}

static int adaptive_count(const spmv_fmt *H, const spmv_launch *L, int64_t *n_items,
                          int64_t *n_partials, spmv_err *err) {
    int rc = check_vals(H, 1, "csr/adaptive", err);
    if (!rc) rc = check_block(L, "csr/adaptive", err);
    if (!rc && L->tpv != 2 && L->tpv != 4 && L->tpv != 8 && L->tpv != 16)
        rc = spmv_cuda_fail(
            err, SPMV_EINVAL,
            "The 'ept' parameter of csr/adaptive must be 2, 4, 8 or 16. Got %d instead.",
            (int)L->tpv);
    if (rc) return rc;
    *n_items = adaptive_items(H, adaptive_width(L), NULL, n_partials);
    if (*n_items > INT32_MAX || *n_partials > INT32_MAX)
        return spmv_cuda_fail(err, SPMV_EOVERFLOW, "csr/adaptive needs %lld work items, past int32",
                              (long long)*n_items);
    return SPMV_OK;
}

static int adaptive_prepare(const spmv_fmt *H, const spmv_launch *L, int64_t *aux_bytes,
                            spmv_err *err) {
    int64_t n_items, n_partials;
    *aux_bytes = 0;
    int rc = adaptive_count(H, L, &n_items, &n_partials, err);
    if (!rc) *aux_bytes = adaptive_aux_bytes(n_items, n_partials);
    return rc;
}

static int adaptive_setup(const spmv_fmt *H, const spmv_dfmt *D, const spmv_launch *L, void *aux,
                          cudaStream_t s, spmv_err *err) {
    (void)D;
    int64_t n_items, n_partials;
    int rc = adaptive_count(H, L, &n_items, &n_partials, err);
    if (rc) return rc;
    size_t bytes = 16 + 16 * (size_t)n_items; /* header and items; the rest is device-only */
    int4 *host = (int4 *)malloc(bytes);
    if (host == NULL) {
        spmv_cuda_fail(err, SPMV_ENOMEM, "out of memory: csr/adaptive's work items need %zu bytes",
                       bytes);
        if (err) err->value = (int64_t)bytes;
        return SPMV_ENOMEM;
    }
    host[0] = make_int4((int)n_items, (int)n_partials, 0, 0);
    adaptive_items(H, adaptive_width(L), host + 1, &n_partials);
    const char *what = "upload of csr/adaptive's work items";
    rc = spmv_cuda_status(cudaMemcpyAsync(aux, host, bytes, cudaMemcpyHostToDevice, s), what, err);
    if (!rc && n_partials > 0)
        rc = spmv_cuda_status(
            cudaMemsetAsync((char *)aux + bytes + 8 * n_partials, 0, 4 * (size_t)n_partials, s),
            what, err);
    if (!rc) rc = spmv_cuda_status(cudaStreamSynchronize(s), what, err); /* before host goes */
    free(host);
    return rc;
}

/* A stream item's loads a thread has in flight: all of its entries at once where it has 8 (ept 8,
 * bs <= 512) and the values are float as they are, so that its x gathers wait on one round of
 * index loads instead of two; ADAPTIVE_BATCH otherwise.  On 16 scaled real matrices of
 * 1.1e6-1.4e7 entries (the H200, 2026-12-01, docs/results/gpu.md), one round ran float32 products
 * a median 1.04 times as fast (42 configurations: 0.96-1.23) and float64 ones 0.99 times, where 8
 * doubles and their indices pass the 32 registers a thread has at full occupancy (ptxas spills
 * them, as it does a table's 8-bit indices at 8). */
static bool adaptive_one_round(const spmv_launch *L) { return adaptive_width(L) / L->block >= 8; }

template <typename T>
static cudaError_t adaptive_run(const spmv_dfmt *D, const spmv_launch *L, const void *aux,
                                const T *x, T *y, cudaStream_t s) {
    int32_t w = adaptive_width(L);
    const unsigned g = spmv_cuda_blocks((int64_t)D->nrows + D->nnz, w);
    const size_t sh = (size_t)w * sizeof(T);
    spmv_by_vals(D->param[1], [&](auto vb) {
        constexpr int VB = decltype(vb)::value;
        auto go = [&](auto nb) {
            csr_adaptive_kernel<T, VB, decltype(nb)::value>
                <<<g, L->block, sh, s>>>((const int32_t *)aux, w, D->idx[0], D->idx[1],
                                         (const T *)D->val[0], D->idx[3], x, y);
        };
        if constexpr (std::is_same<T, float>::value && VB == 0)
            if (adaptive_one_round(L)) return go(std::integral_constant<int, 8>());
        go(std::integral_constant<int, ADAPTIVE_BATCH>());
    });
    return cudaGetLastError();
}

/* ---- merge ----------------------------------------------------------------------------------- */

/* The merge path of the rows' ends (indptr[1..nrows]) and the entries 0 .. nnz-1: tile b is items
 * [b MERGE_TILE, (b+1) MERGE_TILE) of it, whatever rows they fall in.  A row end is taken before
 * entry k when it is <= k.  The rows taken before diagonal d (the first d items): the least i with
 * end[i] > d - 1 - i, found by bisection; entries taken are d - i. */
#define MERGE_TILE 2048

__host__ __device__ __forceinline__ int64_t merge_tiles(int64_t nrows, int64_t nnz) {
    int64_t n = (nrows + nnz + MERGE_TILE - 1) / MERGE_TILE;
    return n > 0 ? n : 1;
}

__device__ __forceinline__ int64_t merge_search(int64_t d, const int32_t *end, int64_t n,
                                                int64_t nnz) {
    int64_t lo = d > nnz ? d - nnz : 0, hi = d < n ? d : n;
    while (lo < hi) {
        int64_t mid = (lo + hi) >> 1;
        if ((int64_t)end[mid] <= d - 1 - mid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Workspace: COO's ticket and carries (kernels/ell_coo.cuh) for nb tiles, then the rows taken
 * before each tile's start, tile_row[nb + 1] (int32), found once at setup. */
__host__ __device__ __forceinline__ int64_t merge_rows_offset(int64_t nb) {
    return coo_carry_sum_offset(nb) + 8 * nb;
}

__global__ void merge_search_kernel(int32_t nrows, int64_t nnz, int64_t nb,
                                    const int32_t *__restrict__ ptr, int32_t *__restrict__ rows) {
    for (int64_t b = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; b <= nb;
         b += (int64_t)gridDim.x * blockDim.x) {
        int64_t d = b * MERGE_TILE < nrows + nnz ? b * MERGE_TILE : nrows + nnz;
        rows[b] = (int32_t)merge_search(d, ptr + 1, nrows, nnz);
    }
}

/* Tile blockIdx.x: its row ends and its entries' products into shared memory (coalesced), then
 * thread t walks the merge path from its diagonal t * items, and COO's scan and carries
 * (kernels/ell_coo.cuh) join the rows split between threads and between tiles: one launch,
 * deterministic.  Every row end is an item, so an empty row costs as much as an entry and no
 * thread waits on a long row. */
template <typename T>
__global__ void __launch_bounds__(1024, 2) /* 32 registers: a full SM at any block size */
    csr_merge_kernel(int32_t nrows, int64_t nnz, const int32_t *__restrict__ ptr,
                     const int32_t *__restrict__ col, const T *__restrict__ val,
                     const T *__restrict__ x, T *__restrict__ y, void *aux) {
    extern __shared__ __align__(16) unsigned char merge_smem[];
    __shared__ coo_scan_smem<T> sm;
    __shared__ int last;
    const int tid = threadIdx.x, bs = blockDim.x, items = MERGE_TILE / bs;
    const int64_t nb = gridDim.x, b = blockIdx.x;
    const int32_t *tile_row = (const int32_t *)((const char *)aux + merge_rows_offset(nb));
    T *prod = (T *)merge_smem;
    int32_t *end = (int32_t *)(prod + coo_pad(MERGE_TILE));
    const int64_t total_items = (int64_t)nrows + nnz, d0 = b * MERGE_TILE;
    const int64_t d1 = d0 + MERGE_TILE < total_items ? d0 + MERGE_TILE : total_items;
    const int32_t r0 = __ldg(tile_row + b), r1 = __ldg(tile_row + b + 1);
    const int64_t k0 = d0 - r0;
    const int nr = r1 - r0, nk = (int)(d1 - r1 - k0);
    for (int i = tid; i < nr; i += bs) end[coo_pad(i)] = __ldg(ptr + r0 + 1 + i);
    coo_stream<T, false>(nullptr, col, val, x, k0, nk, items, prod, nullptr);
    __syncthreads();
    /* this thread's start on the tile's own path: rows i taken, entries j */
    const int dt = min(tid * items, nr + nk);
    int lo = dt > nk ? dt - nk : 0, hi = dt < nr ? dt : nr;
    while (lo < hi) {
        int mid = (lo + hi) >> 1;
        if (end[coo_pad(mid)] - k0 <= dt - 1 - mid)
            lo = mid + 1;
        else
            hi = mid;
    }
    int i = lo, j = dt - lo, ended = 0;
    const int stop = min(dt + items, nr + nk);
    int32_t first = -1;
    T s0 = 0, s = 0;
    for (int it = dt; it < stop; it++) {
        if (i < nr && end[coo_pad(i)] - k0 <= j) { /* row r0 + i ends */
            if (!ended) {
                first = r0 + i;
                s0 = s;
                ended = 1;
            } else {
                y[r0 + i] = s;
            }
            s = 0;
            i++;
        } else {
            s += prod[coo_pad(j)];
            j++;
        }
    }
    T total, cin = block_seg_scan(ended, s, &total, sm);
    if (ended) y[first] = cin + s0;
    if (nb == 1) return;
    unsigned *ticket = (unsigned *)aux;
    int32_t *crow = (int32_t *)((char *)aux + COO_AUX_ALIGN);
    T *csum = (T *)((char *)aux + coo_carry_sum_offset(nb));
    if (tid == 0) { /* the row open at the tile's end, if any of it is here */
        crow[b] = r1 < nrows ? r1 : -1;
        csum[b] = total;
    }
    __syncthreads();
    if (tid == 0) {
        __threadfence();
        last = atomicAdd(ticket, 1u) == nb - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    coo_fixup(crow, csum, (int)nb, y, sm);
    if (tid == 0) *ticket = 0;
}

static int merge_prepare(const spmv_fmt *H, const spmv_launch *L, int64_t *aux_bytes,
                         spmv_err *err) {
    *aux_bytes = 0;
    int rc = check_vals(H, 0, "csr/merge", err);
    if (!rc) rc = coo_check_block(L, "pyspmv/csr/merge", err);
    if (!rc && MERGE_TILE % L->block != 0)
        rc =
            spmv_cuda_fail(err, SPMV_EINVAL,
                           "The 'bs' parameter of pyspmv/csr/merge must divide %d. Got %d instead.",
                           MERGE_TILE, (int)L->block);
    if (!rc)
        *aux_bytes = merge_rows_offset(merge_tiles(H->nrows, H->nnz)) +
                     4 * (merge_tiles(H->nrows, H->nnz) + 1);
    return rc;
}

static int merge_setup(const spmv_fmt *H, const spmv_dfmt *D, const spmv_launch *L, void *aux,
                       cudaStream_t s, spmv_err *err) {
    (void)L;
    int64_t nb = merge_tiles(H->nrows, H->nnz);
    const char *what = "csr/merge's search for its tiles' starts";
    int rc = spmv_cuda_status(cudaMemsetAsync(aux, 0, sizeof(unsigned), s), what, err);
    if (rc) return rc;
    merge_search_kernel<<<spmv_cuda_blocks(nb + 1, 256), 256, 0, s>>>(
        D->nrows, D->nnz, nb, D->idx[0], (int32_t *)((char *)aux + merge_rows_offset(nb)));
    return spmv_cuda_status(cudaGetLastError(), what, err);
}

template <typename T>
static cudaError_t merge_run(const spmv_dfmt *D, const spmv_launch *L, const void *aux, const T *x,
                             T *y, cudaStream_t s) {
    size_t smem = (size_t)coo_pad(MERGE_TILE) * (sizeof(T) + sizeof(int32_t));
    csr_merge_kernel<T><<<(unsigned)merge_tiles(D->nrows, D->nnz), L->block, smem, s>>>(
        D->nrows, D->nnz, D->idx[0], D->idx[1], (const T *)D->val[0], x, y,
        const_cast<void *>(aux));
    return cudaGetLastError();
}

SPMV_CUDA_KERNEL_DOT(csr_scalar, scalar_prepare, NULL, scalar_launch, scalar_blocks);
SPMV_CUDA_KERNEL_DOT(csr_vector, vector_prepare, NULL, vector_launch_any, vector_blocks);
SPMV_CUDA_KERNEL_HOST_ROWS(csr_adaptive, adaptive_prepare, adaptive_setup, adaptive_run);
SPMV_CUDA_KERNEL(csr_merge, merge_prepare, merge_setup, merge_run);
SPMV_CUDA_KERNEL(csr_wide, wide_prepare, NULL, wide_run);

/* ---- Device conversion from a resident CSR (kernels/convert.cu dispatches) ---- */

// Device conversion to CSR — a copy of the resident CSR's arrays, with vals = 8 or 16 the values as
// a table (kernels/convert.cu's spmv_conv_vtab) and each entry's index found by a binary search
//
// Layout: csrc/csr.c (idx[0] = indptr, idx[1] = indices, val[0] = values or the table, idx[3] the
// index words); no scalars.  The locality order (order=1) is converted on the host.
#include "convert.cuh"

/* The three arrays in one pass (one launch, not three copies); values as words of their size, or
 * (VB 8 or 16) their indices in tab[ntab]. */
template <typename W, int VB>
__global__ void csr_copy_kernel(int64_t n1, int64_t nnz, const int32_t *__restrict__ ptr,
                                const int32_t *__restrict__ col, const W *__restrict__ val,
                                int32_t *__restrict__ optr, int32_t *__restrict__ ocol,
                                W *__restrict__ oval, const W *__restrict__ tab, int32_t ntab,
                                void *__restrict__ vix) {
    int64_t work = n1 > nnz ? n1 : nnz;
    SPMV_CONV_LOOP(i, work) {
        if (i < n1) optr[i] = ptr[i];
        if (i >= nnz) continue;
        ocol[i] = col[i];
        if constexpr (VB == 0)
            oval[i] = val[i];
        else
            spmv_conv_vtab_put<VB>(tab, ntab, val[i], vix, i);
    }
}

template <typename W>
static int csr_copy(spmv_conv *C, int32_t vals, const void *tab, int32_t ntab, spmv_err *err) {
    int64_t n = C->nrows, nnz = C->nnz;
    unsigned g = spmv_conv_grid(n + 1 > nnz ? n + 1 : nnz, 256);
    int32_t *optr = (int32_t *)C->dev[0], *ocol = (int32_t *)C->dev[1];
    const W *val = (const W *)C->val, *t = (const W *)tab;
    W *oval = (W *)C->dev[SPMV_MAXIDX];
    spmv_by_vals(vals, [&](auto vb) {
        csr_copy_kernel<W, decltype(vb)::value><<<g, 256, 0, C->s>>>(
            n + 1, nnz, C->ptr, C->col, val, optr, ocol, oval, t, ntab, C->dev[3]);
    });
    return spmv_conv_launched("device copy of the CSR arrays", err);
}

int spmv_conv_csr(spmv_conv *C, spmv_err *err) {
    int64_t n = C->nrows, nnz = C->nnz, ntab, nwords;
    int32_t vals = C->D.param[1];
    spmv_err perr;
    int rc = spmv_vtab_size("csr", vals, nnz, 0, &ntab, &nwords, &perr);
    if (rc) return spmv_conv_param_fail(C, rc, &perr, err);
    rc = spmv_conv_out(C, 0, 0, n + 1, "CSR indptr", err);
    if (!rc) rc = spmv_conv_out(C, 0, 1, nnz, "CSR indices", err);
    if (!rc && vals) rc = spmv_conv_out(C, 0, 3, nwords, "CSR value indices", err);
    if (!rc) rc = spmv_conv_out(C, 1, 0, ntab, vals ? "CSR value table" : "CSR values", err);
    const void *tab = nullptr;
    int32_t nt = 0;
    /* with a table, the common pass's refusals (an unsorted row) first, as the host's order */
    if (!rc && vals) rc = spmv_conv_read(C, nullptr, 0, err);
    if (!rc && vals && nnz > 0) rc = spmv_conv_vtab(C, vals, "csr", &tab, &nt, err);
    if (rc) return rc;
    return C->elem_size == 4 ? csr_copy<uint32_t>(C, vals, tab, nt, err)
                             : csr_copy<unsigned long long>(C, vals, tab, nt, err);
}
