// csrc/pass.c: the one pass over indices behind the tier-2 features and the design rows' sizes
// SPDX-License-Identifier: BSD-3-Clause
//
// Row by row, validating as it reads: neighbour gaps, band, spans, runs, the 128-byte segments of x
// a row and a group of 32 rows read, the occupied diagonals (DIA's offsets), and on request the
// BSR block counts of a few block sizes, each row's largest BRO-ELL symbol and the chunks of 32
// entries whose columns span 8 or 16 bits (the compressed-index format's escapes).  Threads take
// contiguous runs of BLOCK rows holding about equal entries, each with its own marks and stamps;
// integer totals add, marks OR, and the band moments are kept per block and merged in block order,
// so the result is the same bits for any thread count.  features.c turns the totals into features.
#include "spmv_internal.h"

#include <stdint.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* Rows per moments block; a multiple of the x-segment group (32 rows) and of every power-of-two
 * block size up to 256, so that neither straddles two threads. */
#define BLOCK SPMV_PASS_BLOCK
/* Entries per thread below which a thread costs more (its marks to clear and merge, the team's
 * start) than it saves: on the 2-core dev VM a second thread cut rank() of 1e4-entry matrices by
 * 5-15 % and of 1e5-entry ones by 15-40 %.  TODO: measured only on a 2-core machine. */
#define PASS_MIN_NNZ 4000

typedef struct {
    int32_t gmin, gmax, band;
    int64_t span, cluster, segr, segw, blocks[SPMV_SUMMARY_MAXB];
    int bad;
} part;

static int32_t max_i32(int32_t a, int32_t b) { return a > b ? a : b; }

/* Column spans of the chunks of SPMV_SPAN_CHUNK entries that one thread's entries [first, ...)
 * touch: the chunks wholly inside its entries are counted here; the (at most two) that it shares
 * with the threads before or after it are kept apart as partial records, merged in thread order
 * after the pass (the same counts for any thread count). */
typedef struct {
    int64_t first; /* the thread's first entry */
    int64_t c;     /* the open chunk (-1: none) and its extremes */
    int32_t lo, hi;
    int64_t wide[2]; /* chunks counted here whose span is >= 2^8, >= 2^16 */
    int np;          /* partial records */
    int64_t pc[2];   /* their chunks and extremes */
    int32_t plo[2], phi[2];
} spans;

static void spans_count(int64_t wide[2], int32_t lo, int32_t hi) {
    wide[0] += hi - lo >= (1 << 8);
    wide[1] += hi - lo >= (1 << 16);
}

/* Close the open chunk; complete: whether it ends within the thread's entries. */
static void spans_close(spans *s, int complete) {
    if (s->c < 0) return;
    if (complete && s->c * SPMV_SPAN_CHUNK >= s->first)
        spans_count(s->wide, s->lo, s->hi);
    else {
        s->pc[s->np] = s->c;
        s->plo[s->np] = s->lo;
        s->phi[s->np++] = s->hi;
    }
    s->c = -1;
}

/* Entries [e0, e1) of ix, continuing s. */
static void spans_scan(spans *s, const int32_t *ix, int64_t e0, int64_t e1) {
    for (int64_t e = e0; e < e1; e++) {
        int64_t c = e / SPMV_SPAN_CHUNK;
        int32_t v = ix[e];
        if (c != s->c) {
            spans_close(s, 1);
            s->c = c;
            s->lo = s->hi = v;
        } else {
            s->lo = v < s->lo ? v : s->lo;
            s->hi = v > s->hi ? v : s->hi;
        }
    }
}

/* End of the row block that starts at r0. */
static int32_t block_end(int32_t r0, int32_t n) { return n - r0 < BLOCK ? n : r0 + BLOCK; }

/* Block statistics of v[k] (k >= 1) about `shift`: the exact sum of v - shift and the sum of
 * squared deviations about the block's own mean, with four sums so that the adds pipeline. */
