// csrc/cidx.c: CIDX (CSR with compressed column indices) — size query, conversion, back, CPU kernel
// SPDX-License-Identifier: BSD-3-Clause
//
// CSR whose column indices take 8 or 16 bits an entry instead of 32, so that a product moves
// fewer bytes: row pointers and values stay CSR's, and the entry stream (CSR's order, across
// rows) is cut into chunks of CHUNK = 32 entries, each with one 32-bit word `base`.
//   - An ordinary chunk, whose columns lie in [m, m + 2^bits) with m their smallest: base = m >= 0
//     and entry p's column is base + off[p].
//   - An escape chunk (its columns span 2^bits or more): base = -1 - e for the e-th escape chunk
//     in chunk order, off[p] = the column's low `bits` bits and hi[32 e + p % 32] = the column
//     >> bits, so the column is hi << bits | off[p].  hi takes 16 bits an entry with bits = 16
//     (columns < 2^31) and 32 with bits = 8.
// Why so: any entry's column comes from two loads and an add, with no prefix sum over deltas, so
// the CSR kernels' access patterns (a thread per row, a group of threads striding over a row)
// keep working unchanged; the chunk is a warp's worth, so a warp's 32 consecutive entries share
// one or two base words (broadcast loads); every chunk offset is stored, escape chunks included,
// so off is indexed by p alone, and an escape costs bits/8 + 2 (bits 16) or 1 + 4 (bits 8) bytes
// an entry, as much as CSR's 4 or a byte more, where a side array of whole columns would cost
// 2 + 4.  Indices then take 2.125 (bits 16) or 1.125 (bits 8) bytes an entry where no chunk
// escapes.  A matrix whose chunks mostly escape is better kept in CSR: the size query says so in
// bytes (design rows' bytes_moved), nothing refuses it.  On the 75 generated matrices of 1e6 to
// 1.6e7 entries of the shipped H100 datasets, the better of the two moved a median 0.87 of CSR's
// bytes in float32 (0.915 in float64): at most 0.8 on 31 (3), at most 0.9 on 41 (37), more than
// CSR on 15 (random columns: power-law, circuit); 16 bits was the better on 69.  Values and x
// dominate in float64, so 0.8 needs about a byte an entry of index there: only narrow bands get it.
// Layout (spmv_fmt with format SPMV_FMT_CIDX): param[0] = bits, 8 or 16 (param[1] unused).
//   scalar[0] = nchunks = ceil(nnz / 32), scalar[1] = nesc, the escape chunks;
//   idx[0] = indptr[nrows+1] (CSR's);
//   idx[1] = base[nchunks];
//   idx[2] = off[bits * nchunks] words: entry p's offset is bits (p * bits) % 32 .. of word
//            p * bits / 32, i.e. off read as a uint8 (bits 8) or uint16 (bits 16) array on a
//            little-endian machine, as the CUDA kernels read it;
//   idx[3] = hi[ebits * nesc] words, ebits = 16 (bits 16) or 32 (bits 8), packed the same way;
//   val[0] = values[nnz] (CSR's).
// The slots of the last chunk past nnz hold 0 in off and hi.  Every array is read by the kernels
// (hi only for escape chunks, all of whose slots they read): bytes moved are the bytes stored.
// Kernel variant 0: row-parallel, CSR's loop with the column decoded.
#include "spmv_internal.h"

#include <string.h>

#define CHUNK 32 /* entries per chunk: a warp's worth */

static int32_t cidx_ebits(int32_t bits) { return bits == 16 ? 16 : 32; }

/* Entry k of a packed array of b-bit fields (b = 8, 16 or 32). */
static inline uint32_t cidx_get(const int32_t *w, int64_t k, int32_t b) {
    if (b == 32) return (uint32_t)w[k];
    int64_t bit = k * b;
    return ((uint32_t)w[bit >> 5] >> (bit & 31)) & ((1u << b) - 1u);
}

/* Set entry k (its field still 0) of a packed array of b-bit fields to v < 2^b. */
static inline void cidx_put(int32_t *w, int64_t k, int32_t b, uint32_t v) {
    int64_t bit = k * b;
    w[bit >> 5] = (int32_t)((uint32_t)w[bit >> 5] | (v << (bit & 31)));
}

