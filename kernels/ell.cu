// kernels/ell.cu: ELL on the GPU — a thread per row over the column-major slots
// SPDX-License-Identifier: BSD-3-Clause
//
// Thread i sums row i (ell_row_kernel in ell_coo.cuh): slot k of row i is at k*nrows + i, so the
// 32 threads of a warp read 32 consecutive words of col and values per slot, streamed with __ldcs
// (read once, evict first) so that x keeps L2.  Each row sums its slots in order, stopping at its
// first padding slot: deterministic.  One launch; no workspace.
#include "ell_coo.cuh"

template <typename T>
static cudaError_t ell_run(const spmv_dfmt *D, const spmv_launch *L, const void *aux, const T *x,
                           T *y, cudaStream_t s) {
    (void)aux;
    ell_launch<T>(D->idx[0], (const T *)D->val[0], D->nrows, (int32_t)D->scalar[0], x, y, L->block,
                  s);
    return cudaGetLastError();
}

SPMV_CUDA_KERNEL(ell, NULL, NULL, ell_run);
