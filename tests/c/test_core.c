// tests/c/test_core.c: CSR checks, every format's round trip and CPU product, timing, registry
// SPDX-License-Identifier: BSD-3-Clause
#include "mu.h"
#include "spmv.h"
#include "testmat.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int test_csr_check(void) {
    int32_t ip[] = {0, 2, 3}, ix[] = {0, 2, 1};
    spmv_csr A = {2, 3, ip, ix};
    spmv_err err;
    mu_check(spmv_csr_check(&A, 3, 3, &err) == SPMV_OK);
    ix[1] = 3;
    mu_check(spmv_csr_check(&A, 3, 3, &err) == SPMV_EINDEX && err.where == 0 && err.value == 3 &&
             err.limit == 3 && strstr(err.msg, "column index 3 in row 0") != NULL);
    ix[1] = 0;
    mu_check(spmv_csr_check(&A, 3, 3, &err) == SPMV_EUNSORTED && err.where == 0);
    ix[1] = 2;
    mu_check(spmv_csr_check(&A, 2, 3, &err) == SPMV_EINVAL); /* indptr length */
    mu_check(spmv_csr_check(&A, 3, 4, NULL) == SPMV_EINVAL); /* err may be NULL */
    A.nrows = 0;
    mu_check(spmv_csr_check(&A, 1, 0, &err) == SPMV_EINVAL); /* empty matrix */
    return 0;
}

/* Reference y = A x in double, row by row. */
static void ref_mv(const testmat *M, const double *x, double *y) {
    for (int32_t i = 0; i < M->nrows; i++) {
        double s = 0;
        for (int32_t p = M->indptr[i]; p < M->indptr[i + 1]; p++)
            s += M->values[p] * x[M->indices[p]];
        y[i] = s;
    }
}

static int round_trip(const testmat *M, const fmtcase *c) {
    spmv_csr A = {M->nrows, M->ncols, M->indptr, M->indices};
    spmv_fmt F = {0};
    spmv_err err;
    int64_t nnz = M->indptr[M->nrows];
    F.format = c->format;
    F.param[0] = c->p0;
    F.param[1] = c->p1;
    F.max_fill = 1e9;
    mu_check(spmv_fmt_size(&A, &F, &err) == SPMV_OK);
    mu_check(F.nnz == nnz);
    for (int k = 0; k < SPMV_MAXIDX; k++) F.idx[k] = calloc((size_t)F.nidx[k] + 1, sizeof(int32_t));
    for (int k = 0; k < SPMV_MAXVAL; k++) F.val[k] = calloc((size_t)F.nval[k] + 1, sizeof(double));
    int32_t *ip = malloc(sizeof(int32_t) * ((size_t)M->nrows + 1)),
            *ix = malloc(sizeof(int32_t) * (size_t)(nnz + 1));
    double *v = malloc(sizeof(double) * (size_t)(nnz + 1)),
           *x = malloc(sizeof(double) * (size_t)M->ncols);
    double *y = malloc(sizeof(double) * (size_t)M->nrows),
           *r = malloc(sizeof(double) * (size_t)M->nrows);
    int bad = spmv_fmt_fill_f64(&A, M->values, &F, &err) != SPMV_OK ||
              spmv_fmt_to_csr_f64(&F, ip, ix, v, &err) != SPMV_OK ||
              memcmp(ip, M->indptr, sizeof(int32_t) * ((size_t)M->nrows + 1)) != 0 ||
              memcmp(ix, M->indices, sizeof(int32_t) * (size_t)nnz) != 0 ||
              memcmp(v, M->values, sizeof(double) * (size_t)nnz) != 0;
    for (int32_t j = 0; j < M->ncols; j++) x[j] = 1.0 + (double)(j % 13) / 7.0;
    ref_mv(M, x, r);
    bad = bad || spmv_fmt_mv_f64(&F, 0, x, y, &err) != SPMV_OK;
    for (int32_t i = 0; !bad && i < M->nrows; i++)
        bad = fabs(y[i] - r[i]) > 1e-12 * (1.0 + fabs(r[i])) * 100;
    /* y = 2 A x - y in one call, A x beside y in work; and with beta == 0, y is not read */
    double *w = malloc(sizeof(double) * (size_t)M->nrows);
    bad = bad || spmv_fmt_mv_scaled_f64(&F, 0, 2.0, x, -1.0, y, w, &err) != SPMV_OK;
    for (int32_t i = 0; !bad && i < M->nrows; i++)
        bad = fabs(y[i] - r[i]) > 1e-12 * (1.0 + fabs(r[i])) * 100;
    for (int32_t i = 0; i < M->nrows; i++) y[i] = NAN;
    bad = bad || spmv_fmt_mv_scaled_f64(&F, 0, 0.5, x, 0.0, y, NULL, &err) != SPMV_OK;
    for (int32_t i = 0; !bad && i < M->nrows; i++)
        bad = fabs(y[i] - 0.5 * r[i]) > 1e-12 * (1.0 + fabs(r[i])) * 100;
    bad = bad || spmv_fmt_mv_scaled_f64(&F, 0, 1.0, x, 1.0, y, NULL, &err) != SPMV_EINVAL;
    free(w);
    if (bad)
        fprintf(stderr, "format %s (%d, %d) on %dx%d: %s\n", spmv_format_name(c->format), c->p0,
                c->p1, M->nrows, M->ncols, err.msg);
    for (int k = 0; k < SPMV_MAXIDX; k++) free(F.idx[k]);
    for (int k = 0; k < SPMV_MAXVAL; k++) free(F.val[k]);
    free(ip), free(ix), free(v), free(x), free(y), free(r);
    return bad;
}

