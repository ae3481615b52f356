// csrc/sell.c: SELL-C-sigma — size query, conversion from CSR, back to CSR, CPU kernel
// SPDX-License-Identifier: BSD-3-Clause
//
// Layout (spmv_fmt with format SPMV_FMT_SELL): param[0] = C, the slice height (a power of two in
// [1, 1024]); param[1] = sigma, the sorting window (1, or a positive multiple of C up to 2^20).
// Rows are sorted by length, descending and stably, within each window of sigma consecutive rows
// (sigma = 1: no sorting), so that rows of one slice have similar lengths; because sigma is a
// multiple of C, a window never splits a slice.
//   scalar[0] = nslices = ceil(nrows / C), scalar[1] = total slots;
//   idx[0] = perm[nrows]: perm[r] = the original row at sorted position r;
//   idx[1] = slice_ptr[nslices+1]: slot offsets; slice s has width W_s (its longest row) and
//            C*W_s slots;
//   idx[2] = col[slots], val[0] = values[slots]: slot k of lane l of slice s at
//            slice_ptr[s] + k*C + l, so that C consecutive GPU threads read consecutive words.
// A row's entries fill its first slots in CSR order; the rest is padding, column -1 and value 0,
// and lanes past nrows in the last slice are all padding.  Refused (SPMV_ENOTAPPLICABLE) when
// slots pass max_fill * max(nnz, nrows).  Kernel variant 0: slice-parallel, each lane stopping
// at its first padding slot.
#include "spmv_internal.h"

#define SELL_MAX_C 1024
#define SELL_MAX_SIGMA (1 << 20)

static int sell_params(const spmv_fmt *F, spmv_err *err) {
    int32_t c = F->param[0], sigma = F->param[1];
    if (c < 1 || c > SELL_MAX_C || (c & (c - 1)) != 0)
        return spmv_fail(err, SPMV_EINVAL, -1, c, SELL_MAX_C,
                         "The 'c' parameter of sell must be a power of two in [1, %d]. Got %d "
                         "instead.",
                         SELL_MAX_C, c);
    if (sigma != 1 && (sigma < 1 || sigma > SELL_MAX_SIGMA || sigma % c != 0))
        return spmv_fail(err, SPMV_EINVAL, -1, sigma, SELL_MAX_SIGMA,
                         "The 'sigma' parameter of sell must be 1 or a positive multiple of c = %d "
                         "up to %d. Got %d instead.",
                         c, SELL_MAX_SIGMA, sigma);
    return SPMV_OK;
}

static int32_t row_len(const spmv_csr *A, int32_t i) { return A->indptr[i + 1] - A->indptr[i]; }

/* perm[nrows] = rows sorted by length, descending and stably, within each window of sigma rows.
 * A counting sort per window: its histogram spans only that window's longest row, so the whole
 * sort is O(nrows + nnz) however long the longest row of the matrix is. */
static int sell_perm(const spmv_csr *A, int32_t sigma, int32_t *perm, spmv_err *err) {
    int32_t n = A->nrows, maxlen = 0;
    if (sigma == 1) {
        for (int32_t i = 0; i < n; i++) perm[i] = i;
        return SPMV_OK;
    }
    for (int32_t i = 0; i < n; i++)
        if (row_len(A, i) > maxlen) maxlen = row_len(A, i);
    int32_t *hist = (int32_t *)spmv_malloc((int64_t)maxlen + 1, sizeof(int32_t), err);
    if (hist == NULL) return SPMV_ENOMEM;
    for (int32_t w0 = 0; w0<n; w0 = n - w0> sigma ? w0 + sigma : n) {
        int32_t w1 = n - w0 > sigma ? w0 + sigma : n, m = 0;
        for (int32_t i = w0; i < w1; i++)
            if (row_len(A, i) > m) m = row_len(A, i);
        for (int32_t L = 0; L <= m; L++) hist[L] = 0;
        for (int32_t i = w0; i < w1; i++) hist[row_len(A, i)]++;
        int32_t pos = w0;
        for (int32_t L = m; L >= 0; L--) { /* hist[L] becomes the first position of length L */
            int32_t cnt = hist[L];
            hist[L] = pos;
            pos += cnt;
        }
        for (int32_t i = w0; i < w1; i++) perm[hist[row_len(A, i)]++] = i;
    }
    spmv_free(hist);
    return SPMV_OK;
}

