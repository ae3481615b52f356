// kernels/bsr.cu: BSR on the GPU — the device conversion from a resident CSR (cuSPARSE runs
// its products: kernels/cusparse.cu)
// SPDX-License-Identifier: BSD-3-Clause
//
// Device conversion to BSR — block columns sorted within each block row by a segmented sort,
// numbered by a scan of the first of each, one thread per entry for the fill
//
// Layout: csrc/bsr.c.  The entries of block row br are the contiguous run
// [ptr[br*b], ptr[min(br*b+b, nrows)]); their block columns col/b, sorted within that run (CUB's
// segmented sort), give the block row's blocks in ascending order as the host's merge of its rows
// does.  A position starting a block row or holding a new block column starts a block; the
// exclusive sum of those starts numbers the blocks (the total read back with the common pass's
// answer, for the padding guard) and gives block_ptr.  One kernel writes block_ptr and block_col
// and zeroes values and presence bits; each entry then finds its block by a binary search in its
// block row's block columns, writes its value and sets its presence bit with an atomic OR.
#include "convert.cuh"
#include <cub/cub.cuh>

#define BSR_MAX_B 32

__global__ void bsr_seg_kernel(int32_t n, int32_t b, int64_t nbrows,
                               const int32_t *__restrict__ ptr, int32_t *__restrict__ seg) {
    SPMV_CONV_LOOP(br, nbrows + 1) seg[br] = ptr[br * b < n ? br * b : n];
}

__global__ void bsr_keys_kernel(int64_t nnz, int32_t b, const int32_t *__restrict__ col,
                                int32_t *__restrict__ keys) {
    SPMV_CONV_LOOP(p, nnz) keys[p] = col[p] / b;
}

/* start[p] = 1 where a block starts (in the sorted block columns), start[nnz] = 0; their count
 * added to *total. */
__global__ void bsr_start_kernel(int32_t b, int64_t nnz, const int32_t *__restrict__ rid,
                                 const int32_t *__restrict__ seg,
                                 const int32_t *__restrict__ sorted, int32_t *__restrict__ start,
                                 unsigned long long *total) {
    unsigned long long mine = 0;
    SPMV_CONV_LOOP(p, nnz + 1) {
        int32_t st = 0;
        if (p < nnz) st = (int64_t)seg[rid[p] / b] == p || sorted[p] != sorted[p - 1];
        start[p] = st;
        mine += (unsigned long long)st;
    }
    spmv_conv_block_add(total, mine);
}

/* block_ptr, block_col, and values and presence bits zeroed, in one pass. */
template <typename T>
__global__ void
bsr_layout_kernel(int64_t nbrows, int64_t nnz, int64_t slots, int64_t nwords,
                  const int32_t *__restrict__ seg, const int32_t *__restrict__ start,
                  const int32_t *__restrict__ num, const int32_t *__restrict__ sorted,
                  int32_t *__restrict__ bp, int32_t *__restrict__ bcol, unsigned *__restrict__ bits,
                  T *__restrict__ v) {
    int64_t work = nbrows + 1 > nnz ? nbrows + 1 : nnz;
    if (slots > work) work = slots;
    SPMV_CONV_LOOP(q, work) {
        if (q <= nbrows) bp[q] = num[seg[q]];
        if (q < nnz && start[q]) bcol[num[q]] = sorted[q];
        if (q < slots) v[q] = T(0);
        if (q < nwords) bits[q] = 0u;
    }
}

template <typename T>
__global__ void bsr_fill_kernel(int32_t b, int64_t nnz, const int32_t *__restrict__ rid,
                                const int32_t *__restrict__ col, const T *__restrict__ val,
                                const int32_t *__restrict__ bp, const int32_t *__restrict__ bcol,
                                unsigned *__restrict__ bits, T *__restrict__ v) {
    SPMV_CONV_LOOP(p, nnz) {
        int32_t i = rid[p], br = i / b, j = col[p], bc = j / b;
        int32_t lo = spmv_conv_lower_bound(bcol, bp[br], bp[br + 1], bc); /* bc's own block */
        int64_t q = ((int64_t)lo * b + (i - br * b)) * b + (j - bc * b);
        v[q] = val[p];
        atomicOr(bits + (q >> 5), 1u << (q & 31));
    }
}

