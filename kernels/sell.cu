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

template <typename T, bool EVICT>
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
            c[u] = k + u < w ? spmv_ld<EVICT>(col + base + ((int64_t)(k + u) << lgc)) : -1;
#pragma unroll
        for (int u = 0; u < SELL_BATCH; u++)
            if (c[u] >= 0)
                sum += spmv_ld<EVICT>(val + base + ((int64_t)(k + u) << lgc)) * __ldg(x + c[u]);
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
    spmv_by_evict(L, [&](auto ev) {
        sell_slice_kernel<T, decltype(ev)::value>
            <<<spmv_cuda_blocks(D->nrows, L->block), L->block, 0, s>>>(
                D->nrows, spmv_cuda_log2(D->param[0]), D->idx[0], D->idx[1], D->idx[2],
                (const T *)D->val[0], x, y);
    });
    return cudaGetLastError();
}

SPMV_CUDA_KERNEL(sell, sell_prepare, NULL, sell_run);

/* ---- Device conversion from a resident CSR (kernels/convert.cu dispatches) ---- */

// Device conversion to SELL-C-sigma — a stable radix sort for the window order, a scan for the
// slice pointers, one thread per slot for the fill
//
// Layout: csrc/sell.c.  The host sorts rows by length, descending and stably, within each window
// of sigma rows (a counting sort per window).  Here a stable radix sort of (window, B - length)
// keys carrying the row numbers gives the same order: equal keys keep their rows' ascending
// order, as the counting sort does.  B is a bound on the longest row the host knows without
// waiting for the common pass (min(ncols, nnz): columns are distinct within a row, or the CSR is
// refused), so that the sizes come back in one read.  Windows of up to SELL_BLOCK_SORT rows (the
// registry's sigma) are sorted by one block each in shared memory (CUB's block radix sort, stable
// as well), which also writes each slice's width from its first row (the slices lie within the
// windows): one launch instead of a device-wide sort's several, its workspace and a widths pass.
// Otherwise a slice's width is the longest of its lanes (one warp per slice).  The widths' total
// is summed for the padding guard by the pass that writes them; the slice pointers are their
// exclusive sum, written as int32 (a total past int32 is refused before they are used), and each
// slot finds its slice by a binary search over the pointers.
#include "convert.cuh"
#include <cub/cub.cuh>

#define SELL_MAX_C 1024
#define SELL_MAX_SIGMA (1 << 20)

template <typename K>
__global__ void sell_keys_kernel(int32_t n, int32_t sigma, uint64_t bound,
                                 const int32_t *__restrict__ ptr, K *__restrict__ keys,
                                 int32_t *__restrict__ rows) {
    SPMV_CONV_LOOP(i, n) {
        uint64_t len = (uint64_t)(ptr[i + 1] - ptr[i]); /* <= bound unless refused */
        keys[i] = (K)((uint64_t)(i / sigma) * (bound + 1) + (bound - len));
        rows[i] = (int32_t)i;
    }
}

#define SELL_BLOCK_SORT 4096 /* 256 threads x 16 rows */

/* perm within each window of sigma <= 256 * ITEMS rows, one block per window: keys mask - length
 * (stable: equal keys keep ascending rows) carrying the row numbers, sorted over end_bit bits;
 * positions past the window's last row hold the largest key and so stay behind.  The slices lie
 * within windows (sigma is a multiple of c) and the first row of each holds its longest: w[s] = c *
 * that length, w[nslices] = 0, their total added to *total (as sell_width_kernel does). */
template <int ITEMS>
__global__ void __launch_bounds__(256)
    sell_window_sort_kernel(int32_t n, int32_t sigma, int32_t c, int64_t nslices, uint32_t mask,
                            int end_bit, const int32_t *__restrict__ ptr,
                            int32_t *__restrict__ perm, int64_t *__restrict__ w,
                            unsigned long long *total) {
    typedef cub::BlockRadixSort<uint32_t, 256, ITEMS, int32_t> Sort;
    __shared__ typename Sort::TempStorage tmp;
    int64_t nwin = ((int64_t)n + sigma - 1) / sigma;
    unsigned long long mine = 0;
    if (blockIdx.x == 0 && threadIdx.x == 0) w[nslices] = 0;
    for (int64_t win = blockIdx.x; win < nwin; win += gridDim.x) {
        int64_t base = win * sigma;
        int32_t size = (int32_t)((int64_t)n - base < sigma ? (int64_t)n - base : sigma);
        uint32_t keys[ITEMS];
        int32_t rows[ITEMS];
        for (int j = 0; j < ITEMS; j++) {
            int32_t r = (int32_t)threadIdx.x * ITEMS + j;
            keys[j] = mask;
            rows[j] = -1;
            if (r < size) {
                int64_t i = base + r;
                keys[j] = (mask - (uint32_t)(ptr[i + 1] - ptr[i])) & mask; /* len <= mask */
                rows[j] = (int32_t)i;
            }
        }
        Sort(tmp).Sort(keys, rows, 0, end_bit);
        for (int j = 0; j < ITEMS; j++) {
            int32_t r = (int32_t)threadIdx.x * ITEMS + j;
            if (r < size) perm[base + r] = rows[j];
            if (r < size && r % c == 0) { /* a slice's first row: its longest */
                int64_t wv = (int64_t)c * (int64_t)(mask - keys[j]);
                w[(base + r) / c] = wv;
                mine += (unsigned long long)wv;
            }
        }
        __syncthreads(); /* tmp is the next window's */
    }
    spmv_conv_block_add(total, mine);
}

