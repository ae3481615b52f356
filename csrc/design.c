// csrc/design.c: design rows -- features and every configuration's bytes moved from one pass
// SPDX-License-Identifier: BSD-3-Clause
//
// One pass over the entries (csrc/pass.c, through spmv_features_summary) gives the features and a
// summary of A; each distinct (format, parameters) then takes its size from that summary through
// its format's size_summary op, in O(nrows) or less, with the same result and the same refusals as
// its size query.  The same source serves the library and every exported model header.
#include "spmv_internal.h"

#include <math.h>
#include <string.h>

static int same_size(const spmv_configs *C, int32_t a, int32_t b) {
    return C->format[a] == C->format[b] && C->param[2 * a] == C->param[2 * b] &&
           C->param[2 * a + 1] == C->param[2 * b + 1] && C->unread[a] == C->unread[b];
}

static void fmt_of(const spmv_configs *C, int32_t j, double max_fill, spmv_fmt *F) {
    memset(F, 0, sizeof *F);
    F->format = C->format[j];
    F->param[0] = C->param[2 * j];
    F->param[1] = C->param[2 * j + 1];
    F->max_fill = max_fill;
}

/* Whether configuration a sorts before b: by format, then parameters from the last, so that the
 * formats' scratch (SELL's sorted windows) serves runs of configurations. */
static int before(const spmv_configs *C, int32_t a, int32_t b) {
    if (C->format[a] != C->format[b]) return C->format[a] < C->format[b];
    if (C->param[2 * a + 1] != C->param[2 * b + 1])
        return C->param[2 * a + 1] < C->param[2 * b + 1];
    return C->param[2 * a] < C->param[2 * b];
}

/* In the order of spmv.h's SPMV_COL_* (no array designators: an exported header is C++ too). */
static const char *const config_columns[SPMV_NCOLS - SPMV_NFEATURES] = {
#define SPMV_PARAM(CODE, name) "p_" #name,
#include "kernels.def"
    "value_bytes",
    "bytes_moved",
    "padding_ratio",
    "launches",
};

const char *spmv_design_column_name(int i) {
    if (i >= 0 && i < SPMV_NFEATURES) return spmv_feature_name(i);
    return i >= SPMV_NFEATURES && i < SPMV_NCOLS ? config_columns[i - SPMV_NFEATURES] : NULL;
}

static int configs_ok(const spmv_configs *C, int value_bytes, spmv_err *err) {
    if (value_bytes != 4 && value_bytes != 8)
        return spmv_fail(err, SPMV_EINVAL, -1, value_bytes, 8,
                         "value_bytes must be 4 or 8. Got %d instead.", value_bytes);
    if (C->n < 0 || (C->n > 0 && (C->format == NULL || C->param == NULL || C->unread == NULL)))
        return spmv_fail(err, SPMV_EINVAL, -1, C->n, -1,
                         "configurations: n = %d, and format, param and unread must be given",
                         (int)C->n);
    for (int32_t j = 0; j < C->n; j++)
        if (C->format[j] < 0 || C->format[j] >= SPMV_NFORMATS)
            return spmv_fail(err, SPMV_EINVAL, j, C->format[j], SPMV_NFORMATS,
                             "configuration %d has format code %d, not in [0, %d)", (int)j,
                             (int)C->format[j], SPMV_NFORMATS);
    return SPMV_OK;
}

/* The features of A into feat and, per configuration j of C, bytes[2j], bytes[2j+1] (bytes moved,
 * padding ratio) and code[j] (0 or SPMV_ENOTAPPLICABLE, with the reason in why[j] when why is not
 * NULL).  Another failure of a size is returned, for the first configuration in C's order that
 * has one. */