/* Column of entry p, in int64 (a state under check may hold anything). */
static inline int64_t cidx_col(const int32_t *base, const int32_t *off, const int32_t *hi,
                               int32_t bits, int64_t p) {
    int32_t b = base[p / CHUNK];
    uint32_t o = cidx_get(off, p, bits);
    if (b >= 0) return (int64_t)b + o;
    int64_t e = -1 - (int64_t)b;
    return (int64_t)cidx_get(hi, e * CHUNK + p % CHUNK, cidx_ebits(bits)) << bits | o;
}

static int cidx_params(const spmv_fmt *F, spmv_err *err) {
    if (F->param[0] != 8 && F->param[0] != 16)
        return spmv_fail(err, SPMV_EINVAL, -1, F->param[0], 16,
                         "The 'bits' parameter of cidx must be 8 or 16. Got %d instead.",
                         (int)F->param[0]);
    return SPMV_OK;
}

/* Sizes from the escape chunks' count. */
static int cidx_size_esc(spmv_fmt *F, int64_t nesc, spmv_err *err) {
    int32_t bits = F->param[0];
    int64_t nchunks = (F->nnz + CHUNK - 1) / CHUNK;
    if (nchunks * CHUNK > INT32_MAX) /* nnz <= INT32_MAX, but the last chunk's slots may pass it */
        return spmv_fail(err, SPMV_ENOTAPPLICABLE, -1, nchunks * CHUNK, INT32_MAX,
                         "cidx needs %lld entry slots (chunks of %d), past the int32 limit %d",
                         (long long)(nchunks * CHUNK), CHUNK, INT32_MAX);
    F->scalar[0] = nchunks;
    F->scalar[1] = nesc;
    F->nidx[0] = (int64_t)F->nrows + 1;
    F->nidx[1] = nchunks;
    F->nidx[2] = bits * nchunks;
    F->nidx[3] = cidx_ebits(bits) * nesc;
    F->nval[0] = F->nnz;
    return SPMV_OK;
}

/* Smallest and largest column of chunk c. */
static void cidx_extremes(const spmv_csr *A, int64_t c, int32_t *lo, int32_t *hi) {
    int64_t p0 = c * CHUNK, nnz = A->indptr[A->nrows], p1 = p0 + CHUNK < nnz ? p0 + CHUNK : nnz;
    int32_t mn = A->indices[p0], mx = mn;
    for (int64_t p = p0 + 1; p < p1; p++) {
        int32_t v = A->indices[p];
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
    }
    *lo = mn;
    *hi = mx;
}

static int cidx_size(const spmv_csr *A, spmv_fmt *F, spmv_err *err) {
    int rc = cidx_params(F, err);
    if (rc) return rc;
    int32_t bits = F->param[0];
    int64_t nchunks = (F->nnz + CHUNK - 1) / CHUNK, nesc = 0;
#pragma omp parallel for schedule(static) reduction(+ : nesc) if (F->nnz > SPMV_OMP_MIN_WORK)
    for (int64_t c = 0; c < nchunks; c++) {
        int32_t lo, hi;
        cidx_extremes(A, c, &lo, &hi);
        nesc += (hi - lo) >> bits != 0;
    }
    return cidx_size_esc(F, nesc, err);
}

/* ---- cidx's part of the one pass (csrc/pass.c): the chunks whose columns span 2^8 or more
 * (wide[0]) and 2^16 or more (wide[1]), max - min; never when sampling (size_summary then counts
 * on the sample, which is small).  A thread counts the chunks wholly inside its entries and keeps
 * apart, as partial records, the (at most two) it shares with the threads before or after it;
 * merge joins those in thread order: the same counts for any thread count. ---- */

typedef struct {
    int64_t wide[2];
    int64_t c; /* while merging: the shared chunk open (-1: none) and its extremes */
    int32_t lo, hi;
} cidx_spans;

typedef struct {
    int64_t first; /* the thread's first entry */
    int64_t c;     /* the open chunk (-1: none) and its extremes */
    int32_t lo, hi;
    int64_t wide[2]; /* chunks counted here */
    int np;          /* partial records */
    int64_t pc[2];   /* their chunks and extremes */
    int32_t plo[2], phi[2];
} cidx_thread;

