// tests/c/test_hostile.c: hostile inputs at every public entry — CSR arrays, format states, models
// SPDX-License-Identifier: BSD-3-Clause
//
// Regression tests of issue 11: each input here crashed or read out of bounds before; each must
// now come back as a negative code with a message, clean under ASan and UBSan.
#include "mu.h"
#include "spmv.h"
#include "testmat.h"
#include "testmodel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* indptr pointing past indices: the check must refuse before reading any index (ASan would flag
 * the read of indices[2..100) the old check made, and its message printed what it found there). */
static int test_csr_check_indptr_first(void) {
    int32_t ip[3] = {0, 100, 2}, *ix = malloc(2 * sizeof(int32_t));
    ix[0] = 0;
    ix[1] = 1;
    spmv_csr A = {2, 3, ip, ix};
    spmv_err err;
    int rc = spmv_csr_check(&A, 3, 2, &err);
    free(ix);
    mu_check(rc == SPMV_EINDEX && err.where == 2 && err.value == 2 && err.limit == 100);
    mu_check(strstr(err.msg, "indptr decreases at position 2") != NULL);
    return 0;
}

static int check_features_refuse(int32_t nrows, int32_t ncols, int32_t *ip, const int32_t *cols,
                                 int nnz, int code, const char *needle) {
    int32_t *ix =
        malloc(sizeof(int32_t) * (size_t)(nnz > 0 ? nnz : 1)); /* exact: ASan sees overruns */
    memcpy(ix, cols, sizeof(int32_t) * (size_t)nnz);
    spmv_csr A = {nrows, ncols, ip, ix};
    spmv_gpu_props dev;
    spmv_gpu_props_h100(&dev);
    double out[SPMV_NFEATURES];
    spmv_err err = {0};
    int rc = spmv_features_compute(&A, &dev, out, &err);
    free(ix);
    mu_check(rc == code);
    mu_check(needle == NULL || strstr(err.msg, needle) != NULL);
    return 0;
}

/* Column 2^30, a negative column, unsorted and duplicate columns, a bad indptr: the features used to
 * write out of bounds (mark[], stamp[]) for the first two. */
static int test_features_validate(void) {
    int32_t ip[4] = {0, 2, 3, 4};
    int32_t big[4] = {0, 1 << 30, 2, 1}, neg[4] = {0, 1, -5, 1}, uns[4] = {2, 1, 0, 1};
    int32_t dup[4] = {1, 1, 0, 2}, midbig[5] = {0, 1 << 30, 2, 0, 1}, ok[4] = {0, 2, 1, 0};
    mu_check(check_features_refuse(3, 3, ip, big, 4, SPMV_EINDEX,
                                   "column index 1073741824 in row 0") == 0);
    mu_check(check_features_refuse(3, 3, ip, neg, 4, SPMV_EINDEX, "column index -5 in row 1") == 0);
    mu_check(check_features_refuse(3, 3, ip, uns, 4, SPMV_EUNSORTED,
                                   "row 0 has column 1 after column 2") == 0);
    mu_check(check_features_refuse(3, 3, ip, dup, 4, SPMV_EUNSORTED, NULL) == 0);
    int32_t ip3[4] = {0, 3, 4, 5}; /* ends in range, a huge column between them */
    mu_check(check_features_refuse(3, 3, ip3, midbig, 5, SPMV_EINDEX, "1073741824") == 0);
    mu_check(check_features_refuse(3, 3, ip, ok, 4, SPMV_OK, NULL) == 0);
    int32_t dec[4] = {0, 3, 1, 4}, first[4] = {1, 2, 3, 4};
    mu_check(check_features_refuse(3, 3, dec, ok, 4, SPMV_EINDEX,
                                   "indptr decreases at position 2") == 0);
    mu_check(check_features_refuse(3, 3, first, ok, 4, SPMV_EINDEX, "indptr[0] is 1") == 0);
    int32_t wild[4] = {0, INT32_MAX, INT32_MIN, 4}; /* lengths that overflow int32 */
    mu_check(check_features_refuse(3, 3, wild, ok, 4, SPMV_EINDEX, NULL) == 0);
    return 0;
}