static int sizes(const spmv_csr *A, const spmv_csr *As, const int32_t *range, int32_t nrange,
                 const spmv_gpu_props *dev, const spmv_configs *C, int value_bytes, double max_fill,
                 int features, double *feat, double *bytes, int *code, spmv_err *why,
                 spmv_err *err) {
    int rc = SPMV_OK, pattern = 0;
    int32_t bad = -1;
    int64_t nnz = 0;
    spmv_summary S;
    spmv_fmt F;
    memset(&S, 0, sizeof S);
    /* rep[j]: the first configuration of j's size; uniq[0..nu): the distinct ones, sorted. */
    int32_t *rep = (int32_t *)spmv_malloc(C->n > 0 ? C->n : 1, sizeof(int32_t), err), nu = 0;
    int32_t *uniq = rep ? (int32_t *)spmv_malloc(C->n > 0 ? C->n : 1, sizeof(int32_t), err) : NULL;
    if (uniq == NULL) {
        rc = SPMV_ENOMEM;
        goto done;
    }
    for (int32_t j = 0; j < C->n; j++) {
        if (j > 0 && same_size(C, rep[j - 1], j)) { /* a run of one format's kernels */
            rep[j] = rep[j - 1];
            continue;
        }
        int32_t r = 0;
        while (r < nu && !same_size(C, uniq[r], j)) r++;
        if (r < nu) {
            rep[j] = uniq[r];
            continue;
        }
        rep[j] = j;
        int32_t at = nu++; /* insertion sort: a few dozen distinct sizes */
        for (; at > 0 && before(C, j, uniq[at - 1]); at--) uniq[at] = uniq[at - 1];
        uniq[at] = j;
        fmt_of(C, j, max_fill, &F);
        pattern |= spmv_fmt_pattern(&F);
        rc = spmv_fmt_need(&S, &F, err);
        if (rc) goto done;
    }
    S.pass.range = range;
    S.pass.nrange = nrange;
    /* sizes alone (features 0) skip the pass over every entry where no format's size needs it: a
     * solve's selection asks JAD's sizes of a 2e7-entry matrix, 47 ms with the pass on the H200's host */
    rc = As                    ? spmv_features_estimate(A, As, dev, feat, &S, err)
         : features || pattern ? spmv_features_summary(A, dev, feat, &S, err)
                               : spmv_features_rows(A, dev, feat, &S, err);
    if (rc) goto done;
    nnz = S.A->indptr[S.A->nrows];
    for (int32_t u = 0; u < nu; u++) {
        int32_t j = uniq[u];
        spmv_err e = {0};
        fmt_of(C, j, max_fill, &F);
        /* A configuration that cannot serve A is no error: its reason is written only where the
         * caller takes reasons, and an error's message by a second, identical call. */
        code[j] = spmv_fmt_size_summary(&S, &F, why != NULL ? &e : NULL);
        if (code[j] == SPMV_ENOTAPPLICABLE && why != NULL) why[j] = e;
        if (code[j] != SPMV_OK && code[j] != SPMV_ENOTAPPLICABLE && (bad < 0 || j < bad)) {
            bad = j; /* the first in C's order names its error, as one size query after another
                        would */
            if (why == NULL) {
                fmt_of(C, j, max_fill, &F);
                if (spmv_fmt_size_summary(&S, &F, &e) != code[j]) /* an allocation failed once */
                    spmv_fail(&e, code[j], j, -1, -1, "configuration %d: %s", (int)j,
                              spmv_strerror(code[j]));
            }
            if (err != NULL) *err = e;
        }
        if (code[j] != SPMV_OK) continue;
        int64_t idx = 0, slots = 0;
        for (int k = 0; k < SPMV_MAXIDX; k++)
            if (!((C->unread[j] >> k) & 1)) idx += 4 * F.nidx[k];
        for (int k = 0; k < SPMV_MAXVAL; k++) slots += F.nval[k];
        /* integers first, one conversion to double; a sample's storage scaled by the entries,
         * which A's indptr gives exactly (by rows where the sample has none) */
        if (As == NULL)
            bytes[2 * j] = (double)(idx + value_bytes * (slots + A->nrows + A->ncols));
        else
            bytes[2 * j] =
                (double)(idx + value_bytes * slots) *
                    (nnz ? (double)A->indptr[A->nrows] / nnz : (double)A->nrows / As->nrows) +
                (double)value_bytes * ((double)A->nrows + A->ncols);
        bytes[2 * j + 1] = nnz ? (double)slots / (double)nnz : 1.0;
    }
    if (bad >= 0) {
        rc = code[bad];
        goto done;
    }
    for (int32_t j = 0; j < C->n; j++) {
        int32_t s = rep[j];
        code[j] = code[s];
        bytes[2 * j] = code[s] ? NAN : bytes[2 * s];
        bytes[2 * j + 1] = code[s] ? NAN : bytes[2 * s + 1];
        if (why != NULL && j != s) why[j] = why[s];
    }
done:
    spmv_summary_free(&S);
    spmv_free(uniq);
    spmv_free(rep);
    return rc;
}

