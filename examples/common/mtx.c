// examples/common/mtx.c: a Matrix Market file (or a 2D Poisson matrix) as sorted CSR (mtx.h)
// SPDX-License-Identifier: BSD-3-Clause
#include "mtx.h"

#include <spmv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void example_csr_free(example_csr *A) {
    free(A->indptr);
    free(A->indices);
    free(A->values);
    A->indptr = A->indices = NULL;
    A->values = NULL;
}

/* COO (0-based) to CSR: rows counted, each row sorted by column, duplicates summed. */
static int coo_to_csr(int32_t nrows, int32_t ncols, int64_t n, const int32_t *row,
                      const int32_t *col, const double *val, example_csr *A) {
    A->nrows = nrows;
    A->ncols = ncols;
    A->indptr = calloc((size_t)nrows + 1, sizeof(int32_t));
    A->indices = malloc((size_t)(n > 0 ? n : 1) * sizeof(int32_t));
    A->values = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    int32_t *next = malloc(((size_t)nrows + 1) * sizeof(int32_t));
    if (!A->indptr || !A->indices || !A->values || !next) {
        free(next);
        example_csr_free(A);
        return SPMV_ENOMEM;
    }
    for (int64_t k = 0; k < n; k++) A->indptr[row[k] + 1]++;
    for (int32_t i = 0; i < nrows; i++) A->indptr[i + 1] += A->indptr[i];
    memcpy(next, A->indptr, ((size_t)nrows + 1) * sizeof(int32_t));
    for (int64_t k = 0; k < n; k++) {
        int32_t p = next[row[k]]++;
        A->indices[p] = col[k];
        A->values[p] = val[k];
    }
    int32_t out = 0;
    for (int32_t i = 0; i < nrows; i++) {
        int32_t lo = A->indptr[i], hi = A->indptr[i + 1];
        for (int32_t p = lo + 1; p < hi; p++) { /* insertion sort: rows are short */
            int32_t c = A->indices[p];
            double v = A->values[p];
            int32_t q = p - 1;
            while (q >= lo && A->indices[q] > c) {
                A->indices[q + 1] = A->indices[q];
                A->values[q + 1] = A->values[q];
                q--;
            }
            A->indices[q + 1] = c;
            A->values[q + 1] = v;
        }
        A->indptr[i] = out;
        for (int32_t p = lo; p < hi; p++) {
            if (out > A->indptr[i] && A->indices[out - 1] == A->indices[p]) {
                A->values[out - 1] += A->values[p];
            } else {
                A->indices[out] = A->indices[p];
                A->values[out++] = A->values[p];
            }
        }
    }
    A->indptr[nrows] = out;
    free(next);
    return 0;
}

int example_poisson2d(int32_t n, example_csr *A) {
    int64_t N = (int64_t)n * n, k = 0;
    int32_t *row = malloc((size_t)(5 * N) * sizeof(int32_t));
    int32_t *col = malloc((size_t)(5 * N) * sizeof(int32_t));
    double *val = malloc((size_t)(5 * N) * sizeof(double));
    int rc = SPMV_ENOMEM;
    if (row && col && val) {
        for (int32_t i = 0; i < n; i++)
            for (int32_t j = 0; j < n; j++) {
                int32_t r = i * n + j;
                const int32_t nb[5][2] = {{i - 1, j}, {i, j - 1}, {i, j}, {i, j + 1}, {i + 1, j}};
                for (int t = 0; t < 5; t++) {
                    if (nb[t][0] < 0 || nb[t][0] >= n || nb[t][1] < 0 || nb[t][1] >= n) continue;
                    row[k] = r;
                    col[k] = nb[t][0] * n + nb[t][1];
                    val[k++] = t == 2 ? 4.0 : -1.0;
                }
            }
        rc = coo_to_csr((int32_t)N, (int32_t)N, k, row, col, val, A);
    }
    free(row);
    free(col);
    free(val);
    return rc;
}

int example_read_mtx(const char *path, example_csr *A, char *msg) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(msg, 160, "cannot open %s", path);
        return SPMV_EINVAL;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)size + 1);
    if (!text || fread(text, 1, (size_t)size, f) != (size_t)size) {
        fclose(f);
        free(text);
        snprintf(msg, 160, "cannot read %s", path);
        return SPMV_EINVAL;
    }
    fclose(f);
    text[size] = '\0';
    char obj[32], fmt[32], field[32], sym[32];
    if (sscanf(text, "%%%%MatrixMarket %31s %31s %31s %31s", obj, fmt, field, sym) != 4 ||
        strcasecmp(fmt, "coordinate") != 0) {
        free(text);
        snprintf(msg, 160, "%s: not a Matrix Market coordinate file", path);
        return SPMV_EINVAL;
    }
    spmv_mm_body B = {SPMV_MM_COORDINATE, SPMV_MM_REAL, 0, 0, 0, 1};
    if (strcasecmp(field, "pattern") == 0) B.field = SPMV_MM_PATTERN;
    if (strcasecmp(field, "integer") == 0) B.field = SPMV_MM_INTEGER;
    int symmetric = strcasecmp(sym, "symmetric") == 0,
        skew = strcasecmp(sym, "skew-symmetric") == 0;
    char *p = text;
    for (;;) { /* the banner, comments and blank lines, then the size line */
        char *eol = strchr(p, '\n');
        if (!eol) break;
        B.first_line++;
        char *q = p;
        while (*q == ' ' || *q == '\t' || *q == '\r') q++;
        long long nr, nc, ne;
        if (*q != '%' && q != eol && sscanf(q, "%lld %lld %lld", &nr, &nc, &ne) == 3) {
            B.nrows = (int32_t)nr;
            B.ncols = (int32_t)nc;
            B.nentries = ne;
            p = eol + 1;
            break;
        }
        p = eol + 1;
    }
    int64_t n = B.nentries, cap = (symmetric || skew) ? 2 * n : n;
    int32_t *row = malloc((size_t)(cap > 0 ? cap : 1) * sizeof(int32_t));
    int32_t *col = malloc((size_t)(cap > 0 ? cap : 1) * sizeof(int32_t));
    double *val = malloc((size_t)(cap > 0 ? cap : 1) * sizeof(double));
    spmv_err err = {0};
    int rc = (row && col && val) ? 0 : SPMV_ENOMEM;
    if (rc == 0 && B.nrows < 1) rc = SPMV_EINVAL, snprintf(err.msg, sizeof err.msg, "no size line");
    if (rc == 0)
        rc = spmv_mm_read(&B, p, (int64_t)(text + size - p), row, col,
                          B.field == SPMV_MM_PATTERN ? NULL : val, &err);
    if (rc == 0) {
        if (B.field == SPMV_MM_PATTERN)
            for (int64_t k = 0; k < n; k++) val[k] = 1.0;
        int64_t m = n;
        for (int64_t k = 0; k < n && (symmetric || skew); k++)
            if (row[k] != col[k]) {
                row[m] = col[k];
                col[m] = row[k];
                val[m++] = skew ? -val[k] : val[k];
            }
        rc = coo_to_csr(B.nrows, B.ncols, m, row, col, val, A);
    }
    if (rc != 0) snprintf(msg, 160, "%.60s: %.96s", path, err.msg[0] ? err.msg : spmv_strerror(rc));
    free(row);
    free(col);
    free(val);
    free(text);
    return rc;
}