/* Width of slice s: the longest of its rows (lanes past nrows count as empty). */
static int32_t slice_width(const spmv_csr *A, const int32_t *perm, int32_t c, int64_t s) {
    int32_t w = 0;
    for (int64_t r = s * c; r < (s + 1) * c && r < A->nrows; r++)
        if (row_len(A, perm[r]) > w) w = row_len(A, perm[r]);
    return w;
}

/* Stored entries of sorted row r: its slots up to the first padding one. */
static int32_t sell_len(const spmv_fmt *F, int64_t r) {
    const int32_t *sp = F->idx[1], *col = F->idx[2];
    int32_t c = F->param[0];
    int64_t s = r / c, l = r % c;
    int32_t w = (sp[s + 1] - sp[s]) / c, k = 0;
    while (k < w && col[sp[s] + (int64_t)k * c + l] >= 0) k++;
    return k;
}

static int sell_size_slots(const spmv_csr *A, spmv_fmt *F, int64_t slots, spmv_err *err) {
    int32_t c = F->param[0];
    int64_t nslices = ((int64_t)A->nrows + c - 1) / c;
    char what[48];
    spmv_what(err, what, sizeof what, "SELL-%d-%d", (int)c, (int)F->param[1]);
    int rc = spmv_fill_guard(F, slots, what, err);
    if (rc) return rc;
    F->scalar[0] = nslices;
    F->scalar[1] = slots;
    F->nidx[0] = A->nrows;
    F->nidx[1] = nslices + 1;
    F->nidx[2] = slots;
    F->nval[0] = slots;
    return SPMV_OK;
}

static int sell_size(const spmv_csr *A, spmv_fmt *F, spmv_err *err) {
    int rc = sell_params(F, err);
    if (rc) return rc;
    int32_t c = F->param[0];
    int64_t nslices = ((int64_t)A->nrows + c - 1) / c, slots = 0;
    int32_t *perm = (int32_t *)spmv_malloc(A->nrows, sizeof(int32_t), err);
    if (perm == NULL) return SPMV_ENOMEM;
    rc = sell_perm(A, F->param[1], perm, err);
    for (int64_t s = 0; rc == SPMV_OK && s < nslices; s++)
        slots += (int64_t)c * slice_width(A, perm, c, s);
    if (rc == SPMV_OK) rc = sell_size_slots(A, F, slots, err);
    spmv_free(perm);
    return rc;
}

/* Row lengths sorted descending within each window of sigma rows, by a counting sort per window
 * as sell_perm does, kept as (length, rows) runs (S->runs) for the next configuration with the same
 * sigma: a few per window where the n sorted lengths cost a store each. */