static int config_sizes(const spmv_csr *A, const spmv_configs *C, int value_bytes, double max_fill,
                        double *bytes, double *padding, spmv_err *why, spmv_err *err) {
    if (A == NULL || C == NULL || (C->n > 0 && (bytes == NULL || padding == NULL)))
        return spmv_fail(err, SPMV_EINVAL, -1, -1, -1,
                         "configuration sizes need a matrix, configurations and output arrays, "
                         "not NULL");
    int rc = configs_ok(C, value_bytes, err);
    if (rc) return rc;
    int32_t n = C->n > 0 ? C->n : 1;
    double feat[SPMV_NFEATURES], *b = (double *)spmv_malloc(2 * (int64_t)n, sizeof(double), err);
    int *code = b ? (int *)spmv_malloc(n, sizeof(int), err) : NULL;
    spmv_gpu_props dev;
    spmv_gpu_props_h100(&dev);
    if (why != NULL)
        for (int32_t j = 0; j < C->n; j++) memset(&why[j], 0, sizeof why[j]);
    rc = code == NULL
             ? SPMV_ENOMEM
             : sizes(A, NULL, NULL, 0, &dev, C, value_bytes, max_fill, 0, feat, b, code, why, err);
    for (int32_t j = 0; rc == SPMV_OK && j < C->n; j++) {
        bytes[j] = b[2 * j];
        padding[j] = b[2 * j + 1];
    }
    spmv_free(code);
    spmv_free(b);
    return rc;
}

static int design_args(const spmv_csr *A, const spmv_gpu_props *dev, const spmv_configs *C,
                       int value_bytes, double *rows, spmv_err *err) {
    if (A == NULL || dev == NULL || C == NULL || (C->n > 0 && rows == NULL))
        return spmv_fail(err, SPMV_EINVAL, -1, -1, -1,
                         "design rows need a matrix, GPU properties, "
                         "configurations and an output array, not NULL");
    int rc = configs_ok(C, value_bytes, err);
    if (rc) return rc;
    if (C->nextra < 0 ||
        (C->n > 0 && (C->p == NULL || C->launches == NULL || (C->nextra > 0 && C->extra == NULL))))
        return spmv_fail(err, SPMV_EINVAL, -1, C->n, -1,
                         "configurations: n = %d, nextra = %d, "
                         "and every array of n entries must be given",
                         (int)C->n, (int)C->nextra);
    return SPMV_OK;
}

