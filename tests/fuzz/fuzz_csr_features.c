// tests/fuzz/fuzz_csr_features.c: libFuzzer harness — spmv_csr_check at the door (and its copying
// twin spmv_csr_copy), then features
// SPDX-License-Identifier: BSD-3-Clause
//
// Byte 0 picks the path.  Even: a valid CSR from fz_csr_decode, which the check must accept, and
// whose features must be finite, non-negative and, where the harness can count them simply, exact.
// Odd: indptr and indices as raw as the bytes say; whatever passes the check must satisfy the same
// feature invariants.  See fuzz_common.h for the modes that feed what fails the check onwards.
#include "fuzz_common.h"

enum { MAX_ROWS = 4096, MAX_NNZ = 65536 };

/* Positions of the features the harness recounts, found by name so that a reordering of the
 * feature list does not silently compare the wrong ones. */
static const char *const counted[] = {"nrows",      "nnz",       "ncols", "nnz_min",  "nnz_max",
                                      "empty_rows", "bandwidth", "ndiag", "dist_min", "dist_max"};
enum { C_NROWS, C_NNZ, C_NCOLS, C_MIN, C_MAX, C_EMPTY, C_BAND, C_NDIAG, C_DMIN, C_DMAX, C_COUNT };
static int pos[C_COUNT];

/* A one-group model of no inputs and every format at its default parameters, for spmv_rank on a
 * CSR that failed the check (mode unchecked): only the core's reading of A is under test. */
static const double one = 1.0;
static spmv_model rank_model;
static int32_t cfg_format[SPMV_NFORMATS], cfg_param[2 * SPMV_NFORMATS], cfg_unread[SPMV_NFORMATS];
static int32_t cfg_group[SPMV_NFORMATS];
static double cfg_p[SPMV_NPCOLS * SPMV_NFORMATS], cfg_launches[SPMV_NFORMATS];
static spmv_configs configs;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fz_modes_init();
    for (int c = 0; c < C_COUNT; c++) {
        pos[c] = -1;
        for (int i = 0; i < SPMV_NFEATURES; i++)
            if (strcmp(spmv_feature_name(i), counted[c]) == 0) pos[c] = i;
        if (pos[c] < 0) {
            fprintf(stderr, "feature %s not found\n", counted[c]);
            abort();
        }
    }
    rank_model.kind = SPMV_MODEL_LINEAR;
    rank_model.ngroups = 1;
    rank_model.ncols = SPMV_NCOLS;
    rank_model.out_col = -1;
    rank_model.linear.intercept = &one;
    for (int f = 0; f < SPMV_NFORMATS; f++) {
        cfg_format[f] = f;
        cfg_param[2 * f] = f == SPMV_FMT_SELL || f == SPMV_FMT_BRO_ELL ? 4
                           : f == SPMV_FMT_BSR                         ? 2
                           : f == SPMV_FMT_CIDX                        ? 16 /* bits: 8 or 16 */
                                                                       : 0;
        cfg_param[2 * f + 1] = f == SPMV_FMT_SELL ? 8 : 0;
        if (f == SPMV_FMT_HYB) cfg_param[2 * f] = -1;
        for (int k = 0; k < SPMV_NPCOLS; k++) cfg_p[SPMV_NPCOLS * f + k] = NAN;
    }
    configs.n = SPMV_NFORMATS;
    configs.format = cfg_format;
    configs.param = cfg_param;
    configs.unread = cfg_unread;
    configs.p = cfg_p;
    configs.launches = cfg_launches;
    configs.group = cfg_group;
    return 0;
}

static int props_ok(const spmv_gpu_props *d) {
    return d->sm_count >= 1 && d->threads_per_sm >= 1 && d->warp_size >= 1;
}

