// csrc/bsr.c: BSR — size query, conversion from CSR, back to CSR, CPU kernel
// SPDX-License-Identifier: BSD-3-Clause
//
// Layout (spmv_fmt with format SPMV_FMT_BSR): param[0] = b, the block size in [1, 32].  The matrix
// is cut into b x b blocks; only blocks holding at least one entry are stored.
//   scalar[0] = nbrows = ceil(nrows / b), scalar[1] = nbcols = ceil(ncols / b),
//   scalar[2] = nblocks;
//   idx[0] = block_ptr[nbrows+1]; idx[1] = block_col[nblocks], ascending within a block row;
//   idx[2] = presence bits, spmv_bitwords(nblocks*b*b) words: bit (blk*b + r)*b + c is set iff A
//            has an entry at (block row*b + r, block_col[blk]*b + c), so explicit zeros survive
//            the round trip and padding zeros do not appear;
//   val[0] = values[nblocks*b*b], row-major within each block, 0 where absent.
// Edge blocks reach past nrows and ncols; those rows and columns hold nothing.  Refused
// (SPMV_ENOTAPPLICABLE) when nblocks*b*b passes max_fill * max(nnz, nrows).  Kernel variant 0:
// block-row-parallel, dense b x b products skipping rows >= nrows and columns >= ncols, so x is
// never read past ncols.  Padding zeros are multiplied by x, so an inf or nan in x would leak into
// rows with no entry in that column: the Python layer refuses non-finite x for BSR.
#include "spmv_internal.h"

#define BSR_MAX_B 32

/* The next block column of block row `br` given one cursor per row into indices (cur[r] up to
 * indptr[row+1]): the smallest col/b among the rows' next entries, or -1 when every row is done.
 * Columns are sorted within rows, so repeated calls merge the rows and visit block columns in
 * ascending order without a sort or an nbcols-long workspace. */
static int32_t bsr_next(const spmv_csr *A, int32_t r0, int32_t rows, int32_t b,
                        const int32_t *cur) {
    int32_t bc = -1;
    for (int32_t r = 0; r < rows; r++)
        if (cur[r] < A->indptr[r0 + r + 1]) {
            int32_t c = A->indices[cur[r]] / b;
            if (bc < 0 || c < bc) bc = c;
        }
    return bc;
}

static int32_t bsr_rows(int32_t nrows, int32_t b, int64_t br) {
    int64_t left = nrows - br * b;
    return left < b ? (int32_t)left : b;
}

/* Blocks are counted in one pass over the entries with a mark per block column holding the last
 * block row that touched it (scipy's csr_count_blocks): one division per entry, where merging the
 * rows of each block row as the fill does costs O(b) per block and made the size query the bulk of
 * pyspmv.rank() (2.6 ms of 7 for every format of a 290k-entry matrix at b = 2). */
static int bsr_b(int32_t b, spmv_err *err) {
    if (b < 1 || b > BSR_MAX_B)
        return spmv_fail(err, SPMV_EINVAL, -1, b, BSR_MAX_B,
                         "The 'b' parameter of bsr must be a block size in [1, %d]. Got %d "
                         "instead.",
                         BSR_MAX_B, b);
    return SPMV_OK;
}

static int bsr_size_blocks(const spmv_csr *A, spmv_fmt *F, int64_t nblocks, spmv_err *err) {
    int32_t b = F->param[0];
    int64_t nbrows = ((int64_t)A->nrows + b - 1) / b, nbcols = ((int64_t)A->ncols + b - 1) / b;
    int64_t slots = nblocks * b * b;
    char what[48];
    spmv_what(err, what, sizeof what, "BSR with b=%d", (int)b);
    int rc = spmv_fill_guard(F, slots, what, err);
    if (rc) return rc;
    F->scalar[0] = nbrows;
    F->scalar[1] = nbcols;
    F->scalar[2] = nblocks;
    F->nidx[0] = nbrows + 1;
    F->nidx[1] = nblocks;
    F->nidx[2] = spmv_bitwords(slots);
    F->nval[0] = slots;
    return SPMV_OK;
}

