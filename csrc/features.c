// csrc/features.c: matrix features, tiers 0 to 2 (definitions and computation; the list: features.def)
// SPDX-License-Identifier: BSD-3-Clause
//
// len_i is the length of row i; "over non-empty rows" means rows with len_i > 0 (the feature is 0
// when there are none); every ratio is 0 when its denominator is; sd is the population sd.
//
// tier 0, O(1):  nrows, ncols, nnz, density = nnz/(nrows*ncols), nnz_mean = nnz/nrows.
// tier 1, O(nrows), from indptr:
//   nnz_min, nnz_max, nnz_mode (most frequent len_i, smallest on ties), nnz_median (numpy.median),
//   nnz_sd, nnz_cov = sd/mean, nnz_max_minus_mean, ell_fill = nrows*nnz_max/nnz, empty_rows,
//   hyb_width (Bell-Garland, spmv_hyb_width), and Guo's strips: full-GPU iterations (sm_count *
//   threads_per_sm threads) of a thread-per-row, warp-per-row and thread-per-nonzero kernel:
//   gpu_strips_rows = ceil(nrows/T), gpu_strips_warps = ceil(nrows*warp_size/T),
//   gpu_strips_nnz = ceil(nnz/T).
// tier 2, O(nnz + nrows + ncols), one pass over indices, row by row:
//   dist_min, dist_max    min and max gap col[k+1]-col[k] between neighbours in a row [Lehnert]
//   bandwidth             max |col - row| [Lehnert]
//   col_span_mean         mean over non-empty rows of last col - first col [distavg]
//   cluster_mean          mean over non-empty rows of the longest run j, j+1, j+2, ... in the row
//   ndiag, dia_fill       distinct offsets col-row; ndiag*nrows/nnz [Gao]
//   diag_dist_mean, _sd   of the gaps between consecutive occupied offsets (0 if ndiag < 2) [Li & Suda]
//   low_band_mean, up_band_mean, low_band_sd, up_band_sd
//                         over non-empty rows of max(0, i - first col), max(0, last col - i) [Li & Suda]
//   x_seg_row_mean        mean over non-empty rows of the distinct 128-byte segments of a float64 x
//                         the row reads (segment = col/16)
//   x_seg_warp_mean       mean over the ceil(nrows/32) groups of 32 consecutive rows (empty groups
//                         count 0) of the distinct segments the group reads: what one warp of a
//                         thread-per-row kernel fetches
#include "spmv_internal.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

void spmv_gpu_props_h100(spmv_gpu_props *p) {
    p->sm_count = 132;
    p->threads_per_sm = 2048;
    p->warp_size = 32;
}

static const char *const feature_names[SPMV_NFEATURES] = {
#define SPMV_FEATURE(CODE, name, tier) #name,
#include "features.def"
#undef SPMV_FEATURE
};

const char *spmv_feature_name(int i) {
    return i >= 0 && i < SPMV_NFEATURES ? feature_names[i] : NULL;
}

static double ratio(double num, double den) { return den != 0 ? num / den : 0.0; }

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* The k-th smallest row length (0-based) from the histogram of lengths. */
static int32_t hist_kth(const int64_t *hist, int64_t k) {
    int32_t len = 0;
    for (int64_t below = hist[0]; below <= k; below += hist[++len]) {
    }
    return len;
}

