// kernels/convert_csr.cu: device conversion to CSR — a copy of the resident CSR's arrays
// SPDX-License-Identifier: BSD-3-Clause
//
// Layout: csrc/csr.c (idx[0] = indptr, idx[1] = indices, val[0] = values); no scalars.
#include "convert.cuh"

static int copy(spmv_conv *C, void *dst, const void *src, int64_t bytes, spmv_err *err) {
    if (bytes <= 0) return SPMV_OK;
    return spmv_cuda_status(
        cudaMemcpyAsync(dst, src, (size_t)bytes, cudaMemcpyDeviceToDevice, C->s),
        "device copy of a CSR array", err);
}

int spmv_conv_csr(spmv_conv *C, spmv_err *err) {
    int64_t n = C->nrows, nnz = C->nnz;
    int rc = spmv_conv_out(C, 0, 0, n + 1, "CSR indptr", err);
    if (!rc) rc = spmv_conv_out(C, 0, 1, nnz, "CSR indices", err);
    if (!rc) rc = spmv_conv_out(C, 1, 0, nnz, "CSR values", err);
    if (!rc) rc = copy(C, C->dev[0], C->ptr, (n + 1) * 4, err);
    if (!rc) rc = copy(C, C->dev[1], C->col, nnz * 4, err);
    if (!rc) rc = copy(C, C->dev[SPMV_MAXIDX], C->val, nnz * C->elem_size, err);
    return rc;
}
