// kernels/ell_coo.cuh: device code shared by ell.cu, coo.cu and hyb.cu — the ELL row kernel and the
// deterministic COO segmented reduction
// SPDX-License-Identifier: BSD-3-Clause
//
// ELL (ell_row_kernel): thread i sums row i.  Slot k of row i sits at k*nrows + i, so a warp reads
// 32 consecutive words of each array per slot.  A row stops at its first padding slot (padding only
// follows a row's entries), checked once per group of ELL_UNROLL slots so that a group's loads are in
// flight together; values are loaded only for real entries, so a warp whose rows have all ended
// fetches nothing more.
//
// COO (coo_tile_kernel): thread block b takes the entries [b tile, (b+1) tile) (tile = about
// COO_TILE, a whole number of entries per thread).  It streams them coalesced (thread t takes
// entries t, t + bs, ...), multiplied by x, into shared memory; then thread t walks its own
// consecutive run of `items` of them in order.  A row that ends inside the run and began inside it
// is complete and written at once; the run's first row is written after a block-wide segmented scan
// has supplied what earlier threads of the block summed of it.  A row still open at the end of the
// tile is handed on as the block's carry (row, partial sum); the last block to finish (a ticket
// counter in the workspace, the CUDA threadFenceReduction pattern) adds the carries, combined in
// a fixed order by the same scan, to the rows they continue.  So every row is written once and
// completed at most once, in an order fixed by the matrix and bs: deterministic, no float atomics,
// one launch.  Rows without entries lie between two consecutive entries' rows (or before the first,
// or after the last): the thread that sees the gap zeroes it, and long gaps are zeroed by the whole
// block, so y needs no memset.  In `ADD` mode (HYB's COO part) y already holds the ELL part: rows
// are added to, and gaps left alone.
#ifndef SPMV_ELL_COO_CUH
#define SPMV_ELL_COO_CUH

#include <cstdint>

#include "kern.h"

/* ELL slots per padding check: four loads of each array in flight per thread.
 * TODO: untuned on the H100 (4 vs 8). */
#define ELL_UNROLL 4
/* Entries per COO thread block: 24.5 KB of shared memory in double, under the 48 KB a block gets
 * without opting in, and few enough carries for one block to combine (nnz / 2048 of them). */
#define COO_TILE 2048
/* Entries in flight per thread while a COO tile streams in.  8 measured slower on the H100 (more
 * registers, fewer resident blocks: the kernel fits in 32 registers with 4).  TODO: tune further. */
#define COO_UNROLL 4
/* A gap of more empty rows than this is zeroed by the whole block, at most COO_GAPS per block (the
 * rest by their threads: many gaps in one tile are spread over its threads anyway). */
#define COO_GAP_SERIAL 64
#define COO_GAPS 64

/* ---- ELL ------------------------------------------------------------------------------------- */

template <typename T>
__device__ __forceinline__ T ell_row(const int32_t *__restrict__ col, const T *__restrict__ val,
                                     int64_t nrows, int32_t w, int64_t i, const T *__restrict__ x) {
    T sum = 0;
    int64_t slot = i;
    for (int32_t k = 0; k < w; k += ELL_UNROLL) {
        int32_t c[ELL_UNROLL];
        T v[ELL_UNROLL];
#pragma unroll
        for (int u = 0; u < ELL_UNROLL; u++) c[u] = u < w - k ? __ldcs(col + slot + u * nrows) : -1;
#pragma unroll
        for (int u = 0; u < ELL_UNROLL; u++)
            v[u] = c[u] >= 0 ? __ldcs(val + slot + u * nrows) : T(0);
#pragma unroll
        for (int u = 0; u < ELL_UNROLL; u++)
            if (c[u] >= 0) sum += v[u] * __ldg(x + c[u]);
        if (c[ELL_UNROLL - 1] < 0) break; /* padding or past w: done, and k += never overflows */
        slot += ELL_UNROLL * nrows;
    }
    return sum;
}

template <typename T>
__global__ void __launch_bounds__(1024)
    ell_row_kernel(const int32_t *__restrict__ col, const T *__restrict__ val, int32_t nrows,
                   int32_t w, const T *__restrict__ x, T *__restrict__ y) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < nrows) y[i] = ell_row(col, val, (int64_t)nrows, w, i, x);
}

