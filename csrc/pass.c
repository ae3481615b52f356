// csrc/pass.c: the one pass over indices behind the tier-2 features and the design rows' sizes
// SPDX-License-Identifier: BSD-3-Clause
//
// Row by row, validating as it reads: neighbour gaps, band, spans, runs, the 128-byte segments of x
// a row and a group of 32 rows read, and the occupied diagonals (DIA's offsets).  After each block
// of BLOCK rows, while its entries are in cache, the formats' parts of the pass that the need ops
// asked for (spmv_pass_part: BSR's block counts, BRO-ELL's row symbols, cidx's chunk spans, ...)
// take the block; the pass names none of them.  Threads take contiguous runs of BLOCK rows holding
// about equal entries, each with its own marks, stamps and part states; integer totals add, marks
// OR, parts merge in thread order, and the band moments are kept per block and merged in block
// order, so the result is the same bits for any thread count.  features.c turns the totals into
// features.
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

/* One thread's totals. */
typedef struct {
    int32_t gmin, gmax, band;
    int64_t span, cluster, segr, segw;
    int bad;
} totals;

static int32_t max_i32(int32_t a, int32_t b) { return a > b ? a : b; }

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

/* The pass's workspace: per thread its marks, stamps, totals and parts' states; the block
 * moments; the row splits. */
typedef struct {
    const spmv_csr *A;
    spmv_pass *P;
    spmv_pass_view V;
    int64_t noff, nseg, nblk;
    int32_t shift_lo, shift_up;
    uint8_t **mark;
    int32_t **stamp;
    totals *tot;
    int32_t *split;
    block_stat *bs;
    char *ts[SPMV_NFORMATS]; /* part j's thread states, nt * tsize bytes */
} pass_ws;

/* Thread t's state of part j (NULL when the part keeps none: NULL + 0 is undefined in C). */
static void *thread_state(const pass_ws *W, int32_t j, int t) {
    int64_t tsize = W->P->part[j]->tsize;
    return W->ts[j] != NULL ? W->ts[j] + t * tsize : NULL;
}

/* The parts the pass serves (asked for, and start did not decline) see rows [r0, r1) of thread t. */
static void parts_block(const pass_ws *W, int t, int32_t r0, int32_t r1, int64_t at,
                        const int32_t *ix, const int32_t *gap) {
    const spmv_pass *P = W->P;
    spmv_pass_block B = {W->A, ix, r0, r1, at, gap};
    for (int32_t j = 0; j < P->nparts; j++)
        if (P->done[j] && P->part[j]->block != NULL)
            P->part[j]->block(P->res[j], thread_state(W, j, t), &B);
}

/* Rows [r0, r1) (r0 a multiple of BLOCK) of thread t, the first of them at place `at` among the
 * rows passed, into its totals, marks and stamps, then its parts' states. */