/* Tiers 0 and 1: everything indptr alone determines. */
static int features_rows(const spmv_csr *A, const spmv_gpu_props *dev, double *out, spmv_summary *S,
                         spmv_err *err) {
    const int32_t *ip = A->indptr;
    int32_t n = A->nrows, hyb = 0;
    int64_t nnz = ip[n], empty = 0, *hist = NULL, lmin = INT64_MAX, lmax = 0;
    /* The sd in one pass, exactly: squares about the integer m0 nearest the mean add up in uint64
     * (at most nnz*max + nnz^2/n < 2^63), then sum (len-mean)^2 = sum (len-m0)^2 - n (mean-m0)^2.
     * An integer sum also keeps the loop free of a floating-point add chain. */
    int64_t m0 = (nnz + n / 2) / n;
    uint64_t sq = 0;
    if (ip[0] != 0)
        return spmv_fail(err, SPMV_EINDEX, 0, ip[0], 0, "indptr[0] is %d; it must be 0", ip[0]);
    /* Lengths in int64 so that a hostile indptr cannot overflow them; a decreasing indptr shows as
     * lmin < 0 after the loop, which with indptr[0] == 0 keeps every bound within [0, nnz] -- the
     * check that lets the pattern pass read indices -- at no cost inside the loop. */
    for (int32_t i = 0; i < n; i++) {
        int64_t len = (int64_t)ip[i + 1] - ip[i];
        uint64_t d = (uint64_t)(len - m0);
        lmin = len < lmin ? len : lmin;
        lmax = len > lmax ? len : lmax;
        empty += len == 0;
        sq += d * d; /* mod 2^64: exact whenever indptr is valid */
    }
    if (lmin < 0) {
        for (int32_t i = 0; i < n; i++)
            if (ip[i + 1] < ip[i])
                return spmv_fail(err, SPMV_EINDEX, (int64_t)i + 1, ip[i + 1], ip[i],
                                 "indptr decreases at position %lld: %d after %d", (long long)i + 1,
                                 ip[i + 1], ip[i]);
    }
    double mean = (double)nnz / n, dm = mean - (double)m0;
    double sd = sqrt(fmax((double)sq - n * dm * dm, 0) / n);

    /* Four interleaved counts where they are small beside the rows: rows of one length in a row
     * would otherwise make each increment wait for the store of the one before (twice the time of
     * the loop above on a stencil). */
    int64_t nh = lmax + 1, ways = 4 * nh <= n ? 4 : 1;
    hist = (int64_t *)spmv_calloc(ways * nh, sizeof(int64_t), err);
    if (hist == NULL) return SPMV_ENOMEM;
    int32_t i0 = 0;
    if (ways == 4) {
        int64_t *h1 = hist + nh, *h2 = h1 + nh, *h3 = h2 + nh;
        for (; i0 + 4 <= n; i0 += 4) {
            hist[ip[i0 + 1] - ip[i0]]++;
            h1[ip[i0 + 2] - ip[i0 + 1]]++;
            h2[ip[i0 + 3] - ip[i0 + 2]]++;
            h3[ip[i0 + 4] - ip[i0 + 3]]++;
        }
        for (int64_t len = 0; len < nh; len++) hist[len] += h1[len] + h2[len] + h3[len];
    }
    for (int32_t i = i0; i < n; i++) hist[ip[i + 1] - ip[i]]++;
    int32_t mode = 0;
    for (int32_t len = 1; len <= (int32_t)lmax; len++)
        if (hist[len] > hist[mode]) mode = len; /* strict: the smallest length wins ties */
    double median = n % 2 ? hist_kth(hist, n / 2)
                          : 0.5 * ((double)hist_kth(hist, n / 2 - 1) + hist_kth(hist, n / 2));
    hyb = spmv_hyb_width_hist(hist, (int32_t)lmax, n);

    int64_t T = (int64_t)dev->sm_count * dev->threads_per_sm;
    out[SPMV_FEATURE_NROWS] = n;
    out[SPMV_FEATURE_NCOLS] = A->ncols;
    out[SPMV_FEATURE_NNZ] = (double)nnz;
    out[SPMV_FEATURE_DENSITY] = (double)nnz / ((double)n * A->ncols);
    out[SPMV_FEATURE_NNZ_MEAN] = mean;
    out[SPMV_FEATURE_NNZ_MIN] = (double)lmin;
    out[SPMV_FEATURE_NNZ_MAX] = (double)lmax;
    out[SPMV_FEATURE_NNZ_MODE] = mode;
    out[SPMV_FEATURE_NNZ_MEDIAN] = median;
    out[SPMV_FEATURE_NNZ_SD] = sd;
    out[SPMV_FEATURE_NNZ_COV] = ratio(sd, mean);
    out[SPMV_FEATURE_NNZ_MAX_MINUS_MEAN] = (double)lmax - mean;
    out[SPMV_FEATURE_ELL_FILL] = ratio((double)n * lmax, (double)nnz);
    out[SPMV_FEATURE_EMPTY_ROWS] = (double)empty;
    out[SPMV_FEATURE_HYB_WIDTH] = hyb;
    out[SPMV_FEATURE_GPU_STRIPS_ROWS] = (double)ceil_div(n, T);
    out[SPMV_FEATURE_GPU_STRIPS_WARPS] = (double)ceil_div((int64_t)n * dev->warp_size, T);
    out[SPMV_FEATURE_GPU_STRIPS_NNZ] = (double)ceil_div(nnz, T);
    S->lmax = (int32_t)lmax;
    S->hist = hist;
    S->hyb_width = hyb;
    return SPMV_OK;
}

