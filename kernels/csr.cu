// kernels/csr.cu: CSR on the GPU — scalar (a thread per row), vector (TPV threads per row), adaptive
// (precomputed row blocks, one per thread block)
// SPDX-License-Identifier: BSD-3-Clause
//
// scalar: thread i sums row i.  Its loads are not coalesced (neighbours read different rows), which
// only pays off when rows are so short that a row is about one word of each array.
// vector (CUSP's csr_vector): TPV consecutive lanes share a row and stride over it, so they read
// TPV consecutive words of indices and values; warp shuffles within the group reduce, lane 0 writes.
// adaptive (CSR-Adaptive, Greathouse & Daga, SC14, deterministic): the host cuts the rows into row
// blocks, one per thread block.  A block whose entries fit in shared memory streams them there
// coalesced (thread t takes entries t, t + bs, ...), multiplied by x, then reduces each row from
// shared memory with a power-of-two group of threads per row (CSR-stream).  A row too long for that
// is reduced by the whole block (CSR-vector over the block), however long: one block, never atomics.
// Every sum runs in an order fixed by the matrix and the block size, so all three are deterministic.
#include <cstdlib>

#include "kern.h"

/* Shared-memory entries per thread of an adaptive block: bs * 4 doubles is 32 KB at bs = 1024, under
 * the 48 KB a block gets without opting in, and 64 KB an SM at full occupancy (2048 threads), which
 * leaves room for a third or fourth resident block.  Four loads in flight per thread are about what
 * an SM needs to cover HBM latency.  TODO: untuned (4 vs 8 with the opt-in) on the H100. */
#define ADAPTIVE_K 4
/* Loads in flight per thread on a long row, which one block streams alone. */
#define LONG_ROW_BATCH 4

/* The lanes of this thread's aligned group of w (a power of two <= 32) within its warp. */
__device__ __forceinline__ unsigned group_mask(int w) {
    return w == 32 ? 0xffffffffu : ((1u << w) - 1u) << ((threadIdx.x & 31) & ~(w - 1));
}

/* Sum over the w lanes of a group; lane 0 of the group gets the total, in a fixed tree order. */
template <typename T>
__device__ __forceinline__ T group_sum(T s, int w, unsigned mask) {
    for (int o = w / 2; o > 0; o /= 2) s += __shfl_down_sync(mask, s, o, w);
    return s;
}

/* ---- scalar ---------------------------------------------------------------------------------- */

template <typename T>
__global__ void __launch_bounds__(1024)
    csr_scalar_kernel(int32_t nrows, const int32_t *__restrict__ ptr,
                      const int32_t *__restrict__ col, const T *__restrict__ val,
                      const T *__restrict__ x, T *__restrict__ y) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nrows) return;
    int32_t end = __ldg(ptr + i + 1);
    T sum = 0;
    for (int32_t p = __ldg(ptr + i); p < end; p++) sum += __ldg(val + p) * __ldg(x + __ldg(col + p));
    y[i] = sum;
}

template <typename T>
static cudaError_t scalar_run(const spmv_dfmt *D, const spmv_launch *L, const T *x, T *y,
                              cudaStream_t s) {
    csr_scalar_kernel<T><<<spmv_cuda_blocks(D->nrows, L->block), L->block, 0, s>>>(
        D->nrows, D->idx[0], D->idx[1], (const T *)D->val[0], x, y);
    return cudaGetLastError();
}

/* ---- vector ---------------------------------------------------------------------------------- */

template <typename T, int TPV>
__global__ void __launch_bounds__(1024)
    csr_vector_kernel(int32_t nrows, const int32_t *__restrict__ ptr,
                      const int32_t *__restrict__ col, const T *__restrict__ val,
                      const T *__restrict__ x, T *__restrict__ y) {
    int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, row = t / TPV;
    if (row >= nrows) return;                      /* the whole group leaves: its mask stays whole */
    int lane = (int)(t & (TPV - 1));
    int32_t end = __ldg(ptr + row + 1);
    T sum = 0;
    for (int64_t p = __ldg(ptr + row) + lane; p < end; p += TPV) /* int64: end may near 2^31 */
        sum += __ldcs(val + p) * __ldg(x + __ldcs(col + p));
    sum = group_sum(sum, TPV, group_mask(TPV));
    if (lane == 0) y[row] = sum;
}