static void pass_rows(const pass_ws *W, int t, int32_t r0, int32_t r1, int64_t at) {
    const spmv_csr *A = W->A;
    const int32_t none = 0; /* indices may be NULL when nnz is 0; NULL + 0 is undefined in C */
    const int32_t *ip = A->indptr, *ix = A->indices != NULL ? A->indices : &none;
    uint8_t *mark = W->mark[t];
    int32_t *stamp = W->stamp[t], n = A->nrows;
    totals *p = &W->tot[t];
    int32_t gmin = INT32_MAX, gmax = 0, band = 0, blo[BLOCK], bup[BLOCK], gap[BLOCK];
    int64_t span = 0, cluster = 0, segr = 0, segw = 0;
    /* b0 in int64: with nrows near INT32_MAX, b0 + BLOCK would pass it */
    for (int64_t b0 = r0; b0 < r1; b0 += BLOCK) {
        int32_t b1 = r1 - b0 < BLOCK ? r1 : (int32_t)(b0 + BLOCK), k = 0;
        int32_t end = ip[b0]; /* each row's start is the row before's end */
        for (int32_t i = (int32_t)b0; i < b1; i++) {
            const int32_t *q = ix + end, *qe = ix + (end = ip[i + 1]);
            gap[i - b0] = 0;
            if (q == qe) continue;
            uint8_t *mk = mark + (n - 1 - i);                    /* mk[col] marks offset col - i */
            int32_t first = *q, last = qe[-1], g = (i >> 5) + 1; /* group id; 0: never stamped */
            /* The indices are checked as they are read, before any write they index: first and
             * last in [0, ncols), first <= last, and every other column <= last (one compare per
             * entry); order shows as a gap <= 0 in gmin after the pass, at no cost here. */
            if ((uint32_t)first > (uint32_t)last || (uint32_t)last >= (uint32_t)A->ncols) {
                p->bad = 1;
                return;
            }
            int32_t c = first, run = 0, best = 0, segs = 1, rmax = 0;
            mk[c] = 1;
            segw += stamp[c >> 4] != g;
            stamp[c >> 4] = g;
            /* Few live values (the x86-64 registers: a spill costs a store and a load per entry);
             * compares become cmov/setcc; gaps go straight into gmin. */
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
                /* Sorted: a segment recurs only in a run.  The branch halves the time of stencils
                 * (one stamp per segment, not per entry) but doubles it where segments change
                 * unpredictably (pushpull); stamping every entry instead made the design rows
                 * 1.1-1.25x slower on laplace2d 45x45, lp_fit1p and fem_blocks(40), 1.14x faster
                 * on pushpull (one thread, 2-core dev VM). */
                if ((cn ^ c) >> 4) {
                    segs++;
                    segw += stamp[cn >> 4] != g;
                    stamp[cn >> 4] = g;
                }
                c = cn;
            }
            gmax = rmax > gmax ? rmax : gmax;
            gap[i - b0] = rmax;
            int32_t lo = max_i32(i - first, 0), up = max_i32(c - i, 0);
            band = max_i32(band, max_i32(lo, up)); /* sorted: the extremes end the row */
            span += c - first;
            cluster += best;
            segr += segs;
            blo[k] = lo;
            bup[k++] = up;
        }
        parts_block(W, t, (int32_t)b0, b1, at + (b0 - r0), ix, gap); /* its entries in cache */
        block_stat *b = &W->bs[b0 / BLOCK];
        b->k[0] = b->k[1] = k;
        if (k > 0) {
            block_moments(blo, k, W->shift_lo, &b->s[0], &b->m2[0]);
            block_moments(bup, k, W->shift_up, &b->s[1], &b->m2[1]);
        }
    }
    p->gmin = gmin < p->gmin ? gmin : p->gmin; /* totals start at gmin INT32_MAX, the rest 0 */
    p->gmax = max_i32(p->gmax, gmax);
    p->band = max_i32(p->band, band);
    p->span += span;
    p->cluster += cluster;
    p->segr += segr;
    p->segw += segw;
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
            ndiag += spmv_popcount64(bit[w]);
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

/* ---- the formats' parts ---- */

int spmv_pass_result(spmv_pass *P, const spmv_pass_part *part, void **res, spmv_err *err) {
    for (int32_t j = 0; j < P->nparts; j++)
        if (P->part[j] == part) {
            *res = P->res[j];
            return SPMV_OK;
        }
    if (P->nparts >= SPMV_NFORMATS) /* one part per format: a second would be a library bug */
        return spmv_fail(err, SPMV_EINVAL, -1, P->nparts, SPMV_NFORMATS,
                         "the pass takes at most %d parts", SPMV_NFORMATS);
    *res = spmv_calloc(1, part->size > 0 ? part->size : 1, err);
    if (*res == NULL) return SPMV_ENOMEM;
    P->part[P->nparts] = part;
    P->done[P->nparts] = 0;
    P->res[P->nparts++] = *res;
    return SPMV_OK;
}

