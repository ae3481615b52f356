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

/* ---- Device conversion from a resident CSR (kernels/convert.cu dispatches) ---- */

// Device conversion to ELL (and HYB's ELL part) — one thread per slot
//
// Layout: csrc/ell.c.  W = the longest row (the common pass); slot k of row i at k*nrows + i holds
// the row's entry k or padding (-1, 0).  One thread per slot, consecutive threads on consecutive
// rows of one k: the writes are coalesced, the reads gathers of at most one entry each.
#include "convert.cuh"

template <typename T>
__global__ void ell_part_kernel(int32_t n, int32_t w, int64_t slots,
                                const int32_t *__restrict__ ptr, const int32_t *__restrict__ col,
                                const T *__restrict__ val, int32_t *__restrict__ ecol,
                                T *__restrict__ ev) {
    SPMV_CONV_LOOP(q, slots) {
        int64_t k = q / n;
        int32_t i = (int32_t)(q - k * n), p0 = ptr[i], len = ptr[i + 1] - p0;
        bool in = k < len;
        ecol[q] = in ? col[p0 + k] : -1;
        ev[q] = in ? val[p0 + k] : T(0);
    }
}

int spmv_conv_ell_part(spmv_conv *C, int32_t w, int32_t *ecol, void *ev, spmv_err *err) {
    int64_t slots = (int64_t)C->nrows * w;
    if (slots == 0) return SPMV_OK;
    unsigned g = spmv_conv_grid(slots, 256);
    if (C->elem_size == 4)
        ell_part_kernel<float><<<g, 256, 0, C->s>>>(C->nrows, w, slots, C->ptr, C->col,
                                                    (const float *)C->val, ecol, (float *)ev);
    else
        ell_part_kernel<double><<<g, 256, 0, C->s>>>(C->nrows, w, slots, C->ptr, C->col,
                                                     (const double *)C->val, ecol, (double *)ev);
    return spmv_conv_launched("the ELL part", err);
}

int spmv_conv_ell(spmv_conv *C, spmv_err *err) {
    int rc = spmv_conv_read(C, nullptr, 0, err); /* the one wait: the width */
    if (rc) return rc;
    int32_t w = C->maxlen;
    int64_t slots = (int64_t)C->nrows * w;
    char what[48];
    snprintf(what, sizeof what, "ELL width %d", (int)w);
    rc = spmv_conv_guard(C, slots, what, err);
    if (rc) return rc;
    C->D.scalar[0] = w;
    rc = spmv_conv_out(C, 0, 0, slots, "ELL col", err);
    if (!rc) rc = spmv_conv_out(C, 1, 0, slots, "ELL values", err);
    return rc ? rc : spmv_conv_ell_part(C, w, (int32_t *)C->dev[0], C->dev[SPMV_MAXIDX], err);
}
