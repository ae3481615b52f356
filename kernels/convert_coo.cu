// kernels/convert_coo.cu: device conversion to COO — the row of every entry, columns and values
// copied
// SPDX-License-Identifier: BSD-3-Clause
//
// Layout: csrc/coo.c (idx[0] = row, idx[1] = col, val[0] = values, in CSR order); no scalars.
// The rows by spmv_conv_rows (a scatter of row starts and a max-scan): a long row costs no more
// than as many short ones.
#include "convert.cuh"

int spmv_conv_coo(spmv_conv *C, spmv_err *err) {
    int64_t nnz = C->nnz;
    int rc = spmv_conv_out(C, 0, 0, nnz, "COO row", err);
    if (!rc) rc = spmv_conv_out(C, 0, 1, nnz, "COO col", err);
    if (!rc) rc = spmv_conv_out(C, 1, 0, nnz, "COO values", err);
    if (rc || nnz == 0) return rc;
    rc = spmv_conv_rows(C, (int32_t *)C->dev[0], err);
    if (!rc)
        rc = spmv_cuda_status(
            cudaMemcpyAsync(C->dev[1], C->col, (size_t)nnz * 4, cudaMemcpyDeviceToDevice, C->s),
            "device copy of COO col", err);
    if (!rc)
        rc = spmv_cuda_status(cudaMemcpyAsync(C->dev[SPMV_MAXIDX], C->val,
                                              (size_t)nnz * C->elem_size, cudaMemcpyDeviceToDevice,
                                              C->s),
                              "device copy of COO values", err);
    return rc;
}
