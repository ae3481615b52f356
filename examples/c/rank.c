// examples/c/rank.c: rank a matrix's CPU configurations, convert it to the pick's format, multiply
// SPDX-License-Identifier: BSD-3-Clause
//
// Usage: rank [FILE.mtx]   (no file: the 2D Poisson matrix of a 40 x 40 grid)
//
// The ranking model is a header pyspmv exported (ranker.c); everything else is libspmv (spmv.h):
// the pick's id parsed to a registry kernel and its parameters, the CSR converted to its format
// (sizes, then the caller's arrays filled), the format's own CPU kernel run, and the product
// checked against a plain CSR loop.  Prints "key value" lines; exit status 0 when the product
// agrees, 1 otherwise.
#include <math.h>
#include <spmv.h>
#include <spmv_version.h>
#include <stdio.h>
#include <stdlib.h>

#include "mtx.h"
#include "ranker.h"

static int fail(const char *what, int rc, const spmv_err *err) {
    fprintf(stderr, "rank: %s: %s\n", what, err && err->msg[0] ? err->msg : spmv_strerror(rc));
    return 2;
}

int main(int argc, char **argv) {
    example_csr A = {0};
    char msg[160] = "";
    int rc = argc > 1 ? example_read_mtx(argv[1], &A, msg) : example_poisson2d(40, &A);
    if (rc != 0) {
        fprintf(stderr, "rank: %s\n", msg[0] ? msg : spmv_strerror(rc));
        return 2;
    }
    int64_t nnz = A.indptr[A.nrows];
    printf("library %s\n", spmv_version());
    printf("matrix %d %d %lld\n", (int)A.nrows, (int)A.ncols, (long long)nnz);

    /* 1. Rank: every configuration's predicted time; the pick is the first CPU one that can serve A. */
    int n = ranker_count();
    int *order = malloc((size_t)n * sizeof(int));
    double *ms = malloc((size_t)n * sizeof(double));
    if (!order || !ms) return fail("ranking", SPMV_ENOMEM, NULL);
    rc = ranker_rank(A.nrows, A.ncols, A.indptr, A.indices, order, ms);
    if (rc != 0) return fail("ranking", rc, NULL);
    spmv_err err = {0};
    spmv_config c;
    const spmv_kernel_desc *k = NULL;
    int pick = -1;
    for (int r = 0; r < n && pick < 0; r++) {
        int j = order[r];
        if (!isfinite(ms[j]) || spmv_config_parse(ranker_config_id(j), &c, &err) != 0) continue;
        k = spmv_kernel_get(c.kernel);
        if (k->device == SPMV_DEV_CPU) pick = j;
    }
    if (pick < 0) return fail("ranking", SPMV_ENOTAPPLICABLE, NULL);
    printf("pick %s\n", ranker_config_id(pick));
    printf("predicted_ms %.6g\n", ms[pick]);

    /* 2. Convert: the pick's format and parameters, sizes first, then the caller's arrays. */
    spmv_csr P = {A.nrows, A.ncols, A.indptr, A.indices};
    spmv_fmt F = {0};
    F.format = k->format;
    F.nrows = A.nrows;
    F.ncols = A.ncols;
    F.param[0] = c.param[0];
    F.param[1] = c.param[1];
    rc = spmv_fmt_size(&P, &F, &err);
    if (rc != 0) return fail("size", rc, &err);
    for (int s = 0; s < SPMV_MAXIDX; s++)
        F.idx[s] = F.nidx[s] ? malloc((size_t)F.nidx[s] * sizeof(int32_t)) : NULL;
    for (int s = 0; s < SPMV_MAXVAL; s++)
        F.val[s] = F.nval[s] ? malloc((size_t)F.nval[s] * sizeof(double)) : NULL;
    rc = spmv_fmt_fill_f64(&P, A.values, &F, &err);
    if (rc != 0) return fail("fill", rc, &err);
    printf("format %s\n", spmv_format_name(F.format));
    printf("bytes %lld\n", (long long)spmv_fmt_bytes(&F, 8));

    /* 3. Multiply with the format's own kernel and check against CSR. */
    double *x = malloc((size_t)A.ncols * sizeof(double));
    double *y = malloc((size_t)A.nrows * sizeof(double));
    if (!x || !y) return fail("vectors", SPMV_ENOMEM, NULL);
    for (int32_t j = 0; j < A.ncols; j++) x[j] = 1.0 + 0.25 * (j % 7);
    rc = spmv_fmt_mv_f64(&F, k->kernel, x, y, &err);
    if (rc != 0) return fail("product", rc, &err);
    double worst = 0.0, ysum = 0.0;
    for (int32_t i = 0; i < A.nrows; i++) {
        double ref = 0.0, mag = 0.0;
        for (int32_t p = A.indptr[i]; p < A.indptr[i + 1]; p++) {
            ref += A.values[p] * x[A.indices[p]];
            mag += fabs(A.values[p] * x[A.indices[p]]);
        }
        double e = fabs(y[i] - ref) / (mag > 0 ? mag : 1.0);
        worst = e > worst ? e : worst;
        ysum += y[i];
    }
    printf("ysum %.17g\n", ysum);
    printf("max_rel_err %.3g\n", worst);

    for (int s = 0; s < SPMV_MAXIDX; s++) free(F.idx[s]);
    for (int s = 0; s < SPMV_MAXVAL; s++) free(F.val[s]);
    free(x);
    free(y);
    free(order);
    free(ms);
    example_csr_free(&A);
    return worst <= 1e-12 ? 0 : 1;
}