/* y[0, nrows) = the ELL part (col, val) of width w; w = 0 writes zeros. */
template <typename T>
static void ell_launch(const int32_t *col, const T *val, int32_t nrows, int32_t w, const T *x, T *y,
                       int block, cudaStream_t s) {
    ell_row_kernel<T><<<spmv_cuda_blocks(nrows, block), block, 0, s>>>(col, val, nrows, w, x, y);
}

/* ---- COO: block-wide segmented scan ---------------------------------------------------------- */

/* A scan operand is (f, v): f = a row ended within, v = the sum after the last such end.
 * (f1, v1) then (f2, v2) is (f1 | f2, f2 ? v2 : v1 + v2). */
template <typename T> struct coo_scan_smem {
    int f[32];
    T v[32];
    T total;
};

template <typename T>
__device__ __forceinline__ void warp_seg_scan(int &f, T &v) { /* inclusive, in place */
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
        T v2 = __shfl_up_sync(0xffffffffu, v, d);
        int f2 = __shfl_up_sync(0xffffffffu, f, d);
        if (lane >= d) {
            if (!f) v = v2 + v;
            f |= f2;
        }
    }
}

/* Returns the sum entering this thread from earlier threads (the open row it starts inside);
 * *total = the block's open sum after its last row end.  Begins and ends with __syncthreads(). */
template <typename T> __device__ T block_seg_scan(int f, T v, T *total, coo_scan_smem<T> &sm) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    warp_seg_scan(f, v);
    T ve = __shfl_up_sync(0xffffffffu, v, 1); /* lane-exclusive */
    int fe = __shfl_up_sync(0xffffffffu, f, 1);
    __syncthreads();
    if (lane == 31) {
        sm.f[warp] = f;
        sm.v[warp] = v;
    }
    __syncthreads();
    if (warp == 0) {
        int wf = lane < nw ? sm.f[lane] : 0;
        T wv = lane < nw ? sm.v[lane] : T(0);
        warp_seg_scan(wf, wv);
        T pe = __shfl_up_sync(0xffffffffu, wv, 1);
        if (lane < nw) sm.v[lane] = lane ? pe : T(0); /* warp's exclusive prefix */
        if (lane == 31) sm.total = wv;
    }
    __syncthreads();
    *total = sm.total;
    T wp = sm.v[warp];
    return lane == 0 ? wp : fe ? ve : wp + ve;
}

/* ---- COO: the tile kernel -------------------------------------------------------------------- */

/* Entries per thread and per block for block size bs (host and device agree through these). */
__host__ __device__ __forceinline__ int coo_items(int bs) {
    return bs >= COO_TILE ? 1 : COO_TILE / bs;
}
__host__ __device__ __forceinline__ int coo_tile(int bs) { return coo_items(bs) * bs; }
/* Shared-memory position of tile entry k: one word of padding per 32 keeps thread t's walk over
 * entries t*items, t*items + 1, ... free of bank conflicts (for 4-byte words). */
__host__ __device__ __forceinline__ int coo_pad(int k) { return k + (k >> 5); }

/* Dynamic shared memory: products (T) then rows (int32, one more: the row after the tile). */
template <typename T> static size_t coo_smem_bytes(int bs) {
    int p = coo_pad(coo_tile(bs));
    return (size_t)p * sizeof(T) + (size_t)(p + 1) * sizeof(int32_t);
}

/* Workspace of a COO part of nnz entries: a ticket counter, then per block a carry row (int32) and
 * a carry sum (sized for double, whichever type runs).  None when one block does all. */
#define COO_AUX_ALIGN 256
static inline int64_t coo_nblocks(int64_t nnz, int bs) {
    return spmv_cuda_blocks(nnz, coo_tile(bs));
}
__host__ __device__ __forceinline__ int64_t coo_carry_sum_offset(int64_t nb) {
    return COO_AUX_ALIGN + (nb * 4 + COO_AUX_ALIGN - 1) / COO_AUX_ALIGN * COO_AUX_ALIGN;
}
static inline int64_t coo_aux_bytes(int64_t nnz, int bs) {
    int64_t nb = coo_nblocks(nnz, bs);
    return nb > 1 ? coo_carry_sum_offset(nb) + nb * (int64_t)sizeof(double) : 0;
}