static void block_moments(const int32_t *v, int32_t k, int32_t shift, int64_t *sum, double *m2) {
    int64_t s = 0;
    for (int32_t j = 0; j < k; j++) s += (int64_t)v[j] - shift;
    double mb = (double)s / k, a0 = 0, a1 = 0, a2 = 0, a3 = 0, sh = shift;
    int32_t j = 0;
    for (; j + 4 <= k; j += 4) {
        double d0 = (v[j] - sh) - mb, d1 = (v[j + 1] - sh) - mb;
        double d2 = (v[j + 2] - sh) - mb, d3 = (v[j + 3] - sh) - mb;
        a0 += d0 * d0;
        a1 += d1 * d1;
        a2 += d2 * d2;
        a3 += d3 * d3;
    }
    for (; j < k; j++) {
        double d = (v[j] - sh) - mb;
        a0 += d * d;
    }
    *sum = s;
    *m2 = (a0 + a1) + (a2 + a3);
}

/* Chan, Golub and LeVeque's merge of block statistics, in block order (the same bits whichever
 * thread made each block). */
static void moments_merge(spmv_moments *m, int32_t k, int64_t s, double m2b) {
    if (k == 0) return;
    if (m->count > 0) {
        double delta = (double)s / k - (double)m->sum / (double)m->count;
        m2b += delta * delta * ((double)m->count * k / (double)(m->count + k));
    }
    m->m2 += m2b;
    m->sum += s;
    m->count += k;
}

typedef struct {
    int32_t k[2];
    int64_t s[2];
    double m2[2];
} block_stat;

/* BSR block counts for block sizes 1, 2, 4 and 8 from one marker array: each 8 x 8 tile a block
 * row of 8 touches keeps its occupancy in 64 bits (bit 8 * (row % 8) + col % 8), and at the block
 * row's end every tile's b x b sub-tiles are counted from its bits -- exact, since those sizes
 * divide 8, and one marker load per entry instead of one per block size.  bits stays zero but for
 * the tiles of the current block row, so a zero word marks a tile not yet listed. */
#define TILE 8
typedef struct {
    int32_t *list;  /* [ncols / 8 + 1]: the tiles the current block row touched */
    uint64_t *bits; /* [ncols / 8]: their occupancy, zero elsewhere */
} tiles;

static int64_t popcount64(uint64_t x) {
    x = x - ((x >> 1) & 0x5555555555555555u);
    x = (x & 0x3333333333333333u) + ((x >> 2) & 0x3333333333333333u);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fu;
    return (int64_t)((x * 0x0101010101010101u) >> 56);
}

/* w (never 0) into tile ct of bits; list gets ct on its first touch (the store is undone
 * otherwise).  Returns the list's new length.  The length, the counts and list and bits themselves
 * stay in the caller's locals: a tiles struct shares a cache line with the next thread's, and its
 * fields would be reloaded after every store through them. */
static int32_t tile_or(int32_t *list, uint64_t *bits, int32_t nl, uint32_t ct, uint64_t w) {
    uint64_t o = bits[ct];
    list[nl] = (int32_t)ct;
    bits[ct] = o | w;
    return nl + (o == 0);
}

/* The nl tiles of the block row just ended into count (bits cleared): each b x b sub-tile's bits
 * ORed into its top-left one (the shifts stay within a sub-tile's rows and columns), then those
 * corners counted; a touched tile is one block of 8, and a tile of one entry one block of each. */
static void tiles_flush(const tiles *T, int32_t nl, int need1, int64_t *count) {
    int64_t c0 = 0, c1 = 0, c2 = 0;
    for (int64_t k = 0; k < nl; k++) {
        uint64_t x = T->bits[T->list[k]], x2, x4;
        T->bits[T->list[k]] = 0;
        if ((x & (x - 1)) == 0) {
            c0++, c1++, c2++;
            continue;
        }
        if (need1) c0 += popcount64(x);
        x2 = x | x >> 1;
        x2 |= x2 >> TILE;
        c1 += popcount64(x2 & 0x0055005500550055u);
        x4 = x2 | x2 >> 2;
        x4 |= x4 >> 2 * TILE;
        x4 &= 0x0000001100000011u; /* corners (0, 0), (0, 4), (4, 0), (4, 4) */
        x4 += x4 >> 32;
        c2 += (int64_t)((x4 & 3) + ((x4 >> 4) & 3));
    }
    count[0] += c0;
    count[1] += c1;
    count[2] += c2;
    count[3] += nl;
}

