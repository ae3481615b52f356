// kernels/convert.cu: conversion on the device from a resident CSR to every own format — the
// dispatcher, the pass every format starts with, the shared helpers, and reading a matrix back
// SPDX-License-Identifier: BSD-3-Clause
//
// spmv_cuda_matrix_convert checks what the host's spmv_fmt_size checks, in its order (the format
// code, then the CSR: at least one row and column, columns increasing within each row, then the
// format's parameters and refusals), so that a device conversion fails where and as the host's
// does.  The CSR's bounds (row pointers, column range) were checked when it was wrapped or
// uploaded.  One pass over rows and entries finds the longest row and the first unsorted entry;
// each format's conversion (spmv_conv_<format>, in kernels/<format>.cu) follows on the same stream.
#include <cstdio>
#include <cstring>

#include <cub/cub.cuh>

#include "convert.cuh"

int spmv_conv_out(spmv_conv *C, int is_val, int k, int64_t n, const char *what, spmv_err *err) {
    int slot = is_val ? SPMV_MAXIDX + k : k;
    int64_t bytes = n * (is_val ? (int64_t)C->elem_size : (int64_t)sizeof(int32_t));
    if (is_val)
        C->D.nval[k] = n;
    else
        C->D.nidx[k] = n;
    int rc = spmv_cuda_malloc(&C->dev[slot], bytes, what, err);
    if (is_val)
        C->D.val[k] = C->dev[slot];
    else
        C->D.idx[k] = (const int32_t *)C->dev[slot];
    return rc;
}

int spmv_conv_tmp(spmv_conv *C, int64_t bytes, const char *what, void **out, spmv_err *err) {
    *out = nullptr;
    if (bytes <= 0) return SPMV_OK;
    if (C->ntmp >= SPMV_CONV_MAXTMP)
        return spmv_cuda_fail(err, SPMV_EINVAL, "%s: more than %d workspace arrays", what,
                              SPMV_CONV_MAXTMP);
    /* stream-ordered: the pool gives repeated conversions their workspace without cudaMalloc */
    int rc = spmv_cuda_status(cudaMallocAsync(out, (size_t)bytes, C->s), what, err);
    if (rc == SPMV_ENOMEM && err) err->value = bytes;
    if (rc) *out = nullptr;
    if (!rc) C->tmp[C->ntmp++] = *out;
    return rc;
}

int spmv_conv_get(spmv_conv *C, void *host, const void *dev, int64_t bytes, spmv_err *err) {
    int rc =
        spmv_cuda_status(cudaMemcpyAsync(host, dev, (size_t)bytes, cudaMemcpyDeviceToHost, C->s),
                         "a size read back from the device", err);
    return rc ? rc : spmv_cuda_status(cudaStreamSynchronize(C->s), "device conversion", err);
}

int spmv_conv_guard(const spmv_conv *C, int64_t slots, const char *what, spmv_err *err) {
    double fill = C->max_fill;
    int64_t base = C->nnz > C->nrows ? C->nnz : C->nrows;
    int rc = SPMV_OK;
    if (slots > INT32_MAX) {
        rc = spmv_cuda_fail(err, SPMV_ENOTAPPLICABLE,
                            "%s needs %lld stored slots, past the int32 limit %d", what,
                            (long long)slots, INT32_MAX);
        if (err) err->value = slots, err->limit = INT32_MAX;
    } else if ((double)slots > fill * (double)base) {
        rc = spmv_cuda_fail(err, SPMV_ENOTAPPLICABLE,
                            "%s pads to %lld stored slots, %.1fx max(nnz, nrows) = %lld, past "
                            "max_fill=%g",
                            what, (long long)slots, (double)slots / (double)base, (long long)base,
                            fill);
        if (err) err->value = slots, err->limit = (int64_t)(fill * (double)base);
    }
    return rc;
}

int spmv_conv_launched(const char *what, spmv_err *err) {
    return spmv_cuda_status(cudaGetLastError(), what, err);
}

unsigned spmv_conv_grid(int64_t n, int block) {
    int64_t b = (n + block - 1) / block;
    if (b > 65535LL * 64) b = 65535LL * 64; /* grid-stride past that */
    return (unsigned)(b > 0 ? b : 1);
}

int spmv_conv_bits(uint64_t v) {
    int b = 0;
    while (b < 64 && (v >> b) != 0) b++;
    return b;
}

__global__ void rows_scatter_kernel(int32_t n, const int32_t *__restrict__ ptr,
                                    int32_t *__restrict__ first) {
    SPMV_CONV_LOOP(i, n) if (ptr[i] < ptr[i + 1]) first[ptr[i]] = (int32_t)i;
}

struct conv_max {
    __device__ __forceinline__ int32_t operator()(int32_t a, int32_t b) const {
        return a > b ? a : b;
    }
};

