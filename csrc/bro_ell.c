// csrc/bro_ell.c: BRO-ELL — size query, conversion from CSR, back to CSR, CPU kernel
// SPDX-License-Identifier: BSD-3-Clause
//
// Bit-representation-optimised ELL (Tang et al.): sliced ELL whose column indices are delta-coded
// and packed into 32-bit words, trading a few shifts for less index traffic.
// Layout (spmv_fmt with format SPMV_FMT_BRO_ELL): param[0] = h, the slice height (a power of two in
// [1, 1024]); param[1] = bits: 0 = adaptive per slice, or a fixed 8, 16 or 32.
// Symbols of a row: sym_0 = col_0 + 1, sym_k = col_k - col_{k-1}; every real symbol is >= 1, so 0
// marks padding.  Slice s holds rows s*h .. s*h+h-1; W_s = its longest row; b_s = bits, or
// (adaptive) the bit length of its largest symbol, at least 1; spw_s = 32 / b_s symbols per word
// (symbols never straddle words); nw_s = ceil(W_s / spw_s) words per row.
//   scalar[0] = nslices = ceil(nrows / h), scalar[1] = total words, scalar[2] = total value slots;
//   idx[0] = word_ptr[nslices+1], idx[1] = val_ptr[nslices+1];
//   idx[2] = slice_info[2*nslices]: (W_s, b_s) pairs;
//   idx[3] = words (uint32 bit patterns in int32): word w of lane l of slice s at
//            word_ptr[s] + w*h + l; symbol j of a row sits in its word j / spw_s at bit offset
//            (j % spw_s) * b_s;
//   val[0] = values: value j of lane l of slice s at val_ptr[s] + j*h + l (padding 0).
// Lanes past nrows are all zero.  With fixed bits < 32 a delta >= 2^bits cannot be coded:
// SPMV_ENOTAPPLICABLE naming the row and the delta.  Refused as well when value slots pass
// max_fill * max(nnz, nrows).  Kernel variant 0: row-parallel; col = -1, then for each symbol
// until the first 0: col += sym, sum += v * x[col].
#include "spmv_internal.h"

#define BRO_ELL_MAX_H 1024

static int bro_ell_params(const spmv_fmt *F, spmv_err *err) {
    int32_t h = F->param[0], bits = F->param[1];
    if (h < 1 || h > BRO_ELL_MAX_H || (h & (h - 1)) != 0)
        return spmv_fail(err, SPMV_EINVAL, -1, h, BRO_ELL_MAX_H,
                         "The 'h' parameter of bro_ell must be a power of two in [1, %d]. Got %d "
                         "instead.",
                         BRO_ELL_MAX_H, h);
    if (bits != 0 && bits != 8 && bits != 16 && bits != 32)
        return spmv_fail(err, SPMV_EINVAL, -1, bits, 32,
                         "The 'bits' parameter of bro_ell must be 0 (adaptive), 8, 16 or 32. Got "
                         "%d instead.",
                         bits);
    return SPMV_OK;
}

/* Width and symbol bits of slice s; SPMV_ENOTAPPLICABLE when a delta does not fit fixed bits. */
static int bro_ell_slice(const spmv_csr *A, int32_t h, int32_t bits, int64_t s, int32_t *width,
                         int32_t *nbits, spmv_err *err) {
    int32_t w = 0;
    uint32_t maxsym = 0;
    for (int64_t i = s * h; i < (s + 1) * h && i < A->nrows; i++) {
        int32_t p0 = A->indptr[i], p1 = A->indptr[i + 1];
        if (p1 - p0 > w) w = p1 - p0;
        for (int32_t p = p0; p < p1; p++) {
            /* col_0 + 1 <= ncols <= INT32_MAX and sorted columns: no int32 overflow */
            uint32_t sym = (uint32_t)(A->indices[p] - (p > p0 ? A->indices[p - 1] : -1));
            if (sym > maxsym) maxsym = sym;
        }
    }
    int32_t b = 1;
    while (b < 32 && (maxsym >> b) != 0) b++;
    if (bits != 0 && b > bits) {
        for (int64_t i = s * h; i < (s + 1) * h && i < A->nrows; i++) /* name the first culprit */
            for (int32_t p = A->indptr[i]; p < A->indptr[i + 1]; p++) {
                int64_t d = (int64_t)A->indices[p] - (p > A->indptr[i] ? A->indices[p - 1] : -1);
                if (d >= ((int64_t)1 << bits))
                    return spmv_fail(err, SPMV_ENOTAPPLICABLE, i, d, (int64_t)1 << bits,
                                     "BRO-ELL with bits=%d cannot code the column delta %lld in "
                                     "row %lld (needs %d bits; use bits=0 for adaptive)",
                                     (int)bits, (long long)d, (long long)i, (int)b);
            }
    }
    *width = w;
    *nbits = bits != 0 ? bits : b;
    return SPMV_OK;
}