static void spans_count(int64_t wide[2], int32_t lo, int32_t hi) {
    wide[0] += hi - lo >= (1 << 8);
    wide[1] += hi - lo >= (1 << 16);
}

/* Close the open chunk; complete: whether it ends within the thread's entries. */
static void spans_close(cidx_thread *s, int complete) {
    if (s->c < 0) return;
    if (complete && s->c * CHUNK >= s->first)
        spans_count(s->wide, s->lo, s->hi);
    else {
        s->pc[s->np] = s->c;
        s->plo[s->np] = s->lo;
        s->phi[s->np++] = s->hi;
    }
    s->c = -1;
}

static int cidx_pass_start(void *res, const spmv_pass_view *V, spmv_err *err) {
    cidx_spans *r = (cidx_spans *)res;
    (void)err;
    r->wide[0] = r->wide[1] = 0;
    r->c = -1;
    return V->nrange > 0 ? 1 : SPMV_OK;
}

static int cidx_pass_open(const void *res, void *ts, const spmv_pass_view *V, int t,
                          spmv_err *err) {
    cidx_thread *s = (cidx_thread *)ts;
    (void)res, (void)err;
    s->first = V->A->indptr[V->split[t]];
    s->c = -1;
    return SPMV_OK;
}

/* The block's entries, in entry order, continuing the thread's chunks: a chunk's share of the
 * block at a time, whose extremes are a loop without branches (the compiler vectorises it; the
 * per-entry test of a new chunk it replaced was a fifth of rank()'s time on a 2-D stencil). */
static void cidx_pass_block(void *res, void *ts, const spmv_pass_block *B) {
    cidx_thread *s = (cidx_thread *)ts;
    const int32_t *ix = B->ix;
    int64_t e = B->A->indptr[B->r0], e1 = B->A->indptr[B->r1];
    (void)res;
    while (e < e1) {
        int64_t c = e / CHUNK, end = (c + 1) * CHUNK < e1 ? (c + 1) * CHUNK : e1;
        int32_t lo = ix[e], hi = ix[e];
        for (int64_t k = e + 1; k < end; k++) {
            lo = ix[k] < lo ? ix[k] : lo;
            hi = ix[k] > hi ? ix[k] : hi;
        }
        if (c != s->c) {
            spans_close(s, 1);
            s->c = c;
            s->lo = lo;
            s->hi = hi;
        } else {
            s->lo = lo < s->lo ? lo : s->lo;
            s->hi = hi > s->hi ? hi : s->hi;
        }
        e = end;
    }
}

static void cidx_pass_merge(void *res, void *ts, const spmv_pass_view *V, int t) {
    cidx_spans *r = (cidx_spans *)res;
    cidx_thread *s = (cidx_thread *)ts;
    int64_t end = V->A->indptr[V->split[t + 1]], nnz = V->A->indptr[V->A->nrows];
    spans_close(s, (s->c + 1) * CHUNK <= end || end == nnz); /* whole if it ends where the
                                                                 thread's entries do */
    r->wide[0] += s->wide[0];
    r->wide[1] += s->wide[1];
    for (int k = 0; k < s->np; k++) {
        if (s->pc[k] != r->c) {
            if (r->c >= 0) spans_count(r->wide, r->lo, r->hi);
            r->c = s->pc[k];
            r->lo = s->plo[k];
            r->hi = s->phi[k];
        }
        r->lo = s->plo[k] < r->lo ? s->plo[k] : r->lo;
        r->hi = s->phi[k] > r->hi ? s->phi[k] : r->hi;
    }
    if (t == V->nt - 1 && r->c >= 0) spans_count(r->wide, r->lo, r->hi);
}

static const spmv_pass_part cidx_part = {
    .size = sizeof(cidx_spans),
    .tsize = sizeof(cidx_thread),
    .start = cidx_pass_start,
    .open = cidx_pass_open,
    .block = cidx_pass_block,
    .merge = cidx_pass_merge,
};

/* The escape chunks from the pass's span counts; a sample's are counted here, on the sample
 * (S->A), which is small. */
