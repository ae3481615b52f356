// kernels/dia.cu: DIA on the GPU — a row a thread (two if diagonals are few), diagonal by diagonal
// SPDX-License-Identifier: BSD-3-Clause
//
// A thread takes a row (or two, a block apart) and walks the diagonals in ascending order.
// Diagonal d is stored by row, so a warp reads 32 consecutive words of data[d*nrows + i] and of
// x[i + offsets[d]]: both streams coalesce, with no index array per entry.  offsets[d] is the
// same address for the whole warp, one broadcast load served by L1 (no shared-memory staging, so
// no block barrier, and any number of diagonals and any block size work).  As on the CPU, padding
// zeros inside the matrix are multiplied by x (the Python layer refuses a non-finite x for DIA)
// and the presence bits are not read.  Row sums run in diagonal order: deterministic, and the
// same bits whichever of the two kernels runs.
#include "kern.h"

/* Which loads a thread keeps in flight (studies/2026-12-02-h200-refresh, dia_ab.md, and
 * studies/2026-12-02-dia-rows-per-thread).  With one row a thread and the diagonal loop unrolled 4,
 * a thread has four diagonals' loads in flight: the faster kernel wherever the diagonals are many
 * (a median 1.12x, up to 1.55x, over two rows a thread on 125 matrices, both types).  Written as
 * below (a scalar sum, an early return, a 32-bit row) it ran a median 1.03x faster again, up to
 * 1.40x, than as the two-row loop with one row.  A matrix of few diagonals leaves the unrolled loop
 * little to overlap (a diagonal matrix gave each thread 8 bytes to load); there, where the rows are
 * also many enough that half as many threads still keep the GPU busy, two rows a thread ran
 * 1.02-1.34x faster on diagonal, 2-D and 3-D stencil and banded matrices of 2.3e5 rows and more;
 * on 30 such matrix/type pairs below 2e5 rows, 0.93-1.01x. */
constexpr int64_t DIA_FEW_DIAGONALS = 8;
constexpr int32_t DIA_MANY_ROWS = 200000;

template <typename T>
__global__ void __launch_bounds__(1024)
    dia_row_kernel(int32_t nrows, int32_t ncols, int64_t ndiag, const int32_t *__restrict__ offsets,
                   const T *__restrict__ data, const T *__restrict__ x, T *__restrict__ y) {
    int64_t i64 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i64 >= nrows) return;
    int32_t i = (int32_t)i64;
    T sum = 0;
#pragma unroll 4
    for (int64_t d = 0; d < ndiag; d++) {
        int32_t o = __ldg(offsets + d);
        if (o >= -i && o < ncols - i) /* 0 <= i + o < ncols, without overflow */
            sum += __ldcs(data + d * nrows + i) * __ldg(x + i + o);
    }
    y[i] = sum;
}

/* Two rows a thread: rows r0 and r0 + blockDim.x of its block's tile of 2 * blockDim.x rows, so
 * that every load still coalesces across the warp; each row's sum in the same order as above. */
template <typename T>
__global__ void __launch_bounds__(1024)
    dia_pair_kernel(int32_t nrows, int32_t ncols, int64_t ndiag,
                    const int32_t *__restrict__ offsets, const T *__restrict__ data,
                    const T *__restrict__ x, T *__restrict__ y) {
    int64_t r0 = (int64_t)blockIdx.x * blockDim.x * 2 + threadIdx.x;
    T sum[2] = {0, 0};
#pragma unroll 1
    for (int64_t d = 0; d < ndiag; d++) {
        int32_t o = __ldg(offsets + d);
#pragma unroll
        for (int j = 0; j < 2; j++) {
            int64_t i = r0 + (int64_t)j * blockDim.x;
            if (i < nrows && o >= -i && o < ncols - i) /* 0 <= i + o < ncols */
                sum[j] += __ldcs(data + d * nrows + i) * __ldg(x + i + o);
        }
    }
#pragma unroll
    for (int j = 0; j < 2; j++) {
        int64_t i = r0 + (int64_t)j * blockDim.x;
        if (i < nrows) y[i] = sum[j];
    }
}

template <typename T>
static cudaError_t dia_run(const spmv_dfmt *D, const spmv_launch *L, const void *aux, const T *x,
                           T *y, cudaStream_t s) {
    (void)aux;
    if (D->scalar[0] <= DIA_FEW_DIAGONALS && D->nrows >= DIA_MANY_ROWS)
        dia_pair_kernel<T>
            <<<spmv_cuda_blocks(((int64_t)D->nrows + 1) / 2, L->block), L->block, 0, s>>>(
                D->nrows, D->ncols, D->scalar[0], D->idx[0], (const T *)D->val[0], x, y);
    else
        dia_row_kernel<T><<<spmv_cuda_blocks(D->nrows, L->block), L->block, 0, s>>>(
            D->nrows, D->ncols, D->scalar[0], D->idx[0], (const T *)D->val[0], x, y);
    return cudaGetLastError();
}

SPMV_CUDA_KERNEL(dia, NULL, NULL, dia_run);

/* ---- Device conversion from a resident CSR (kernels/convert.cu dispatches) ---- */

// Device conversion to DIA — offsets marked and numbered by a scan, one thread per entry for data
// and presence bits
//
// Layout: csrc/dia.c.  Every entry marks its offset col - row in a flag array over the
// nrows + ncols - 1 possible offsets (as dia_mark does); the exclusive sum of the flags numbers
// the diagonals in ascending offset order and counts them (read back with the common pass's
// answer, for the padding guard).  One kernel then writes the offsets and zeroes data and presence
// bits; each entry writes its value at diagonal*nrows + row and sets its presence bit with an
// atomic OR, since neighbouring rows share a word.
#include "convert.cuh"
#include <cstring>
#include <cub/cub.cuh>