/* Block sizes the COO kernels take: whole warps, at most 32 of them (the scan's limit). */
static inline int coo_check_block(const spmv_launch *L, const char *kernel, spmv_err *err) {
    if (L->block < 32 || L->block > 1024 || L->block % 32 != 0)
        return spmv_cuda_fail(
            err, SPMV_EINVAL,
            "The 'bs' parameter of %s must be a multiple of 32 in [32, 1024]. Got "
            "%d instead.",
            kernel, (int)L->block);
    return SPMV_OK;
}

/* The ticket counter starts at 0; the last block of every run puts it back. */
static inline int coo_aux_setup(int64_t nnz, const spmv_launch *L, void *aux, cudaStream_t s,
                                const char *what, spmv_err *err) {
    if (coo_aux_bytes(nnz, L->block) == 0) return SPMV_OK;
    return spmv_cuda_status(cudaMemsetAsync(aux, 0, sizeof(unsigned), s), what, err);
}

/* The last block: add the carries [0, nb) to the rows they continue.  Thread t combines a
 * contiguous run of carries, then the block scan joins runs of one row across threads.  A carry's
 * row is -1 where its block ended on a row end; -2 stands for the row after the last carry. */
template <typename T>
__device__ void coo_fixup(const int32_t *crow, const T *csum, int nb, T *y, coo_scan_smem<T> &sm) {
    int per = (nb + (int)blockDim.x - 1) / (int)blockDim.x;
    int k = min((int)threadIdx.x * per, nb), k1 = min(k + per, nb);
    int32_t r0 = -1, r = k < k1 ? __ldcg(crow + k) : -1;
    int ended = 0;
    T s0 = 0, s = 0;
    for (; k < k1; k++) {
        int32_t nx = k + 1 < nb ? __ldcg(crow + k + 1) : -2;
        s += __ldcg(csum + k);
        if (nx != r) {
            if (!ended) {
                r0 = r;
                s0 = s;
                ended = 1;
            } else if (r >= 0) {
                y[r] = __ldcg(y + r) + s;
            }
            s = 0;
        }
        r = nx;
    }
    T total, cin = block_seg_scan(ended, s, &total, sm);
    if (ended && r0 >= 0) y[r0] = __ldcg(y + r0) + (cin + s0);
}

/* Entries [base, base + n) of (col, val) times x into prod[coo_pad(k)], streamed coalesced (thread t
 * takes entries t, t + bs, ..., `items` of them, COO_UNROLL loads in flight); with ROWS, their rows
 * into srow[coo_pad(k)] too.  CSR's merge kernel (kernels/csr.cu) streams its tiles so, without. */
template <typename T, bool ROWS>
__device__ __forceinline__ void coo_stream(const int32_t *__restrict__ row,
                                           const int32_t *__restrict__ col,
                                           const T *__restrict__ val, const T *__restrict__ x,
                                           int64_t base, int n, int items, T *prod, int32_t *srow) {
    const int bs = blockDim.x, tid = threadIdx.x;
    for (int j = 0; j < items; j += COO_UNROLL) {
        int32_t c[COO_UNROLL];
        T v[COO_UNROLL];
#pragma unroll
        for (int u = 0; u < COO_UNROLL; u++) {
            int k = (j + u) * bs + tid; /* k < n implies j+u < items */
            if (ROWS && k < n) srow[coo_pad(k)] = __ldcs(row + base + k);
            c[u] = k < n ? __ldcs(col + base + k) : 0;
            v[u] = k < n ? __ldcs(val + base + k) : T(0);
        }
#pragma unroll
        for (int u = 0; u < COO_UNROLL; u++) {
            int k = (j + u) * bs + tid;
            if (k < n) prod[coo_pad(k)] = v[u] * __ldg(x + c[u]);
        }
    }
}

template <typename T, bool ADD> __device__ __forceinline__ void coo_put(T *y, int32_t r, T s) {
    if (ADD)
        y[r] = __ldcg(y + r) + s;
    else
        y[r] = s;
}