/* Blocks are counted in one pass over the entries with a mark per block column holding the last
 * block row that touched it (scipy's csr_count_blocks): one division per entry, where merging the
 * rows of each block row as the fill does costs O(b) per block and made the size query the bulk of
 * pyspmv.rank() (2.6 ms of 7 for every format of a 290k-entry matrix at b = 2).  csrc/pass.c counts
 * the same way for the design rows. */
static int bsr_size(const spmv_csr *A, spmv_fmt *F, spmv_err *err) {
    int32_t b = F->param[0];
    int rc = bsr_b(b, err);
    if (rc) return rc;
    int64_t nbcols = ((int64_t)A->ncols + b - 1) / b, nblocks = 0;
    int32_t *mark = (int32_t *)spmv_malloc(nbcols, sizeof(int32_t), err);
    if (mark == NULL) return SPMV_ENOMEM;
    for (int64_t k = 0; k < nbcols; k++) mark[k] = -1;
    int shift = 0; /* b a power of two (every registered b): a shift instead of a division */
    while (shift < 5 && (1 << shift) < b) shift++;
    for (int32_t r = 0; r < A->nrows; r++) {
        int32_t br = r / b;
        const int32_t *c = A->indices + A->indptr[r], *end = A->indices + A->indptr[r + 1];
        if ((1 << shift) == b) {
            for (; c < end; c++)
                if (mark[*c >> shift] != br) mark[*c >> shift] = br, nblocks++;
        } else {
            for (; c < end; c++)
                if (mark[*c / b] != br) mark[*c / b] = br, nblocks++;
        }
    }
    spmv_free(mark);
    return bsr_size_blocks(A, F, nblocks, err);
}

/* ---- BSR's part of the one pass (csrc/pass.c): block counts of up to PASS_MAXB block sizes ---- */

#define PASS_MAXB 8
/* Block sizes 1, 2, 4 and 8 are counted from one marker array: each 8 x 8 tile a block row of 8
 * touches keeps its occupancy in 64 bits (bit 8 * (row % 8) + col % 8), and at the block row's end
 * every tile's b x b sub-tiles are counted from its bits -- exact, since those sizes divide 8, and
 * one marker load per entry instead of one per block size.  Other sizes keep bsr_size's mark per
 * block column.  A thread's rows start at a multiple of SPMV_PASS_BLOCK, so no block row of 8
 * straddles two threads. */
#define TILE 8

typedef struct {
    int32_t nb, b[PASS_MAXB], sh[PASS_MAXB]; /* sh: log2 b, or -1 (divide) */
    int64_t blocks[PASS_MAXB];
    int tiled, need1; /* every b divides 8; one of them is 1 */
} bsr_counts;

typedef struct {
    int32_t *list;  /* [ncols / 8 + 1]: the tiles the current block row touched */
    uint64_t *bits; /* [ncols / 8]: their occupancy, zero elsewhere */
    int32_t *mark[PASS_MAXB];
    int64_t count[PASS_MAXB]; /* tiled: blocks of 1, 2, 4 and 8; else of b[j] */
} bsr_thread;

static int bsr_pass_start(void *res, const spmv_pass_view *V, spmv_err *err) {
    bsr_counts *r = (bsr_counts *)res;
    (void)V, (void)err;
    if (r->nb == 0) return 1; /* only refused sizes asked for */
    r->tiled = 1;
    for (int32_t j = 0; j < r->nb; j++) {
        int32_t b = r->b[j], sh = 0;
        while (sh < 5 && (1 << sh) < b) sh++;
        r->sh[j] = (1 << sh) == b ? sh : -1;
        r->tiled &= b == 1 || b == 2 || b == 4 || b == TILE;
        r->need1 |= b == 1;
        r->blocks[j] = 0;
    }
    return SPMV_OK;
}