/* Rows [r0, r1) (r0 a multiple of BLOCK) into p, marks and stamps of this thread. */
static void pass_rows(const spmv_csr *A, const spmv_pass *P, int32_t r0, int32_t r1, int64_t symoff,
                      int32_t shift_lo, int32_t shift_up, uint8_t *mark, int32_t *stamp,
                      int32_t *const *bmark, tiles *T, block_stat *bs, spans *sp, part *p) {
    const int32_t none = 0; /* indices may be NULL when nnz is 0; NULL + 0 is undefined in C */
    const int32_t *ip = A->indptr, *ix = A->indices != NULL ? A->indices : &none;
    int32_t n = A->nrows, nb = P->nb;
    uint32_t *symmax = P->symmax;
    int32_t gmin = INT32_MAX, gmax = 0, band = 0, blo[BLOCK], bup[BLOCK], sh[SPMV_SUMMARY_MAXB];
    int64_t span = 0, cluster = 0, segr = 0, segw = 0, blocks[SPMV_SUMMARY_MAXB] = {0};
    int need1 = 0;
    int32_t nl = 0;                  /* tiles listed in the current block row */
    int64_t count[4] = {0, 0, 0, 0}; /* BSR blocks of 1, 2, 4 and 8 */
    for (int32_t j = 0; j < nb; j++) {
        sh[j] = 0;
        while (sh[j] < 5 && (1 << sh[j]) < P->b[j]) sh[j]++;
        if ((1 << sh[j]) != P->b[j]) sh[j] = -1; /* not a power of two: divide */
        need1 |= P->b[j] == 1;
    }
    int32_t nbm = T != NULL ? 0 : nb; /* block sizes the marker loop counts */
    /* b0 in int64: with nrows near INT32_MAX, b0 + BLOCK would pass it */
    for (int64_t b0 = r0; b0 < r1; b0 += BLOCK) {
        int32_t b1 = r1 - b0 < BLOCK ? r1 : (int32_t)(b0 + BLOCK), k = 0;
        /* rows by block rows of 8 (BLOCK's divisor): T's tiles flushed at each one's end */
        for (int64_t t0 = b0; t0 < b1; t0 += TILE) { /* int64: as b0 */
            int32_t t1 = b1 - t0 < TILE ? b1 : (int32_t)(t0 + TILE);
            int32_t g = (int32_t)(t0 >> 5) + 1; /* group id; 0 is the never-stamped value */
            int32_t end = ip[t0];               /* each row's start is the row before's end */
            uint32_t rowbit = 0;                /* 8 * (i % 8): t0 is a multiple of 8 */
            for (int32_t i = (int32_t)t0; i < t1; i++, rowbit += TILE) {
                const int32_t *q0 = ix + end, *q = q0, *qe = ix + (end = ip[i + 1]);
                if (q == qe) {
                    if (symmax) symmax[i - symoff] = 0;
                    continue;
                }
                uint8_t *mk = mark + (n - 1 - i); /* mk[col] marks offset col - i */
                int32_t first = *q, last = qe[-1];
                /* The indices are checked as they are read, before any write they index: first
                 * and last in [0, ncols), first <= last, and every other column <= last (one
                 * compare per entry); order shows as a gap <= 0 in gmin after the pass, at no cost
                 * here. */
                if ((uint32_t)first > (uint32_t)last || (uint32_t)last >= (uint32_t)A->ncols) {
                    p->bad = 1;
                    return;
                }
                int32_t c = first, run = 0, best = 0, segs = 1, rmax = 0;
                mk[c] = 1;
                segw += stamp[c >> 4] != g;
                stamp[c >> 4] = g;
                /* Two copies of the entry loop, with and without BSR tiles, so that the one
                 * without (features alone) does not carry the tile word; both keep to few live
                 * values (the x86-64 registers: a spill costs a store and a load per entry).
                 * Compares become cmov/setcc; gaps go straight into gmin. */
                if (T != NULL) {
                    int32_t *list = T->list;
                    uint64_t *bits = T->bits;
                    uint32_t w = 1u << (c & 7); /* the row's columns in c's tile, shifted to its
                                                   bits in the tile at the tile's end */
                    for (q++; q < qe; q++) {
                        int32_t cn = *q, d = cn - c;
                        if ((uint32_t)cn > (uint32_t)last) {
                            p->bad = 1;
                            return;
                        }
                        gmin = d < gmin ? d : gmin;
                        rmax = d > rmax ? d : rmax;
                        run = d == 1 ? run + 1 : 0;
                        best = run > best ? run : best;
                        mk[cn] = 1;
                        /* Sorted: a tile, and a segment, recur only in a run.  The segment's
                         * branch halves the time of stencils (one stamp per segment, not per
                         * entry) but doubles it where segments change unpredictably (pushpull);
                         * stamping every entry instead made the design rows 1.1-1.25x slower on
                         * laplace2d 45x45, lp_fit1p and fem_blocks(40), 1.14x faster on pushpull
                         * (one thread, 2-core dev VM). */
                        if ((cn ^ c) >> 3) {
                            nl = tile_or(list, bits, nl, (uint32_t)c / TILE, (uint64_t)w << rowbit);
                            w = 0;
                            if ((cn ^ c) >> 4) {
                                segs++;
                                segw += stamp[cn >> 4] != g;
                                stamp[cn >> 4] = g;
                            }
                        }
                        w |= 1u << (cn & 7);
                        c = cn;
                    }
                    nl = tile_or(list, bits, nl, (uint32_t)c / TILE, (uint64_t)w << rowbit);
                } else {
                    for (q++; q < qe; q++) {
                        int32_t cn = *q, d = cn - c;
                        if ((uint32_t)cn > (uint32_t)last) {
                            p->bad = 1;
                            return;
                        }
                        gmin = d < gmin ? d : gmin;
                        rmax = d > rmax ? d : rmax;
                        run = d == 1 ? run + 1 : 0;
                        best = run > best ? run : best;
                        mk[cn] = 1;
                        if ((cn ^ c) >> 4) { /* as above */
                            segs++;
                            segw += stamp[cn >> 4] != g;
                            stamp[cn >> 4] = g;
                        }
                        c = cn;
                    }
                }
                gmax = rmax > gmax ? rmax : gmax;
                if (symmax) /* BRO-ELL's symbols: col_0 + 1, then the gaps */
                    symmax[i - symoff] = (uint32_t)max_i32(first + 1, rmax);
                for (int32_t j = 0; j < nbm; j++) { /* BSR: distinct (block row, block column) */
                    int32_t *bm = bmark[j], lastcb = -1, br, cb;
                    int64_t cnt = 0;
                    br = sh[j] >= 0 ? i >> sh[j] : i / P->b[j];
                    for (const int32_t *t = q0; t < qe; t++) {
                        cb = sh[j] >= 0 ? *t >> sh[j] : *t / P->b[j];
                        if (cb != lastcb) {
                            cnt += bm[cb] != br;
                            bm[cb] = br;
                            lastcb = cb;
                        }
                    }
                    blocks[j] += cnt;
                }
                int32_t lo = max_i32(i - first, 0), up = max_i32(c - i, 0);
                band = max_i32(band, max_i32(lo, up)); /* sorted: the extremes end the row */
                span += c - first;
                cluster += best;
                segr += segs;
                blo[k] = lo;
                bup[k++] = up;
            }
            if (nl > 0) tiles_flush(T, nl, need1, count);
            nl = 0;
        }
        if (sp != NULL) /* the block's entries, just read: in cache */
            spans_scan(sp, ix, ip[b0], ip[b1]);
        block_stat *b = &bs[b0 / BLOCK];
        b->k[0] = b->k[1] = k;
        if (k > 0) {
            block_moments(blo, k, shift_lo, &b->s[0], &b->m2[0]);
            block_moments(bup, k, shift_up, &b->s[1], &b->m2[1]);
        }
    }
    if (T != NULL)
        for (int32_t j = 0; j < nb; j++) blocks[j] = count[sh[j]];
    p->gmin = gmin < p->gmin ? gmin : p->gmin; /* parts start at gmin INT32_MAX, the rest 0 */
    p->gmax = max_i32(p->gmax, gmax);
    p->band = max_i32(p->band, band);
    p->span += span;
    p->cluster += cluster;
    p->segr += segr;
    p->segw += segw;
    for (int32_t j = 0; j < nb; j++) p->blocks[j] += blocks[j];
}