void *spmv_pass_found(const spmv_pass *P, const spmv_pass_part *part) {
    for (int32_t j = 0; j < P->nparts; j++)
        if (P->part[j] == part) return P->done[j] ? P->res[j] : NULL;
    return NULL;
}

void spmv_pass_free(spmv_pass *P) {
    for (int32_t j = 0; j < P->nparts; j++) {
        if (P->part[j]->free != NULL) P->part[j]->free(P->res[j]);
        spmv_free(P->res[j]);
        P->res[j] = NULL;
    }
    P->nparts = 0;
}

/* Each part's start, then its thread states (zeroed) and their open. */
static int parts_start(pass_ws *W, spmv_err *err) {
    spmv_pass *P = W->P;
    for (int32_t j = 0; j < P->nparts; j++) {
        const spmv_pass_part *q = P->part[j];
        int rc = q->start != NULL ? q->start(P->res[j], &W->V, err) : SPMV_OK;
        if (rc < 0) return rc;
        P->done[j] = rc == SPMV_OK;
        if (!P->done[j] || q->tsize <= 0) continue;
        W->ts[j] = (char *)spmv_calloc(W->V.nt, q->tsize, err);
        if (W->ts[j] == NULL) return SPMV_ENOMEM;
        for (int t = 0; t < W->V.nt && q->open != NULL; t++) {
            rc = q->open(P->res[j], thread_state(W, j, t), &W->V, t, err);
            if (rc) return rc;
        }
    }
    return SPMV_OK;
}

static void parts_merge(const pass_ws *W) {
    const spmv_pass *P = W->P;
    for (int32_t j = 0; j < P->nparts; j++)
        for (int t = 0; P->done[j] && P->part[j]->merge != NULL && t < W->V.nt; t++)
            P->part[j]->merge(P->res[j], thread_state(W, j, t), &W->V, t);
}

static void parts_close(pass_ws *W) {
    const spmv_pass *P = W->P;
    for (int32_t j = 0; j < P->nparts; j++) {
        for (int t = 0; W->ts[j] != NULL && P->part[j]->close != NULL && t < W->V.nt; t++)
            P->part[j]->close(thread_state(W, j, t));
        spmv_free(W->ts[j]);
        W->ts[j] = NULL;
    }
}

/* ---- the pass ---- */

/* Per thread its marks (unzeroed when sampling: sample_diagonals never reads them) and stamps,
 * its totals; the block moments; the row splits. */
static int ws_alloc(pass_ws *W, spmv_err *err) {
    int nt = W->V.nt;
    W->mark = (uint8_t **)spmv_calloc(nt, sizeof(uint8_t *), err);
    W->stamp = W->mark ? (int32_t **)spmv_calloc(nt, sizeof(int32_t *), err) : NULL;
    W->tot = W->stamp ? (totals *)spmv_calloc(nt, sizeof(totals), err) : NULL;
    W->split = W->tot ? (int32_t *)spmv_malloc((int64_t)nt + 1, sizeof(int32_t), err) : NULL;
    W->bs = W->split ? (block_stat *)spmv_calloc(W->nblk > 0 ? W->nblk : 1, sizeof(block_stat), err)
                     : NULL;
    if (W->bs == NULL) return SPMV_ENOMEM;
    for (int t = 0; t < nt; t++) {
        W->mark[t] = W->V.nrange > 0 ? (uint8_t *)spmv_malloc(W->noff, 1, err)
                                     : (uint8_t *)spmv_calloc(W->noff, 1, err);
        W->stamp[t] = W->mark[t] ? (int32_t *)spmv_calloc(W->nseg, sizeof(int32_t), err) : NULL;
        if (W->stamp[t] == NULL) return SPMV_ENOMEM;
        W->tot[t].gmin = INT32_MAX;
    }
    return SPMV_OK;
}