static int test_formats_round_trip_and_multiply(void) {
    const int32_t shapes[][4] = {{1, 1, 1, 0},   {1, 50, 50, 1},     {37, 11, 6, 0},
                                 {64, 64, 9, 1}, {200, 3000, 40, 1}, {5, 5, 0, 0}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        testmat M;
        mu_check(testmat_make(&M, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], s + 1) ==
                 0);
        int bad = 0;
        for (int c = 0; c < N_FMT_CASES; c++) bad += round_trip(&M, &FMT_CASES[c]);
        testmat_free(&M);
        mu_check(bad == 0);
    }
    return 0;
}

static int test_bad_params_and_guard(void) {
    testmat M;
    mu_check(testmat_make(&M, 100, 100, 3, 1, 9) == 0);
    spmv_csr A = {M.nrows, M.ncols, M.indptr, M.indices};
    spmv_fmt F = {0};
    spmv_err err;
    F.format = SPMV_FMT_SELL;
    F.param[0] = 48;
    F.param[1] = 1;
    mu_check(spmv_fmt_size(&A, &F, &err) == SPMV_EINVAL);
    F.format = SPMV_FMT_ELL; /* a row of 50 among rows of <= 3: 50x padding */
    F.max_fill = 2.0;
    mu_check(spmv_fmt_size(&A, &F, &err) == SPMV_ENOTAPPLICABLE &&
             strstr(err.msg, "max_fill") != NULL);
    F.format = 99;
    mu_check(spmv_fmt_size(&A, &F, &err) == SPMV_EINVAL);
    testmat_free(&M);
    return 0;
}

static int work_ok(void *ctx, double *ms, spmv_err *err) {
    (void)err, (void)ms;
    ++*(int *)ctx;
    return SPMV_OK;
}

/* Work that times itself, as GPU events do: run k reports k ms. */
static int work_own_clock(void *ctx, double *ms, spmv_err *err) {
    (void)err;
    *ms = (double)++*(int *)ctx;
    return SPMV_OK;
}

/* Work that times itself at 40 ms a run. */
static int work_40ms(void *ctx, double *ms, spmv_err *err) {
    (void)err;
    ++*(int *)ctx;
    *ms = 40.0;
    return SPMV_OK;
}

static int test_timing(void) {
    int calls = 0;
    spmv_timing t;
    mu_check(spmv_time(work_ok, &calls, 3, 50, 0.0, &t, NULL) == SPMV_OK);
    mu_check(calls == 53 && t.runs == 50 && t.min_ms <= t.q25_ms && t.q25_ms <= t.median_ms &&
             t.median_ms <= t.q75_ms);
    mu_check(spmv_time(work_ok, &calls, 0, 0, 0.0, &t, NULL) == SPMV_EINVAL);
    calls = 0; /* 2 warm-ups, then runs reporting 3, 4, 5, 6, 7 ms */
    mu_check(spmv_time(work_own_clock, &calls, 2, 5, 0.0, &t, NULL) == SPMV_OK);
    mu_check(t.runs == 5 && t.min_ms == 3.0 && t.median_ms == 5.0 && t.q25_ms == 4.0 &&
             t.q75_ms == 6.0);
    /* A product slower than budget / warmup: warm-ups as many as fit in the budget at the first's
     * time (40 ms of a 100 ms budget: 2), then timed runs until the budget is spent (3). */
    calls = 0;
    mu_check(spmv_time(work_40ms, &calls, 10, 50, 0.1, &t, NULL) == SPMV_OK);
    mu_check(calls == 5 && t.runs == 3 && t.median_ms == 40.0);
    mu_check(spmv_warmup_more(10, 5.0, 0.05) == 9 && spmv_warmup_more(10, 10.0, 0.05) == 4);
    mu_check(spmv_warmup_more(10, 200.0, 0.05) == 0 && spmv_warmup_more(1, 1e3, 0.05) == 0);
    mu_check(spmv_warmup_more(10, 200.0, 0.0) == 9 && spmv_warmup_more(10, 0.0, 0.05) == 9);
    mu_check(spmv_warmup_more(0, 1.0, 0.05) == 0);
    return 0;
}

static int test_registry(void) {
    mu_check(spmv_kernel_count() > 0);
    for (int i = 0; i < spmv_kernel_count(); i++) {
        const spmv_kernel_desc *d = spmv_kernel_get(i);
        mu_check(spmv_kernel_find(d->id) == d);
        mu_check(d->format >= 0 && d->format < SPMV_NFORMATS);
    }
    mu_check(spmv_kernel_find("cpu/none") == NULL && spmv_kernel_get(-1) == NULL);
    for (int i = 0; i < SPMV_NFEATURES; i++) mu_check(spmv_feature_name(i) != NULL);
    mu_check(spmv_feature_name(SPMV_NFEATURES) == NULL);
    mu_check(strcmp(spmv_strerror(SPMV_ENOMEM), "out of memory") == 0);
    return 0;
}

int main(void) {
    int failures = 0;
    mu_run(test_csr_check);
    mu_run(test_formats_round_trip_and_multiply);
    mu_run(test_bad_params_and_guard);
    mu_run(test_timing);
    mu_run(test_registry);
    return failures != 0;
}