/* Features of a CSR that passed the check. */
/* The coarse indptr of A (every SPMV_SAMPLE_BLOCK-th row and nrows), fz_alloc'd. */
static int32_t *coarse_of(const spmv_csr *A) {
    int64_t nblk = ((int64_t)A->nrows + SPMV_SAMPLE_BLOCK - 1) / SPMV_SAMPLE_BLOCK;
    int32_t *co = fz_alloc(nblk + 1, sizeof(int32_t));
    for (int64_t b = 0; b < nblk; b++) co[b] = A->indptr[b * SPMV_SAMPLE_BLOCK];
    co[nblk] = A->indptr[A->nrows];
    return co;
}

/* A of which only the sampled rows are given (the rest of indptr and indices poisoned) has the
 * estimate's rows est of the whole A, bit for bit (a matrix that lives on the GPU). */
static void sampled_alone(const spmv_csr *A, const spmv_gpu_props *dev, const double *est,
                          spmv_err *err) {
    int32_t n = A->nrows, range[1024 / SPMV_SAMPLE_BLOCK + 1], *co = coarse_of(A);
    int64_t nnz = A->indptr[n], k = spmv_sample_plan(co, n, 1024, nnz / 4, range);
    int32_t *ip = fz_alloc((int64_t)n + 1, sizeof(int32_t)), *ix = fz_alloc(nnz, sizeof(int32_t));
    for (int64_t i = 0; i <= n; i++) ip[i] = INT32_MIN + (int32_t)(i % 77);
    for (int64_t p = 0; p < nnz; p++) ix[p] = -1 - (int32_t)(p % 5);
    ip[0] = 0;
    ip[n] = (int32_t)nnz;
    for (int64_t b = 0; b < k; b++) {
        int32_t r0 = range[b], r1 = n - r0 < SPMV_SAMPLE_BLOCK ? n : r0 + SPMV_SAMPLE_BLOCK;
        for (int32_t i = r0; i <= r1; i++) ip[i] = A->indptr[i];
        for (int32_t p = A->indptr[r0]; p < A->indptr[r1]; p++) ix[p] = A->indices[p];
    }
    spmv_csr P = {n, A->ncols, ip, ix};
    double rows[SPMV_NCOLS * SPMV_NFORMATS];
    int rc = spmv_design_rows_sampled(&P, co, dev, &configs, 8, 0, 1024, nnz / 4, rows, err);
    if (err) FZ_ERR_AGREES(rc, *err);
    if (k == 0) /* the estimate took the exact path, which a sampled A cannot */
        FZ_ASSERT(rc == SPMV_EINVAL, "a sampled A with no plan: %d", rc);
    else if (rc != SPMV_ENOMEM)
        FZ_ASSERT(rc == 0 && memcmp(rows, est,
                                    sizeof(double) * (size_t)configs.n *
                                        (size_t)(SPMV_NCOLS + configs.nextra)) == 0,
                  "sampled rows alone differ from the estimate (%d)", rc);
    free(ix);
    free(ip);
    free(co);
}

/* Each format's sizes asked alone (from the rows' summary where its size needs no pattern pass,
 * spmv_fmt_pattern) equal those of one query of every format (the pass run: DIA's size needs it). */
static void check_sizes(const spmv_csr *A, spmv_err *err) {
    /* A property of the logic, asked of small inputs, one in eight by their entries: each of these
     * queries starts the core's thread teams (from 64 slots in this build) under the sanitizers, and
     * asked of every input they took the harness from 38 to 7 executions a second. */
    if (A->indptr[A->nrows] > 4096 || A->ncols > 4096 || (A->indptr[A->nrows] & 7) != 0) return;
    double bytes[SPMV_NFORMATS], pad[SPMV_NFORMATS], b1, p1;
    int rc = spmv_config_sizes(A, &configs, 8, 3.0, bytes, pad, NULL, err);
    if (rc == SPMV_ENOMEM) return;
    for (int32_t j = 0; j < configs.n; j++) {
        spmv_configs one = configs;
        one.n = 1;
        one.format += j;
        one.param += 2 * j;
        one.unread += j;
        one.p += (int64_t)SPMV_NPCOLS * j;
        one.launches += j;
        one.group += j;
        int r1 = spmv_config_sizes(A, &one, 8, 3.0, &b1, &p1, NULL, err);
        if (r1 == SPMV_ENOMEM) continue;
        FZ_ASSERT(rc != 0 || r1 == 0, "format %d's sizes alone failed: %d", (int)configs.format[j],
                  r1);
        if (rc == 0)
            FZ_ASSERT((isnan(b1) && isnan(bytes[j])) || (b1 == bytes[j] && p1 == pad[j]),
                      "format %d alone: %.17g bytes, %.17g padding; with all: %.17g, %.17g",
                      (int)configs.format[j], b1, p1, bytes[j], pad[j]);
    }
}

