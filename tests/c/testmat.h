// tests/c/testmat.h: deterministic test matrices and the per-format parameter cases the C tests share
// SPDX-License-Identifier: BSD-3-Clause
#ifndef TESTMAT_H
#define TESTMAT_H
#include "spmv.h"

#include <stdint.h>
#include <stdlib.h>

typedef struct {
    int32_t nrows, ncols;
    int32_t *indptr, *indices;
    double *values;
} testmat;

/* Rows of random length in [0, maxlen] (about a quarter empty), one row of length ncols/2 when
 * long_row, sorted distinct columns, some explicit zeros.  The caller frees with testmat_free. */
static inline int testmat_make(testmat *M, int32_t nrows, int32_t ncols, int32_t maxlen,
                               int long_row, uint64_t seed) {
    uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
#define NEXT() (s = s * 6364136223846793005ull + 1442695040888963407ull, (uint32_t)(s >> 33))
    M->nrows = nrows;
    M->ncols = ncols;
    M->indptr = malloc(sizeof(int32_t) * ((size_t)nrows + 1));
    int64_t cap = (int64_t)nrows * (maxlen < ncols ? maxlen : ncols) + ncols;
    M->indices = malloc(sizeof(int32_t) * (size_t)(cap + 1));
    M->values = malloc(sizeof(double) * (size_t)(cap + 1));
    char *used = calloc((size_t)ncols, 1);
    if (!M->indptr || !M->indices || !M->values || !used) return -1;
    int64_t nnz = 0;
    M->indptr[0] = 0;
    for (int32_t i = 0; i < nrows; i++) {
        int32_t len = NEXT() % 4 == 0 ? 0 : (int32_t)(NEXT() % (uint32_t)(maxlen + 1));
        if (long_row && i == nrows / 2) len = ncols / 2;
        if (len > ncols) len = ncols;
        for (int32_t k = 0; k < len; k++) used[NEXT() % (uint32_t)ncols] = 1;
        for (int32_t j = 0; j < ncols; j++)
            if (used[j]) {
                M->indices[nnz] = j;
                M->values[nnz++] = NEXT() % 7 == 0 ? 0.0 : (double)(NEXT() % 2001) / 100.0 - 10.0;
                used[j] = 0;
            }
        M->indptr[i + 1] = (int32_t)nnz;
    }
#undef NEXT
    free(used);
    return 0;
}

static inline void testmat_free(testmat *M) {
    free(M->indptr);
    free(M->indices);
    free(M->values);
}

typedef struct {
    int format;
    int32_t p0, p1;
} fmtcase;

static const fmtcase FMT_CASES[] = {
    {SPMV_FMT_CSR, 0, 0},      {SPMV_FMT_COO, 0, 0},   {SPMV_FMT_ELL, 0, 0},
    {SPMV_FMT_SELL, 4, 1},     {SPMV_FMT_SELL, 8, 64}, {SPMV_FMT_BRO_ELL, 32, 0},
    {SPMV_FMT_BRO_ELL, 4, 16}, {SPMV_FMT_HYB, -1, 0},  {SPMV_FMT_HYB, 3, 0},
    {SPMV_FMT_DIA, 0, 0},      {SPMV_FMT_JAD, 0, 0},   {SPMV_FMT_BSR, 3, 0},
    {SPMV_FMT_BSR, 4, 0},
};
#define N_FMT_CASES ((int)(sizeof FMT_CASES / sizeof FMT_CASES[0]))

#endif