template <typename T, int TPV>
static void vector_launch(const spmv_dfmt *D, const spmv_launch *L, const T *x, T *y,
                          cudaStream_t s) {
    csr_vector_kernel<T, TPV><<<spmv_cuda_blocks((int64_t)D->nrows * TPV, L->block), L->block, 0, s>>>(
        D->nrows, D->idx[0], D->idx[1], (const T *)D->val[0], x, y);
}

template <typename T>
static cudaError_t vector_run(const spmv_dfmt *D, const spmv_launch *L, const T *x, T *y,
                              cudaStream_t s) {
    switch (L->tpv) {
    case 2: vector_launch<T, 2>(D, L, x, y, s); break;
    case 4: vector_launch<T, 4>(D, L, x, y, s); break;
    case 8: vector_launch<T, 8>(D, L, x, y, s); break;
    case 16: vector_launch<T, 16>(D, L, x, y, s); break;
    case 32: vector_launch<T, 32>(D, L, x, y, s); break;
    default: return cudaErrorInvalidValue;        /* prepare refused it */
    }
    return cudaGetLastError();
}

/* Block sizes every kernel here can take: whole warps, at most 32 of them. */
static int check_block(const spmv_launch *L, const char *kernel, spmv_err *err) {
    if (L->block < 32 || L->block > 1024 || L->block % 32 != 0)
        return spmv_cuda_fail(err, SPMV_EINVAL,
                              "The 'bs' parameter of %s must be a multiple of 32 in [32, 1024]. Got "
                              "%d instead.", kernel, (int)L->block);
    return SPMV_OK;
}

static int vector_prepare(const spmv_fmt *H, const spmv_launch *L, int64_t *aux_bytes,
                          spmv_err *err) {
    (void)H;
    *aux_bytes = 0;
    int32_t v = L->tpv;
    if (v != 2 && v != 4 && v != 8 && v != 16 && v != 32)
        return spmv_cuda_fail(err, SPMV_EINVAL,
                              "The 'tpv' parameter of csr/vector must be 2, 4, 8, 16 or 32. Got %d "
                              "instead.", (int)v);
    return check_block(L, "csr/vector", err);
}

/* ---- adaptive -------------------------------------------------------------------------------- */

/* Row blocks split the merge path of rows and entries (row i begins at coordinate i + indptr[i] and
 * takes 1 + its length) into pieces of w = bs * ADAPTIVE_K: block b owns the rows that begin in
 * [b w, (b+1) w).  A row costs at least one slot, so a block owns at most w rows, empty ones
 * included; all of its rows but the last hold fewer than w entries together, so they fit in shared
 * memory, and only a last row that does not fit needs the whole block.  The count depends on
 * nrows, nnz and bs alone, which lets run_* size the grid without reading the workspace.  Blocks
 * inside a long row own no row and leave at once. */
static int64_t adaptive_nblocks(int64_t nrows, int64_t nnz, int block) {
    int64_t w = (int64_t)block * ADAPTIVE_K;
    return (nrows + nnz + w - 1) / w;
}