/* The conversions and design rows / rank refuse the same matrices. */
static int test_convert_and_rank_validate(void) {
    int32_t ip[3] = {0, 2, 3}, ix[3] = {0, 1 << 30, 1};
    spmv_csr A = {2, 3, ip, ix};
    spmv_err err;
    for (int f = 0; f < SPMV_NFORMATS; f++) {
        spmv_fmt F = {0};
        F.format = f;
        F.param[0] = f == SPMV_FMT_SELL || f == SPMV_FMT_BRO_ELL || f == SPMV_FMT_BSR ? 2
                     : f == SPMV_FMT_HYB                                              ? -1
                                                                                      : 0;
        F.param[1] = f == SPMV_FMT_SELL ? 1 : 0;
        mu_check(spmv_fmt_size(&A, &F, &err) == SPMV_EINDEX);
        mu_check(spmv_fmt_fill_f64(&A, NULL, &F, &err) == SPMV_EINDEX);
    }
    int32_t fmt[1] = {SPMV_FMT_CSR}, par[2] = {0, 0}, unread[1] = {0}, grp[1] = {0};
    double p[SPMV_NPCOLS] = {NAN, NAN, NAN, NAN, NAN, NAN, NAN}, launches[1] = {0},
           rows[SPMV_NCOLS];
    spmv_configs C = {.n = 1,
                      .format = fmt,
                      .param = par,
                      .unread = unread,
                      .p = p,
                      .launches = launches,
                      .group = grp};
    spmv_gpu_props dev;
    spmv_gpu_props_h100(&dev);
    mu_check(spmv_design_rows(&A, &dev, &C, 8, 0, rows, &err) == SPMV_EINDEX);
    ix[1] = -1;
    mu_check(spmv_design_rows(&A, &dev, &C, 8, 0, rows, &err) == SPMV_EINDEX);
    ix[1] = 2;
    mu_check(spmv_design_rows(&A, &dev, &C, 8, 0, rows, &err) == SPMV_OK);
    return 0;
}

/* A filled F of test matrix T in case c, arrays calloc'ed to exactly their counts. */
static int fill(const testmat *T, const fmtcase *c, spmv_fmt *F) {
    spmv_csr A = {T->nrows, T->ncols, T->indptr, T->indices};
    memset(F, 0, sizeof *F);
    F->format = c->format;
    F->param[0] = c->p0;
    F->param[1] = c->p1;
    F->max_fill = 1e9;
    if (spmv_fmt_size(&A, F, NULL)) return -1;
    for (int k = 0; k < SPMV_MAXIDX; k++)
        F->idx[k] = F->nidx[k] ? calloc((size_t)F->nidx[k], sizeof(int32_t)) : NULL;
    for (int k = 0; k < SPMV_MAXVAL; k++)
        F->val[k] = F->nval[k] ? calloc((size_t)F->nval[k], sizeof(double)) : NULL;
    return spmv_fmt_fill_f64(&A, T->values, F, NULL);
}

static void unfill(spmv_fmt *F) {
    for (int k = 0; k < SPMV_MAXIDX; k++) free(F->idx[k]);
    for (int k = 0; k < SPMV_MAXVAL; k++) free(F->val[k]);
}

/* Check F; where it passes, convert it back and multiply (ASan watches both): 1 if it passed. */
static int probe(const spmv_fmt *F, int *failures) {
    spmv_err err;
    if (spmv_fmt_check(F, &err) != SPMV_OK) return 0;
    int32_t *ip = malloc(sizeof(int32_t) * ((size_t)F->nrows + 1));
    int32_t *ix = malloc(sizeof(int32_t) * (size_t)(F->nnz + 1));
    double *v = malloc(sizeof(double) * (size_t)(F->nnz + 1));
    double *x = calloc((size_t)F->ncols, sizeof(double)),
           *y = calloc((size_t)F->nrows, sizeof(double));
    *failures += spmv_fmt_to_csr_f64(F, ip, ix, v, &err) != SPMV_OK;
    *failures += spmv_fmt_mv_f64(F, 0, x, y, &err) != SPMV_OK;
    free(ip), free(ix), free(v), free(x), free(y);
    return 1;
}