static int bsr_pass_open(const void *res, void *ts, const spmv_pass_view *V, int t, spmv_err *err) {
    const bsr_counts *r = (const bsr_counts *)res;
    bsr_thread *T = (bsr_thread *)ts;
    int64_t ntile = ((int64_t)V->A->ncols + TILE - 1) / TILE;
    (void)t;
    if (r->tiled) {
        T->list = (int32_t *)spmv_malloc(ntile + 1, sizeof(int32_t), err);
        T->bits = T->list ? (uint64_t *)spmv_calloc(ntile, sizeof(uint64_t), err) : NULL;
        return T->bits ? SPMV_OK : SPMV_ENOMEM;
    }
    for (int32_t j = 0; j < r->nb; j++) {
        int64_t nbc = ((int64_t)V->A->ncols + r->b[j] - 1) / r->b[j];
        int32_t *bm = T->mark[j] = (int32_t *)spmv_malloc(nbc, sizeof(int32_t), err);
        if (bm == NULL) return SPMV_ENOMEM;
        for (int64_t c = 0; c < nbc; c++) bm[c] = -1;
    }
    return SPMV_OK;
}

/* w (never 0) into tile ct of bits; list gets ct on its first touch (the store is undone
 * otherwise).  Returns the list's new length.  The length, list and bits stay in the caller's
 * locals: a thread's state shares a cache line with the next thread's, and its fields would be
 * reloaded after every store through them. */
static int32_t tile_or(int32_t *list, uint64_t *bits, int32_t nl, uint32_t ct, uint64_t w) {
    uint64_t o = bits[ct];
    list[nl] = (int32_t)ct;
    bits[ct] = o | w;
    return nl + (o == 0);
}

/* The nl tiles of the block row just ended into count (bits cleared): each b x b sub-tile's bits
 * ORed into its top-left one (the shifts stay within a sub-tile's rows and columns), then those
 * corners counted; a touched tile is one block of 8, and a tile of one entry one block of each. */
static void tiles_flush(bsr_thread *T, int32_t nl, int need1) {
    int64_t c0 = 0, c1 = 0, c2 = 0;
    for (int64_t k = 0; k < nl; k++) {
        uint64_t x = T->bits[T->list[k]], x2, x4;
        T->bits[T->list[k]] = 0;
        if ((x & (x - 1)) == 0) {
            c0++, c1++, c2++;
            continue;
        }
        if (need1) c0 += spmv_popcount64(x);
        x2 = x | x >> 1;
        x2 |= x2 >> TILE;
        c1 += spmv_popcount64(x2 & 0x0055005500550055u);
        x4 = x2 | x2 >> 2;
        x4 |= x4 >> 2 * TILE;
        x4 &= 0x0000001100000011u; /* corners (0, 0), (0, 4), (4, 0), (4, 4) */
        x4 += x4 >> 32;
        c2 += (int64_t)((x4 & 3) + ((x4 >> 4) & 3));
    }
    T->count[0] += c0;
    T->count[1] += c1;
    T->count[2] += c2;
    T->count[3] += nl;
}

/* Rows by block rows of 8: a row's columns in one tile gather in w, ORed into the tile (at the
 * row's bits) when the row leaves it; sorted, so a tile recurs only in a run. */
static void bsr_pass_tiles(bsr_thread *T, const spmv_pass_block *B, int need1) {
    const int32_t *ip = B->A->indptr, *ix = B->ix;
    int32_t *list = T->list;
    uint64_t *bits = T->bits;
    for (int64_t t0 = B->r0; t0 < B->r1; t0 += TILE) { /* int64: r1 may be near INT32_MAX */
        int32_t t1 = B->r1 - t0 < TILE ? B->r1 : (int32_t)(t0 + TILE), nl = 0;
        uint32_t rowbit = 0; /* 8 * (i % 8): t0 is a multiple of 8 */
        for (int32_t i = (int32_t)t0; i < t1; i++, rowbit += TILE) {
            const int32_t *q = ix + ip[i], *qe = ix + ip[i + 1];
            if (q == qe) continue;
            int32_t c = *q;
            uint32_t w = 1u << (c & 7);
            for (q++; q < qe; q++) {
                int32_t cn = *q;
                if ((cn ^ c) >> 3) {
                    nl = tile_or(list, bits, nl, (uint32_t)c / TILE, (uint64_t)w << rowbit);
                    w = 0;
                }
                w |= 1u << (cn & 7);
                c = cn;
            }
            nl = tile_or(list, bits, nl, (uint32_t)c / TILE, (uint64_t)w << rowbit);
        }
        if (nl > 0) tiles_flush(T, nl, need1);
    }
}