/* Thread block b: rows [rb[b], rb[b+1]).  Dynamic shared memory: bs * ADAPTIVE_K values. */
template <typename T>
__global__ void __launch_bounds__(1024)
    csr_adaptive_kernel(const int32_t *__restrict__ rb, const int32_t *__restrict__ ptr,
                        const int32_t *__restrict__ col, const T *__restrict__ val,
                        const T *__restrict__ x, T *__restrict__ y) {
    extern __shared__ __align__(16) unsigned char smem[];
    T *prod = reinterpret_cast<T *>(smem);
    __shared__ T warp_part[32];
    const int bs = blockDim.x, tid = threadIdx.x;
    const int32_t r0 = __ldg(rb + blockIdx.x), r1 = __ldg(rb + blockIdx.x + 1);
    if (r0 == r1) return;
    const int32_t b0 = __ldg(ptr + r0);
    int32_t rs = r1, b1 = __ldg(ptr + r1);
    if (b1 - b0 > bs * ADAPTIVE_K) {                 /* the last row goes to the whole block */
        rs = r1 - 1;
        b1 = __ldg(ptr + rs);
    }
    const int32_t nr = rs - r0, n = b1 - b0;

    if (nr > 0) {
        /* CSR-stream.  Threads per row: the most, up to a warp, that gives every row a group. */
        int tpr = 1;
        while (tpr < 32 && 2 * tpr * nr <= bs) tpr *= 2;
        const int ng = bs / tpr, lane = tid & (tpr - 1);
        const unsigned mask = group_mask(tpr);
        int32_t r = r0 + tid / tpr, pa = 0, pb = 0;
        if (r < rs) pa = __ldg(ptr + r) - b0, pb = __ldg(ptr + r + 1) - b0; /* in flight with the stream */
        int32_t c[ADAPTIVE_K] = {0};
        T v[ADAPTIVE_K] = {0};
#pragma unroll
        for (int u = 0; u < ADAPTIVE_K; u++) {
            int32_t j = tid + u * bs;
            if (j < n) c[u] = __ldcs(col + b0 + j), v[u] = __ldcs(val + b0 + j);
        }
#pragma unroll
        for (int u = 0; u < ADAPTIVE_K; u++) {
            int32_t j = tid + u * bs;
            if (j < n) prod[j] = v[u] * __ldg(x + c[u]);
        }
        __syncthreads();
        for (; r < rs; r += ng) {                    /* a group's lanes share r: whole masks */
            T sum = 0;
            for (int32_t p = pa + lane; p < pb; p += tpr) sum += prod[p];
            sum = group_sum(sum, tpr, mask);
            if (lane == 0) y[r] = sum;
            if (r + ng < rs) pa = __ldg(ptr + r + ng) - b0, pb = __ldg(ptr + r + ng + 1) - b0;
        }
    }

    if (rs < r1) {
        /* CSR-vector over the block: coalesced strides of bs, LONG_ROW_BATCH loads in flight. */
        const int64_t end = __ldg(ptr + r1);
        int64_t p = (int64_t)b1 + tid;
        T sum = 0;
        for (; p + (int64_t)(LONG_ROW_BATCH - 1) * bs < end; p += (int64_t)LONG_ROW_BATCH * bs) {
            int32_t c[LONG_ROW_BATCH];
            T v[LONG_ROW_BATCH];
#pragma unroll
            for (int u = 0; u < LONG_ROW_BATCH; u++)
                c[u] = __ldcs(col + p + u * bs), v[u] = __ldcs(val + p + u * bs);
#pragma unroll
            for (int u = 0; u < LONG_ROW_BATCH; u++) sum += v[u] * __ldg(x + c[u]);
        }
        for (; p < end; p += bs) sum += __ldcs(val + p) * __ldg(x + __ldcs(col + p));
        sum = group_sum(sum, 32, 0xffffffffu);
        if ((tid & 31) == 0) warp_part[tid >> 5] = sum;
        __syncthreads();
        if (tid < 32) {
            sum = tid < bs / 32 ? warp_part[tid] : T(0);
            sum = group_sum(sum, 32, 0xffffffffu);
            if (tid == 0) y[rs] = sum;
        }
    }
}

static int adaptive_prepare(const spmv_fmt *H, const spmv_launch *L, int64_t *aux_bytes,
                            spmv_err *err) {
    *aux_bytes = 0;
    int rc = check_block(L, "csr/adaptive", err);
    if (rc) return rc;
    *aux_bytes = (adaptive_nblocks(H->nrows, H->nnz, L->block) + 1) * (int64_t)sizeof(int32_t);
    return SPMV_OK;
}