static int word_zero(const uint8_t *p) {
    uint64_t w;
    memcpy(&w, p, sizeof w);
    return w == 0;
}

/* Occupied offsets in ascending order: their count, then the sum of squared gaps about the mean
 * gap, which the extremes fix.  Both walks skip empty words. */
static void diagonals(const uint8_t *mark, int64_t noff, spmv_pattern *R) {
    int64_t ndiag = 0, ofirst = -1, olast = -1;
    for (int64_t k = 0; k < noff; k++) {
        if ((k & 7) == 0 && noff - k >= 8 && word_zero(mark + k)) {
            k += 7;
            continue;
        }
        if (mark[k]) {
            ndiag++;
            ofirst = ofirst < 0 ? k : ofirst;
            olast = k;
        }
    }
    double gap_mean = 0, gap_ss = 0;
    if (ndiag >= 2) {
        gap_mean = (double)(olast - ofirst) / (double)(ndiag - 1);
        for (int64_t k = ofirst + 1, prev = ofirst; k <= olast; k++) {
            if ((k & 7) == 0 && olast - k >= 8 && word_zero(mark + k)) {
                k += 7;
                continue;
            }
            if (mark[k]) {
                double d = (double)(k - prev) - gap_mean;
                gap_ss += d * d;
                prev = k;
            }
        }
    }
    R->ndiag = ndiag;
    R->gap_mean = gap_mean;
    R->gap_ss = gap_ss;
}