static void check_features(const spmv_csr *A, const spmv_gpu_props *dev, spmv_err *err) {
    double out[SPMV_NFEATURES];
    int rc = spmv_features_compute(A, dev, out, err);
    if (err) FZ_ERR_AGREES(rc, *err);
    if (!props_ok(dev)) {
        FZ_ASSERT(rc == SPMV_EINVAL, "GPU properties %d %d %d accepted (rc %d)", dev->sm_count,
                  dev->threads_per_sm, dev->warp_size, rc);
        return;
    }
    if (rc == SPMV_ENOMEM) return;
    FZ_ASSERT(rc == 0, "features of a checked CSR failed: %d", rc);
    for (int i = 0; i < SPMV_NFEATURES; i++)
        FZ_ASSERT(isfinite(out[i]) && out[i] >= 0, "feature %s = %g", spmv_feature_name(i), out[i]);

    int32_t n = A->nrows, lmin = INT32_MAX, lmax = 0, dmin = INT32_MAX, dmax = 0;
    int64_t empty = 0, band = 0, ndiag = 0, noff = (int64_t)n + A->ncols - 1;
    uint8_t *mark = calloc((size_t)noff, 1);
    if (mark == NULL) abort();
    for (int32_t i = 0; i < n; i++) {
        int32_t p0 = A->indptr[i], p1 = A->indptr[i + 1], len = p1 - p0;
        lmin = len < lmin ? len : lmin;
        lmax = len > lmax ? len : lmax;
        empty += len == 0;
        for (int32_t p = p0; p < p1; p++) {
            int64_t c = A->indices[p], off = c - i;
            band = llabs(off) > band ? llabs(off) : band;
            ndiag += !mark[off + n - 1];
            mark[off + n - 1] = 1;
            if (p > p0) {
                int32_t d = A->indices[p] - A->indices[p - 1];
                dmin = d < dmin ? d : dmin;
                dmax = d > dmax ? d : dmax;
            }
        }
    }
    free(mark);
    const double want[C_COUNT] = {
        [C_NROWS] = n,
        [C_NNZ] = A->indptr[n],
        [C_NCOLS] = A->ncols,
        [C_MIN] = lmin,
        [C_MAX] = lmax,
        [C_EMPTY] = (double)empty,
        [C_BAND] = (double)band,
        [C_NDIAG] = (double)ndiag,
        [C_DMIN] = dmin == INT32_MAX ? 0 : dmin,
        [C_DMAX] = dmax,
    };
    for (int c = 0; c < C_COUNT; c++)
        FZ_ASSERT(out[pos[c]] == want[c], "feature %s = %.17g, counted %.17g", counted[c],
                  out[pos[c]], want[c]);
    check_sizes(A, err);
    /* Estimated from up to 4 blocks of 256 rows within an entry budget of a quarter of A's: A of
     * more than 2048 rows, so that it is the sampled branch, not the exact path again.  It
     * succeeds, and its diagonals are some of A's. */
    if (n <= 2048) return;
    double rows[SPMV_NCOLS * SPMV_NFORMATS];
    rc = spmv_design_rows_estimate(A, dev, &configs, 8, 0, 1024, A->indptr[n] / 4, rows, err);
    if (err) FZ_ERR_AGREES(rc, *err);
    if (rc == SPMV_ENOMEM) return;
    FZ_ASSERT(rc == 0, "estimated rows of a checked CSR failed: %d", rc);
    FZ_ASSERT(rows[pos[C_NDIAG]] <= want[C_NDIAG], "estimated ndiag %g > %g", rows[pos[C_NDIAG]],
              want[C_NDIAG]);
    sampled_alone(A, dev, rows, err);
}