/* Tier 2 from the one pass over indices (csrc/pass.c), which validates them as it goes. */
static int features_pattern(const spmv_csr *A, double *out, spmv_summary *S, spmv_err *err) {
    spmv_pattern R;
    int rc = spmv_pattern_pass(A, &S->pass, &R, err);
    if (rc) return rc;
    int32_t n = A->nrows;
    int64_t nnz = A->indptr[n], rows = R.lo.count;
    double r = (double)rows;
    S->ndiag = R.ndiag;
    out[SPMV_FEATURE_DIST_MIN] = R.gmin == INT32_MAX ? 0 : R.gmin;
    out[SPMV_FEATURE_DIST_MAX] = R.gmax;
    out[SPMV_FEATURE_BANDWIDTH] = R.band;
    out[SPMV_FEATURE_COL_SPAN_MEAN] = ratio((double)R.span, r);
    out[SPMV_FEATURE_CLUSTER_MEAN] =
        ratio((double)(R.cluster + rows), r); /* best counted steps, not entries */
    out[SPMV_FEATURE_NDIAG] = (double)R.ndiag;
    out[SPMV_FEATURE_DIA_FILL] = ratio((double)R.ndiag * n, (double)nnz);
    out[SPMV_FEATURE_DIAG_DIST_MEAN] = R.gap_mean;
    out[SPMV_FEATURE_DIAG_DIST_SD] = R.ndiag >= 2 ? sqrt(R.gap_ss / (double)(R.ndiag - 1)) : 0;
    out[SPMV_FEATURE_LOW_BAND_MEAN] = ratio((double)(R.lo.sum + (int64_t)R.lo.shift * rows), r);
    out[SPMV_FEATURE_UP_BAND_MEAN] = ratio((double)(R.up.sum + (int64_t)R.up.shift * rows), r);
    out[SPMV_FEATURE_LOW_BAND_SD] = rows ? sqrt(R.lo.m2 / r) : 0;
    out[SPMV_FEATURE_UP_BAND_SD] = rows ? sqrt(R.up.m2 / r) : 0;
    out[SPMV_FEATURE_X_SEG_ROW_MEAN] = ratio((double)R.segr, r);
    out[SPMV_FEATURE_X_SEG_WARP_MEAN] = ratio((double)R.segw, (double)R.groups);
    return SPMV_OK;
}

void spmv_summary_free(spmv_summary *S) {
    spmv_free(S->hist);
    spmv_pass_free(&S->pass);
    spmv_free(S->runs);
    spmv_free(S->wlen);
    S->hist = NULL;
    S->runs = NULL;
    S->wlen = NULL;
}

void spmv_summary_window(spmv_summary *S, int32_t h) {
    int32_t a = S->win, b = h;
    while (b > 0) {
        int32_t t = a % b;
        a = b;
        b = t;
    }
    S->win = a;
}

int spmv_summary_windows(spmv_summary *S, int32_t h, int *use, spmv_err *err) {
    *use = S->win > 0 && h % S->win == 0;
    if (!*use || S->wlen != NULL) return SPMV_OK;
    const spmv_csr *A = S->A;
    const int32_t *ip = A->indptr;
    int32_t n = A->nrows, win = S->win;
    int64_t nw = ((int64_t)n + win - 1) / win;
    /* wlen, not S->wlen, in the loop: its stores could change S */
    int32_t *wlen = S->wlen = (int32_t *)spmv_malloc(nw, sizeof(int32_t), err);
    if (wlen == NULL) return SPMV_ENOMEM;
    for (int64_t k = 0; k < nw; k++) {
        int32_t i0 = (int32_t)(k * win), i1 = n - i0 < win ? n : i0 + win, w = 0;
        for (int32_t i = i0; i < i1; i++) {
            int32_t len = ip[i + 1] - ip[i];
            w = len > w ? len : w;
        }
        wlen[k] = w;
    }
    return SPMV_OK;
}