/* w[s] = c * the longest row of slice s (one warp each), w[nslices] = 0 for the exclusive sum;
 * their total added to *total.  With ident, rows are in place: perm[r] = r written here. */
__global__ void sell_width_kernel(int32_t n, int32_t c, int64_t nslices, int ident,
                                  const int32_t *__restrict__ ptr, int32_t *__restrict__ perm,
                                  int64_t *__restrict__ w, unsigned long long *total) {
    int64_t warp = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x & 31;
    int64_t warps = (int64_t)gridDim.x * blockDim.x / 32;
    unsigned long long mine = 0;
    for (int64_t s = warp; s <= nslices; s += warps) {
        int32_t m = 0;
        for (int64_t r = s * c + lane; s < nslices && r < (s + 1) * c && r < n; r += 32) {
            int32_t i = ident ? (int32_t)r : perm[r];
            if (ident) perm[r] = i;
            m = max(m, ptr[i + 1] - ptr[i]);
        }
        m = spmv_conv_warp_max(m);
        if (lane == 0) w[s] = (int64_t)c * m, mine += (unsigned long long)c * (unsigned)m;
    }
    spmv_conv_block_add(total, mine);
}

template <typename T>
__global__ void sell_fill_kernel(int32_t n, int32_t lgc, int64_t nslices, int64_t slots,
                                 const int32_t *__restrict__ ptr, const int32_t *__restrict__ col,
                                 const T *__restrict__ val, const int32_t *__restrict__ perm,
                                 const int32_t *__restrict__ sp, int32_t *__restrict__ scol,
                                 T *__restrict__ sv) {
    SPMV_CONV_LOOP(q, slots) {
        int64_t s = spmv_conv_last_le(sp, nslices, q), off = q - sp[s];
        int64_t k = off >> lgc, r = (s << lgc) + (off & ((1 << lgc) - 1));
        int32_t cq = -1;
        T vq = T(0);
        if (r < n) {
            int32_t i = perm[r], p0 = ptr[i];
            if (k < ptr[i + 1] - p0) cq = col[p0 + k], vq = val[p0 + k];
        }
        scol[q] = cq;
        sv[q] = vq;
    }
}

/* perm: rows sorted stably by (window, bound - length), keys of type K. */
template <typename K>
static int sell_sort(spmv_conv *C, int32_t sigma, uint64_t bound, int end_bit, int32_t *perm,
                     spmv_err *err) {
    int32_t n = C->nrows;
    K *keys = nullptr, *sorted = nullptr;
    int32_t *rows = nullptr;
    int rc =
        spmv_conv_tmp(C, (int64_t)n * (int64_t)sizeof(K), "SELL sort keys", (void **)&keys, err);
    if (!rc)
        rc = spmv_conv_tmp(C, (int64_t)n * (int64_t)sizeof(K), "SELL sorted keys", (void **)&sorted,
                           err);
    if (!rc) rc = spmv_conv_tmp(C, (int64_t)n * 4, "SELL rows", (void **)&rows, err);
    if (rc) return rc;
    sell_keys_kernel<K>
        <<<spmv_conv_grid(n, 256), 256, 0, C->s>>>(n, sigma, bound, C->ptr, keys, rows);
    rc = spmv_conv_launched("SELL sort keys", err);
    cudaStream_t s = C->s;
    if (!rc)
        rc = spmv_conv_cub(
            C, "SELL row sort",
            [&](void *t, size_t &b) {
                return cub::DeviceRadixSort::SortPairs(t, b, keys, sorted, rows, perm, n, 0,
                                                       end_bit, s);
            },
            err);
    return rc;
}