static void valid_path(fz_in *in, const spmv_gpu_props *dev, spmv_err *err) {
    fz_csr c;
    fz_csr_decode(in, MAX_ROWS, MAX_NNZ, &c);
    int64_t iplen = (int64_t)c.A.nrows + 1;
    int rc = spmv_csr_check(&c.A, iplen, c.nnz, err);
    FZ_ASSERT(rc == 0, "a valid CSR (%d x %d, nnz %lld) refused: %d %s", c.A.nrows, c.A.ncols,
              (long long)c.nnz, rc, err ? err->msg : "");
    /* Lengths that disagree with the arrays must be refused before anything past them is read. */
    FZ_ASSERT(spmv_csr_check(&c.A, iplen, c.nnz + 1, err) != 0, "indices_len nnz+1 accepted");
    FZ_ASSERT(spmv_csr_check(&c.A, iplen - 1, c.nnz, err) != 0, "indptr_len nrows accepted");
    check_features(&c.A, dev, err);
    fz_csr_free(&c);
}

/* One raw int32 array element: a step from the previous (mostly up), or any value. */
static int32_t raw_next(fz_in *in, int32_t prev, int up_from) {
    uint8_t b = fz_u8(in);
    if (b >= 0xF8) return (int32_t)fz_u32(in);
    if (b >= 0xE8) return (int32_t)((int64_t)prev - (b & 15));
    return (int32_t)((int64_t)prev + up_from + b % 24);
}

