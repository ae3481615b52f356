// tests/c/test_nomem.c: fail the 1st, 2nd, ... allocation of every entry point; each must return
// SPMV_ENOMEM and leak nothing (run under ASan, whose leak checker fails the test on a leak)
// SPDX-License-Identifier: BSD-3-Clause
#include "mu.h"
#include "spmv_internal.h"
#include "testmat.h"

#include <stdlib.h>

/* Everything that may allocate, on one matrix and one format case. */
static int exercise(const testmat *M, const fmtcase *c) {
    spmv_csr A = {M->nrows, M->ncols, M->indptr, M->indices};
    spmv_fmt F = {0};
    spmv_gpu_props dev;
    spmv_timing t;
    double feat[SPMV_NFEATURES];
    int64_t nnz = M->indptr[M->nrows];
    int rc;
    spmv_gpu_props_h100(&dev);
    if ((rc = spmv_features_compute(&A, &dev, feat, NULL)) != SPMV_OK) return rc;
    F.format = c->format;
    F.param[0] = c->p0;
    F.param[1] = c->p1;
    F.max_fill = 1e9;
    if ((rc = spmv_fmt_size(&A, &F, NULL)) != SPMV_OK) return rc;
    for (int k = 0; k < SPMV_MAXIDX; k++) F.idx[k] = calloc((size_t)F.nidx[k] + 1, sizeof(int32_t));
    for (int k = 0; k < SPMV_MAXVAL; k++) F.val[k] = calloc((size_t)F.nval[k] + 1, sizeof(double));
    int32_t *ip = malloc(sizeof(int32_t) * ((size_t)M->nrows + 1)),
            *ix = malloc(sizeof(int32_t) * (size_t)(nnz + 1));
    double *v = malloc(sizeof(double) * (size_t)(nnz + 1)),
           *x = calloc((size_t)M->ncols, sizeof(double));
    double *y = malloc(sizeof(double) * (size_t)M->nrows);
    rc = spmv_fmt_fill_f64(&A, M->values, &F, NULL);
    if (rc == SPMV_OK) rc = spmv_fmt_to_csr_f64(&F, ip, ix, v, NULL);
    if (rc == SPMV_OK) rc = spmv_fmt_bench_f64(&F, 0, x, y, 1, 3, 0.0, &t, NULL);
    for (int k = 0; k < SPMV_MAXIDX; k++) free(F.idx[k]);
    for (int k = 0; k < SPMV_MAXVAL; k++) free(F.val[k]);
    free(ip), free(ix), free(v), free(x), free(y);
    return rc;
}

static int test_every_allocation_failure_is_reported(void) {
    testmat M;
    mu_check(testmat_make(&M, 90, 70, 8, 1, 3) == 0);
    for (int c = 0; c < N_FMT_CASES; c++) {
        spmv_fail_after(0);
        mu_check(exercise(&M, &FMT_CASES[c]) == SPMV_OK);
        int64_t total = spmv_alloc_count();
        for (int64_t k = 1; k <= total; k++) {
            spmv_fail_after(k);
            int rc = exercise(&M, &FMT_CASES[c]);
            if (rc != SPMV_ENOMEM)
                fprintf(stderr, "format %s: failing allocation %lld of %lld gave %d\n",
                        spmv_format_name(FMT_CASES[c].format), (long long)k, (long long)total, rc);
            mu_check(rc == SPMV_ENOMEM);
        }
    }
    spmv_fail_after(0);
    testmat_free(&M);
    return 0;
}

int main(void) {
    int failures = 0;
    mu_run(test_every_allocation_failure_is_reported);
    return failures != 0;
}
