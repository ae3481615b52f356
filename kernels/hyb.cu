// kernels/hyb.cu: HYB on the GPU — the ELL part a thread per row, then the COO part added to it
// SPDX-License-Identifier: BSD-3-Clause
//
// The ELL part writes every y[i] (ell_row_kernel, as kernels/ell.cu: coalesced column-major slots),
// then the COO part, usually a small share of the entries, adds its rows with the deterministic
// segmented reduction of kernels/coo.cu in ADD mode (no gaps to zero: the ELL part wrote them).
// Two launches, one when the COO part is empty; no float atomics, so deterministic for a given bs.
// The workspace is the COO part's: a ticket counter and coo_nnz/2048 carries.
#include "ell_coo.cuh"

static int hyb_prepare(const spmv_fmt *H, const spmv_launch *L, int64_t *aux_bytes, spmv_err *err) {
    *aux_bytes = 0;
    int rc = coo_check_block(L, "pyspmv/hyb", err);
    if (!rc) *aux_bytes = coo_aux_bytes(H->scalar[1], L->block);
    return rc;
}

static int hyb_setup(const spmv_fmt *H, const spmv_dfmt *D, const spmv_launch *L, void *aux,
                     cudaStream_t s, spmv_err *err) {
    (void)D;
    return coo_aux_setup(H->scalar[1], L, aux, s, "reset of hyb's ticket counter", err);
}

template <typename T>
static cudaError_t hyb_run(const spmv_dfmt *D, const spmv_launch *L, const void *aux, const T *x,
                           T *y, cudaStream_t s) {
    int64_t coo_nnz = D->scalar[1];
    ell_launch<T>(D->idx[0], (const T *)D->val[0], D->nrows, (int32_t)D->scalar[0], x, y, L->block,
                  s);
    if (coo_nnz > 0)
        coo_launch<T, true>(D->idx[1], D->idx[2], (const T *)D->val[1], coo_nnz, D->nrows, x, y,
                            aux, L->block, s);
    return cudaGetLastError();
}

SPMV_CUDA_KERNEL(hyb, hyb_prepare, hyb_setup, hyb_run);