static int sell_runs(spmv_summary *S, int32_t sigma, spmv_err *err) {
    const spmv_csr *A = S->A;
    int32_t n = A->nrows;
    if (S->runs_sigma == sigma) return SPMV_OK;
    int64_t nw = ((int64_t)n + sigma - 1) / sigma, most = nw * ((int64_t)S->lmax + 1);
    if (most > n) most = n; /* every run has a row */
    spmv_free(S->runs);     /* sized for another sigma */
    S->runs_sigma = 0;
    S->runs = (int32_t *)spmv_malloc(2 * most, sizeof(int32_t), err);
    if (S->runs == NULL) return SPMV_ENOMEM;
    /* zeroed once: each window's walk zeroes what its counting set.  Four interleaved counts
     * where they are few beside the window's rows: rows of one length in a row would otherwise
     * make each increment wait for the store of the one before. */
    int64_t nh = (int64_t)S->lmax + 1, ways = 4 * nh <= sigma ? 4 : 1;
    int32_t *hist = (int32_t *)spmv_calloc(ways * nh, sizeof(int32_t), err);
    if (hist == NULL) return SPMV_ENOMEM;
    const int32_t *ip = A->indptr;
    int32_t *out = S->runs; /* not S->runs in the loop: its stores could change S */
    int64_t nr = 0;
    for (int32_t w0 = 0; w0<n; w0 = n - w0> sigma ? w0 + sigma : n) {
        int32_t w1 = n - w0 > sigma ? w0 + sigma : n, m = 0, i = w0;
        if (ways == 4) {
            int32_t *h1 = hist + nh, *h2 = h1 + nh, *h3 = h2 + nh;
            for (; i + 4 <= w1; i += 4) {
                int32_t l0 = ip[i + 1] - ip[i], l1 = ip[i + 2] - ip[i + 1];
                int32_t l2 = ip[i + 3] - ip[i + 2], l3 = ip[i + 4] - ip[i + 3];
                hist[l0]++;
                h1[l1]++;
                h2[l2]++;
                h3[l3]++;
                l0 = l0 > l1 ? l0 : l1;
                l2 = l2 > l3 ? l2 : l3;
                l0 = l0 > l2 ? l0 : l2;
                m = l0 > m ? l0 : m;
            }
        }
        for (; i < w1; i++) {
            int32_t len = ip[i + 1] - ip[i];
            hist[len]++;
            m = len > m ? len : m;
        }
        for (int32_t L = m; L >= 0; L--) {
            int32_t h = hist[L];
            hist[L] = 0;
            for (int64_t k = 1; k < ways; k++) {
                h += hist[k * nh + L];
                hist[k * nh + L] = 0;
            }
            if (h == 0) continue;
            out[2 * nr] = L;
            out[2 * nr++ + 1] = h;
        }
    }
    spmv_free(hist);
    S->nruns = nr;
    S->runs_sigma = sigma;
    return SPMV_OK;
}

/* Slice widths from row lengths: with sigma 1 or C no row leaves its slice, so a slice is as wide
 * as its longest row; otherwise the first row of each slice in the window-sorted lengths. */
static int sell_size_summary(spmv_summary *S, spmv_fmt *F, spmv_err *err) {
    int rc = sell_params(F, err);
    if (rc) return rc;
    const spmv_csr *A = S->A;
    int32_t c = F->param[0], sigma = F->param[1], n = A->nrows;
    int64_t slots = 0;
    int use = 0;
    if (sigma == 1 || sigma == c) rc = spmv_summary_windows(S, c, &use, err);
    if (rc) return rc;
    if (use) { /* a slice's width: the longest row of its windows */
        int64_t nw = ((int64_t)n + S->win - 1) / S->win, per = c / S->win;
        for (int64_t k0 = 0; k0 < nw; k0 += per) {
            int32_t w = 0;
            for (int64_t k = k0; k < k0 + per && k < nw; k++) w = S->wlen[k] > w ? S->wlen[k] : w;
            slots += w;
        }
    } else if (sigma == 1 || sigma == c) {
        for (int64_t r0 = 0; r0 < n; r0 += c) {
            int32_t w = 0, r1 = n - r0 < c ? n : (int32_t)(r0 + c);
            for (int32_t r = (int32_t)r0; r < r1; r++) w = row_len(A, r) > w ? row_len(A, r) : w;
            slots += w;
        }
    } else {
        /* windows start at multiples of sigma, so of c: the slices start at the multiples of c
         * in the runs laid end to end, and a run of length L starting at sorted position p holds
         * the first rows of ceil((p + rows) / c) - ceil(p / c) of them */
        rc = sell_runs(S, sigma, err);
        if (rc) return rc;
        for (int64_t k = 0, p = 0; k < S->nruns; k++) {
            int64_t L = S->runs[2 * k], rows = S->runs[2 * k + 1];
            slots += L * ((p + rows + c - 1) / c - (p + c - 1) / c);
            p += rows;
        }
    }
    return sell_size_slots(A, F, slots * c, err);
}