static void ws_free(pass_ws *W) {
    parts_close(W);
    for (int t = 0; W->stamp != NULL && t < W->V.nt; t++) {
        spmv_free(W->mark[t]);
        spmv_free(W->stamp[t]);
    }
    spmv_free(W->bs);
    spmv_free(W->split);
    spmv_free(W->tot);
    spmv_free(W->stamp);
    spmv_free(W->mark);
}

/* Splits at about equal entries, moved to the block start whose entries are nearer the share:
 * moving down always left the last thread up to a block more (on a 2,025-row matrix, 62 % of the
 * rows). */
static void splits(pass_ws *W) {
    const int32_t *ip = W->A->indptr;
    int32_t n = W->A->nrows, *split = W->split;
    int nt = W->V.nt;
    int64_t nnz = ip[n];
    split[0] = 0;
    split[nt] = n;
    for (int t = 1; t < nt; t++) {
        int64_t key = nnz * t / nt, r = spmv_lower_bound(ip, 0, (int64_t)n + 1, key);
        int64_t lo = r / BLOCK * BLOCK, hi = lo + BLOCK < n ? lo + BLOCK : n;
        r = key - ip[lo] <= ip[hi] - key ? lo : hi;
        split[t] = (int32_t)(r < split[t - 1] ? split[t - 1] : r);
    }
}

/* The moments' shift: the first non-empty row's values, as a serial pass would take them, so that
 * means carry rounding error on the scale of the spread, not of the values.  Its ends are checked
 * before they are read: any bad row makes the pass fail anyway. */
static void shifts(pass_ws *W) {
    const spmv_csr *A = W->A;
    const int32_t *ip = A->indptr;
    int32_t n = A->nrows, nr = W->V.nrange;
    for (int32_t k = 0; k < (nr > 0 ? nr : 1); k++) {
        int32_t r0 = nr > 0 ? W->P->range[k] : 0, r1 = nr > 0 ? block_end(r0, n) : n;
        for (int32_t i = r0; i < r1; i++)
            if (ip[i + 1] > ip[i]) {
                int32_t first = A->indices[ip[i]], last = A->indices[ip[i + 1] - 1];
                W->shift_lo = max_i32(i - first, 0);
                W->shift_up = max_i32(last - i, 0);
                return;
            }
    }
}

/* The rows: the sampled blocks on thread 0, or every thread's run. */
static void run_rows(pass_ws *W, spmv_pattern *R) {
    const spmv_pass *P = W->P;
    int32_t n = W->A->nrows, nt = W->V.nt;
    const int32_t *split = W->split;
    R->groups = 0;
    if (P->nrange > 0) {
        for (int32_t k = 0; k < P->nrange; k++) {
            int32_t r0 = P->range[k], r1 = block_end(r0, n);
            pass_rows(W, 0, r0, r1, (int64_t)k * BLOCK);
            R->groups += (r1 - r0 + 31) / 32;
            if (W->tot[0].bad) break;
        }
        return;
    }
    R->groups = ((int64_t)n + 31) / 32;
#pragma omp parallel for num_threads(nt) schedule(static, 1) if (nt > 1)
    for (int t = 0; t < nt; t++) pass_rows(W, t, split[t], split[t + 1], split[t]);
}

/* The threads' totals into R; whether any thread found a bad row. */
static int totals_merge(const pass_ws *W, spmv_pattern *R) {
    int bad = 0;
    R->gmin = INT32_MAX;
    R->gmax = R->band = 0;
    R->span = R->cluster = R->segr = R->segw = 0;
    for (int t = 0; t < W->V.nt; t++) {
        const totals *p = &W->tot[t];
        bad |= p->bad;
        if (p->bad) continue;
        R->gmin = p->gmin < R->gmin ? p->gmin : R->gmin;
        R->gmax = max_i32(R->gmax, p->gmax);
        R->band = max_i32(R->band, p->band);
        R->span += p->span;
        R->cluster += p->cluster;
        R->segr += p->segr;
        R->segw += p->segw;
    }
    return bad;
}

