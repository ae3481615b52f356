// tests/c/test_sample.c: the estimated design rows' sample (spmv_sample_blocks): its budgets in
// rows and entries hold on even, heavy-tailed and lopsided row lengths
// SPDX-License-Identifier: BSD-3-Clause
#include "mu.h"
#include "spmv_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define B SPMV_PASS_BLOCK

/* Entries of the k blocks spmv_design_rows_estimate reads: one in the middle of each stratum. */
static int64_t entries(const int32_t *ip, int32_t n, int64_t k) {
    int64_t nblk = ((int64_t)n + B - 1) / B, e = 0;
    for (int64_t b = 0; b < k; b++) {
        int64_t r0 = (2 * b + 1) * nblk / (2 * k) * B, r1 = n - r0 < B ? n : r0 + B;
        e += ip[r1] - ip[r0];
    }
    return e;
}

/* indptr of n rows: len(i) from kind (0 even 10, 1 mostly 5 with one row in 50 of 2000, 2 the
 * last quarter of the rows 400 long). */
static int32_t *lengths(int32_t n, int kind) {
    int32_t *ip = malloc(sizeof(int32_t) * ((size_t)n + 1));
    uint32_t s = 12345;
    if (ip == NULL) return NULL;
    ip[0] = 0;
    for (int32_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        int32_t len = kind == 0   ? 10
                      : kind == 1 ? ((s >> 16) % 50 == 0 ? 2000 : 5)
                                  : (i >= n - n / 4 ? 400 : 3);
        ip[i + 1] = ip[i] + len;
    }
    return ip;
}

static int test_budgets(void) {
    const int32_t ns[] = {1000, 40000, 100000, 1000000};
    const int64_t budgets[] = {0, 4096, 32768, 65536, 1 << 20};
    for (int kind = 0; kind < 3; kind++)
        for (int a = 0; a < 4; a++) {
            int32_t n = ns[a], *ip = lengths(n, kind);
            int64_t nblk = ((int64_t)n + B - 1) / B;
            mu_check(ip != NULL);
            for (int c = 0; c < 5; c++) {
                int64_t E = budgets[c], k = spmv_sample_blocks(ip, n, 16384, E);
                mu_check(k >= 0 && k <= 16384 / B && 2 * k <= nblk);
                if (k > 0 && E > 0) mu_check(entries(ip, n, k) <= E || k == 1);
                if (E == 0) mu_check(k == (2 * 64 <= nblk ? 64 : 0)); /* rows alone */
            }
            mu_check(spmv_sample_blocks(ip, n, 0, 65536) == 0);
            free(ip);
        }
    return 0;
}

/* Even rows: exactly as many blocks as the budget holds at 2560 entries a block. */
static int test_even_rows_fill_the_budget(void) {
    int32_t *ip = lengths(100000, 0);
    mu_check(ip != NULL);
    int64_t k = spmv_sample_blocks(ip, 100000, 16384, 65536);
    free(ip);
    mu_check(k == 65536 / 2560);
    return 0;
}

/* cidx's size on a sample comes from the sampled rows (the pass counts no chunk spans there): on a
 * band of 5, whose chunks all fit 8 bits, the estimate scales to the exact bytes. */
static int test_cidx_sizes_on_a_sample(void) {
    int32_t n = 200000, *ip = malloc(sizeof(int32_t) * ((size_t)n + 1)), *ix = NULL, p = 0;
    double exact[3 * (SPMV_NCOLS)], est[3 * (SPMV_NCOLS)];
    const char *const ids[3] = {"cpu/cidx/bits=8", "cpu/cidx/bits=16", "cpu/csr/rows"};
    spmv_configs C = {0};
    spmv_gpu_props dev;
    mu_check(ip != NULL && (ix = malloc(sizeof(int32_t) * 5 * (size_t)n)) != NULL);
    ip[0] = 0;
    for (int32_t i = 0; i < n; i++) {
        for (int32_t j = i - 2; j <= i + 2; j++)
            if (j >= 0 && j < n) ix[p++] = j;
        ip[i + 1] = p;
    }
    spmv_csr A = {n, n, ip, ix};
    C.n = 3;
    C.ids = ids;
    spmv_gpu_props_h100(&dev);
    mu_check(spmv_design_rows(&A, &dev, &C, 8, 0, exact, NULL) == SPMV_OK);
    mu_check(spmv_design_rows_estimate(&A, &dev, &C, 8, 0, 4096, 0, est, NULL) == SPMV_OK);
    for (int j = 0; j < 3; j++) {
        double e = exact[j * SPMV_NCOLS + SPMV_COL_BYTES_MOVED];
        double s = est[j * SPMV_NCOLS + SPMV_COL_BYTES_MOVED];
        mu_check(e > 0 && fabs(s - e) <= 1e-3 * e);
    }
    /* indices 1.125 and 2.125 bytes an entry against CSR's 4 */
    mu_check(exact[SPMV_COL_BYTES_MOVED] < exact[SPMV_NCOLS + SPMV_COL_BYTES_MOVED]);
    mu_check(exact[SPMV_NCOLS + SPMV_COL_BYTES_MOVED] <
             exact[2 * SPMV_NCOLS + SPMV_COL_BYTES_MOVED]);
    free(ix);
    free(ip);
    return 0;
}

/* A matrix given by its coarse indptr and only its sampled rows, every other item of indptr and
 * indices poisoned (out of range, decreasing), gets the design rows of the whole matrix's estimate,
 * bit for bit; the plan is the estimate's blocks; a block's end that disagrees with the coarse copy,
 * and a column past ncols in a sampled row, are refused; a plan of 0 (the exact path) is refused. */
