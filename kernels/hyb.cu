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

/* ---- Device conversion from a resident CSR (kernels/convert.cu dispatches) ---- */

// Device conversion to HYB — the ELL width by a radix sort of the row lengths, the COO part placed
// by a scan of what each row leaves over
//
// Layout: csrc/hyb.c.  Bell and Garland's width (k = -1, spmv_hyb_width) is the largest K that at
// least T = min(nrows, max(4096, ceil(nrows/3))) rows reach, which is the T-th largest row length:
// one descending radix sort of the lengths (over the bits of min(ncols, nnz), a bound on the
// longest row known without waiting) and a read of element T-1, on the device.  Each row's
// entries past K go to the COO part at the exclusive sum of max(len - K, 0) over the rows before
// it; K and the COO part's length (summed by the same pass) come back with the common pass's
// answer in one read.  The ELL part
// is csrc/ell.c's, width K.
#include "convert.cuh"
#include <cub/cub.cuh>

__global__ void hyb_lens_kernel(int32_t n, const int32_t *__restrict__ ptr,
                                uint32_t *__restrict__ lens) {
    SPMV_CONV_LOOP(i, n) lens[i] = (uint32_t)(ptr[i + 1] - ptr[i]);
}

/* The width (k >= 0 as given, else the T-th largest length: sorted descending) into info->k, and
 * what each row leaves to the COO part, 0 past the last row for the exclusive sum, its total
 * added to info->n[0]. */
__global__ void hyb_left_kernel(int32_t n, int32_t k, const uint32_t *__restrict__ sorted,
                                int32_t t, const int32_t *__restrict__ ptr, spmv_conv_info *info,
                                int32_t *__restrict__ left) {
    int32_t w = k >= 0 ? k : (int32_t)sorted[t - 1];
    if (blockIdx.x == 0 && threadIdx.x == 0) info->k = w;
    unsigned long long mine = 0;
    SPMV_CONV_LOOP(i, (int64_t)n + 1) {
        int32_t l = i < n ? max(ptr[i + 1] - ptr[i] - w, 0) : 0;
        left[i] = l;
        mine += (unsigned long long)l;
    }
    spmv_conv_block_add(&info->n[0], mine);
}

template <typename T>
__global__ void hyb_coo_kernel(int64_t nnz, int32_t k, const int32_t *__restrict__ ptr,
                               const int32_t *__restrict__ rid, const int32_t *__restrict__ col,
                               const T *__restrict__ val, const int32_t *__restrict__ start,
                               int32_t *__restrict__ crow, int32_t *__restrict__ ccol,
                               T *__restrict__ cv) {
    SPMV_CONV_LOOP(p, nnz) {
        int32_t i = rid[p];
        int64_t j = p - ptr[i];
        if (j < k) continue;
        int64_t q = start[i] + (j - k);
        crow[q] = i;
        ccol[q] = col[p];
        cv[q] = val[p];
    }
}