/* Thread 0's marks collect the others' a word at a time. */
static void marks_merge(pass_ws *W) {
    for (int t = 1; t < W->V.nt; t++) {
        uint8_t *m0 = W->mark[0], *mt = W->mark[t];
        int64_t k = 0;
        for (; k + 8 <= W->noff; k += 8) {
            uint64_t a, b;
            memcpy(&a, m0 + k, 8);
            memcpy(&b, mt + k, 8);
            a |= b;
            memcpy(m0 + k, &a, 8);
        }
        for (; k < W->noff; k++) m0[k] |= mt[k];
    }
}

static void moments(const pass_ws *W, spmv_pattern *R) {
    R->lo.count = R->lo.sum = R->up.count = R->up.sum = 0;
    R->lo.m2 = R->up.m2 = 0;
    R->lo.shift = W->shift_lo;
    R->up.shift = W->shift_up;
    for (int64_t b = 0; b < W->nblk; b++) {
        moments_merge(&R->lo, W->bs[b].k[0], W->bs[b].s[0], W->bs[b].m2[0]);
        moments_merge(&R->up, W->bs[b].k[1], W->bs[b].s[1], W->bs[b].m2[1]);
    }
}

/* Threads for the pass: one when sampling, else one per PASS_MIN_NNZ entries and per block at
 * most. */
static int pass_threads(const spmv_csr *A, const spmv_pass *P, int64_t nblk) {
    int nt = 1;
#ifdef _OPENMP
    int64_t want = P->nrange > 0 ? 1 : A->indptr[A->nrows] / PASS_MIN_NNZ;
    nt = omp_get_max_threads();
    if (want < nt) nt = want < 1 ? 1 : (int)want;
    if (nblk < nt) nt = (int)nblk;
#else
    (void)A, (void)P, (void)nblk;
#endif
    return nt;
}

int spmv_pattern_pass(const spmv_csr *A, spmv_pass *P, spmv_pattern *R, spmv_err *err) {
    int32_t n = A->nrows;
    pass_ws W;
    memset(&W, 0, sizeof W);
    W.A = A;
    W.P = P;
    W.noff = (int64_t)n + A->ncols - 1;
    W.nseg = ((int64_t)A->ncols + 15) >> 4;
    W.nblk = ((int64_t)n + BLOCK - 1) / BLOCK;
    W.V.A = A;
    W.V.nrange = P->nrange;
    W.V.nt = pass_threads(A, P, W.nblk);
    W.V.rows = n;
    if (P->nrange > 0) { /* the sampled blocks' rows, the last one possibly short */
        int32_t last = P->range[P->nrange - 1];
        W.V.rows = (int64_t)(P->nrange - 1) * BLOCK + (block_end(last, n) - last);
    }
    int rc = ws_alloc(&W, err);
    if (rc) goto done;
    splits(&W);
    W.V.split = W.split;
    shifts(&W);
    rc = parts_start(&W, err);
    if (rc) goto done;
    run_rows(&W, R);
    if (totals_merge(&W, R) || R->gmin <= 0) { /* a row not strictly increasing, or an index
                                                   out of range */
        rc = spmv_csr_check(A, (int64_t)n + 1, A->indptr[n], err);
        if (rc == SPMV_OK)
            rc = spmv_fail(err, SPMV_EINVAL, -1, -1, -1, "features: inconsistent CSR");
        goto done;
    }
    marks_merge(&W);
    parts_merge(&W);
    if (P->nrange > 0)
        rc = sample_diagonals(A, P, W.noff, R, err);
    else
        diagonals(W.mark[0], W.noff, R);
    if (rc == SPMV_OK) moments(&W, R);
done:
    ws_free(&W);
    return rc;
}