static void bsr_pass_block(void *res, void *ts, const spmv_pass_block *B) {
    const bsr_counts *r = (const bsr_counts *)res;
    bsr_thread *T = (bsr_thread *)ts;
    const int32_t *ip = B->A->indptr;
    if (r->tiled) {
        bsr_pass_tiles(T, B, r->need1);
        return;
    }
    for (int32_t i = B->r0; i < B->r1; i++)
        for (int32_t j = 0; j < r->nb; j++) { /* distinct (block row, block column) */
            int32_t *bm = T->mark[j], lastcb = -1, br, cb, sh = r->sh[j], b = r->b[j];
            int64_t cnt = 0;
            br = sh >= 0 ? i >> sh : i / b;
            for (const int32_t *q = B->ix + ip[i]; q < B->ix + ip[i + 1]; q++) {
                cb = sh >= 0 ? *q >> sh : *q / b;
                if (cb != lastcb) {
                    cnt += bm[cb] != br;
                    bm[cb] = br;
                    lastcb = cb;
                }
            }
            T->count[j] += cnt;
        }
}

static void bsr_pass_merge(void *res, void *ts, const spmv_pass_view *V, int t) {
    bsr_counts *r = (bsr_counts *)res;
    const bsr_thread *T = (const bsr_thread *)ts;
    (void)V, (void)t;
    for (int32_t j = 0; j < r->nb; j++) r->blocks[j] += T->count[r->tiled ? r->sh[j] : j];
}

static void bsr_pass_close(void *ts) {
    bsr_thread *T = (bsr_thread *)ts;
    spmv_free(T->list);
    spmv_free(T->bits);
    for (int32_t j = 0; j < PASS_MAXB; j++) spmv_free(T->mark[j]);
}

static const spmv_pass_part bsr_part = {
    .size = sizeof(bsr_counts),
    .tsize = sizeof(bsr_thread),
    .start = bsr_pass_start,
    .open = bsr_pass_open,
    .block = bsr_pass_block,
    .merge = bsr_pass_merge,
    .close = bsr_pass_close,
};

/* The pass counts blocks for every block size asked for. */
static int bsr_need(spmv_summary *S, const spmv_fmt *F, spmv_err *err) {
    void *res;
    int32_t b = F->param[0];
    int rc = spmv_pass_result(&S->pass, &bsr_part, &res, err);
    if (rc || bsr_b(b, NULL)) return rc; /* size_summary refuses a bad b */
    bsr_counts *r = (bsr_counts *)res;
    for (int32_t j = 0; j < r->nb; j++)
        if (r->b[j] == b) return SPMV_OK;
    if (r->nb < PASS_MAXB) r->b[r->nb++] = b; /* else: size_summary counts them itself */
    return SPMV_OK;
}

static int bsr_size_summary(spmv_summary *S, spmv_fmt *F, spmv_err *err) {
    int32_t b = F->param[0];
    int rc = bsr_b(b, err);
    if (rc) return rc;
    const bsr_counts *r = (const bsr_counts *)spmv_pass_found(&S->pass, &bsr_part);
    for (int32_t j = 0; r != NULL && j < r->nb; j++)
        if (r->b[j] == b) return bsr_size_blocks(S->A, F, r->blocks[j], err);
    return bsr_size(S->A, F, err); /* more block sizes than one pass counts */
}

/* Stored entries of row r of block row br: the set bits of its b-bit runs, one per block. */
static int32_t bsr_len(const spmv_fmt *F, int64_t br, int32_t r) {
    const int32_t *bp = F->idx[0], *bits = F->idx[2];
    int32_t b = F->param[0], len = 0;
    for (int64_t blk = bp[br]; blk < bp[br + 1]; blk++)
        for (int32_t c = 0; c < b; c++) len += spmv_bit_get(bits, (blk * b + r) * b + c);
    return len;
}