/* Every format: a filled F passes; then single corruptions each fail, and are undone. */
static int test_fmt_check(void) {
    testmat T;
    mu_check(testmat_make(&T, 97, 83, 9, 1, 11) == 0);
    spmv_err err;
    int failures = 0;
    for (int ci = 0; ci < N_FMT_CASES; ci++) {
        spmv_fmt F;
        mu_check(fill(&T, &FMT_CASES[ci], &F) == 0);
        int ok = spmv_fmt_check(&F, &err) == SPMV_OK;
        if (!ok) fprintf(stderr, "case %d: %s\n", ci, err.msg);
        failures += !ok;
        /* a scalar raised (the ELL width reproducer), nnz, the shape, a count */
        for (int k = 0; k < 4; k++) {
            int64_t s = F.scalar[k];
            F.scalar[k] = s + 1;
            int rc = probe(&F, &failures) ? SPMV_OK : -1;
            /* unused scalars (0 in the layout) may take any value; used ones may not */
            if (s != 0 && rc == SPMV_OK)
                fprintf(stderr, "case %d: scalar %d raised passes\n", ci, k), failures++;
            F.scalar[k] = s;
        }
        F.nnz++;
        failures += spmv_fmt_check(&F, &err) == SPMV_OK;
        F.nnz -= 2;
        failures += spmv_fmt_check(&F, &err) == SPMV_OK;
        F.nnz++;
        F.nrows++; /* an empty row more may be a valid state (COO); it must be safe */
        probe(&F, &failures);
        F.nrows -= 2;
        probe(&F, &failures);
        F.nrows++;
        F.ncols = 0;
        failures += spmv_fmt_check(&F, &err) == SPMV_OK;
        F.ncols = T.ncols;
        for (int k = 0; k < SPMV_MAXIDX; k++) {
            if (F.nidx[k] == 0) continue;
            F.nidx[k]--;
            failures += spmv_fmt_check(&F, &err) == SPMV_OK;
            F.nidx[k]++;
            /* each entry of each index array set to a wild value, one at a time (every 7th) */
            for (int64_t q = 0; q < F.nidx[k]; q += 7) {
                int32_t keep = F.idx[k][q];
                const int32_t wild[3] = {1 << 30, -2, INT32_MIN};
                for (int w = 0; w < 3; w++) {
                    F.idx[k][q] = wild[w];
                    int rc = probe(&F, &failures) ? SPMV_OK : -1;
                    /* a bit-array word may legitimately take many values; the others may not */
                    int bits = (F.format == SPMV_FMT_DIA && k == 1) ||
                               (F.format == SPMV_FMT_BSR && k == 2) ||
                               (F.format == SPMV_FMT_BRO_ELL && k == 3);
                    if (!bits && rc == SPMV_OK) {
                        fprintf(stderr, "case %d: idx[%d][%lld] = %d passes\n", ci, k, (long long)q,
                                wild[w]);
                        failures++;
                    }
                }
                F.idx[k][q] = keep;
            }
        }
        for (int k = 0; k < 2; k++) {
            int32_t p = F.param[k];
            F.param[k] = 3001; /* no valid c, sigma, h, bits or b */
            int rc = probe(&F, &failures) ? SPMV_OK : -1;
            if (rc == SPMV_OK && (F.format == SPMV_FMT_SELL || F.format == SPMV_FMT_BRO_ELL ||
                                  (F.format == SPMV_FMT_BSR && k == 0)))
                fprintf(stderr, "case %d: param %d = 3001 passes\n", ci, k), failures++;
            F.param[k] = p;
        }
        ok = spmv_fmt_check(&F, &err) == SPMV_OK; /* all undone */
        failures += !ok;
        unfill(&F);
    }
    testmat_free(&T);
    mu_check(failures == 0);
    return 0;
}

/* The ELL reproducer exactly: width raised with arrays to match, columns still -1 past the rows. */
static int test_ell_raised_width(void) {
    testmat T;
    mu_check(testmat_make(&T, 20, 10, 4, 0, 3) == 0);
    spmv_fmt F;
    fmtcase c = {SPMV_FMT_ELL, 0, 0};
    mu_check(fill(&T, &c, &F) == 0);
    spmv_err err;
    F.scalar[0] += 5;
    mu_check(spmv_fmt_check(&F, &err) == SPMV_EINVAL && strstr(err.msg, "idx[0] (col)") != NULL &&
             err.limit == F.nrows * F.scalar[0]);
    unfill(&F);
    testmat_free(&T);
    return 0;
}

/* A chain of trees nodes 200,000 deep whose rows all go left: the batch walk used to recurse once
 * per level and overflow the stack. */
