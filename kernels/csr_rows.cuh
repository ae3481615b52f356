// kernels/csr_rows.cuh: internal to kernels/csr.cu — the scalar and vector CSR kernels, each also as the
// variant that makes x . y in its pass (kernels/dot.cuh); csr.cu registers them
// SPDX-License-Identifier: BSD-3-Clause
//
// Included by kernels/csr.cu after group_mask and group_sum, which it shares with the other CSR kernels.
#ifndef SPMV_CSR_ROWS_CUH
#define SPMV_CSR_ROWS_CUH

#include <type_traits>

#include "dot.cuh"
#include "kern.h"

/* ---- scalar ---------------------------------------------------------------------------------- */

/* DOT (here and in the vector kernel): w . y too (A square), into d (kernels/dot.cuh); every
 * thread reaches its finish. */
template <typename T, bool DOT>
__global__ void __launch_bounds__(1024)
    scalar_row_kernel(int32_t nrows, const int32_t *__restrict__ ptr,
                      const int32_t *__restrict__ col, const T *__restrict__ val,
                      const T *__restrict__ x, T *__restrict__ y, spmv_cuda_dot d) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    double acc = 0;
    if (i < nrows) {
        int32_t end = __ldg(ptr + i + 1);
        T sum = 0;
        for (int32_t p = __ldg(ptr + i); p < end; p++)
            sum += __ldg(val + p) * __ldg(x + __ldg(col + p));
        acc = spmv_row_store<DOT>(y, x, d, i, sum);
    } else if (!DOT) {
        return;
    }
    if (DOT) spmv_dot_partial(acc, d);
}

template <typename T>
static cudaError_t scalar_launch(const spmv_dfmt *D, const spmv_launch *L, const void *aux,
                                 const T *x, T *y, const spmv_cuda_dot *d, cudaStream_t s) {
    (void)aux;
    const unsigned g = spmv_cuda_blocks(D->nrows, L->block);
    const T *val = (const T *)D->val[0];
    if (d)
        scalar_row_kernel<T, true>
            <<<g, L->block, 0, s>>>(D->nrows, D->idx[0], D->idx[1], val, x, y, *d);
    else
        scalar_row_kernel<T, false>
            <<<g, L->block, 0, s>>>(D->nrows, D->idx[0], D->idx[1], val, x, y, spmv_cuda_dot{});
    return cudaGetLastError();
}

static int64_t scalar_blocks(const spmv_dfmt *D, const spmv_launch *L) {
    return spmv_cuda_blocks(D->nrows, L->block);
}

/* ---- vector ---------------------------------------------------------------------------------- */

/* VB: the values as they are (0) or a table's VB-bit indices (vix; csrc/csr.c's vals). */
template <typename T, int TPV, bool DOT, int VB>
__global__ void __launch_bounds__(1024)
    vector_row_kernel(int32_t nrows, const int32_t *__restrict__ ptr,
                      const int32_t *__restrict__ col, const T *__restrict__ val,
                      const void *__restrict__ vix, const T *__restrict__ x, T *__restrict__ y,
                      spmv_cuda_dot d) {
    int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, row = t / TPV;
    double acc = 0;
    if (row < nrows) { /* the whole group or none of it: its mask stays whole */
        int lane = (int)(t & (TPV - 1));
        int32_t end = __ldg(ptr + row + 1);
        T sum = 0;
        for (int64_t p = __ldg(ptr + row) + lane; p < end; p += TPV) /* int64: end may near 2^31 */
            sum += spmv_value<T, VB, false>(val, vix, p) * __ldg(x + __ldg(col + p));
        sum = group_sum(sum, TPV, group_mask(TPV));
        if (lane == 0) acc = spmv_row_store<DOT>(y, x, d, row, sum);
    } else if (!DOT) {
        return;
    }
    if (DOT) spmv_dot_partial(acc, d);
}

template <typename T, int TPV, int VB>
static void vector_launch(const spmv_dfmt *D, const spmv_launch *L, const T *x, T *y,
                          const spmv_cuda_dot *d, cudaStream_t s) {
    const unsigned g = spmv_cuda_blocks((int64_t)D->nrows * TPV, L->block);
    const T *val = (const T *)D->val[0];
    if (d)
        vector_row_kernel<T, TPV, true, VB>
            <<<g, L->block, 0, s>>>(D->nrows, D->idx[0], D->idx[1], val, D->idx[3], x, y, *d);
    else
        vector_row_kernel<T, TPV, false, VB><<<g, L->block, 0, s>>>(
            D->nrows, D->idx[0], D->idx[1], val, D->idx[3], x, y, spmv_cuda_dot{});
}

/* f(std::integral_constant<int, tpv>()) for a threads-per-row of the grid; prepare refused others. */
template <typename F> static cudaError_t by_tpv(int32_t tpv, F f) {
    switch (tpv) {
    case 2:
        f(std::integral_constant<int, 2>());
        break;
    case 4:
        f(std::integral_constant<int, 4>());
        break;
    case 8:
        f(std::integral_constant<int, 8>());
        break;
    case 16:
        f(std::integral_constant<int, 16>());
        break;
    case 32:
        f(std::integral_constant<int, 32>());
        break;
    default:
        return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

template <typename T>
static cudaError_t vector_launch_any(const spmv_dfmt *D, const spmv_launch *L, const void *aux,
                                     const T *x, T *y, const spmv_cuda_dot *d, cudaStream_t s) {
    (void)aux;
    return by_tpv(L->tpv, [&](auto w) {
        spmv_by_vals(D->param[1], [&](auto vb) {
            vector_launch<T, decltype(w)::value, decltype(vb)::value>(D, L, x, y, d, s);
        });
    });
}

static int64_t vector_blocks(const spmv_dfmt *D, const spmv_launch *L) {
    return spmv_cuda_blocks((int64_t)D->nrows * L->tpv, L->block);
}

#endif /* SPMV_CSR_ROWS_CUH */