static int test_sampled_rows_alone(void) {
    int32_t n = 120000, nblk = (n + B - 1) / B, *ip = lengths(n, 0), range[16384 / B + 1];
    int32_t *ix = NULL, *pip = NULL, *pix = NULL, *coarse = NULL;
    /* formats with parts of the pass: BRO-ELL's row symbols, cidx's chunk spans, BSR's blocks */
    const char *const ids[5] = {"pyspmv/sell/c=32/sigma=256/bs=256", "pyspmv/dia/bs=128",
                                "pyspmv/bro_ell/h=32/bits=32/bs=128",
                                "pyspmv/cidx/scalar/bits=8/bs=128", "cusparse/bsr/b=4"};
    double est[5 * SPMV_NCOLS], smp[5 * SPMV_NCOLS];
    spmv_configs C = {0};
    spmv_gpu_props dev;
    spmv_err err = {0};
    mu_check(ip != NULL);
    int64_t nnz = ip[n];
    ix = malloc(sizeof(int32_t) * (size_t)nnz);
    pip = malloc(sizeof(int32_t) * ((size_t)n + 1));
    pix = malloc(sizeof(int32_t) * (size_t)nnz);
    coarse = malloc(sizeof(int32_t) * ((size_t)nblk + 1));
    mu_check(ix != NULL && pip != NULL && pix != NULL && coarse != NULL);
    uint32_t s = 777;
    for (int32_t i = 0; i < n; i++)
        for (int32_t p = ip[i], c = 0; p < ip[i + 1];
             p++) { /* 10 sorted columns near the diagonal */
            s = s * 1664525u + 1013904223u;
            c += 1 + (int32_t)((s >> 16) % 9);
            ix[p] = (i + c) % n;
        }
    for (int32_t i = 0; i < n; i++) { /* wrapped rows: sort them again */
        int32_t p0 = ip[i], p1 = ip[i + 1];
        for (int32_t a = p0 + 1; a < p1; a++)
            for (int32_t b = a; b > p0 && ix[b - 1] > ix[b]; b--) {
                int32_t t = ix[b];
                ix[b] = ix[b - 1];
                ix[b - 1] = t;
            }
    }
    for (int32_t b = 0; b < nblk; b++) coarse[b] = ip[b * B];
    coarse[nblk] = ip[n];
    for (int32_t i = 0; i <= n; i++) pip[i] = -7 - i; /* poison */
    for (int64_t p = 0; p < nnz; p++) pix[p] = INT32_MIN + (int32_t)(p % 1000);
    int64_t k = spmv_sample_plan(coarse, n, 16384, 65536, range);
    mu_check(k == spmv_sample_blocks(ip, n, 16384, 65536) && k > 0);
    pip[0] = 0;
    pip[n] = ip[n];
    for (int64_t b = 0; b < k; b++) {
        int32_t r0 = range[b], r1 = n - r0 < B ? n : r0 + B;
        mu_check(r0 % B == 0 && r0 < n);
        for (int32_t i = r0; i <= r1; i++) pip[i] = ip[i];
        for (int32_t p = ip[r0]; p < ip[r1]; p++) pix[p] = ix[p];
    }
    spmv_csr A = {n, n, ip, ix}, P = {n, n, pip, pix};
    C.n = 5;
    C.ids = ids;
    spmv_gpu_props_h100(&dev);
    mu_check(spmv_design_rows_estimate(&A, &dev, &C, 8, 0, 16384, 65536, est, NULL) == SPMV_OK);
    for (int j = 0; j < 5; j++) mu_check(isfinite(est[j * SPMV_NCOLS + SPMV_COL_BYTES_MOVED]));
    mu_check(spmv_design_rows_sampled(&P, coarse, &dev, &C, 8, 0, 16384, 65536, smp, NULL) ==
             SPMV_OK);
    mu_check(memcmp(est, smp, sizeof est) == 0);
    /* a sampled block's start that disagrees with the coarse copy */
    coarse[range[1] / B] += 1;
    mu_check(spmv_design_rows_sampled(&P, coarse, &dev, &C, 8, 0, 16384, 65536, smp, &err) ==
             SPMV_EINDEX);
    coarse[range[1] / B] -= 1;
    /* a column past ncols in a sampled row: named by its own row */
    int32_t r = range[2] + 3, keep = pix[pip[r]];
    pix[pip[r]] = n + 5;
    mu_check(spmv_design_rows_sampled(&P, coarse, &dev, &C, 8, 0, 16384, 65536, smp, &err) ==
             SPMV_EINDEX);
    mu_check(err.where == r);
    pix[pip[r]] = keep;
    /* no sample: the exact path, which would read the poison, is refused */
    mu_check(spmv_design_rows_sampled(&P, coarse, &dev, &C, 8, 0, 0, 0, smp, &err) == SPMV_EINVAL);
    mu_check(spmv_design_rows_sampled(&P, NULL, &dev, &C, 8, 0, 16384, 65536, smp, &err) ==
             SPMV_EINVAL);
    mu_check(spmv_sample_plan(NULL, n, 16384, 65536, range) == 0);
    free(coarse);
    free(pix);
    free(pip);
    free(ix);
    free(ip);
    return 0;
}

int main(void) {
    int failures = 0;
    mu_run(test_budgets);
    mu_run(test_even_rows_fill_the_budget);
    mu_run(test_cidx_sizes_on_a_sample);
    mu_run(test_sampled_rows_alone);
    return failures != 0;
}