/* Words per row of a slice of width w with b-bit symbols. */
static int64_t bro_ell_nwords(int32_t w, int32_t b) {
    int32_t spw = 32 / b;
    return ((int64_t)w + spw - 1) / spw; /* int64: w near INT32_MAX would overflow */
}

static int bro_ell_size_sums(const spmv_csr *A, spmv_fmt *F, int64_t words, int64_t vals,
                             spmv_err *err) {
    int32_t h = F->param[0];
    int64_t nslices = ((int64_t)A->nrows + h - 1) / h;
    char what[48];
    spmv_what(err, what, sizeof what, "BRO-ELL with h=%d", (int)h);
    int rc = spmv_fill_guard(F, vals, what, err); /* words <= value slots: this covers both */
    if (rc) return rc;
    F->scalar[0] = nslices;
    F->scalar[1] = words;
    F->scalar[2] = vals;
    F->nidx[0] = nslices + 1;
    F->nidx[1] = nslices + 1;
    F->nidx[2] = 2 * nslices;
    F->nidx[3] = words;
    F->nval[0] = vals;
    return SPMV_OK;
}

static int bro_ell_size(const spmv_csr *A, spmv_fmt *F, spmv_err *err) {
    int rc = bro_ell_params(F, err);
    if (rc) return rc;
    int32_t h = F->param[0];
    int64_t nslices = ((int64_t)A->nrows + h - 1) / h, words = 0, vals = 0;
    for (int64_t s = 0; s < nslices; s++) {
        int32_t w, b;
        rc = bro_ell_slice(A, h, F->param[1], s, &w, &b, err);
        if (rc) return rc;
        words += (int64_t)h * bro_ell_nwords(w, b);
        vals += (int64_t)h * w;
    }
    return bro_ell_size_sums(A, F, words, vals, err);
}

/* BRO-ELL's part of the one pass (csrc/pass.c): each passed row's largest symbol, col_0 + 1 or
 * the largest gap between neighbours (0 for an empty row), sym[rows passed]; and, made on first
 * use, the largest per window of the summary's (wsym). */
typedef struct {
    uint32_t *sym;
    uint32_t *wsym;
} bro_ell_syms;

static int bro_ell_pass_start(void *res, const spmv_pass_view *V, spmv_err *err) {
    bro_ell_syms *r = (bro_ell_syms *)res;
    r->sym = (uint32_t *)spmv_malloc(V->rows, sizeof(uint32_t), err);
    return r->sym != NULL ? SPMV_OK : SPMV_ENOMEM;
}

static void bro_ell_pass_block(void *res, void *ts, const spmv_pass_block *B) {
    uint32_t *sym = ((bro_ell_syms *)res)->sym + B->at; /* row r0's */
    const int32_t *ip = B->A->indptr;
    (void)ts;
    for (int32_t k = 0; k < B->r1 - B->r0; k++) {
        int32_t i = B->r0 + k, first = ip[i + 1] > ip[i] ? B->ix[ip[i]] : -1, gap = B->gap[k];
        sym[k] = first < 0 ? 0 : (uint32_t)(first + 1 > gap ? first + 1 : gap);
    }
}

static void bro_ell_pass_free(void *res) {
    bro_ell_syms *r = (bro_ell_syms *)res;
    spmv_free(r->sym);
    spmv_free(r->wsym);
}

static const spmv_pass_part bro_ell_part = {
    .size = sizeof(bro_ell_syms),
    .start = bro_ell_pass_start,
    .block = bro_ell_pass_block,
    .free = bro_ell_pass_free,
};

static int bro_ell_need(spmv_summary *S, const spmv_fmt *F, spmv_err *err) {
    (void)err;
    if (F->param[0] >= 1) spmv_summary_window(S, F->param[0]);
    return SPMV_OK;
}

/* The largest symbol of each window of S->win rows, into r->wsym on first use. */
static int bro_ell_windows(const spmv_summary *S, bro_ell_syms *r, spmv_err *err) {
    if (r->wsym != NULL) return SPMV_OK;
    int32_t n = S->A->nrows, win = S->win;
    int64_t nw = ((int64_t)n + win - 1) / win;
    uint32_t *wsym = r->wsym = (uint32_t *)spmv_malloc(nw, sizeof(uint32_t), err);
    if (wsym == NULL) return SPMV_ENOMEM;
    for (int64_t k = 0; k < nw; k++) {
        int32_t i0 = (int32_t)(k * win), i1 = n - i0 < win ? n : i0 + win;
        uint32_t m = 0;
        for (int32_t i = i0; i < i1; i++) m = r->sym[i] > m ? r->sym[i] : m;
        wsym[k] = m;
    }
    return SPMV_OK;
}

