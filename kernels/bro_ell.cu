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

/* ---- Device conversion from a resident CSR (kernels/convert.cu dispatches) ---- */

// Device conversion to BRO-ELL — per-slice widths and symbol bits (one warp per slice), one scan
// for the word and value pointers, one thread per word and per value slot
//
// Layout: csrc/bro_ell.c.  A slice's width is its longest row and its bits (adaptive) the bit
// length of its largest symbol, at least 1, as bro_ell_slice finds them.  With fixed bits a symbol
// of 2^bits or more is refused naming the first such entry in row order, the one the host names:
// the lowest (row, entry) pair, kept by an atomic minimum (of its complement, a maximum).  Each
// word packs its row's symbols j = w*spw .. w*spw+spw-1 exactly as bro_ell_fill does.  One kernel
// finds each slice's width, bits, word and value counts and adds the totals to the conversion's
// info, so that the sizes come back with the common pass's answer in one read; both pointers are
// the exclusive sums of the (words, values) pairs, one scan written as two int32 arrays (a total
// past int32 is refused before they are used).
#include "convert.cuh"
#include <cub/cub.cuh>
#include <thrust/iterator/transform_output_iterator.h>
#include <thrust/iterator/zip_iterator.h>

#define BRO_ELL_MAX_H 1024

/* A slice's words and value slots: both pointers come from one scan of these. */
struct bro_counts {
    long long words, vals;
};

struct bro_counts_sum {
    __device__ __forceinline__ bro_counts operator()(const bro_counts &a,
                                                     const bro_counts &b) const {
        return {a.words + b.words, a.vals + b.vals};
    }
};

/* The scan's sums stored as word_ptr and val_ptr, int32 (wrong only past int32, refused first). */
struct bro_counts_split {
    __device__ __forceinline__ thrust::tuple<int32_t, int32_t>
    operator()(const bro_counts &c) const {
        return thrust::make_tuple((int32_t)c.words, (int32_t)c.vals);
    }
};

/* Slice s (one warp): info[2s] = its width, info[2s+1] = its bits, msym[s] = its largest symbol,
 * cnt[s] = h * words per row and h * width, a sentinel 0 at nslices, the totals added to tot[0]
 * and tot[1]; with fixed bits < 32 the lowest (row << 32 | entry) whose symbol does not fit, as
 * the largest complement, into *nbad. */
__global__ void bro_stats_kernel(int32_t n, int32_t h, int64_t nslices, int32_t bits,
                                 const int32_t *__restrict__ ptr, const int32_t *__restrict__ col,
                                 int32_t *__restrict__ info, uint32_t *__restrict__ msym,
                                 bro_counts *__restrict__ cnt, unsigned long long *tot,
                                 unsigned long long *nbad) {
    int64_t warp = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x & 31;
    int64_t warps = (int64_t)gridDim.x * blockDim.x / 32;
    unsigned long long words = 0, vals = 0;
    if (warp == 0 && lane == 0) cnt[nslices] = {0, 0};
    for (int64_t s = warp; s < nslices; s += warps) {
        int32_t w = 0;
        uint32_t m = 0;
        for (int64_t i = s * h; i < (s + 1) * h && i < n; i++) {
            int32_t p0 = ptr[i], len = ptr[i + 1] - p0;
            w = max(w, len);
            for (int32_t j = lane; j < len; j += 32) {
                /* col_0 + 1 <= ncols <= INT32_MAX and sorted columns: no overflow */
                uint32_t sym = (uint32_t)(col[p0 + j] - (j > 0 ? col[p0 + j - 1] : -1));
                m = max(m, sym);
                if (bits != 0 && bits < 32 && sym >= (1u << bits))
                    atomicMax(nbad, ~(((unsigned long long)i << 32) | (uint64_t)(p0 + j)));
            }
        }
        m = spmv_conv_warp_max(m);
        if (lane == 0) {
            int32_t b = 1;
            while (b < 32 && (m >> b) != 0) b++;
            b = bits != 0 ? bits : b;
            int32_t spw = 32 / b;
            int64_t nw = (int64_t)h * (((int64_t)w + spw - 1) / spw), nv = (int64_t)h * w;
            info[2 * s] = w;
            info[2 * s + 1] = b;
            msym[s] = m;
            cnt[s] = {(long long)nw, (long long)nv};
            words += (unsigned long long)nw;
            vals += (unsigned long long)nv;
        }
    }
    spmv_conv_block_add(tot, words);
    spmv_conv_block_add(tot + 1, vals);
}