/* The rows from sizes(): exact (As NULL) or from the sample As of the blocks range[nrange]. */
static int design(const spmv_csr *A, const spmv_csr *As, const int32_t *range, int32_t nrange,
                  const spmv_gpu_props *dev, const spmv_configs *C, int value_bytes,
                  double max_fill, double *rows, spmv_err *err) {
    int64_t stride = SPMV_NCOLS + C->nextra;
    int32_t n = C->n > 0 ? C->n : 1;
    double feat[SPMV_NFEATURES],
        *bytes = (double *)spmv_malloc(2 * (int64_t)n, sizeof(double), err);
    int *code = bytes ? (int *)spmv_malloc(n, sizeof(int), err) : NULL;
    int rc = code == NULL ? SPMV_ENOMEM
                          : sizes(A, As, range, nrange, dev, C, value_bytes, max_fill, 1, feat,
                                  bytes, code, NULL, err);
    for (int32_t j = 0; rc == SPMV_OK && j < C->n; j++) {
        double *r = rows + j * stride;
        memcpy(r, feat, sizeof feat);
        for (int k = 0; k < SPMV_NPCOLS; k++)
            r[SPMV_NFEATURES + k] = C->p[(int64_t)j * SPMV_NPCOLS + k];
        r[SPMV_COL_VALUE_BYTES] = value_bytes;
        r[SPMV_COL_LAUNCHES] = C->launches[j];
        for (int32_t k = 0; k < C->nextra; k++)
            r[SPMV_NCOLS + k] = C->extra[(int64_t)j * C->nextra + k];
        r[SPMV_COL_BYTES_MOVED] = bytes[2 * j];
        r[SPMV_COL_PADDING_RATIO] = bytes[2 * j + 1];
    }
    spmv_free(code);
    spmv_free(bytes);
    return rc;
}

static int design_rows(const spmv_csr *A, const spmv_gpu_props *dev, const spmv_configs *C,
                       int value_bytes, double max_fill, double *rows, spmv_err *err) {
    int rc = design_args(A, dev, C, value_bytes, rows, err);
    return rc ? rc : design(A, NULL, NULL, 0, dev, C, value_bytes, max_fill, rows, err);
}

/* spmv_design_rows_estimate takes the exact path where one of A's blocks of SPMV_PASS_BLOCK rows holds
 * more than this many times the entries of the fullest sampled block: its rows are on average that
 * much longer than any sampled block's, and every padded format (ELL, SELL, BRO-ELL, HYB's width,
 * JAD's diagonals) pads to the long rows a sample of strata misses, so its estimated storage, and
 * the ranking with it, would be off (on datasets/h100, circuits whose few dense rows no sampled
 * block held got SELL picks 700-1500x slower than the exact path's).  Block totals cost O(nrows /
 * 256) reads of indptr, as the entry budget's. */
#define SPMV_ESTIMATE_TAIL 2

/* Start row of block b of the k evenly spread over nblk: the middle of its stratum (the ends bias). */
static int32_t sample_start(int64_t b, int64_t k, int64_t nblk) {
    return (int32_t)((2 * b + 1) * nblk / (2 * k) * SPMV_PASS_BLOCK);
}

/* Where the sample's strata read indptr: at the start of each block of SPMV_PASS_BLOCK rows and at
 * nrows, from A's own indptr, or from coarse[nblk + 1], the caller's copy of exactly those values
 * (a matrix whose other rows are not in host memory: one that lives on the GPU). */
typedef struct {
    const int32_t *ip, *coarse;
    int32_t n;
    int64_t nblk;
} strata;

static strata strata_of(const int32_t *indptr, const int32_t *coarse, int32_t n) {
    strata s = {indptr, coarse, n, ((int64_t)n + SPMV_PASS_BLOCK - 1) / SPMV_PASS_BLOCK};
    return s;
}

/* indptr at the start of block b (b = nblk: at nrows). */
static int64_t block_ptr(const strata *s, int64_t b) {
    if (s->coarse != NULL) return s->coarse[b];
    return s->ip[b * SPMV_PASS_BLOCK < s->n ? b * SPMV_PASS_BLOCK : s->n];
}

/* Entries of block b, from indptr at its ends clamped to [0, nnz] (unchecked rows may be read:
 * the sampled ones are checked afterwards). */