int spmv_conv_sell(spmv_conv *C, spmv_err *err) {
    int32_t c = C->D.param[0], sigma = C->D.param[1], n = C->nrows;
    spmv_err perr;
    if (c < 1 || c > SELL_MAX_C || (c & (c - 1)) != 0) {
        int rc = spmv_cuda_fail(&perr, SPMV_EINVAL,
                                "The 'c' parameter of sell must be a power of two in [1, %d]. Got "
                                "%d instead.",
                                SELL_MAX_C, c);
        perr.value = c, perr.limit = SELL_MAX_C;
        return spmv_conv_param_fail(C, rc, &perr, err);
    }
    if (sigma != 1 && (sigma < 1 || sigma > SELL_MAX_SIGMA || sigma % c != 0)) {
        int rc = spmv_cuda_fail(&perr, SPMV_EINVAL,
                                "The 'sigma' parameter of sell must be 1 or a positive multiple of "
                                "c = %d up to %d. Got %d instead.",
                                c, SELL_MAX_SIGMA, sigma);
        perr.value = sigma, perr.limit = SELL_MAX_SIGMA;
        return spmv_conv_param_fail(C, rc, &perr, err);
    }
    int64_t nslices = ((int64_t)n + c - 1) / c;
    int rc = spmv_conv_out(C, 0, 0, n, "SELL perm", err);
    if (!rc) rc = spmv_conv_out(C, 0, 1, nslices + 1, "SELL slice_ptr", err);
    if (rc) return rc;
    int32_t *perm = (int32_t *)C->dev[0], *sp = (int32_t *)C->dev[1];
    uint64_t bound = (uint64_t)(C->nnz < C->ncols ? C->nnz : C->ncols);
    uint64_t nwin = ((uint64_t)n + sigma - 1) / sigma, top = (nwin - 1) * (bound + 1) + bound;
    int end_bit = spmv_conv_bits(top);
    int lbits = spmv_conv_bits(bound);
    int64_t *w = nullptr;
    rc = spmv_conv_tmp(C, (nslices + 1) * 8, "SELL slice widths", (void **)&w, err);
    if (rc) return rc;
    unsigned long long *total = &C->info->n[0];
    unsigned gw = spmv_conv_grid_reduce((nslices + 1) * 32, 256);
    if (sigma == 1 || lbits == 0) { /* windows of one row, or every length 0: no row moves */
        sell_width_kernel<<<gw, 256, 0, C->s>>>(n, c, nslices, 1, C->ptr, perm, w, total);
        rc = spmv_conv_launched("SELL perm and slice widths", err);
    } else if (sigma <= SELL_BLOCK_SORT && lbits <= 31) {
        uint32_t mask = (uint32_t)((1ULL << lbits) - 1); /* >= bound >= every length */
        unsigned g = nwin < SPMV_CONV_REDUCE_GRID ? (unsigned)nwin : SPMV_CONV_REDUCE_GRID;
        if (sigma <= 256)
            sell_window_sort_kernel<1>
                <<<g, 256, 0, C->s>>>(n, sigma, c, nslices, mask, lbits, C->ptr, perm, w, total);
        else
            sell_window_sort_kernel<SELL_BLOCK_SORT / 256>
                <<<g, 256, 0, C->s>>>(n, sigma, c, nslices, mask, lbits, C->ptr, perm, w, total);
        rc = spmv_conv_launched("SELL window sort and slice widths", err);
    } else {
        rc = end_bit <= 32 ? sell_sort<uint32_t>(C, sigma, bound, end_bit, perm, err)
                           : sell_sort<uint64_t>(C, sigma, bound, end_bit, perm, err);
        if (!rc) {
            sell_width_kernel<<<gw, 256, 0, C->s>>>(n, c, nslices, 0, C->ptr, perm, w, total);
            rc = spmv_conv_launched("SELL slice widths", err);
        }
    }
    cudaStream_t s = C->s;
    if (!rc) /* int64 sums, stored as int32: wrong only past int32, refused below */
        rc = spmv_conv_cub(
            C, "SELL slice pointers",
            [&](void *t, size_t &b) {
                return cub::DeviceScan::ExclusiveSum(t, b, w, sp, nslices + 1, s);
            },
            err);
    if (!rc) rc = spmv_conv_read(C, nullptr, 0, err); /* the one wait: the slots */
    if (rc) return rc;
    int64_t slots = (int64_t)C->hinfo->n[0];
    char what[48];
    snprintf(what, sizeof what, "SELL-%d-%d", (int)c, (int)sigma);
    rc = spmv_conv_guard(C, slots, what, err);
    if (rc) return rc;
    C->D.scalar[0] = nslices;
    C->D.scalar[1] = slots;
    rc = spmv_conv_out(C, 0, 2, slots, "SELL col", err);
    if (!rc) rc = spmv_conv_out(C, 1, 0, slots, "SELL values", err);
    if (rc || slots == 0) return rc;
    int lgc = spmv_conv_bits((uint64_t)c) - 1;
    unsigned g = spmv_conv_grid(slots, 256);
    int32_t *scol = (int32_t *)C->dev[2];
    if (C->elem_size == 4)
        sell_fill_kernel<float><<<g, 256, 0, C->s>>>(n, lgc, nslices, slots, C->ptr, C->col,
                                                     (const float *)C->val, perm, sp, scol,
                                                     (float *)C->dev[SPMV_MAXIDX]);
    else
        sell_fill_kernel<double><<<g, 256, 0, C->s>>>(n, lgc, nslices, slots, C->ptr, C->col,
                                                      (const double *)C->val, perm, sp, scol,
                                                      (double *)C->dev[SPMV_MAXIDX]);
    return spmv_conv_launched("SELL fill", err);
}