#define SPMV_REAL float
#define SPMV_NAME(x) x##_f32
#include "sell_impl.h"
#define SPMV_REAL double
#define SPMV_NAME(x) x##_f64
#include "sell_impl.h"

/* Slices of c rows take their widths from the summary's windows when sigma keeps rows in them. */
static int sell_need(spmv_summary *S, const spmv_fmt *F, spmv_err *err) {
    (void)err;
    if (F->param[0] >= 1 && (F->param[1] == 1 || F->param[1] == F->param[0]))
        spmv_summary_window(S, F->param[0]);
    return SPMV_OK;
}

static int sell_check(const spmv_fmt *F, spmv_err *err) {
    static const char *const what[] = {"perm", "slice_ptr", "col", NULL, "values", NULL};
    int rc = sell_params(F, err);
    if (rc) return rc; /* c >= 1 from here on: it divides */
    int32_t c = F->param[0], n = F->nrows;
    int64_t nslices = ((int64_t)n + c - 1) / c, count = 0;
    rc = spmv_fmt_scalar(F, 0, nslices, nslices, "slices = ceil(nrows / c)", err);
    if (rc == SPMV_OK) rc = spmv_fmt_scalar(F, 1, 0, INT32_MAX, "slots", err);
    if (rc) return rc;
    int64_t nidx[SPMV_MAXIDX] = {n, nslices + 1, F->scalar[1]}, nval[SPMV_MAXVAL] = {F->scalar[1]};
    rc = spmv_fmt_lengths(F, nidx, nval, what, err);
    if (rc == SPMV_OK) rc = spmv_fmt_ptr(F, F->idx[1], nslices, F->scalar[1], c, "slice_ptr", err);
    if (rc == SPMV_OK) rc = spmv_fmt_perm(F, F->idx[0], n, "perm", err);
    const int32_t *perm = F->idx[0], *sp = F->idx[1], *col = F->idx[2];
    for (int64_t s = 0; rc == SPMV_OK && s < nslices; s++) {
        int32_t w = (sp[s + 1] - sp[s]) / c;
        for (int32_t l = 0; rc == SPMV_OK && l < c; l++) {
            int64_t r = s * c + l, prev = -1;
            int32_t k = 0;
            for (; rc == SPMV_OK && r < n && k < w && col[sp[s] + (int64_t)k * c + l] >= 0; k++)
                rc = spmv_fmt_col(F, perm[r], col[sp[s] + (int64_t)k * c + l], &prev, "col", err);
            count += k;
            for (; rc == SPMV_OK && k < w; k++)
                if (col[sp[s] + (int64_t)k * c + l] != -1)
                    rc = spmv_fail(err, SPMV_EINDEX, r, col[sp[s] + (int64_t)k * c + l], -1,
                                   "sell: col holds %d in slot %d of lane %d of slice %lld, after "
                                   "the lane's entries or past nrows: only padding (-1) may be "
                                   "there",
                                   col[sp[s] + (int64_t)k * c + l], k, l, (long long)s);
        }
    }
    return rc ? rc : spmv_fmt_count(F, count, err);
}

SPMV_API const spmv_format_ops spmv_sell_ops = {
    .size = sell_size,
    .fill_f32 = sell_fill_f32,
    .fill_f64 = sell_fill_f64,
    .to_csr_f32 = sell_to_csr_f32,
    .to_csr_f64 = sell_to_csr_f64,
    .mv_f32 = sell_mv_f32,
    .mv_f64 = sell_mv_f64,
    .check = sell_check,
    .size_summary = sell_size_summary,
    .need = sell_need,
};