int spmv_conv_bsr(spmv_conv *C, spmv_err *err) {
    int32_t b = C->D.param[0], n = C->nrows;
    if (b < 1 || b > BSR_MAX_B) {
        spmv_err perr;
        int rc = spmv_cuda_fail(&perr, SPMV_EINVAL,
                                "The 'b' parameter of bsr must be a block size in [1, %d]. Got %d "
                                "instead.",
                                BSR_MAX_B, b);
        perr.value = b, perr.limit = BSR_MAX_B;
        return spmv_conv_param_fail(C, rc, &perr, err);
    }
    int64_t nnz = C->nnz, nbrows = ((int64_t)n + b - 1) / b;
    int64_t nbcols = ((int64_t)C->ncols + b - 1) / b;
    cudaStream_t s = C->s;
    int32_t *seg = nullptr, *keys = nullptr, *sorted = nullptr, *start = nullptr, *num = nullptr;
    int rc = spmv_conv_tmp(C, (nbrows + 1) * 4, "BSR block rows", (void **)&seg, err);
    if (!rc) rc = spmv_conv_tmp(C, nnz * 4, "BSR block columns", (void **)&keys, err);
    if (!rc) rc = spmv_conv_tmp(C, nnz * 4, "BSR sorted block columns", (void **)&sorted, err);
    if (!rc) rc = spmv_conv_tmp(C, (nnz + 1) * 4, "BSR block starts", (void **)&start, err);
    if (!rc) rc = spmv_conv_tmp(C, (nnz + 1) * 4, "BSR block numbers", (void **)&num, err);
    if (rc) return rc;
    bsr_seg_kernel<<<spmv_conv_grid(nbrows + 1, 256), 256, 0, s>>>(n, b, nbrows, C->ptr, seg);
    rc = spmv_conv_launched("BSR block rows", err);
    if (!rc && nnz > 0) {
        bsr_keys_kernel<<<spmv_conv_grid(nnz, 256), 256, 0, s>>>(nnz, b, C->col, keys);
        rc = spmv_conv_launched("BSR block columns", err);
        if (!rc)
            rc = spmv_conv_cub(
                C, "BSR block column sort",
                [&](void *t, size_t &bytes) {
                    return cub::DeviceSegmentedSort::SortKeys(t, bytes, keys, sorted, nnz, nbrows,
                                                              seg, seg + 1, s);
                },
                err);
    }
    if (!rc) rc = spmv_conv_rid(C, err);
    if (!rc) {
        bsr_start_kernel<<<spmv_conv_grid_reduce(nnz + 1, 256), 256, 0, s>>>(
            b, nnz, C->rid, seg, sorted, start, &C->info->n[0]);
        rc = spmv_conv_launched("BSR block starts", err);
    }
    if (!rc)
        rc = spmv_conv_cub(
            C, "BSR block numbers",
            [&](void *t, size_t &bytes) {
                return cub::DeviceScan::ExclusiveSum(t, bytes, start, num, nnz + 1, s);
            },
            err);
    if (!rc) rc = spmv_conv_read(C, nullptr, 0, err); /* the one wait: the blocks' count */
    if (rc) return rc;
    int64_t nblocks = (int64_t)C->hinfo->n[0], slots = nblocks * b * b, nwords = (slots + 31) / 32;
    char what[48];
    snprintf(what, sizeof what, "BSR with b=%d", (int)b);
    rc = spmv_conv_guard(C, slots, what, err);
    if (rc) return rc;
    C->D.scalar[0] = nbrows;
    C->D.scalar[1] = nbcols;
    C->D.scalar[2] = nblocks;
    rc = spmv_conv_out(C, 0, 0, nbrows + 1, "BSR block_ptr", err);
    if (!rc) rc = spmv_conv_out(C, 0, 1, nblocks, "BSR block_col", err);
    if (!rc) rc = spmv_conv_out(C, 0, 2, nwords, "BSR presence bits", err);
    if (!rc) rc = spmv_conv_out(C, 1, 0, slots, "BSR values", err);
    if (rc) return rc;
    int32_t *bp = (int32_t *)C->dev[0], *bcol = (int32_t *)C->dev[1];
    unsigned *pbits = (unsigned *)C->dev[2];
    int64_t work = nbrows + 1 > nnz ? nbrows + 1 : nnz;
    unsigned g0 = spmv_conv_grid(slots > work ? slots : work, 256);
    if (C->elem_size == 4)
        bsr_layout_kernel<float><<<g0, 256, 0, s>>>(nbrows, nnz, slots, nwords, seg, start, num,
                                                    sorted, bp, bcol, pbits,
                                                    (float *)C->dev[SPMV_MAXIDX]);
    else
        bsr_layout_kernel<double><<<g0, 256, 0, s>>>(nbrows, nnz, slots, nwords, seg, start, num,
                                                     sorted, bp, bcol, pbits,
                                                     (double *)C->dev[SPMV_MAXIDX]);
    rc = spmv_conv_launched("BSR layout", err);
    if (rc || nnz == 0) return rc;
    unsigned g = spmv_conv_grid(nnz, 256);
    if (C->elem_size == 4)
        bsr_fill_kernel<float><<<g, 256, 0, s>>>(b, nnz, C->rid, C->col, (const float *)C->val, bp,
                                                 bcol, pbits, (float *)C->dev[SPMV_MAXIDX]);
    else
        bsr_fill_kernel<double><<<g, 256, 0, s>>>(b, nnz, C->rid, C->col, (const double *)C->val,
                                                  bp, bcol, pbits, (double *)C->dev[SPMV_MAXIDX]);
    return spmv_conv_launched("BSR fill", err);
}