static void raw_path(fz_in *in, const spmv_gpu_props *dev, spmv_err *err) {
    uint8_t f = fz_u8(in);
    int32_t nrows = (f & 0x10) ? (int32_t)fz_u32(in) : 1 + fz_u16(in) % MAX_ROWS;
    int32_t ncols = (f & 0x20) ? (int32_t)fz_u32(in) : 1 + fz_u16(in) % 4096;
    int64_t iplen = nrows >= 1 && nrows <= MAX_ROWS ? (int64_t)nrows + 1 : 1 + fz_u8(in);
    if (f & 0x40) iplen = 1 + fz_u16(in) % (MAX_ROWS + 1);
    int32_t *indptr = fz_alloc(iplen, sizeof(int32_t)), maxp = 0;
    indptr[0] = (f & 0x80) ? (int32_t)fz_u8(in) - 128 : 0;
    for (int64_t k = 1; k < iplen; k++) indptr[k] = raw_next(in, indptr[k - 1], 0);
    for (int64_t k = 0; k < iplen; k++) maxp = indptr[k] > maxp ? indptr[k] : maxp;
    int32_t last = indptr[iplen - 1];
    int64_t ilen = iplen == (int64_t)nrows + 1 && last >= 0 && last <= MAX_NNZ ? last : fz_u16(in);
    /* Unless raw_check is on, indices reach as far as indptr points, so that the check's known
     * read past indices_len lands in memory the harness owns. */
    int64_t cap = ilen;
    if (!(fz_modes & FZ_RAW_CHECK) && maxp > cap) {
        if (maxp > MAX_NNZ) {
            free(indptr);
            return;
        }
        cap = maxp;
    }
    int32_t *indices = fz_alloc(cap, sizeof(int32_t));
    for (int64_t k = 0; k < cap; k++) indices[k] = raw_next(in, k ? indices[k - 1] : -1, 1);
    spmv_csr A = {nrows, ncols, indptr,
                  (f & 8) && ilen == 0 && (fz_modes & FZ_NULL_EMPTY) ? NULL : indices};
    int rc = spmv_csr_check(&A, iplen, ilen, err);
    if (err) FZ_ERR_AGREES(rc, *err);
    {
        /* the copying check (Matrix()'s): the same verdict, writing only inside exact outputs */
        int32_t *ip2 = fz_alloc(iplen > 0 ? iplen : 1, sizeof(int32_t));
        int32_t *ix2 = fz_alloc(ilen > 0 ? ilen : 1, sizeof(int32_t));
        double *v = fz_alloc(ilen > 0 ? ilen : 1, sizeof(double));
        float *v2 = fz_alloc(ilen > 0 ? ilen : 1, sizeof(float));
        for (int64_t k = 0; k < ilen; k++) v[k] = (double)k;
        spmv_err e2;
        int rc2 = spmv_csr_copy(&A, iplen, ilen, v, 8, ip2, ix2, v2, 4, &e2);
        FZ_ASSERT(rc2 == rc, "spmv_csr_copy %d where spmv_csr_check %d", rc2, rc);
        FZ_ASSERT(rc != 0 || ilen == 0 ||
                      (ix2[ilen - 1] == A.indices[ilen - 1] && v2[ilen - 1] == (float)(ilen - 1)),
                  "spmv_csr_copy's copy differs");
        free(ip2);
        free(ix2);
        free(v);
        free(v2);
    }
    if (rc == 0) {
        FZ_ASSERT(iplen == (int64_t)nrows + 1 && indptr[nrows] == ilen && nrows >= 1 && ncols >= 1,
                  "accepted: nrows %d, ncols %d, indptr_len %lld, indices_len %lld", nrows, ncols,
                  (long long)iplen, (long long)ilen);
        check_features(&A, dev, err);
    } else if (iplen == (int64_t)nrows + 1 && last == ilen) {
        /* Arrays as long as A itself says: what a validating entry point could defend. */
        if (fz_modes & FZ_UNCHECKED) {
            double out[SPMV_NFEATURES], ms[SPMV_NFORMATS];
            int32_t order[SPMV_NFORMATS];
            spmv_features_compute(&A, dev, out, err);
            spmv_rank(&A, dev, &configs, &rank_model, 8, NULL, order, ms, NULL, err);
        }
        if (fz_modes & FZ_UNCHECKED_FMT) {
            double rows[SPMV_NCOLS * SPMV_NFORMATS];
            for (int fm = 0; fm < SPMV_NFORMATS; fm++) {
                spmv_fmt F;
                memset(&F, 0, sizeof F);
                F.format = fm;
                F.param[0] = cfg_param[2 * fm];
                F.param[1] = cfg_param[2 * fm + 1];
                spmv_fmt_size(&A, &F, err);
            }
            spmv_design_rows(&A, dev, &configs, 8, 0, rows, err);
            if (nrows > 2048) { /* the sampled branch, and the same of A given by its samples */
                spmv_design_rows_estimate(&A, dev, &configs, 8, 0, 1024, last / 4, rows, err);
                int32_t *co = coarse_of(&A);
                spmv_design_rows_sampled(&A, co, dev, &configs, 8, 0, 1024, last / 4, rows, err);
                free(co);
            }
        }
    }
    free(indices);
    free(indptr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_in in = {data, size, 0};
    uint8_t sel = fz_u8(&in);
    spmv_err e, *err = (sel & 2) ? NULL : &e; /* err may be NULL everywhere */
    spmv_gpu_props dev;
    fz_props(&in, &dev);
    if (sel & 1)
        raw_path(&in, &dev, err);
    else
        valid_path(&in, &dev, err);
    if (sel & 4) { /* the small lookups take any int */
        int k = (int)fz_u32(&in);
        FZ_ASSERT(spmv_strerror(k) != NULL, "strerror(%d)", k);
        FZ_ASSERT((spmv_feature_name(k) != NULL) == (k >= 0 && k < SPMV_NFEATURES),
                  "feature_name(%d)", k);
        FZ_ASSERT((spmv_format_name(k) != NULL) == (k >= 0 && k < SPMV_NFORMATS), "format_name(%d)",
                  k);
    }
    return 0;
}