int spmv_conv_rows(spmv_conv *C, int32_t *rows, spmv_err *err) {
    int64_t nnz = C->nnz;
    int32_t *first = nullptr;
    if (nnz == 0) return SPMV_OK;
    int rc = spmv_conv_tmp(C, nnz * 4, "the rows of the entries", (void **)&first, err);
    if (!rc)
        rc = spmv_cuda_status(cudaMemsetAsync(first, 0, (size_t)nnz * 4, C->s),
                              "the rows of the entries", err);
    if (!rc) {
        rows_scatter_kernel<<<spmv_conv_grid(C->nrows, 256), 256, 0, C->s>>>(C->nrows, C->ptr,
                                                                             first);
        rc = spmv_conv_launched("the rows of the entries", err);
    }
    cudaStream_t s = C->s;
    if (!rc)
        rc = spmv_conv_cub(
            C, "the rows of the entries",
            [&](void *t, size_t &b) {
                return cub::DeviceScan::InclusiveScan(t, b, first, rows, conv_max(), nnz, s);
            },
            err);
    return rc;
}

int spmv_conv_rid(spmv_conv *C, spmv_err *err) {
    if (C->rid != nullptr || C->nnz == 0) return SPMV_OK;
    int32_t *rows = nullptr;
    int rc = spmv_conv_tmp(C, C->nnz * 4, "the rows of the entries", (void **)&rows, err);
    if (!rc) rc = spmv_conv_rows(C, rows, err);
    if (!rc) C->rid = rows;
    return rc;
}

/* ---- the common pass ---- */

struct common_out {
    unsigned long long bad; /* (row << 32) | entry of the first column not above its row's last */
    int32_t maxlen;
    int32_t pad;
};

__global__ void common_kernel(int32_t n, int64_t nnz, const int32_t *__restrict__ ptr,
                              const int32_t *__restrict__ col, common_out *out) {
    __shared__ int32_t bmax;
    if (threadIdx.x == 0) bmax = 0;
    __syncthreads();
    int32_t m = 0;
    SPMV_CONV_LOOP(i, n) m = max(m, ptr[i + 1] - ptr[i]);
    m = spmv_conv_warp_max(m);
    if ((threadIdx.x & 31) == 0 && m > 0) atomicMax(&bmax, m);
    __syncthreads();
    if (threadIdx.x == 0) atomicMax(&out->maxlen, bmax); /* from -1: at least 0 once run */
    /* a column not above the one before it is a fault unless it starts a row */
    SPMV_CONV_LOOP(p, nnz) {
        if (p == 0 || col[p] > col[p - 1]) continue;
        int32_t r = spmv_conv_row_of(ptr, n, p);
        if ((int64_t)ptr[r] != p) atomicMin(&out->bad, ((unsigned long long)r << 32) | (uint64_t)p);
    }
}

static int common_pass(spmv_conv *C, spmv_err *err) {
    common_out h, *d = nullptr;
    int rc = spmv_conv_tmp(C, sizeof h, "the common pass", (void **)&d, err);
    if (!rc) /* all bits set: bad = none, maxlen = -1 */
        rc = spmv_cuda_status(cudaMemsetAsync(d, 0xFF, sizeof h, C->s), "the common pass", err);
    if (!rc) {
        int64_t work = C->nnz > C->nrows ? C->nnz : C->nrows;
        common_kernel<<<spmv_conv_grid(work, 256), 256, 0, C->s>>>(C->nrows, C->nnz, C->ptr, C->col,
                                                                   d);
        rc = spmv_conv_launched("the common pass", err);
    }
    if (!rc) rc = spmv_conv_get(C, &h, d, sizeof h, err);
    if (rc) return rc;
    C->maxlen = h.maxlen;
    if (h.bad != ~0ULL) { /* the host's message (csrc/check.c), with the two columns */
        int32_t r = (int32_t)(h.bad >> 32), pair[2] = {0, 0};
        int64_t p = (int64_t)(h.bad & 0xffffffffULL);
        rc = spmv_conv_get(C, pair, C->col + p - 1, sizeof pair, err);
        if (rc) return rc;
        rc = spmv_cuda_fail(err, SPMV_EUNSORTED,
                            "row %d has column %d after column %d: indices must be sorted "
                            "and free of duplicates (canonicalise with sum_duplicates())",
                            r, pair[1], pair[0]);
        if (err) err->where = r, err->value = pair[1], err->limit = pair[0];
    }
    return rc;
}

/* ---- the dispatcher ---- */

static const spmv_conv_fn conversions[SPMV_NFORMATS] = {
#define SPMV_FORMAT(CODE, name) spmv_conv_##name,
#include "formats.def"
#undef SPMV_FORMAT
};