/* spmv_features_summary, and spmv_features_rows where pattern is 0. */
static int summary(const spmv_csr *A, const spmv_gpu_props *dev, double *out, spmv_summary *S,
                   int pattern, spmv_err *err) {
    if (A == NULL || A->indptr == NULL || dev == NULL || out == NULL)
        return spmv_fail(err, SPMV_EINVAL, -1, -1, -1,
                         "features need a matrix, GPU properties and "
                         "an output array, not NULL");
    if (A->nrows < 1 || A->ncols < 1)
        return spmv_fail(err, SPMV_EINVAL, -1, A->nrows < 1 ? A->nrows : A->ncols, 1,
                         "matrix is %d x %d; features need nrows, ncols >= 1", A->nrows, A->ncols);
    if (A->indices == NULL && A->indptr[A->nrows] > 0)
        return spmv_fail(err, SPMV_EINVAL, -1, -1, -1, "indices must not be NULL when nnz > 0");
    if (dev->sm_count < 1 || dev->threads_per_sm < 1 || dev->warp_size < 1)
        return spmv_fail(err, SPMV_EINVAL, -1, -1, 1,
                         "GPU properties must be positive: sm_count %d, threads_per_sm %d, "
                         "warp_size %d",
                         dev->sm_count, dev->threads_per_sm, dev->warp_size);
    for (int k = 0; k < SPMV_NFEATURES; k++) out[k] = 0;
    S->A = S->whole = A;
    int rc = features_rows(A, dev, out, S, err);
    if (rc == SPMV_OK && pattern) rc = features_pattern(A, out, S, err);
    if (rc) spmv_summary_free(S);
    return rc;
}

int spmv_features_summary(const spmv_csr *A, const spmv_gpu_props *dev, double *out,
                          spmv_summary *S, spmv_err *err) {
    return summary(A, dev, out, S, 1, err);
}

int spmv_features_rows(const spmv_csr *A, const spmv_gpu_props *dev, double *out, spmv_summary *S,
                       spmv_err *err) {
    return summary(A, dev, out, S, 0, err);
}

int spmv_features_estimate(const spmv_csr *A, const spmv_csr *As, const spmv_gpu_props *dev,
                           double *out, spmv_summary *S, spmv_err *err) {
    for (int k = 0; k < SPMV_NFEATURES; k++) out[k] = 0;
    S->A = As;
    S->whole = A;
    int rc = features_rows(As, dev, out, S, err);
    if (rc == SPMV_OK) rc = features_pattern(A, out, S, err); /* A's rows: offsets and bands */
    if (rc) {
        spmv_summary_free(S);
        return rc;
    }
    /* What the shape and indptr[nrows] give exactly; counts scaled; the rest as sampled. */
    int32_t n = A->nrows;
    int64_t nnz = A->indptr[n], T = (int64_t)dev->sm_count * dev->threads_per_sm;
    double mean = (double)nnz / n;
    out[SPMV_FEATURE_NROWS] = n;
    out[SPMV_FEATURE_NNZ] = (double)nnz;
    out[SPMV_FEATURE_DENSITY] = (double)nnz / ((double)n * A->ncols);
    out[SPMV_FEATURE_NNZ_MEAN] = mean;
    out[SPMV_FEATURE_NNZ_MAX_MINUS_MEAN] = out[SPMV_FEATURE_NNZ_MAX] - mean;
    out[SPMV_FEATURE_ELL_FILL] = ratio((double)n * out[SPMV_FEATURE_NNZ_MAX], (double)nnz);
    out[SPMV_FEATURE_EMPTY_ROWS] = out[SPMV_FEATURE_EMPTY_ROWS] * ((double)n / As->nrows);
    out[SPMV_FEATURE_GPU_STRIPS_ROWS] = (double)ceil_div(n, T);
    out[SPMV_FEATURE_GPU_STRIPS_WARPS] = (double)ceil_div((int64_t)n * dev->warp_size, T);
    out[SPMV_FEATURE_GPU_STRIPS_NNZ] = (double)ceil_div(nnz, T);
    return SPMV_OK;
}

int spmv_features_compute(const spmv_csr *A, const spmv_gpu_props *dev, double *out,
                          spmv_err *err) {
    spmv_summary S;
    memset(&S, 0, sizeof S);
    int rc = spmv_features_summary(A, dev, out, &S, err);
    spmv_summary_free(&S);
    return rc;
}
