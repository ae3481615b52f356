// kernels/dia.cu: DIA on the GPU — one thread per row, diagonal after diagonal
// SPDX-License-Identifier: BSD-3-Clause
//
// Thread i takes row i and walks the diagonals in ascending order.  Diagonal d is stored by row,
// so a warp reads 32 consecutive words of data[d*nrows + i] and of x[i + offsets[d]]: both
// streams coalesce, with no index array per entry.  offsets[d] is the same address for the whole
// warp, one broadcast load served by L1 (no shared-memory staging, so no block barrier, and any
// number of diagonals and any block size work).  As on the CPU, padding zeros inside the matrix
// are multiplied by x (the Python layer refuses a non-finite x for DIA) and the presence bits are
// not read.  Row sums run in diagonal order: deterministic.
#include "kern.h"

template <typename T>
__global__ void __launch_bounds__(1024)
    dia_row_kernel(int32_t nrows, int32_t ncols, int64_t ndiag, const int32_t *__restrict__ offsets,
                   const T *__restrict__ data, const T *__restrict__ x, T *__restrict__ y) {
    int64_t i64 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i64 >= nrows) return;
    int32_t i = (int32_t)i64;
    T sum = 0;
#pragma unroll 4
    for (int64_t d = 0; d < ndiag; d++) {
        int32_t o = __ldg(offsets + d);
        if (o >= -i && o < ncols - i) /* 0 <= i + o < ncols, without overflow */
            sum += __ldcs(data + d * nrows + i) * __ldg(x + i + o);
    }
    y[i] = sum;
}

template <typename T>
static cudaError_t dia_run(const spmv_dfmt *D, const spmv_launch *L, const void *aux, const T *x,
                           T *y, cudaStream_t s) {
    (void)aux;
    dia_row_kernel<T><<<spmv_cuda_blocks(D->nrows, L->block), L->block, 0, s>>>(
        D->nrows, D->ncols, D->scalar[0], D->idx[0], (const T *)D->val[0], x, y);
    return cudaGetLastError();
}

SPMV_CUDA_KERNEL(dia, NULL, NULL, dia_run);