static int test_deep_tree(void) {
    enum { DEPTH = 200000, NODES = 2 * DEPTH + 1, NCFG = 3 };
    int32_t *feat = malloc(sizeof(int32_t) * NODES), *left = malloc(sizeof(int32_t) * NODES);
    int32_t *right = malloc(sizeof(int32_t) * NODES);
    double *thr = malloc(sizeof(double) * NODES), *val = malloc(sizeof(double) * NODES);
    mu_check(feat && left && right && thr && val);
    for (int32_t n = 0; n < NODES; n++) {
        int internal = n % 2 == 0 && n < NODES - 1;
        feat[n] = internal ? 0 : -1;
        left[n] = internal ? n + 2 : -1;
        right[n] = internal ? n + 1 : -1;
        thr[n] = 1e300;
        val[n] = n == NODES - 1 ? 1.0 : 0.0;
    }
    int32_t col[1] = {SPMV_COL_P_TPV}, ptr[2] = {0, 1}, root[1] = {0};
    double init[1] = {0};
    spmv_model M = {0};
    inputs in;
    M.kind = SPMV_MODEL_TREES;
    M.ngroups = 1;
    inputs_set(&M, &in, 1, col);
    M.trees = (spmv_trees){.nout = 1,
                           .ntrees = 1,
                           .nnodes = NODES,
                           .tree_ptr = ptr,
                           .root = root,
                           .feature = feat,
                           .left = left,
                           .right = right,
                           .threshold = thr,
                           .value = val,
                           .init = init,
                           .scale = 1};
    mu_check(spmv_model_check(&M, NULL) == SPMV_OK);
    double rows[NCFG * SPMV_NCOLS] = {0}, ms[NCFG];
    int32_t group[NCFG] = {0, 0, 0};
    for (int i = 0; i < NCFG; i++) rows[i * SPMV_NCOLS + SPMV_COL_P_TPV] = i; /* not uniform */
    int rc = spmv_model_predict(&M, rows, NCFG, SPMV_NCOLS, group, ms, NULL, NULL, NULL);
    free(feat), free(left), free(right), free(thr), free(val);
    mu_check(rc == SPMV_OK && ms[0] == 1 && ms[1] == 1 && ms[2] == 1);
    return 0;
}

/* Counts whose products pass int32 are refused before any array is read. */
static int test_model_products(void) {
    int32_t one[1] = {0};
    double d1[1] = {0};
    spmv_model M = {0};
    M.kind = SPMV_MODEL_TREES;
    M.ngroups = 1 << 16;
    M.ncols = SPMV_NCOLS;
    M.out_col = -1;
    M.trees = (spmv_trees){.nout = 1 << 16, .ntrees = 0, .nnodes = 0, .tree_ptr = one, .init = d1};
    spmv_err err;
    mu_check(spmv_model_check(&M, &err) == SPMV_ESCHEMA && strstr(err.msg, "int32") != NULL);
    spmv_model F = {0};
    F.kind = SPMV_MODEL_FORMULA;
    F.ngroups = 1;
    F.ncols = SPMV_NCOLS;
    F.out_col = -1;
    F.formula.nderived = INT32_MAX; /* + ninputs (0) fits; 1 input more does not */
    F.formula.term_ptr = one;
    F.ninputs = 0;
    int32_t i1[1] = {0};
    F.formula.da = F.formula.db = F.formula.dc = F.formula.dd = F.formula.dceil = i1;
    F.formula.dlo = F.formula.ddiv = F.formula.dlo2 = F.formula.dadd = d1;
    /* (the derived arrays would be read next; the check stops before at nz) */
    inputs in;
    inputs_set(&F, &in, 1, one);
    mu_check(spmv_model_check(&F, &err) == SPMV_ESCHEMA && strstr(err.msg, "int32") != NULL);
    return 0;
}

/* A Matrix Market body: read whole, or refused with the line (pyspmv.load's reader). */
static int mm(const char *text, int format, int field, int64_t n, int32_t *row, int32_t *col,
              double *val, spmv_err *err) {
    spmv_mm_body B = {format, field, 3, 3, n, 3};
    return spmv_mm_read(&B, text, (int64_t)strlen(text), row, col, val, err);
}