__global__ void dia_mark_kernel(int32_t n, int64_t nnz, const int32_t *__restrict__ rid,
                                const int32_t *__restrict__ col, int32_t *__restrict__ mark) {
    SPMV_CONV_LOOP(p, nnz) mark[(int64_t)col[p] - rid[p] + n - 1] = 1;
}

/* The offsets, and data and presence bits zeroed, in one pass. */
template <typename T>
__global__ void dia_offsets_kernel(int32_t n, int64_t span, int64_t slots, int64_t nwords,
                                   const int32_t *__restrict__ mark,
                                   const int32_t *__restrict__ num, int32_t *__restrict__ off,
                                   unsigned *__restrict__ bits, T *__restrict__ data) {
    int64_t work = span > slots ? span : slots;
    SPMV_CONV_LOOP(o, work) {
        if (o < span && mark[o]) off[num[o]] = (int32_t)(o - (n - 1));
        if (o < slots) data[o] = T(0);
        if (o < nwords) bits[o] = 0u;
    }
}

template <typename T>
__global__ void dia_fill_kernel(int32_t n, int64_t nnz, const int32_t *__restrict__ rid,
                                const int32_t *__restrict__ col, const T *__restrict__ val,
                                const int32_t *__restrict__ num, unsigned *__restrict__ bits,
                                T *__restrict__ data) {
    SPMV_CONV_LOOP(p, nnz) {
        int32_t i = rid[p];
        int64_t s = (int64_t)num[(int64_t)col[p] - i + n - 1] * n + i;
        data[s] = val[p];
        atomicOr(bits + (s >> 5), 1u << (s & 31));
    }
}

int spmv_conv_dia(spmv_conv *C, spmv_err *err) {
    int32_t n = C->nrows;
    int64_t span = (int64_t)n + C->ncols - 1, nnz = C->nnz;
    int32_t *mark = nullptr, *num = nullptr;
    cudaStream_t s = C->s;
    int rc = spmv_conv_tmp(C, (span + 1) * 4, "DIA offset marks", (void **)&mark, err);
    if (!rc) rc = spmv_conv_tmp(C, (span + 1) * 4, "DIA diagonal numbers", (void **)&num, err);
    if (!rc)
        rc = spmv_cuda_status(cudaMemsetAsync(mark, 0, (size_t)(span + 1) * 4, s),
                              "DIA offset marks", err);
    if (!rc && nnz > 0) rc = spmv_conv_rid(C, err);
    if (!rc && nnz > 0) {
        dia_mark_kernel<<<spmv_conv_grid(nnz, 256), 256, 0, s>>>(n, nnz, C->rid, C->col, mark);
        rc = spmv_conv_launched("DIA offset marks", err);
    }
    if (!rc)
        rc = spmv_conv_cub(
            C, "DIA diagonal numbers",
            [&](void *t, size_t &b) {
                return cub::DeviceScan::ExclusiveSum(t, b, mark, num, span + 1, s);
            },
            err);
    /* the one wait: the diagonals' count, num[span] */
    if (!rc) rc = spmv_conv_read(C, num + span, sizeof(int32_t), err);
    if (rc) return rc;
    int32_t nd = 0;
    memcpy(&nd, spmv_conv_extra(C), sizeof nd);
    int64_t ndiag = nd, slots = ndiag * n;
    char what[48];
    snprintf(what, sizeof what, "DIA with %lld diagonals", (long long)ndiag);
    rc = spmv_conv_guard(C, slots, what, err);
    if (rc) return rc;
    C->D.scalar[0] = ndiag;
    int64_t nwords = (slots + 31) / 32;
    rc = spmv_conv_out(C, 0, 0, ndiag, "DIA offsets", err);
    if (!rc) rc = spmv_conv_out(C, 0, 1, nwords, "DIA presence bits", err);
    if (!rc) rc = spmv_conv_out(C, 1, 0, slots, "DIA data", err);
    if (rc || ndiag == 0) return rc;
    void *data = C->dev[SPMV_MAXIDX];
    unsigned *pbits = (unsigned *)C->dev[1];
    int32_t *off = (int32_t *)C->dev[0];
    unsigned g0 = spmv_conv_grid(span > slots ? span : slots, 256);
    if (C->elem_size == 4)
        dia_offsets_kernel<float>
            <<<g0, 256, 0, s>>>(n, span, slots, nwords, mark, num, off, pbits, (float *)data);
    else
        dia_offsets_kernel<double>
            <<<g0, 256, 0, s>>>(n, span, slots, nwords, mark, num, off, pbits, (double *)data);
    rc = spmv_conv_launched("DIA offsets", err);
    if (rc) return rc;
    unsigned g = spmv_conv_grid(nnz, 256);
    if (C->elem_size == 4)
        dia_fill_kernel<float><<<g, 256, 0, s>>>(n, nnz, C->rid, C->col, (const float *)C->val, num,
                                                 pbits, (float *)data);
    else
        dia_fill_kernel<double><<<g, 256, 0, s>>>(n, nnz, C->rid, C->col, (const double *)C->val,
                                                  num, pbits, (double *)data);
    return spmv_conv_launched("DIA fill", err);
}