/* Index of the lowest set bit of x != 0 (de Bruijn: portable C, one multiply). */
static int64_t lowest_bit(uint64_t x) {
    static const int8_t pos[64] = {0,  1,  48, 2,  57, 49, 28, 3,  61, 58, 50, 42, 38, 29, 17, 4,
                                   62, 55, 59, 36, 53, 51, 43, 22, 45, 39, 33, 30, 24, 18, 12, 5,
                                   63, 47, 56, 27, 60, 41, 37, 16, 54, 35, 52, 21, 44, 32, 23, 11,
                                   46, 26, 40, 15, 34, 20, 31, 10, 25, 14, 19, 9,  13, 8,  7,  6};
    return pos[((x & (0 - x)) * 0x03f79d71b4cb0a89u) >> 58];
}

/* diagonals() of the sampled rows (A's blocks at P->range), from a bit per offset that their
 * entries set: O(sampled entries + noff / 64) where the byte walk of the marks is O(noff) with a
 * large constant once random columns mark offsets all over (its zero-word skips then fail).  The
 * same offsets in the same order: the same R, bit for bit.  The rows passed pass_rows' checks. */
static int sample_diagonals(const spmv_csr *A, const spmv_pass *P, int64_t noff, spmv_pattern *R,
                            spmv_err *err) {
    const int32_t *ip = A->indptr;
    int32_t n = A->nrows;
    int64_t nw = (noff + 63) / 64, ndiag = 0, wfirst = -1, wlast = -1;
    uint64_t *bit = (uint64_t *)spmv_calloc(nw, sizeof(uint64_t), err);
    if (bit == NULL) return SPMV_ENOMEM;
    for (int32_t k = 0; k < P->nrange; k++)
        for (int32_t i = P->range[k], r1 = block_end(P->range[k], n); i < r1; i++)
            for (int32_t q = ip[i]; q < ip[i + 1]; q++) {
                int64_t o = (int64_t)n - 1 - i + A->indices[q];
                bit[o >> 6] |= (uint64_t)1 << (o & 63);
            }
    for (int64_t w = 0; w < nw; w++)
        if (bit[w] != 0) {
            ndiag += popcount64(bit[w]);
            wfirst = wfirst < 0 ? w : wfirst;
            wlast = w;
        }
    double gap_mean = 0, gap_ss = 0;
    if (ndiag >= 2) {
        uint64_t x = bit[wlast];
        int64_t ofirst = wfirst * 64 + lowest_bit(bit[wfirst]), olast;
        while (x & (x - 1)) x &= x - 1; /* its highest bit */
        olast = wlast * 64 + lowest_bit(x);
        gap_mean = (double)(olast - ofirst) / (double)(ndiag - 1);
        for (int64_t w = wfirst, prev = ofirst; w <= wlast; w++)
            for (x = bit[w]; x != 0; x &= x - 1) {
                int64_t k = w * 64 + lowest_bit(x);
                if (k == ofirst) continue;
                double d = (double)(k - prev) - gap_mean;
                gap_ss += d * d;
                prev = k;
            }
    }
    spmv_free(bit);
    R->ndiag = ndiag;
    R->gap_mean = gap_mean;
    R->gap_ss = gap_ss;
    return SPMV_OK;
}