static int test_mm_read(void) {
    int32_t r[3], c[3];
    double v[3];
    spmv_err err = {0};
    mu_check(mm("1 1 1D3\n% c\n\n 3\t2  -2.5e-1 \r\n", SPMV_MM_COORDINATE, SPMV_MM_REAL, 2, r, c, v,
                &err) == SPMV_OK);
    mu_check(r[0] == 0 && c[0] == 0 && v[0] == 1000.0 && r[1] == 2 && c[1] == 1 && v[1] == -0.25);
    mu_check(mm("1 1 1,5\n", SPMV_MM_COORDINATE, SPMV_MM_REAL, 1, r, c, v, &err) == SPMV_EINVAL);
    mu_check(err.where == 3 && strstr(err.msg, "'1,5'") != NULL);
    mu_check(mm("1 1 0x1p3\n", SPMV_MM_COORDINATE, SPMV_MM_REAL, 1, r, c, v, &err) == SPMV_EINVAL);
    mu_check(mm("1 1 1 4\n", SPMV_MM_COORDINATE, SPMV_MM_REAL, 1, r, c, v, &err) == SPMV_EINVAL);
    mu_check(mm("1 1 7e3\n", SPMV_MM_COORDINATE, SPMV_MM_INTEGER, 1, r, c, v, &err) == SPMV_EINVAL);
    mu_check(mm("\n1 4 1\n", SPMV_MM_COORDINATE, SPMV_MM_REAL, 1, r, c, v, &err) == SPMV_EINDEX);
    mu_check(err.where == 4);
    mu_check(mm("1 1 1e400\n", SPMV_MM_COORDINATE, SPMV_MM_REAL, 1, r, c, v, &err) == SPMV_EINVAL);
    mu_check(mm("1 1 -Inf\n", SPMV_MM_COORDINATE, SPMV_MM_REAL, 1, r, c, v, &err) == SPMV_OK);
    mu_check(v[0] < 0 && v[0] * 0 != 0);
    mu_check(mm("1 2 3\n", SPMV_MM_COORDINATE, SPMV_MM_PATTERN, 1, r, c, NULL, &err) == SPMV_OK);
    mu_check(mm("1\n2\n", SPMV_MM_ARRAY, SPMV_MM_REAL, 3, NULL, NULL, v, &err) == SPMV_EINVAL);
    mu_check(strstr(err.msg, "ends after 2 of the 3 entries") != NULL);
    const char nul[] = {'1', ' ', '1', ' ', '1', '\0', '\n'};
    spmv_mm_body B = {SPMV_MM_COORDINATE, SPMV_MM_REAL, 3, 3, 1, 3};
    mu_check(spmv_mm_read(&B, nul, sizeof nul, r, c, v, &err) == SPMV_EINVAL && err.where == 3);
    mu_check(spmv_mm_read(&B, nul, 5, r, c, v, &err) == SPMV_OK && v[0] == 1.0); /* no NUL needed */
    return 0;
}

/* Issue 45: spmv_timing_summary(t, 0, out) read t[-1] (the quantiles' t[n - 1]) and n < 0 became a
 * huge qsort count; both are SPMV_EINVAL now, out untouched.  t is exactly sized so ASan sees a read
 * before it. */
static int test_timing_summary_count(void) {
    double *t = malloc(3 * sizeof(double));
    t[0] = 3;
    t[1] = 1;
    t[2] = 2;
    spmv_timing out = {-1, -1, -1, -1, -1};
    spmv_err err = {0};
    int rc0 = spmv_timing_summary(t, 0, &out, &err);
    int bad0 = err.value == 0 && err.limit == 1 && strstr(err.msg, "n >= 1") != NULL;
    int rcneg = spmv_timing_summary(t, -5, &out, NULL);
    int rcnull = spmv_timing_summary(NULL, 3, &out, &err) + spmv_timing_summary(t, 3, NULL, &err);
    int untouched = out.runs == -1 && out.median_ms == -1;
    int rc = spmv_timing_summary(t, 3, &out, &err);
    free(t);
    mu_check(rc0 == SPMV_EINVAL && bad0 && rcneg == SPMV_EINVAL && rcnull == 2 * SPMV_EINVAL);
    mu_check(untouched);
    mu_check(rc == SPMV_OK && out.runs == 3 && out.median_ms == 2 && out.min_ms == 1 &&
             out.q25_ms == 1.5 && out.q75_ms == 2.5);
    return 0;
}

/* spmv_csr_copy on a large matrix (threaded past SPMV_OMP_MIN_WORK): a good one copied exactly, in
 * both value sizes; one bad entry at a time (out of range, duplicate, unsorted, far in the matrix)
 * refused with spmv_csr_check's own status and message, and an indptr that points past indices
 * refused before any index is read (ASan sees a read past the exact allocations). */
