// kernels/convert_coo.cu: device conversion to COO — the row of every entry, columns and values
// copied
// SPDX-License-Identifier: BSD-3-Clause
//
// Layout: csrc/coo.c (idx[0] = row, idx[1] = col, val[0] = values, in CSR order); no scalars.
// Each entry's row by a binary search over the row pointers: one thread per entry, so a long row
// costs no more than as many short ones.
#include "convert.cuh"

__global__ void coo_rows_kernel(int32_t n, int64_t nnz, const int32_t *__restrict__ ptr,
                                int32_t *__restrict__ row) {
    SPMV_CONV_LOOP(p, nnz) row[p] = spmv_conv_row_of(ptr, n, p);
}

int spmv_conv_coo(spmv_conv *C, spmv_err *err) {
    int64_t nnz = C->nnz;
    int rc = spmv_conv_out(C, 0, 0, nnz, "COO row", err);
    if (!rc) rc = spmv_conv_out(C, 0, 1, nnz, "COO col", err);
    if (!rc) rc = spmv_conv_out(C, 1, 0, nnz, "COO values", err);
    if (rc || nnz == 0) return rc;
    coo_rows_kernel<<<spmv_conv_grid(nnz, 256), 256, 0, C->s>>>(C->nrows, nnz, C->ptr,
                                                                (int32_t *)C->dev[0]);
    rc = spmv_conv_launched("COO rows", err);
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