template <typename T, bool ADD>
__global__ void __launch_bounds__(1024)
    coo_tile_kernel(const int32_t *__restrict__ row, const int32_t *__restrict__ col,
                    const T *__restrict__ val, int64_t nnz, int32_t nrows, const T *__restrict__ x,
                    T *__restrict__ y, void *aux) {
    extern __shared__ __align__(16) unsigned char coo_smem[];
    __shared__ coo_scan_smem<T> sm;
    __shared__ int2 gaps[COO_GAPS];
    __shared__ int ngaps, last;
    const int tid = threadIdx.x, bs = blockDim.x, items = coo_items(bs), tile = items * bs;
    T *sval = (T *)coo_smem;
    int32_t *srow = (int32_t *)(sval + coo_pad(tile));
    const int64_t base = (int64_t)blockIdx.x * tile;
    const int n = (int)min((int64_t)tile, nnz - base); /* 0 only when nnz is */

    if (tid == 0) {
        ngaps = 0;
        srow[coo_pad(n)] = base + n < nnz ? __ldcs(row + base + n) : nrows; /* nrows: the end */
    }
    coo_stream<T, true>(row, col, val, x, base, n, items, sval, srow);
    __syncthreads();

    /* Zero rows [a, b): here if few, else queue them for the whole block. */
    auto gap = [&](int32_t a, int32_t b) {
        if (b - a > COO_GAP_SERIAL) {
            int g = atomicAdd(&ngaps, 1);
            if (g < COO_GAPS) {
                gaps[g] = make_int2(a, b);
                return;
            }
        }
        for (int32_t i = a; i < b; i++) y[i] = T(0);
    };
    if (!ADD && blockIdx.x == 0 && tid == 0) gap(0, srow[coo_pad(0)]); /* before the first entry */

    int k = min(tid * items, n), k1 = min(k + items, n);
    int32_t r0 = -1, r = k < k1 ? srow[coo_pad(k)] : -1;
    int ended = 0;
    T s0 = 0, s = 0;
    for (; k < k1; k++) {
        int32_t nx = srow[coo_pad(k + 1)];
        s += sval[coo_pad(k)];
        if (nx != r) { /* row r ends at entry k */
            if (!ended) {
                r0 = r;
                s0 = s;
                ended = 1;
            } else {
                coo_put<T, ADD>(y, r, s);
            }
            s = 0;
            if (!ADD) gap(r + 1, nx);
        }
        r = nx;
    }
    T total, cin = block_seg_scan(ended, s, &total, sm); /* also publishes gaps[] */
    if (ended) coo_put<T, ADD>(y, r0, cin + s0);
    if (!ADD)
        for (int g = 0; g < min(ngaps, COO_GAPS); g++)
            for (int64_t i = gaps[g].x + tid; i < gaps[g].y; i += bs) y[i] = T(0);
    if (gridDim.x == 1) return;

    unsigned *ticket = (unsigned *)aux;
    int32_t *crow = (int32_t *)((char *)aux + COO_AUX_ALIGN);
    T *csum = (T *)((char *)aux + coo_carry_sum_offset(gridDim.x));
    if (tid == 0) { /* n >= 1 with several blocks */
        bool open = srow[coo_pad(n)] == srow[coo_pad(n - 1)];
        crow[blockIdx.x] = open ? srow[coo_pad(n - 1)] : -1;
        csum[blockIdx.x] = open ? total : T(0);
    }
    __syncthreads(); /* the block's writes of y and its carry, then thread 0 releases */
    if (tid == 0) {
        __threadfence();
        last = atomicAdd(ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    coo_fixup(crow, csum, (int)gridDim.x, y, sm);
    if (tid == 0) *ticket = 0;
}

/* y = (ADD ? y : 0) + the COO part (row, col, val) of nnz entries, one launch. */
template <typename T, bool ADD>
static void coo_launch(const int32_t *row, const int32_t *col, const T *val, int64_t nnz,
                       int32_t nrows, const T *x, T *y, const void *aux, int bs, cudaStream_t s) {
    coo_tile_kernel<T, ADD><<<(unsigned)coo_nblocks(nnz, bs), bs, coo_smem_bytes<T>(bs), s>>>(
        row, col, val, nnz, nrows, x, y, const_cast<void *>(aux));
}

#endif /* SPMV_ELL_COO_CUH */