static int test_csr_copy(void) {
    const int32_t n = 40000, per = 9, nnz = n * per;
    int32_t *ip = malloc(sizeof(int32_t) * (size_t)(n + 1)), *ix = malloc(sizeof(int32_t) * nnz);
    int32_t *ip2 = malloc(sizeof(int32_t) * (size_t)(n + 1)), *ix2 = malloc(sizeof(int32_t) * nnz);
    double *v = malloc(sizeof(double) * nnz), *v2 = malloc(sizeof(double) * nnz);
    float *f = malloc(sizeof(float) * nnz);
    for (int32_t i = 0; i <= n; i++) ip[i] = i * per;
    for (int32_t p = 0; p < nnz; p++) {
        ix[p] = (p % per) * 7 + (p / per) % 3;
        v[p] = 0.5 * p - 3.0;
    }
    spmv_csr A = {n, 70, ip, ix};
    spmv_err err = {0}, want = {0};
    int rc = spmv_csr_copy(&A, n + 1, nnz, v, 8, ip2, ix2, v2, 8, &err);
    mu_check(rc == SPMV_OK && memcmp(ip, ip2, sizeof(int32_t) * (size_t)(n + 1)) == 0 &&
             memcmp(ix, ix2, sizeof(int32_t) * nnz) == 0 &&
             memcmp(v, v2, sizeof(double) * nnz) == 0);
    rc = spmv_csr_copy(&A, n + 1, nnz, v, 8, ip2, ix2, f, 4, &err);
    mu_check(rc == SPMV_OK && f[nnz - 1] == (float)v[nnz - 1] && f[17] == (float)v[17]);
    rc = spmv_csr_copy(&A, n + 1, nnz, f, 4, ip2, ix2, v2, 8, &err);
    mu_check(rc == SPMV_OK && v2[nnz - 1] == (double)f[nnz - 1]);
    const int32_t at[4] = {nnz - 1, 5 * per + 3, 31000 * per + 8, 12345 * per + 1};
    const int32_t bad[4] = {70, 0, -1, 20};
    for (int k = 0; k < 4; k++) {
        int32_t keep = ix[at[k]];
        ix[at[k]] =
            k == 1 ? ix[at[k] - 1] : bad[k]; /* out of range, duplicate, negative, unsorted */
        rc = spmv_csr_copy(&A, n + 1, nnz, v, 8, ip2, ix2, v2, 8, &err);
        int rcw = spmv_csr_check(&A, n + 1, nnz, &want);
        ix[at[k]] = keep;
        mu_check(rc != SPMV_OK && rc == rcw && err.where == want.where && err.value == want.value &&
                 strcmp(err.msg, want.msg) == 0);
    }
    ip[n / 2] = nnz + 5; /* decreasing after, and past indices */
    rc = spmv_csr_copy(&A, n + 1, nnz, v, 8, ip2, ix2, v2, 8, &err);
    mu_check(rc == SPMV_EINDEX && strstr(err.msg, "indptr decreases") != NULL);
    mu_check(spmv_csr_copy(&A, n + 1, nnz, v, 2, ip2, ix2, v2, 8, &err) == SPMV_EINVAL);
    ip[n / 2] = (n / 2) * per;
    /* a valid pattern with no values, or an output missing, is refused, never "copied" */
    mu_check(spmv_csr_copy(&A, n + 1, nnz, v, 8, ip2, ix2, v2, 8, &err) == SPMV_OK);
    mu_check(spmv_csr_copy(&A, n + 1, nnz, NULL, 8, ip2, ix2, v2, 8, &err) == SPMV_EINVAL);
    mu_check(spmv_csr_copy(&A, n + 1, nnz, v, 8, NULL, ix2, v2, 8, &err) == SPMV_EINVAL);
    mu_check(spmv_csr_copy(&A, n + 1, nnz, v, 8, ip2, NULL, v2, 8, &err) == SPMV_EINVAL);
    mu_check(spmv_csr_copy(&A, n + 1, nnz, v, 8, ip2, ix2, NULL, 8, &err) == SPMV_EINVAL);
    free(ip);
    free(ix);
    free(ip2);
    free(ix2);
    free(v);
    free(v2);
    free(f);
    return 0;
}

int main(void) {
    int failures = 0;
    mu_run(test_csr_check_indptr_first);
    mu_run(test_csr_copy);
    mu_run(test_features_validate);
    mu_run(test_convert_and_rank_validate);
    mu_run(test_fmt_check);
    mu_run(test_ell_raised_width);
    mu_run(test_deep_tree);
    mu_run(test_model_products);
    mu_run(test_mm_read);
    mu_run(test_timing_summary_count);
    return failures != 0;
}
