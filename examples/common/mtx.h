// examples/common/mtx.h: a Matrix Market file (or a 2D Poisson matrix) as sorted CSR, for the examples
// SPDX-License-Identifier: BSD-3-Clause
//
// The banner and size line are read here; the body by the library's spmv_mm_read, which checks
// every token.  Coordinate files only (real, integer or pattern; general, symmetric or
// skew-symmetric); duplicates are summed, as scipy does.
#ifndef EXAMPLE_MTX_H
#define EXAMPLE_MTX_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int32_t nrows, ncols;
    int32_t *indptr;  /* [nrows+1] */
    int32_t *indices; /* [nnz], increasing within each row */
    double *values;   /* [nnz] */
} example_csr;

/* Read path into *A (free with example_csr_free); 0, or a negative SPMV_E* code with a message
 * in msg[160]. */
int example_read_mtx(const char *path, example_csr *A, char *msg);
/* The 5-point Laplacian of an n x n grid. */
int example_poisson2d(int32_t n, example_csr *A);
void example_csr_free(example_csr *A);

#ifdef __cplusplus
}
#endif

#endif /* EXAMPLE_MTX_H */