#define SPMV_REAL float
#define SPMV_NAME(x) x##_f32
#include "bsr_impl.h"
#define SPMV_REAL double
#define SPMV_NAME(x) x##_f64
#include "bsr_impl.h"

static int bsr_check(const spmv_fmt *F, spmv_err *err) {
    static const char *const what[] = {"block_ptr", "block_col", "presence bits",
                                       NULL,        "values",    NULL};
    int32_t b = F->param[0], n = F->nrows;
    if (b < 1 || b > BSR_MAX_B)
        return spmv_fail(err, SPMV_EINVAL, -1, b, BSR_MAX_B,
                         "The 'b' parameter of bsr must be a block size in [1, %d]. Got %d "
                         "instead.",
                         BSR_MAX_B, b);
    int64_t nbrows = ((int64_t)n + b - 1) / b, nbcols = ((int64_t)F->ncols + b - 1) / b, count = 0;
    int rc = spmv_fmt_scalar(F, 0, nbrows, nbrows, "block rows = ceil(nrows / b)", err);
    if (rc == SPMV_OK)
        rc = spmv_fmt_scalar(F, 1, nbcols, nbcols, "block columns = ceil(ncols / b)", err);
    if (rc == SPMV_OK) rc = spmv_fmt_scalar(F, 2, 0, INT32_MAX, "blocks", err);
    if (rc) return rc;
    int64_t nb = F->scalar[2], slots = nb * b * b;
    int64_t nidx[SPMV_MAXIDX] = {nbrows + 1, nb, spmv_bitwords(slots)}, nval[SPMV_MAXVAL] = {slots};
    rc = spmv_fmt_lengths(F, nidx, nval, what, err);
    if (rc == SPMV_OK) rc = spmv_fmt_ptr(F, F->idx[0], nbrows, nb, 1, "block_ptr", err);
    const int32_t *bp = F->idx[0], *bcol = F->idx[1], *bits = F->idx[2];
    for (int64_t br = 0; rc == SPMV_OK && br < nbrows; br++)
        for (int64_t blk = bp[br]; blk < bp[br + 1]; blk++) {
            if (bcol[blk] < 0 || bcol[blk] >= nbcols ||
                (blk > bp[br] && bcol[blk] <= bcol[blk - 1]))
                return spmv_fail(err, SPMV_EINDEX, blk, bcol[blk], nbcols,
                                 "bsr: block_col[%lld] = %d; block columns must lie in [0, %lld) "
                                 "and increase within a block row",
                                 (long long)blk, bcol[blk], (long long)nbcols);
            for (int64_t q = 0; q < (int64_t)b * b; q++) {
                if (!spmv_bit_get(bits, blk * b * b + q)) continue;
                int64_t i = br * b + q / b, j = (int64_t)bcol[blk] * b + q % b;
                if (i >= n || j >= F->ncols)
                    return spmv_fail(err, SPMV_EINDEX, i, j, F->ncols,
                                     "bsr: a presence bit of block %lld marks (%lld, %lld), "
                                     "outside the %d x %d matrix",
                                     (long long)blk, (long long)i, (long long)j, n, F->ncols);
                count++;
            }
        }
    return rc ? rc : spmv_fmt_count(F, count, err);
}

SPMV_API const spmv_format_ops spmv_bsr_ops = {
    .size = bsr_size,
    .fill_f32 = bsr_fill_f32,
    .fill_f64 = bsr_fill_f64,
    .to_csr_f32 = bsr_to_csr_f32,
    .to_csr_f64 = bsr_to_csr_f64,
    .mv_f32 = bsr_mv_f32,
    .mv_f64 = bsr_mv_f64,
    .check = bsr_check,
    .size_summary = bsr_size_summary,
    .need = bsr_need,
    .pass = &bsr_part,
    .unread = 1 << 2, /* presence bits (idx[2]) exist for exact round trips only */
    .finite_x = 1,    /* padding zeros inside the matrix are multiplied by x */
};