static int64_t block_entries(const strata *s, int64_t b) {
    int64_t nnz = block_ptr(s, s->nblk), p = block_ptr(s, b), q = block_ptr(s, b + 1);
    int64_t a = p < 0 ? 0 : p > nnz ? nnz : p;
    int64_t z = q < a ? a : q > nnz ? nnz : q;
    return z - a;
}

/* Entries of the k sampled blocks. */
static int64_t sample_entries(const strata *s, int64_t k) {
    int64_t e = 0;
    for (int64_t b = 0; b < k; b++)
        e += block_entries(s, sample_start(b, k, s->nblk) / SPMV_PASS_BLOCK);
    return e;
}

static int64_t sample_blocks(const strata *s, int32_t sample_rows, int64_t sample_nnz) {
    int64_t nblk = s->nblk, nnz = block_ptr(s, nblk),
            k = sample_rows > 0 ? ((int64_t)sample_rows + SPMV_PASS_BLOCK - 1) / SPMV_PASS_BLOCK
                                : 0;
    /* The entry budget: as many blocks as hold sample_nnz entries at A's mean, then fewer while
     * the chosen ones hold more (each try O(k)). */
    if (k > 0 && sample_nnz > 0 && nnz > sample_nnz) {
        int64_t e, kn = (int64_t)((double)sample_nnz / ((double)nnz / (double)nblk));
        k = kn < 1 ? 1 : kn < k ? kn : k;
        while (k > 1 && 2 * k <= nblk && (e = sample_entries(s, k)) > sample_nnz) {
            int64_t kk = (int64_t)((double)k * (double)sample_nnz / (double)e);
            k = kk < 1 ? 1 : kk < k ? kk : k - 1;
        }
    }
    return k < 1 || 2 * k > nblk ? 0 : k; /* a sample of half of A: exact is cheaper */
}

int64_t spmv_sample_blocks(const int32_t *indptr, int32_t nrows, int32_t sample_rows,
                           int64_t sample_nnz) {
    strata s = strata_of(indptr, NULL, nrows);
    return sample_blocks(&s, sample_rows, sample_nnz);
}

/* The k blocks sampled into range[k] (k <= sample_rows / SPMV_PASS_BLOCK + 1), or 0 where the exact
 * path is taken: no sample, or one of A's blocks holds more than SPMV_ESTIMATE_TAIL times the
 * entries of the fullest sampled one (the sample missed A's long rows).  Reads indptr only at the
 * blocks' starts and at nrows (through s), O(nrows / 256). */
static int64_t sample_plan(const strata *s, int32_t sample_rows, int64_t sample_nnz,
                           int32_t *range) {
    int64_t k = sample_blocks(s, sample_rows, sample_nnz), full = 0, full_s = 0, e;
    for (int64_t b = 0; b < k; b++) {
        range[b] = sample_start(b, k, s->nblk);
        full_s = (e = block_entries(s, range[b] / SPMV_PASS_BLOCK)) > full_s ? e : full_s;
    }
    for (int64_t b = 0; k > 0 && b < s->nblk; b++)
        full = (e = block_entries(s, b)) > full ? e : full;
    return full > (int64_t)SPMV_ESTIMATE_TAIL * full_s ? 0 : k;
}

int64_t spmv_sample_plan(const int32_t *coarse, int32_t nrows, int32_t sample_rows,
                         int64_t sample_nnz, int32_t *range) {
    if (coarse == NULL || nrows < 1 || range == NULL) return 0;
    strata s = strata_of(NULL, coarse, nrows);
    return sample_plan(&s, sample_rows, sample_nnz, range);
}