__global__ void bro_words_kernel(int32_t n, int32_t lgh, int64_t nslices, int64_t nwords,
                                 const int32_t *__restrict__ ptr, const int32_t *__restrict__ col,
                                 const int32_t *__restrict__ wp, const int32_t *__restrict__ info,
                                 int32_t *__restrict__ words) {
    SPMV_CONV_LOOP(q, nwords) {
        int64_t s = spmv_conv_last_le(wp, nslices, q), off = q - wp[s];
        int64_t qw = off >> lgh, i = (s << lgh) + (off & ((1 << lgh) - 1));
        int32_t b = info[2 * s + 1], spw = 32 / b;
        uint32_t word = 0;
        if (i < n) {
            int32_t p0 = ptr[i], len = ptr[i + 1] - p0;
            int64_t j = qw * spw;
            for (int32_t t = 0; t < spw && j < len; t++, j++) {
                uint32_t sym = (uint32_t)(col[p0 + j] - (j > 0 ? col[p0 + j - 1] : -1));
                word |= sym << (t * b); /* t*b <= 32 - b: never a full-width shift */
            }
        }
        words[q] = (int32_t)word;
    }
}

template <typename T>
__global__ void bro_values_kernel(int32_t n, int32_t lgh, int64_t nslices, int64_t nvals,
                                  const int32_t *__restrict__ ptr, const T *__restrict__ val,
                                  const int32_t *__restrict__ vp, T *__restrict__ v) {
    SPMV_CONV_LOOP(q, nvals) {
        int64_t s = spmv_conv_last_le(vp, nslices, q), off = q - vp[s];
        int64_t j = off >> lgh, i = (s << lgh) + (off & ((1 << lgh) - 1));
        T x = T(0);
        if (i < n) {
            int32_t p0 = ptr[i];
            if (j < ptr[i + 1] - p0) x = val[p0 + j];
        }
        v[q] = x;
    }
}

/* The host's refusal of a symbol that fixed bits cannot hold (bro_ell_slice). */
static int bro_refuse(spmv_conv *C, int32_t h, int32_t bits, unsigned long long bad,
                      const uint32_t *msym, spmv_err *err) {
    int64_t i = (int64_t)(bad >> 32), p = (int64_t)(bad & 0xffffffffULL);
    int32_t p0 = 0, pair[2] = {-1, -1};
    uint32_t m = 0;
    int rc = spmv_conv_get(C, &p0, C->ptr + i, sizeof p0, err);
    if (!rc)
        rc = spmv_conv_get(C, p > p0 ? pair : pair + 1, C->col + (p > p0 ? p - 1 : p),
                           p > p0 ? 2 * sizeof(int32_t) : sizeof(int32_t), err);
    if (!rc) rc = spmv_conv_get(C, &m, msym + i / h, sizeof m, err);
    if (rc) return rc;
    int64_t d = (int64_t)pair[1] - pair[0];
    int32_t b = 1;
    while (b < 32 && (m >> b) != 0) b++;
    rc = spmv_cuda_fail(err, SPMV_ENOTAPPLICABLE,
                        "BRO-ELL with bits=%d cannot code the column delta %lld in row %lld "
                        "(needs %d bits; use bits=0 for adaptive)",
                        (int)bits, (long long)d, (long long)i, (int)b);
    if (err) err->where = i, err->value = d, err->limit = (int64_t)1 << bits;
    return rc;
}