int spmv_pattern_pass(const spmv_csr *A, spmv_pass *P, spmv_pattern *R, spmv_err *err) {
    int rc = SPMV_OK;
    const int32_t *ip = A->indptr;
    int32_t n = A->nrows, nb = P->nb, nt = 1;
    int64_t nnz = ip[n], noff = (int64_t)n + A->ncols - 1, nseg = ((int64_t)A->ncols + 15) >> 4;
    int64_t nblk = ((int64_t)n + BLOCK - 1) / BLOCK, nbc[SPMV_SUMMARY_MAXB];
    int32_t nr = P->nrange; /* sampled: the row blocks starting at P->range[0..nr), one thread */
#ifdef _OPENMP
    int64_t want = nr > 0 ? 1 : nnz / PASS_MIN_NNZ;
    nt = omp_get_max_threads();
    if (want < nt) nt = want < 1 ? 1 : (int)want;
    if (nblk < nt) nt = (int)nblk;
#endif
    int tiled = nb > 0; /* every block size divides 8: count them all from 8 x 8 tiles */
    for (int32_t j = 0; j < nb; j++) {
        nbc[j] = ((int64_t)A->ncols + P->b[j] - 1) / P->b[j];
        tiled &= P->b[j] == 1 || P->b[j] == 2 || P->b[j] == 4 || P->b[j] == TILE;
    }
    int64_t ntile = ((int64_t)A->ncols + TILE - 1) / TILE;
    int32_t shift_lo = 0, shift_up = 0,
            nk = nr > 0 ? nr : 1; /* below; declared before the first goto */
    int bad = 0;
    /* Workspace: per thread its marks, stamps and BSR marks; the block moments; the row splits. */
    uint8_t **mark = (uint8_t **)spmv_calloc(nt, sizeof(uint8_t *), err);
    int32_t **stamp = mark ? (int32_t **)spmv_calloc(nt, sizeof(int32_t *), err) : NULL;
    int32_t **bmark =
        stamp ? (int32_t **)spmv_calloc((int64_t)nt * SPMV_SUMMARY_MAXB, sizeof(int32_t *), err)
              : NULL;
    part *parts = bmark ? (part *)spmv_calloc(nt, sizeof(part), err) : NULL;
    int32_t *split = parts ? (int32_t *)spmv_malloc((int64_t)nt + 1, sizeof(int32_t), err) : NULL;
    block_stat *bs =
        split ? (block_stat *)spmv_calloc(nblk > 0 ? nblk : 1, sizeof(block_stat), err) : NULL;
    tiles *tl = bs ? (tiles *)spmv_calloc(nt, sizeof(tiles), err) : NULL;
    int count_spans = P->spans && nr == 0;
    spans *sp = tl && count_spans ? (spans *)spmv_calloc(nt, sizeof(spans), err) : NULL;
    P->spans_done = 0;
    if (tl == NULL || (count_spans && sp == NULL)) goto nomem;
    for (int t = 0; t < nt; t++) {
        /* the sampled branch writes its marks but never reads them (sample_diagonals): unzeroed */
        mark[t] =
            nr > 0 ? (uint8_t *)spmv_malloc(noff, 1, err) : (uint8_t *)spmv_calloc(noff, 1, err);
        stamp[t] = mark[t] ? (int32_t *)spmv_calloc(nseg, sizeof(int32_t), err) : NULL;
        if (stamp[t] == NULL) goto nomem;
        if (tiled) {
            tl[t].list = (int32_t *)spmv_malloc(ntile + 1, sizeof(int32_t), err);
            tl[t].bits = (uint64_t *)spmv_calloc(ntile, sizeof(uint64_t), err);
            if (!tl[t].list || !tl[t].bits) goto nomem;
        }
        for (int32_t j = 0; j < nb && !tiled; j++) {
            int32_t *bm = bmark[t * SPMV_SUMMARY_MAXB + j] = (int32_t *)spmv_malloc(nbc[j], 4, err);
            if (bm == NULL) goto nomem;
            for (int64_t c = 0; c < nbc[j]; c++) bm[c] = -1;
        }
    }
    for (int t = 0; t < nt; t++) parts[t].gmin = INT32_MAX;
    /* Splits at about equal entries, moved to the block start whose entries are nearer the share:
     * moving down always left the last thread up to a block more (on a 2,025-row matrix, 62 % of
     * the rows). */
    split[0] = 0;
    split[nt] = n;
    for (int t = 1; t < nt; t++) {
        int64_t key = nnz * t / nt, r = spmv_lower_bound(ip, 0, (int64_t)n + 1, key);
        int64_t lo = r / BLOCK * BLOCK, hi = lo + BLOCK < n ? lo + BLOCK : n;
        r = key - ip[lo] <= ip[hi] - key ? lo : hi;
        split[t] = (int32_t)(r < split[t - 1] ? split[t - 1] : r);
    }
    /* The moments' shift: the first non-empty row's values, as a serial pass would take them, so
     * that means carry rounding error on the scale of the spread, not of the values.  Its ends
     * are checked before they are read: any bad row makes the pass fail below anyway. */
    for (int32_t k = 0, done1 = 0; k < nk && !done1; k++) {
        int32_t r0 = nr > 0 ? P->range[k] : 0, r1 = nr > 0 ? block_end(r0, n) : n;
        for (int32_t i = r0; i < r1; i++)
            if (ip[i + 1] > ip[i]) {
                int32_t first = A->indices[ip[i]], last = A->indices[ip[i + 1] - 1];
                shift_lo = max_i32(i - first, 0);
                shift_up = max_i32(last - i, 0);
                done1 = 1;
                break;
            }
    }
    R->groups = 0;
    if (nr > 0) {
        for (int32_t k = 0; k < nr; k++) {
            int32_t r0 = P->range[k], r1 = block_end(r0, n);
            pass_rows(A, P, r0, r1, r0 - (int64_t)k * BLOCK, shift_lo, shift_up, mark[0], stamp[0],
                      bmark, tiled ? &tl[0] : NULL, bs, NULL, &parts[0]);
            R->groups += (r1 - r0 + 31) / 32;
            if (parts[0].bad) break;
        }
    } else {
        R->groups = ((int64_t)n + 31) / 32;
        for (int t = 0; sp != NULL && t < nt; t++) {
            sp[t].first = ip[split[t]];
            sp[t].c = -1;
        }
#pragma omp parallel for num_threads(nt) schedule(static, 1) if (nt > 1)
        for (int t = 0; t < nt; t++) {
            pass_rows(A, P, split[t], split[t + 1], 0, shift_lo, shift_up, mark[t], stamp[t],
                      bmark + t * SPMV_SUMMARY_MAXB, tiled ? &tl[t] : NULL, bs,
                      sp != NULL ? &sp[t] : NULL, &parts[t]);
            if (sp != NULL) /* the open chunk is whole if it ends where the thread's entries do */
                spans_close(&sp[t], (sp[t].c + 1) * SPMV_SPAN_CHUNK <= ip[split[t + 1]] ||
                                        ip[split[t + 1]] == nnz);
        }
    }

    R->gmin = INT32_MAX;
    R->gmax = R->band = 0;
    R->span = R->cluster = R->segr = R->segw = 0;
    for (int32_t j = 0; j < nb; j++) P->blocks[j] = 0;
    for (int t = 0; t < nt; t++) {
        part *p = &parts[t];
        bad |= p->bad;
        if (p->bad) continue;
        R->gmin = p->gmin < R->gmin ? p->gmin : R->gmin;
        R->gmax = max_i32(R->gmax, p->gmax);
        R->band = max_i32(R->band, p->band);
        R->span += p->span;
        R->cluster += p->cluster;
        R->segr += p->segr;
        R->segw += p->segw;
        for (int32_t j = 0; j < nb; j++) P->blocks[j] += p->blocks[j];
    }
    if (bad || R->gmin <= 0) { /* a row not strictly increasing, or an index out of range */
        rc = spmv_csr_check(A, (int64_t)n + 1, nnz, err);
        if (rc == SPMV_OK)
            rc = spmv_fail(err, SPMV_EINVAL, -1, -1, -1, "features: inconsistent CSR");
        goto done;
    }
    /* Thread 0's marks collect the others' a word at a time. */
    for (int t = 1; t < nt; t++) {
        int64_t k = 0;
        for (; k + 8 <= noff; k += 8) {
            uint64_t a, b;
            memcpy(&a, mark[0] + k, 8);
            memcpy(&b, mark[t] + k, 8);
            a |= b;
            memcpy(mark[0] + k, &a, 8);
        }
        for (; k < noff; k++) mark[0][k] |= mark[t][k];
    }
    if (sp != NULL) { /* the chunks shared by threads, merged in thread order */
        int64_t c = -1;
        int32_t lo = 0, hi = 0;
        P->wide[0] = P->wide[1] = 0;
        for (int t = 0; t < nt; t++) {
            P->wide[0] += sp[t].wide[0];
            P->wide[1] += sp[t].wide[1];
            for (int k = 0; k < sp[t].np; k++) {
                if (sp[t].pc[k] != c) {
                    if (c >= 0) spans_count(P->wide, lo, hi);
                    c = sp[t].pc[k];
                    lo = sp[t].plo[k];
                    hi = sp[t].phi[k];
                }
                lo = sp[t].plo[k] < lo ? sp[t].plo[k] : lo;
                hi = sp[t].phi[k] > hi ? sp[t].phi[k] : hi;
            }
        }
        if (c >= 0) spans_count(P->wide, lo, hi);
        P->spans_done = 1;
    }
    if (nr > 0) {
        rc = sample_diagonals(A, P, noff, R, err);
        if (rc) goto done;
    } else
        diagonals(mark[0], noff, R);
    R->lo.count = R->lo.sum = R->up.count = R->up.sum = 0;
    R->lo.m2 = R->up.m2 = 0;
    R->lo.shift = shift_lo;
    R->up.shift = shift_up;
    for (int64_t b = 0; b < nblk; b++) {
        moments_merge(&R->lo, bs[b].k[0], bs[b].s[0], bs[b].m2[0]);
        moments_merge(&R->up, bs[b].k[1], bs[b].s[1], bs[b].m2[1]);
    }
    goto done;
nomem:
    rc = SPMV_ENOMEM;
done:
    for (int t = 0; bmark != NULL && t < nt; t++) {
        if (mark[t] == NULL) break;
        spmv_free(mark[t]);
        spmv_free(stamp[t]);
        for (int32_t j = 0; j < nb; j++) spmv_free(bmark[t * SPMV_SUMMARY_MAXB + j]);
        if (tl != NULL) {
            spmv_free(tl[t].bits);
            spmv_free(tl[t].list);
        }
    }
    spmv_free(sp);
    spmv_free(tl);
    spmv_free(bs);
    spmv_free(split);
    spmv_free(parts);
    spmv_free(bmark);
    spmv_free(stamp);
    spmv_free(mark);
    return rc;
}