static int design_rows_estimate(const spmv_csr *A, const int32_t *coarse, const spmv_gpu_props *dev,
                                const spmv_configs *C, int value_bytes, double max_fill,
                                int32_t sample_rows, int64_t sample_nnz, double *rows,
                                spmv_err *err) {
    int rc = design_args(A, dev, C, value_bytes, rows, err);
    if (rc) return rc;
    int bad = A->indptr == NULL || A->nrows < 1 || A->ncols < 1 ||
              (A->indices == NULL && A->indptr[A->nrows] > 0) || dev->sm_count < 1 ||
              dev->threads_per_sm < 1 || dev->warp_size < 1;
    if (bad && coarse == NULL) return design_rows(A, dev, C, value_bytes, max_fill, rows, err);
    int32_t n = A->nrows, B = SPMV_PASS_BLOCK;
    strata s = strata_of(A->indptr, coarse, n);
    int64_t kmax = sample_rows > 0 ? ((int64_t)sample_rows + B - 1) / B : 1, k = 0;
    int32_t *range = bad ? NULL : (int32_t *)spmv_malloc(kmax, sizeof(int32_t), err);
    if (range != NULL) k = sample_plan(&s, sample_rows, sample_nnz, range);
    if (coarse != NULL && k == 0) { /* the exact path would read rows the caller does not have */
        spmv_free(range);
        if (!bad && range == NULL) return SPMV_ENOMEM;
        return spmv_fail(
            err, SPMV_EINVAL, -1, n, -1,
            "a sample of a matrix given by its coarse indptr needs A with nrows, ncols "
            ">= 1, a GPU's properties, and sampled blocks that stand for A's (this one "
            "takes the exact path: spmv_sample_plan returns 0 for it)");
    }
    if (k == 0) {
        spmv_free(range);
        return range == NULL ? SPMV_ENOMEM
                             : design_rows(A, dev, C, value_bytes, max_fill, rows, err);
    }
    /* One block in the middle of each of k equal strata; their indptr checked (the rows not
     * sampled are not read), and found where the coarse copy says. */
    const int32_t *ip = A->indptr;
    int32_t ns = 0, *ips = (int32_t *)spmv_malloc(k * B + 1, sizeof(int32_t), err), *ixs = NULL;
    if (ips == NULL) {
        rc = SPMV_ENOMEM;
        goto done;
    }
    if (ip[0] != 0 || ip[n] < 0 || ip[n] != block_ptr(&s, s.nblk)) {
        int32_t at = ip[0] != 0 ? 0 : n;
        rc = spmv_fail(err, SPMV_EINDEX, at, ip[at], 0,
                       "indptr[%d] = %d; indptr[0] must be 0 and indptr[nrows] >= 0 (and equal to "
                       "the coarse copy's last)",
                       at, ip[at]);
        goto done;
    }
    ips[0] = 0;
    for (int64_t b = 0; b < k; b++) {
        int32_t r0 = range[b], r1 = n - r0 < B ? n : r0 + B;
        if (coarse != NULL && (ip[r0] != block_ptr(&s, r0 / B) ||
                               ip[r1] != block_ptr(&s, r1 == n ? s.nblk : r1 / B))) {
            rc = spmv_fail(err, SPMV_EINDEX, r0, ip[r0], block_ptr(&s, r0 / B),
                           "indptr[%d] = %d, but the coarse copy says %lld", r0, ip[r0],
                           (long long)block_ptr(&s, r0 / B));
            goto done;
        }
        for (int32_t i = r0; i < r1; i++) {
            if (ip[i + 1] < ip[i] || ip[i] < 0 || ip[i + 1] > ip[n]) {
                rc = spmv_fail(err, SPMV_EINDEX, (int64_t)i + 1, ip[i + 1], ip[i],
                               "indptr[%lld] = %d after %d: it must not decrease and stay within "
                               "[0, nnz]",
                               (long long)i + 1, ip[i + 1], ip[i]);
                goto done;
            }
            ips[ns + 1] = ips[ns] + (ip[i + 1] - ip[i]);
            ns++;
        }
    }
    ixs = (int32_t *)spmv_malloc(ips[ns] > 0 ? ips[ns] : 1, sizeof(int32_t), err);
    if (ixs == NULL) {
        rc = SPMV_ENOMEM;
        goto done;
    }
    for (int64_t b = 0, at = 0; b < k; b++) {
        int32_t r0 = range[b], r1 = n - r0 < B ? n : r0 + B;
        /* A that holds only these rows: a fault in them is named here, by its own row, where the
         * pass's would be named by spmv_csr_check of the whole A */
        if (coarse != NULL && (rc = spmv_csr_check_rows(A, r0, r1, err)) != SPMV_OK) goto done;
        if (ip[r1] > ip[r0]) /* indices may be NULL when A has no entries; NULL + 0 is undefined */
            memcpy(ixs + at, A->indices + ip[r0], sizeof(int32_t) * (size_t)(ip[r1] - ip[r0]));
        at += ip[r1] - ip[r0];
    }
    {
        spmv_csr As = {ns, A->ncols, ips, ixs};
        rc = design(A, &As, range, (int32_t)k, dev, C, value_bytes, max_fill, rows, err);
    }
done:
    spmv_free(ixs);
    spmv_free(ips);
    spmv_free(range);
    return rc;
}