/* Bits of v's binary form (0 for 0), by halving. */
static int32_t bit_length(uint32_t v) {
    int32_t b = 0;
    for (int32_t half = 16; half > 0; half /= 2)
        if (v >> half) {
            v >>= half;
            b += half;
        }
    return b + (int32_t)v;
}

/* Slices from the row lengths and each row's largest symbol (csrc/pass.c), as bro_ell_slice
 * finds them. */
static int bro_ell_size_summary(spmv_summary *S, spmv_fmt *F, spmv_err *err) {
    int rc = bro_ell_params(F, err);
    if (rc) return rc;
    const spmv_csr *A = S->A;
    bro_ell_syms *r = (bro_ell_syms *)spmv_pass_found(&S->pass, &bro_ell_part);
    int32_t h = F->param[0], bits = F->param[1], n = A->nrows;
    int64_t words = 0, vals = 0;
    if (r == NULL) return bro_ell_size(A, F, err); /* need() not called */
    const uint32_t *sym = r->sym;
    int use = 0;
    rc = spmv_summary_windows(S, h, &use, err);
    if (rc == SPMV_OK && use) rc = bro_ell_windows(S, r, err);
    if (rc) return rc;
    int64_t nw = use ? ((int64_t)n + S->win - 1) / S->win : 0, per = use ? h / S->win : 0;
    for (int64_t i0 = 0; i0 < n; i0 += h) {
        int32_t w = 0, i1 = n - i0 < h ? n : (int32_t)(i0 + h), b = 1;
        uint32_t maxsym = 0;
        if (use) /* the slice's windows: its rows' maxima */
            for (int64_t k = i0 / S->win; k < i0 / S->win + per && k < nw; k++) {
                w = S->wlen[k] > w ? S->wlen[k] : w;
                maxsym = r->wsym[k] > maxsym ? r->wsym[k] : maxsym;
            }
        for (int32_t i = (int32_t)i0; !use && i < i1; i++) {
            int32_t len = A->indptr[i + 1] - A->indptr[i];
            w = len > w ? len : w;
            maxsym = sym[i] > maxsym ? sym[i] : maxsym;
        }
        b = bit_length(maxsym);
        b = b > 1 ? b : 1;
        if (bits != 0 && b > bits)
            return spmv_fail(err, SPMV_ENOTAPPLICABLE, i0, maxsym, (int64_t)1 << bits,
                             "BRO-ELL with bits=%d cannot code the symbol %lld in "
                             "rows %lld..%lld (needs %d bits; use bits=0 for adaptive)",
                             (int)bits, (long long)maxsym, (long long)i0, (long long)i1 - 1,
                             (int)b);
        b = bits != 0 ? bits : b;
        words += (int64_t)h * bro_ell_nwords(w, b);
        vals += (int64_t)h * w;
    }
    return bro_ell_size_sums(A, F, words, vals, err);
}

/* Symbol j of lane l in a slice whose words start at words[base]. */
static inline uint32_t bro_ell_sym(const int32_t *words, int64_t base, int32_t h, int32_t l,
                                   int32_t j, int32_t b) {
    int32_t spw = 32 / b;
    uint32_t mask = b == 32 ? 0xffffffffu : (1u << b) - 1u;
    uint32_t word = (uint32_t)words[base + (int64_t)(j / spw) * h + l];
    return (word >> ((j % spw) * b)) & mask;
}

/* Stored entries of row i: its symbols up to the first 0. */
static int32_t bro_ell_len(const spmv_fmt *F, int32_t i) {
    int32_t h = F->param[0], s = i / h, l = i % h;
    int32_t w = F->idx[2][2 * s], b = F->idx[2][2 * s + 1], j = 0;
    while (j < w && bro_ell_sym(F->idx[3], F->idx[0][s], h, l, j, b) != 0) j++;
    return j;
}

#define SPMV_REAL float
#define SPMV_NAME(x) x##_f32
#include "bro_ell_impl.h"
#define SPMV_REAL double
#define SPMV_NAME(x) x##_f64
#include "bro_ell_impl.h"

/* Slice sizes must add up to the pointers exactly (the kernel trusts word_ptr[s] + w*h + l), then
 * every row decodes to columns in [0, ncols), its symbols 0 after the first 0. */