extern "C" int spmv_cuda_matrix_convert_fill(const spmv_cuda_matrix *S, int format,
                                             const int32_t param[2], double max_fill,
                                             spmv_cuda_matrix **out, spmv_err *err) {
    if (out == nullptr || S == nullptr || param == nullptr)
        return spmv_cuda_fail(err, SPMV_EINVAL, "the matrix, param or out is a NULL pointer");
    *out = nullptr;
    if (format < 0 || format >= SPMV_NFORMATS) {
        int rc = spmv_cuda_fail(err, SPMV_EINVAL, "format code %d is not in [0, %d)", format,
                                SPMV_NFORMATS);
        if (err) err->value = format, err->limit = SPMV_NFORMATS;
        return rc;
    }
    int es = 0;
    const spmv_dfmt *A = spmv_cuda_matrix_dfmt(S, &es);
    if (A->format != SPMV_FMT_CSR)
        return spmv_cuda_fail(err, SPMV_EINVAL,
                              "device conversion reads a CSR matrix; this one is %s: convert from "
                              "the CSR it came from",
                              spmv_format_name(A->format));
    if (A->nrows < 1)
        return spmv_cuda_fail(err, SPMV_EINVAL,
                              "conversion needs a CSR matrix with nrows >= 1 and indptr, not NULL");
    if (A->ncols < 1)
        return spmv_cuda_fail(err, SPMV_EINVAL,
                              "ncols is %d; an empty matrix (no columns) cannot be multiplied",
                              A->ncols);
    spmv_conv C;
    memset(&C, 0, sizeof C);
    C.nrows = A->nrows;
    C.ncols = A->ncols;
    C.nnz = A->nnz;
    C.ptr = A->idx[0];
    C.col = A->idx[1];
    C.val = A->val[0];
    C.elem_size = es;
    C.max_fill = max_fill > 0 ? max_fill : SPMV_DEFAULT_MAX_FILL; /* NaN too, as the host */
    C.s = 0; /* the legacy default stream: ordered after the caller's work there */
    C.D.format = format;
    C.D.nrows = A->nrows;
    C.D.ncols = A->ncols;
    C.D.nnz = A->nnz;
    C.D.param[0] = param[0];
    C.D.param[1] = param[1];
    int rc = common_pass(&C, err);
    if (!rc) rc = conversions[format](&C, err);
    for (int k = 0; k < C.ntmp; k++) cudaFreeAsync(C.tmp[k], C.s); /* after the work queued */
    spmv_err late; /* a failure already said keeps its message */
    int sync = spmv_cuda_status(cudaStreamSynchronize(C.s), "device conversion", rc ? &late : err);
    if (!rc) rc = sync;
    if (rc) {
        for (int k = 0; k < SPMV_MAXIDX + SPMV_MAXVAL; k++) cudaFree(C.dev[k]);
        cudaGetLastError();
        return rc;
    }
    return spmv_cuda_matrix_adopt(&C.D, C.dev, es, out, err);
}

extern "C" int spmv_cuda_matrix_convert(const spmv_cuda_matrix *S, int format,
                                        const int32_t param[2], spmv_cuda_matrix **out,
                                        spmv_err *err) {
    return spmv_cuda_matrix_convert_fill(S, format, param, 0.0, out, err);
}

extern "C" int spmv_cuda_matrix_elem_size(const spmv_cuda_matrix *M) {
    int es = 0;
    spmv_cuda_matrix_dfmt(M, &es);
    return es;
}

extern "C" int spmv_cuda_matrix_download(const spmv_cuda_matrix *M, spmv_fmt *F, spmv_err *err) {
    if (M == nullptr || F == nullptr)
        return spmv_cuda_fail(err, SPMV_EINVAL, "the matrix or F is a NULL pointer");
    int es = 0;
    const spmv_dfmt *D = spmv_cuda_matrix_dfmt(M, &es);
    for (int k = 0; k < SPMV_MAXIDX + SPMV_MAXVAL; k++) {
        int isval = k >= SPMV_MAXIDX, j = isval ? k - SPMV_MAXIDX : k;
        int64_t have = isval ? F->nval[j] : F->nidx[j], want = isval ? D->nval[j] : D->nidx[j];
        const void *a = isval ? F->val[j] : (const void *)F->idx[j];
        if (have != want || (want > 0 && a == nullptr)) {
            int rc = spmv_cuda_fail(err, SPMV_EINVAL,
                                    "download: %s[%d] has %lld entries%s; the device array has "
                                    "%lld (spmv_cuda_matrix_header gives the counts)",
                                    isval ? "val" : "idx", j, (long long)have,
                                    a == nullptr ? " and no buffer" : "", (long long)want);
            if (err) err->where = k, err->value = have, err->limit = want;
            return rc;
        }
    }
    for (int k = 0; k < SPMV_MAXIDX + SPMV_MAXVAL; k++) {
        int isval = k >= SPMV_MAXIDX, j = isval ? k - SPMV_MAXIDX : k;
        int64_t b = isval ? D->nval[j] * (int64_t)es : D->nidx[j] * (int64_t)sizeof(int32_t);
        void *dst = isval ? F->val[j] : (void *)F->idx[j];
        const void *src = isval ? D->val[j] : (const void *)D->idx[j];
        if (b <= 0) continue;
        int rc = spmv_cuda_status(cudaMemcpy(dst, src, (size_t)b, cudaMemcpyDeviceToHost),
                                  "download of a matrix array", err);
        if (rc) return rc;
    }
    F->format = D->format;
    F->nrows = D->nrows;
    F->ncols = D->ncols;
    F->nnz = D->nnz;
    memcpy(F->param, D->param, sizeof F->param);
    memcpy(F->scalar, D->scalar, sizeof F->scalar);
    return SPMV_OK;
}