static int cidx_size_summary(spmv_summary *S, spmv_fmt *F, spmv_err *err) {
    int rc = cidx_params(F, err);
    if (rc) return rc;
    const cidx_spans *r = (const cidx_spans *)spmv_pass_found(&S->pass, &cidx_part);
    if (r == NULL) return cidx_size(S->A, F, err);
    return cidx_size_esc(F, r->wide[F->param[0] == 8 ? 0 : 1], err);
}

#define SPMV_REAL float
#define SPMV_NAME(x) x##_f32
#include "cidx_impl.h"
#define SPMV_REAL double
#define SPMV_NAME(x) x##_f64
#include "cidx_impl.h"

/* Escape chunks numbered 0, 1, ... in chunk order (each hi slot belongs to one chunk), padding 0,
 * then every decoded column in [0, ncols) and increasing along its row. */
static int cidx_check(const spmv_fmt *F, spmv_err *err) {
    static const char *const what[] = {"indptr", "base", "off", "hi", "values", NULL};
    int rc = cidx_params(F, err);
    if (rc) return rc;
    int32_t bits = F->param[0], ebits = cidx_ebits(bits), n = F->nrows;
    int64_t nchunks = (F->nnz + CHUNK - 1) / CHUNK;
    rc = spmv_fmt_scalar(F, 0, nchunks, nchunks, "chunks = ceil(nnz / 32)", err);
    if (rc == SPMV_OK) rc = spmv_fmt_scalar(F, 1, 0, nchunks, "escape chunks", err);
    if (rc) return rc;
    int64_t nesc = F->scalar[1];
    int64_t nidx[SPMV_MAXIDX] = {(int64_t)n + 1, nchunks, bits * nchunks, ebits * nesc};
    int64_t nval[SPMV_MAXVAL] = {F->nnz};
    rc = spmv_fmt_lengths(F, nidx, nval, what, err);
    if (rc == SPMV_OK) rc = spmv_fmt_ptr(F, F->idx[0], n, F->nnz, 1, "indptr", err);
    if (rc) return rc;
    const int32_t *ip = F->idx[0], *base = F->idx[1], *off = F->idx[2], *hi = F->idx[3];
    int64_t e = 0;
    for (int64_t c = 0; c < nchunks; c++) {
        if (base[c] >= 0) continue;
        if (-1 - (int64_t)base[c] != e)
            return spmv_fail(err, SPMV_EINDEX, c, base[c], -1 - e,
                             "cidx: base[%lld] = %d; escape chunk %lld must be %lld (escape "
                             "chunks are numbered in order)",
                             (long long)c, base[c], (long long)e, (long long)(-1 - e));
        e++;
    }
    if (e != nesc)
        return spmv_fail(err, SPMV_EINVAL, -1, e, nesc,
                         "cidx: base marks %lld escape chunks; scalar[1] = %lld", (long long)e,
                         (long long)nesc);
    for (int64_t p = F->nnz; p < nchunks * CHUNK; p++) {
        int escape = base[nchunks - 1] < 0;
        if (cidx_get(off, p, bits) != 0 ||
            (escape && cidx_get(hi, (nesc - 1) * CHUNK + p % CHUNK, ebits) != 0))
            return spmv_fail(err, SPMV_EINDEX, p, -1, F->nnz,
                             "cidx: slot %lld of the last chunk is past nnz = %lld and must hold "
                             "0 in off%s",
                             (long long)p, (long long)F->nnz, escape ? " and hi" : "");
    }
    for (int32_t i = 0; rc == SPMV_OK && i < n; i++) {
        int64_t prev = -1;
        for (int64_t p = ip[i]; rc == SPMV_OK && p < ip[i + 1]; p++)
            rc = spmv_fmt_col(F, i, cidx_col(base, off, hi, bits, p), &prev, "columns (decoded)",
                              err);
    }
    return rc;
}

SPMV_API const spmv_format_ops spmv_cidx_ops = {
    .size = cidx_size,
    .fill_f32 = cidx_fill_f32,
    .fill_f64 = cidx_fill_f64,
    .to_csr_f32 = cidx_to_csr_f32,
    .to_csr_f64 = cidx_to_csr_f64,
    .mv_f32 = cidx_mv_f32,
    .mv_f64 = cidx_mv_f64,
    .check = cidx_check,
    .size_summary = cidx_size_summary,
    .pass = &cidx_part,
};