/* The public entries: C as given, or its columns resolved from its ids first (spmv_configs). */
int spmv_config_sizes(const spmv_csr *A, const spmv_configs *C, int value_bytes, double max_fill,
                      double *bytes, double *padding, spmv_err *why, spmv_err *err) {
    spmv_configs R;
    void *block = NULL;
    int rc = C == NULL ? SPMV_OK : spmv_configs_resolve(C, &R, &block, err);
    if (rc == SPMV_OK)
        rc = config_sizes(A, C ? &R : NULL, value_bytes, max_fill, bytes, padding, why, err);
    spmv_free(block);
    return rc;
}

int spmv_design_rows(const spmv_csr *A, const spmv_gpu_props *dev, const spmv_configs *C,
                     int value_bytes, double max_fill, double *rows, spmv_err *err) {
    spmv_configs R;
    void *block = NULL;
    int rc = C == NULL ? SPMV_OK : spmv_configs_resolve(C, &R, &block, err);
    if (rc == SPMV_OK) rc = design_rows(A, dev, C ? &R : NULL, value_bytes, max_fill, rows, err);
    spmv_free(block);
    return rc;
}

/* Both estimate entries: C's columns resolved from its ids, then the sample of A (coarse: A holds only
 * the sampled rows). */
static int estimate_entry(const spmv_csr *A, const int32_t *coarse, const spmv_gpu_props *dev,
                          const spmv_configs *C, int value_bytes, double max_fill,
                          int32_t sample_rows, int64_t sample_nnz, double *rows, spmv_err *err) {
    spmv_configs R;
    void *block = NULL;
    int rc = C == NULL ? SPMV_OK : spmv_configs_resolve(C, &R, &block, err);
    if (rc == SPMV_OK)
        rc = design_rows_estimate(A, coarse, dev, C ? &R : NULL, value_bytes, max_fill, sample_rows,
                                  sample_nnz, rows, err);
    spmv_free(block);
    return rc;
}

int spmv_design_rows_estimate(const spmv_csr *A, const spmv_gpu_props *dev, const spmv_configs *C,
                              int value_bytes, double max_fill, int32_t sample_rows,
                              int64_t sample_nnz, double *rows, spmv_err *err) {
    return estimate_entry(A, NULL, dev, C, value_bytes, max_fill, sample_rows, sample_nnz, rows,
                          err);
}

int spmv_design_rows_sampled(const spmv_csr *A, const int32_t *coarse, const spmv_gpu_props *dev,
                             const spmv_configs *C, int value_bytes, double max_fill,
                             int32_t sample_rows, int64_t sample_nnz, double *rows, spmv_err *err) {
    if (coarse == NULL)
        return spmv_fail(err, SPMV_EINVAL, -1, -1, -1,
                         "a sampled matrix needs its coarse indptr, not NULL");
    return estimate_entry(A, coarse, dev, C, value_bytes, max_fill, sample_rows, sample_nnz, rows,
                          err);
}
