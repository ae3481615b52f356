// kernels/matrix.cuh: internal to kernels/ — a converted matrix on the device (kernels/matrix.cu makes
// and frees it, kernels/plan.cu binds configurations to it)
// SPDX-License-Identifier: BSD-3-Clause
#ifndef SPMV_MATRIX_CUH
#define SPMV_MATRIX_CUH

#include <ctime>

#include "kern.h"
#include "spmv_cuda.h"

/* A converted matrix on the device: its arrays, x and y.  Shared by the plans of every thread
 * mapping of one format (benchmarks upload once per format, not once per configuration). */
struct spmv_cuda_matrix {
    spmv_dfmt D;
    int elem_size;
    void *dev[SPMV_MAXIDX + SPMV_MAXVAL]; /* uploaded arrays */
    void *x, *y;
    int64_t bytes;
    double upload_ms;
    int borrowed; /* dev[] are the caller's (spmv_cuda_matrix_wrap_csr): never freed here */
    int pooled;   /* dev[], x and y come from device conversion's pool (cudaMallocFromPoolAsync) */
};

static inline double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static inline int dev_alloc(int64_t *held, int64_t bytes, const char *what, void **out,
                            spmv_err *err) {
    int rc = spmv_cuda_malloc(out, bytes, what, err);
    if (rc == SPMV_OK && bytes > 0) *held += bytes;
    return rc;
}

#endif /* SPMV_MATRIX_CUH */