int spmv_conv_bro_ell(spmv_conv *C, spmv_err *err) {
    int32_t h = C->D.param[0], bits = C->D.param[1], n = C->nrows;
    spmv_err perr;
    if (h < 1 || h > BRO_ELL_MAX_H || (h & (h - 1)) != 0) {
        int rc = spmv_cuda_fail(&perr, SPMV_EINVAL,
                                "The 'h' parameter of bro_ell must be a power of two in [1, %d]. "
                                "Got %d instead.",
                                BRO_ELL_MAX_H, h);
        perr.value = h, perr.limit = BRO_ELL_MAX_H;
        return spmv_conv_param_fail(C, rc, &perr, err);
    }
    if (bits != 0 && bits != 8 && bits != 16 && bits != 32) {
        int rc = spmv_cuda_fail(&perr, SPMV_EINVAL,
                                "The 'bits' parameter of bro_ell must be 0 (adaptive), 8, 16 or "
                                "32. Got %d instead.",
                                bits);
        perr.value = bits, perr.limit = 32;
        return spmv_conv_param_fail(C, rc, &perr, err);
    }
    int64_t nslices = ((int64_t)n + h - 1) / h;
    uint32_t *msym = nullptr;
    bro_counts *cnt = nullptr;
    int rc = spmv_conv_tmp(C, nslices * 4, "BRO-ELL symbols", (void **)&msym, err);
    if (!rc)
        rc = spmv_conv_tmp(C, (nslices + 1) * (int64_t)sizeof(bro_counts), "BRO-ELL counts",
                           (void **)&cnt, err);
    if (!rc) rc = spmv_conv_out(C, 0, 0, nslices + 1, "BRO-ELL word_ptr", err);
    if (!rc) rc = spmv_conv_out(C, 0, 1, nslices + 1, "BRO-ELL val_ptr", err);
    if (!rc) rc = spmv_conv_out(C, 0, 2, 2 * nslices, "BRO-ELL slice_info", err);
    if (rc) return rc;
    int32_t *wp = (int32_t *)C->dev[0], *vp = (int32_t *)C->dev[1], *info = (int32_t *)C->dev[2];
    bro_stats_kernel<<<spmv_conv_grid_reduce(nslices * 32, 256), 256, 0, C->s>>>(
        n, h, nslices, bits, C->ptr, C->col, info, msym, cnt, C->info->n, &C->info->nbad2);
    rc = spmv_conv_launched("BRO-ELL slice statistics", err);
    cudaStream_t s = C->s;
    /* both pointers by one scan: int64 sums, stored as int32 (wrong only past int32, refused
     * below) */
    auto out = thrust::make_transform_output_iterator(thrust::make_zip_iterator(wp, vp),
                                                      bro_counts_split());
    if (!rc)
        rc = spmv_conv_cub(
            C, "BRO-ELL word and value pointers",
            [&](void *t, size_t &b) {
                return cub::DeviceScan::ExclusiveScan(t, b, cnt, out, bro_counts_sum(),
                                                      bro_counts{0, 0}, nslices + 1, s);
            },
            err);
    if (!rc) rc = spmv_conv_read(C, nullptr, 0, err); /* the one wait: words and value slots */
    if (rc) return rc;
    if (C->hinfo->nbad2 != 0) return bro_refuse(C, h, bits, ~C->hinfo->nbad2, msym, err);
    int64_t words = (int64_t)C->hinfo->n[0], vals = (int64_t)C->hinfo->n[1];
    char what[48];
    snprintf(what, sizeof what, "BRO-ELL with h=%d", (int)h);
    rc = spmv_conv_guard(C, vals, what, err); /* words <= value slots: this covers both */
    if (rc) return rc;
    C->D.scalar[0] = nslices;
    C->D.scalar[1] = words;
    C->D.scalar[2] = vals;
    rc = spmv_conv_out(C, 0, 3, words, "BRO-ELL words", err);
    if (!rc) rc = spmv_conv_out(C, 1, 0, vals, "BRO-ELL values", err);
    if (rc) return rc;
    int lgh = spmv_conv_bits((uint64_t)h) - 1;
    if (words > 0) {
        bro_words_kernel<<<spmv_conv_grid(words, 256), 256, 0, C->s>>>(
            n, lgh, nslices, words, C->ptr, C->col, wp, info, (int32_t *)C->dev[3]);
        rc = spmv_conv_launched("BRO-ELL words", err);
    }
    if (!rc && vals > 0) {
        unsigned g = spmv_conv_grid(vals, 256);
        if (C->elem_size == 4)
            bro_values_kernel<float><<<g, 256, 0, C->s>>>(n, lgh, nslices, vals, C->ptr,
                                                          (const float *)C->val, vp,
                                                          (float *)C->dev[SPMV_MAXIDX]);
        else
            bro_values_kernel<double><<<g, 256, 0, C->s>>>(n, lgh, nslices, vals, C->ptr,
                                                           (const double *)C->val, vp,
                                                           (double *)C->dev[SPMV_MAXIDX]);
        rc = spmv_conv_launched("BRO-ELL values", err);
    }
    return rc;
}