int spmv_conv_hyb(spmv_conv *C, spmv_err *err) {
    int32_t k = C->D.param[0], n = C->nrows;
    if (k < -1) {
        spmv_err perr;
        int rc = spmv_cuda_fail(&perr, SPMV_EINVAL,
                                "The 'k' parameter of hyb must be -1 (Bell-Garland width) or an "
                                "ELL width in [0, %d]. Got %d instead.",
                                INT32_MAX, k);
        perr.value = k, perr.limit = -1;
        return spmv_conv_param_fail(C, rc, &perr, err);
    }
    cudaStream_t s = C->s;
    uint32_t *lens = nullptr, *sorted = nullptr;
    int32_t *left = nullptr, *start = nullptr;
    int64_t third = ((int64_t)n + 2) / 3, t = third > 4096 ? third : 4096;
    if (t > n) t = n;
    int rc = SPMV_OK;
    if (k == -1) { /* n >= 1, so t >= 1 */
        int end_bit = spmv_conv_bits((uint64_t)(C->nnz < C->ncols ? C->nnz : C->ncols));
        rc = spmv_conv_tmp(C, (int64_t)n * 4, "HYB row lengths", (void **)&lens, err);
        if (!rc) rc = spmv_conv_tmp(C, (int64_t)n * 4, "HYB sorted lengths", (void **)&sorted, err);
        if (!rc) {
            hyb_lens_kernel<<<spmv_conv_grid(n, 256), 256, 0, s>>>(n, C->ptr, lens);
            rc = spmv_conv_launched("HYB row lengths", err);
        }
        if (!rc && end_bit == 0) /* no entries: every length 0 */
            rc = spmv_cuda_status(cudaMemsetAsync(sorted, 0, (size_t)n * 4, s), "HYB width", err);
        else if (!rc)
            rc = spmv_conv_cub(
                C, "HYB length sort",
                [&](void *tt, size_t &b) {
                    return cub::DeviceRadixSort::SortKeysDescending(tt, b, lens, sorted, n, 0,
                                                                    end_bit, s);
                },
                err);
    }
    if (!rc) rc = spmv_conv_tmp(C, ((int64_t)n + 1) * 4, "HYB COO counts", (void **)&left, err);
    if (!rc) rc = spmv_conv_tmp(C, ((int64_t)n + 1) * 4, "HYB COO starts", (void **)&start, err);
    if (!rc) {
        hyb_left_kernel<<<spmv_conv_grid_reduce((int64_t)n + 1, 256), 256, 0, s>>>(
            n, k, sorted, (int32_t)t, C->ptr, C->info, left);
        rc = spmv_conv_launched("HYB COO counts", err);
    }
    if (!rc) /* int32: the COO part holds at most nnz <= INT32_MAX entries */
        rc = spmv_conv_cub(
            C, "HYB COO starts",
            [&](void *tt, size_t &b) {
                return cub::DeviceScan::ExclusiveSum(tt, b, left, start, (int64_t)n + 1, s);
            },
            err);
    if (!rc) rc = spmv_conv_read(C, nullptr, 0, err); /* the one wait: width and COO length */
    if (rc) return rc;
    int32_t w = C->hinfo->k;
    int64_t coo = (int64_t)C->hinfo->n[0], slots = (int64_t)n * w;
    char what[80];
    snprintf(what, sizeof what, "HYB with ELL width %d and %lld COO entries", (int)w,
             (long long)coo);
    rc = spmv_conv_guard(C, slots + coo, what, err);
    if (rc) return rc;
    C->D.scalar[0] = w;
    C->D.scalar[1] = coo;
    rc = spmv_conv_out(C, 0, 0, slots, "HYB ELL col", err);
    if (!rc) rc = spmv_conv_out(C, 0, 1, coo, "HYB COO row", err);
    if (!rc) rc = spmv_conv_out(C, 0, 2, coo, "HYB COO col", err);
    if (!rc) rc = spmv_conv_out(C, 1, 0, slots, "HYB ELL values", err);
    if (!rc) rc = spmv_conv_out(C, 1, 1, coo, "HYB COO values", err);
    if (!rc) rc = spmv_conv_ell_part(C, w, (int32_t *)C->dev[0], C->dev[SPMV_MAXIDX], err);
    if (!rc && coo > 0) rc = spmv_conv_rid(C, err);
    if (rc || coo == 0) return rc;
    unsigned g = spmv_conv_grid(C->nnz, 256);
    int32_t *crow = (int32_t *)C->dev[1], *ccol = (int32_t *)C->dev[2];
    if (C->elem_size == 4)
        hyb_coo_kernel<float><<<g, 256, 0, s>>>(C->nnz, w, C->ptr, C->rid, C->col,
                                                (const float *)C->val, start, crow, ccol,
                                                (float *)C->dev[SPMV_MAXIDX + 1]);
    else
        hyb_coo_kernel<double><<<g, 256, 0, s>>>(C->nnz, w, C->ptr, C->rid, C->col,
                                                 (const double *)C->val, start, crow, ccol,
                                                 (double *)C->dev[SPMV_MAXIDX + 1]);
    return spmv_conv_launched("HYB COO part", err);
}