static int bro_ell_check(const spmv_fmt *F, spmv_err *err) {
    static const char *const what[] = {"word_ptr", "val_ptr", "slice_info",
                                       "words",    "values",  NULL};
    int rc = bro_ell_params(F, err);
    if (rc) return rc; /* h >= 1 from here on: it divides */
    int32_t h = F->param[0], bits = F->param[1], n = F->nrows;
    int64_t nslices = ((int64_t)n + h - 1) / h, words = F->scalar[1], vals = F->scalar[2];
    rc = spmv_fmt_scalar(F, 0, nslices, nslices, "slices = ceil(nrows / h)", err);
    if (rc == SPMV_OK) rc = spmv_fmt_scalar(F, 1, 0, INT32_MAX, "words", err);
    if (rc == SPMV_OK) rc = spmv_fmt_scalar(F, 2, 0, INT32_MAX, "value slots", err);
    if (rc) return rc;
    int64_t nidx[SPMV_MAXIDX] = {nslices + 1, nslices + 1, 2 * nslices, words};
    int64_t nval[SPMV_MAXVAL] = {vals};
    rc = spmv_fmt_lengths(F, nidx, nval, what, err);
    const int32_t *wp = F->idx[0], *vp = F->idx[1], *info = F->idx[2];
    int64_t wsum = 0, vsum = 0, count = 0;
    for (int64_t s = 0; rc == SPMV_OK && s <= nslices; s++) {
        if (wp[s] != wsum || vp[s] != vsum)
            return spmv_fail(err, SPMV_EINDEX, s, wp[s], wsum,
                             "bro_ell: word_ptr[%lld] = %d and val_ptr[%lld] = %d; the slices "
                             "before it give %lld and %lld",
                             (long long)s, wp[s], (long long)s, vp[s], (long long)wsum,
                             (long long)vsum);
        if (s == nslices) break;
        int32_t w = info[2 * s], b = info[2 * s + 1];
        if (w < 0 || b < 1 || b > 32 || (bits != 0 && b != bits))
            return spmv_fail(err, SPMV_EINVAL, s, b, 32,
                             "bro_ell: slice_info of slice %lld is (width %d, bits %d); the width "
                             "must be >= 0 and the bits in [1, 32]%s",
                             (long long)s, w, b, bits ? ", equal to the 'bits' parameter" : "");
        wsum += h * bro_ell_nwords(w, b);
        vsum += (int64_t)h * w;
        if (wsum > words || vsum > vals) /* also keeps the sums far from overflow */
            return spmv_fail(err, SPMV_EINDEX, s, wsum, words,
                             "bro_ell: slices 0..%lld need %lld words and %lld value slots, "
                             "past scalar[1] = %lld and scalar[2] = %lld",
                             (long long)s, (long long)wsum, (long long)vsum, (long long)words,
                             (long long)vals);
    }
    if (rc == SPMV_OK && (wsum != words || vsum != vals))
        rc = spmv_fail(err, SPMV_EINVAL, -1, wsum, words,
                       "bro_ell: the slices need %lld words and %lld value slots; scalar[1] = %lld "
                       "and scalar[2] = %lld",
                       (long long)wsum, (long long)vsum, (long long)words, (long long)vals);
    for (int32_t i = 0; rc == SPMV_OK && i < n; i++) {
        int32_t s = i / h, l = i % h, w = info[2 * s], b = info[2 * s + 1], j = 0;
        int64_t col = -1, prev = -1;
        for (; rc == SPMV_OK && j < w; j++) {
            uint32_t sym = bro_ell_sym(F->idx[3], wp[s], h, l, j, b);
            if (sym == 0) break;
            col += sym;
            rc = spmv_fmt_col(F, i, col, &prev, "words (decoded)", err);
        }
        count += j;
        for (; rc == SPMV_OK && j < w; j++)
            if (bro_ell_sym(F->idx[3], wp[s], h, l, j, b) != 0)
                rc = spmv_fail(err, SPMV_EINDEX, i, j, -1,
                               "bro_ell: row %d has a symbol after its padding (symbol %d): only "
                               "0 may follow the first 0",
                               i, j);
    }
    return rc ? rc : spmv_fmt_count(F, count, err);
}

SPMV_API const spmv_format_ops spmv_bro_ell_ops = {
    .size = bro_ell_size,
    .fill_f32 = bro_ell_fill_f32,
    .fill_f64 = bro_ell_fill_f64,
    .to_csr_f32 = bro_ell_to_csr_f32,
    .to_csr_f64 = bro_ell_to_csr_f64,
    .mv_f32 = bro_ell_mv_f32,
    .mv_f64 = bro_ell_mv_f64,
    .check = bro_ell_check,
    .size_summary = bro_ell_size_summary,
    .need = bro_ell_need,
    .pass = &bro_ell_part,
};
