// kernels/coo.cu: COO on the GPU — a deterministic segmented reduction over fixed tiles of entries
// SPDX-License-Identifier: BSD-3-Clause
//
// Thread block b reduces the entries [b tile, (b+1) tile), tile = 2048 (coo_tile_kernel in
// ell_coo.cuh): loaded coalesced into shared memory, each thread then sums a consecutive run of
// them, and a block-wide segmented scan joins rows split between threads.  Rows that end in the
// tile are written; the open row at its end is the block's carry, which the last block to finish
// adds in a fixed order.  Empty rows are zeroed by the thread that sees the gap, so one launch
// writes all of y, without memset or float atomics: deterministic for a given bs.  The workspace is
// a ticket counter and nnz/tile carries (none for nnz <= tile, where one block does all).
#include "ell_coo.cuh"

static int coo_prepare(const spmv_fmt *H, const spmv_launch *L, int64_t *aux_bytes, spmv_err *err) {
    *aux_bytes = 0;
    int rc = coo_check_block(L, "pyspmv/coo", err);
    if (!rc) *aux_bytes = coo_aux_bytes(H->nnz, L->block);
    return rc;
}

static int coo_setup(const spmv_fmt *H, const spmv_dfmt *D, const spmv_launch *L, void *aux,
                     cudaStream_t s, spmv_err *err) {
    (void)D;
    return coo_aux_setup(H->nnz, L, aux, s, "reset of coo's ticket counter", err);
}

template <typename T>
static cudaError_t coo_run(const spmv_dfmt *D, const spmv_launch *L, const void *aux, const T *x,
                           T *y, cudaStream_t s) {
    coo_launch<T, false>(D->idx[0], D->idx[1], (const T *)D->val[0], D->nnz, D->nrows, x, y, aux,
                         L->block, s);
    return cudaGetLastError();
}

SPMV_CUDA_KERNEL(coo, coo_prepare, coo_setup, coo_run);

/* ---- Device conversion from a resident CSR (kernels/convert.cu dispatches) ---- */

// Device conversion to COO — the row of every entry, columns and values copied
//
// Layout: csrc/coo.c (idx[0] = row, idx[1] = col, val[0] = values, in CSR order); no scalars.
// The rows by spmv_conv_rows_copy (a scatter of row starts and a max-scan): a long row costs no
// more than as many short ones; columns and values are copied by the scatter's pass.
#include "convert.cuh"

int spmv_conv_coo(spmv_conv *C, spmv_err *err) {
    int64_t nnz = C->nnz;
    int rc = spmv_conv_out(C, 0, 0, nnz, "COO row", err);
    if (!rc) rc = spmv_conv_out(C, 0, 1, nnz, "COO col", err);
    if (!rc) rc = spmv_conv_out(C, 1, 0, nnz, "COO values", err);
    if (rc || nnz == 0) return rc;
    /* columns and values copied by the pass that scatters the row starts */
    return spmv_conv_rows_copy(C, (int32_t *)C->dev[0], (int32_t *)C->dev[1], C->dev[SPMV_MAXIDX],
                               err);
}