/* rb[b] = the first row beginning at or after coordinate b w: one pass over indptr. */
static int adaptive_setup(const spmv_fmt *H, const spmv_dfmt *D, const spmv_launch *L, void *aux,
                          cudaStream_t s, spmv_err *err) {
    (void)D;
    const int32_t *ptr = H->idx[0];
    int64_t nb = adaptive_nblocks(H->nrows, H->nnz, L->block), w = (int64_t)L->block * ADAPTIVE_K;
    size_t bytes = (size_t)(nb + 1) * sizeof(int32_t);
    int32_t *rb = (int32_t *)malloc(bytes);
    if (rb == NULL) {
        spmv_cuda_fail(err, SPMV_ENOMEM, "out of memory: csr/adaptive's row blocks need %zu bytes",
                       bytes);
        if (err) err->value = (int64_t)bytes;
        return SPMV_ENOMEM;
    }
    int32_t i = 0;
    for (int64_t b = 0; b < nb; b++) {
        while (i < H->nrows && i + (int64_t)ptr[i] < b * w) i++;
        rb[b] = i;
    }
    rb[nb] = H->nrows;
    /* the copy must be over before the host buffer goes */
    int rc = spmv_cuda_status(cudaMemcpyAsync(aux, rb, bytes, cudaMemcpyHostToDevice, s),
                              "upload of csr/adaptive's row blocks", err);
    if (!rc) rc = spmv_cuda_status(cudaStreamSynchronize(s), "upload of csr/adaptive's row blocks",
                                   err);
    free(rb);
    return rc;
}

template <typename T>
static cudaError_t adaptive_run(const spmv_dfmt *D, const spmv_launch *L, const void *aux,
                                const T *x, T *y, cudaStream_t s) {
    int64_t nb = adaptive_nblocks(D->nrows, D->nnz, L->block);
    size_t shared = (size_t)L->block * ADAPTIVE_K * sizeof(T);
    csr_adaptive_kernel<T><<<(unsigned)nb, L->block, shared, s>>>(
        (const int32_t *)aux, D->idx[0], D->idx[1], (const T *)D->val[0], x, y);
    return cudaGetLastError();
}

/* ---- the C face ------------------------------------------------------------------------------ */

static cudaError_t scalar_run_f32(const spmv_dfmt *D, const spmv_launch *L, const void *aux,
                                  const float *x, float *y, cudaStream_t s) {
    (void)aux;
    return scalar_run(D, L, x, y, s);
}

static cudaError_t scalar_run_f64(const spmv_dfmt *D, const spmv_launch *L, const void *aux,
                                  const double *x, double *y, cudaStream_t s) {
    (void)aux;
    return scalar_run(D, L, x, y, s);
}

static cudaError_t vector_run_f32(const spmv_dfmt *D, const spmv_launch *L, const void *aux,
                                  const float *x, float *y, cudaStream_t s) {
    (void)aux;
    return vector_run(D, L, x, y, s);
}

static cudaError_t vector_run_f64(const spmv_dfmt *D, const spmv_launch *L, const void *aux,
                                  const double *x, double *y, cudaStream_t s) {
    (void)aux;
    return vector_run(D, L, x, y, s);
}

static cudaError_t adaptive_run_f32(const spmv_dfmt *D, const spmv_launch *L, const void *aux,
                                    const float *x, float *y, cudaStream_t s) {
    return adaptive_run(D, L, aux, x, y, s);
}

static cudaError_t adaptive_run_f64(const spmv_dfmt *D, const spmv_launch *L, const void *aux,
                                    const double *x, double *y, cudaStream_t s) {
    return adaptive_run(D, L, aux, x, y, s);
}

extern "C" const spmv_cuda_kernel spmv_cu_csr_scalar = {
    SPMV_FMT_CSR, 0, NULL, NULL, scalar_run_f32, scalar_run_f64,
};

extern "C" const spmv_cuda_kernel spmv_cu_csr_vector = {
    SPMV_FMT_CSR, 1, vector_prepare, NULL, vector_run_f32, vector_run_f64,
};

extern "C" const spmv_cuda_kernel spmv_cu_csr_adaptive = {
    SPMV_FMT_CSR, 2, adaptive_prepare, adaptive_setup, adaptive_run_f32, adaptive_run_f64,
};
