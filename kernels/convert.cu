// kernels/convert.cu: conversion on the device from a resident CSR to every own format — the
// dispatcher, the pass every format starts with, the shared helpers, and reading a matrix back
// SPDX-License-Identifier: BSD-3-Clause
//
// spmv_cuda_matrix_convert checks what the host's spmv_fmt_size checks, in its order (the format
// code, then the CSR: at least one row and column, columns increasing within each row, then the
// format's parameters and refusals), so that a device conversion fails where and as the host's
// does.  The CSR's bounds (row pointers, column range) were checked when it was wrapped or
// uploaded.  One pass over rows and entries finds the longest row and the first unsorted entry;
// each format's conversion (spmv_conv_<format>, in kernels/<format>.cu) follows on the same stream
// without waiting for it: its answer reaches the host with the format's own sizes, in the one read
// (spmv_conv_read), or at the end.
//
// Memory: every array of a conversion (workspace, CUB's temporaries, the result's arrays, its x
// and y) comes from one stream-ordered pool per device, made here with a release threshold, so that
// repeated conversions reuse the same memory instead of asking the driver each time (a cudaMalloc
// of a few MB costs tens of microseconds and cudaFree waits for the whole device).  The sizes are
// read into pinned host memory: a copy to pageable memory is staged and slower.
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#include <cub/cub.cuh>

#include "convert.cuh"

/* ---- memory ---- */

#define CONV_MAXDEV 64
#define CONV_PINNED 256 /* bytes of one pinned slot: the info and its extra bytes */

static std::mutex pool_mu;
static cudaMemPool_t pools[CONV_MAXDEV]; /* made on first use, kept for the process */

/* Unused memory the pool keeps across waits: 1/64 of the device's, at least 256 MiB (a matrix of
 * 1e6 entries converted with padding is tens of MB); past it the pool gives memory back to the
 * driver at the next wait, so that other allocators (CuPy's, PyTorch's) are not starved. */
static uint64_t pool_keep(void) {
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) cudaGetLastError();
    uint64_t keep = (uint64_t)total_b / 64, least = (uint64_t)256 << 20;
    return keep > least ? keep : least;
}

static int conv_pool(cudaMemPool_t *out, spmv_err *err) {
    int dev = 0, ok = 0;
    int rc = spmv_cuda_status(cudaGetDevice(&dev), "cudaGetDevice", err);
    if (rc) return rc;
    if (dev < 0 || dev >= CONV_MAXDEV)
        return spmv_cuda_fail(err, SPMV_EINVAL, "device conversion on CUDA device %d: at most %d",
                              dev, CONV_MAXDEV);
    std::lock_guard<std::mutex> lock(pool_mu);
    if (pools[dev] != nullptr) {
        *out = pools[dev];
        return SPMV_OK;
    }
    rc = spmv_cuda_status(cudaDeviceGetAttribute(&ok, cudaDevAttrMemoryPoolsSupported, dev),
                          "cudaDeviceGetAttribute(memory pools)", err);
    if (!rc && !ok)
        rc = spmv_cuda_fail(err, SPMV_ECUDA,
                            "device conversion needs stream-ordered allocation (memory pools), "
                            "which CUDA device %d does not offer",
                            dev);
    if (rc) return rc;
    cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = dev;
    cudaMemPool_t pool = nullptr;
    rc = spmv_cuda_status(cudaMemPoolCreate(&pool, &props), "cudaMemPoolCreate", err);
    if (rc) return rc;
    uint64_t keep = pool_keep();
    rc = spmv_cuda_status(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep),
                          "cudaMemPoolSetAttribute(release threshold)", err);
    if (rc) {
        cudaMemPoolDestroy(pool);
        cudaGetLastError();
        return rc;
    }
    *out = pools[dev] = pool;
    return SPMV_OK;
}

/* Pinned slots for the reads, one per conversion running at once, kept for the process: a
 * cudaHostAlloc per conversion would cost more than the copy it serves. */
static std::mutex pin_mu;
static std::vector<void *> pin_free;

static int pinned_get(void **out, spmv_err *err) {
    *out = nullptr;
    {
        std::lock_guard<std::mutex> lock(pin_mu);
        if (!pin_free.empty()) {
            *out = pin_free.back();
            pin_free.pop_back();
            return SPMV_OK;
        }
    }
    int rc = spmv_cuda_status(cudaHostAlloc(out, CONV_PINNED, cudaHostAllocPortable),
                              "cudaHostAlloc of the sizes' slot", err);
    if (rc) *out = nullptr;
    return rc;
}

static void pinned_put(void *p) {
    if (p == nullptr) return;
    try {
        std::lock_guard<std::mutex> lock(pin_mu);
        pin_free.push_back(p);
        return;
    } catch (...) {
    }
    cudaFreeHost(p);
    cudaGetLastError();
}

int spmv_conv_alloc(spmv_conv *C, int64_t bytes, const char *what, void **out, spmv_err *err) {
    *out = nullptr;
    if (bytes <= 0) return SPMV_OK;
    cudaError_t e = cudaMallocFromPoolAsync(out, (size_t)bytes, C->pool, C->s);
    if (e == cudaSuccess) return SPMV_OK;
    *out = nullptr;
    if (e != cudaErrorMemoryAllocation) return spmv_cuda_status(e, what, err);
    cudaGetLastError();
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) cudaGetLastError();
    spmv_cuda_fail(err, SPMV_ENOMEM,
                   "GPU out of memory: %s needs %lld bytes, %lld of %lld bytes free", what,
                   (long long)bytes, (long long)free_b, (long long)total_b);
    if (err) err->value = bytes, err->limit = (int64_t)free_b;
    return SPMV_ENOMEM;
}

int spmv_conv_out(spmv_conv *C, int is_val, int k, int64_t n, const char *what, spmv_err *err) {
    int slot = is_val ? SPMV_MAXIDX + k : k;
    int64_t bytes = n * (is_val ? (int64_t)C->elem_size : (int64_t)sizeof(int32_t));
    if (is_val)
        C->D.nval[k] = n;
    else
        C->D.nidx[k] = n;
    int rc = spmv_conv_alloc(C, bytes, what, &C->dev[slot], err);
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
    int rc = spmv_conv_alloc(C, bytes, what, out, err);
    if (!rc) C->tmp[C->ntmp++] = *out;
    return rc;
}

int spmv_conv_get(spmv_conv *C, void *host, const void *dev, int64_t bytes, spmv_err *err) {
    int rc =
        spmv_cuda_status(cudaMemcpyAsync(host, dev, (size_t)bytes, cudaMemcpyDeviceToHost, C->s),
                         "a value read back from the device", err);
    return rc ? rc : spmv_cuda_status(cudaStreamSynchronize(C->s), "device conversion", err);
}

/* ---- the read ---- */

void *spmv_conv_extra(spmv_conv *C) { return (char *)C->hinfo + sizeof(spmv_conv_info); }

/* Queue the copies of the info and the extra bytes to the pinned slot. */
static int queue_read(spmv_conv *C, const void *extra, int64_t extra_bytes, spmv_err *err) {
    if (C->read) return spmv_cuda_fail(err, SPMV_EINVAL, "device conversion read its sizes twice");
    if (extra_bytes < 0 || extra_bytes > SPMV_CONV_MAXEXTRA)
        return spmv_cuda_fail(err, SPMV_EINVAL, "device conversion: %lld extra bytes to read",
                              (long long)extra_bytes);
    C->read = 1;
    int rc = spmv_cuda_status(
        cudaMemcpyAsync(C->hinfo, C->info, sizeof(spmv_conv_info), cudaMemcpyDeviceToHost, C->s),
        "sizes read back from the device", err);
    if (!rc && extra_bytes > 0)
        rc = spmv_cuda_status(cudaMemcpyAsync(spmv_conv_extra(C), extra, (size_t)extra_bytes,
                                              cudaMemcpyDeviceToHost, C->s),
                              "sizes read back from the device", err);
    return rc;
}

/* What the read says, once the stream was waited for: the longest row, an unsorted column. */
static int finish_read(spmv_conv *C, spmv_err *err) {
    const spmv_conv_info *h = C->hinfo;
    C->maxlen = h->maxlen;
    if (h->nbad == 0) return SPMV_OK;
    /* the host's message (csrc/check.c), with the two columns */
    unsigned long long bad = ~h->nbad;
    int32_t r = (int32_t)(bad >> 32), pair[2] = {0, 0};
    int64_t p = (int64_t)(bad & 0xffffffffULL);
    int rc = spmv_conv_get(C, pair, C->col + p - 1, sizeof pair, err);
    if (rc) return rc;
    rc = spmv_cuda_fail(err, SPMV_EUNSORTED,
                        "row %d has column %d after column %d: indices must be sorted "
                        "and free of duplicates (canonicalise with sum_duplicates())",
                        r, pair[1], pair[0]);
    if (err) err->where = r, err->value = pair[1], err->limit = pair[0];
    return rc;
}

int spmv_conv_read(spmv_conv *C, const void *extra, int64_t extra_bytes, spmv_err *err) {
    int rc = queue_read(C, extra, extra_bytes, err);
    if (!rc) rc = spmv_cuda_status(cudaStreamSynchronize(C->s), "device conversion", err);
    return rc ? rc : finish_read(C, err);
}

int spmv_conv_param_fail(spmv_conv *C, int rc, const spmv_err *perr, spmv_err *err) {
    int first = C->read ? SPMV_OK : spmv_conv_read(C, nullptr, 0, err);
    if (first) return first;
    if (err) *err = *perr;
    return rc;
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

template <typename K>
static int vtab_of(spmv_conv *C, int32_t vals, const char *fmt, const void **uniq, int32_t *nuniq,
                   spmv_err *err) {
    int64_t nnz = C->nnz;
    cudaStream_t s = C->s;
    K *sorted = nullptr, *u = nullptr;
    int64_t *dn = nullptr, hn = 0;
    int rc = spmv_conv_tmp(C, nnz * (int64_t)sizeof(K), "sorted values (a value table)",
                           (void **)&sorted, err);
    if (!rc)
        rc = spmv_conv_tmp(C, nnz * (int64_t)sizeof(K), "distinct values (a value table)",
                           (void **)&u, err);
    if (!rc) rc = spmv_conv_tmp(C, 8, "distinct count (a value table)", (void **)&dn, err);
    const K *keys = static_cast<const K *>(C->val);
    if (!rc)
        rc = spmv_conv_cub(
            C, "value sort (a value table)",
            [&](void *t, size_t &b) {
                return cub::DeviceRadixSort::SortKeys(t, b, keys, sorted, nnz, 0,
                                                      8 * (int)sizeof(K), s);
            },
            err);
    if (!rc)
        rc = spmv_conv_cub(
            C, "distinct values (a value table)",
            [&](void *t, size_t &b) {
                return cub::DeviceSelect::Unique(t, b, sorted, u, dn, nnz, s);
            },
            err);
    if (!rc)
        rc = spmv_conv_get(C, &hn, dn, sizeof hn, err); /* a refusal's check: the one more wait */
    if (rc) return rc;
    int64_t len, words;
    rc = spmv_vtab_size(fmt, vals, nnz, hn, &len, &words, err); /* the host's refusal */
    if (rc) return rc;
    void *tab = C->dev[SPMV_MAXIDX];
    rc = spmv_cuda_status(cudaMemsetAsync(tab, 0, (size_t)C->D.nval[0] * (size_t)C->elem_size, s),
                          "value table", err);
    if (!rc)
        rc = spmv_cuda_status(
            cudaMemcpyAsync(tab, u, (size_t)hn * sizeof(K), cudaMemcpyDeviceToDevice, s),
            "value table", err);
    if (!rc)
        rc = spmv_cuda_status(
            cudaMemsetAsync(C->dev[3], 0, (size_t)C->D.nidx[3] * sizeof(int32_t), s),
            "value indices", err);
    *uniq = u;
    *nuniq = (int32_t)hn;
    return rc;
}

int spmv_conv_vtab(spmv_conv *C, int32_t vals, const char *fmt, const void **tab, int32_t *ntab,
                   spmv_err *err) {
    return C->elem_size == 4 ? vtab_of<uint32_t>(C, vals, fmt, tab, ntab, err)
                             : vtab_of<uint64_t>(C, vals, fmt, tab, ntab, err);
}

int spmv_conv_launched(const char *what, spmv_err *err) {
    return spmv_cuda_status(cudaGetLastError(), what, err);
}

unsigned spmv_conv_grid(int64_t n, int block) {
    int64_t b = (n + block - 1) / block;
    if (b > 65535LL * 64) b = 65535LL * 64; /* grid-stride past that */
    return (unsigned)(b > 0 ? b : 1);
}

unsigned spmv_conv_grid_reduce(int64_t n, int block) {
    unsigned g = spmv_conv_grid(n, block);
    return g < SPMV_CONV_REDUCE_GRID ? g : SPMV_CONV_REDUCE_GRID;
}

int spmv_conv_bits(uint64_t v) {
    int b = 0;
    while (b < 64 && (v >> b) != 0) b++;
    return b;
}

/* Row starts scattered; with ccol, the entries' columns and value bits (W: a word of the value's
 * size) copied in the same pass. */
template <typename W>
__global__ void rows_scatter_kernel(int32_t n, int64_t nnz, const int32_t *__restrict__ ptr,
                                    int32_t *__restrict__ first, const int32_t *__restrict__ col,
                                    const W *__restrict__ val, int32_t *__restrict__ ccol,
                                    W *__restrict__ cval) {
    int64_t work = ccol != nullptr && nnz > n ? nnz : n;
    SPMV_CONV_LOOP(i, work) {
        if (i < n && ptr[i] < ptr[i + 1]) first[ptr[i]] = (int32_t)i;
        if (ccol != nullptr && i < nnz) ccol[i] = col[i], cval[i] = val[i];
    }
}

struct conv_max {
    __device__ __forceinline__ int32_t operator()(int32_t a, int32_t b) const {
        return a > b ? a : b;
    }
};

int spmv_conv_rows(spmv_conv *C, int32_t *rows, spmv_err *err) {
    return spmv_conv_rows_copy(C, rows, nullptr, nullptr, err);
}

int spmv_conv_rows_copy(spmv_conv *C, int32_t *rows, int32_t *ccol, void *cval, spmv_err *err) {
    int64_t nnz = C->nnz;
    int32_t *first = nullptr;
    if (nnz == 0) return SPMV_OK;
    int rc = spmv_conv_tmp(C, nnz * 4, "the rows of the entries", (void **)&first, err);
    if (!rc)
        rc = spmv_cuda_status(cudaMemsetAsync(first, 0, (size_t)nnz * 4, C->s),
                              "the rows of the entries", err);
    if (!rc) {
        int64_t work = ccol != nullptr && nnz > C->nrows ? nnz : C->nrows;
        unsigned g = spmv_conv_grid(work, 256);
        if (C->elem_size == 4)
            rows_scatter_kernel<uint32_t><<<g, 256, 0, C->s>>>(C->nrows, nnz, C->ptr, first, C->col,
                                                               (const uint32_t *)C->val, ccol,
                                                               (uint32_t *)cval);
        else
            rows_scatter_kernel<unsigned long long><<<g, 256, 0, C->s>>>(
                C->nrows, nnz, C->ptr, first, C->col, (const unsigned long long *)C->val, ccol,
                (unsigned long long *)cval);
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

__global__ void common_kernel(int32_t n, int64_t nnz, const int32_t *__restrict__ ptr,
                              const int32_t *__restrict__ col, spmv_conv_info *out) {
    __shared__ int32_t bmax;
    if (threadIdx.x == 0) bmax = 0;
    __syncthreads();
    int32_t m = 0;
    SPMV_CONV_LOOP(i, n) m = max(m, ptr[i + 1] - ptr[i]);
    m = spmv_conv_warp_max(m);
    if ((threadIdx.x & 31) == 0 && m > 0) atomicMax(&bmax, m);
    __syncthreads();
    if (threadIdx.x == 0 && bmax > 0) atomicMax(&out->maxlen, bmax); /* from 0 */
    /* a column not above the one before it is a fault unless it starts a row: the lowest
     * (row << 32) | entry, as the largest of its complement (0: none) */
    SPMV_CONV_LOOP(p, nnz) {
        if (p == 0 || col[p] > col[p - 1]) continue;
        int32_t r = spmv_conv_row_of(ptr, n, p);
        if ((int64_t)ptr[r] != p)
            atomicMax(&out->nbad, ~(((unsigned long long)r << 32) | (uint64_t)p));
    }
}

/* The info zeroed and the common pass queued; its answer is read later (spmv_conv_read). */
static int common_pass(spmv_conv *C, spmv_err *err) {
    int rc = spmv_conv_tmp(C, sizeof(spmv_conv_info), "the common pass", (void **)&C->info, err);
    if (!rc)
        rc = spmv_cuda_status(cudaMemsetAsync(C->info, 0, sizeof(spmv_conv_info), C->s),
                              "the common pass", err);
    if (!rc) {
        int64_t work = C->nnz > C->nrows ? C->nnz : C->nrows;
        common_kernel<<<spmv_conv_grid_reduce(work, 256), 256, 0, C->s>>>(C->nrows, C->nnz, C->ptr,
                                                                          C->col, C->info);
        rc = spmv_conv_launched("the common pass", err);
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
    if (format == SPMV_FMT_CSR && param[0] != 0)
        return spmv_cuda_fail(err, SPMV_ENOTAPPLICABLE,
                              "csr with order=%d (a locality order) is converted on the host, not "
                              "on the device: pass the matrix from the host",
                              (int)param[0]);
    int es = 0;
    const spmv_dfmt *A = spmv_cuda_matrix_dfmt(S, &es);
    if (A->format != SPMV_FMT_CSR || A->param[0] != 0 || A->param[1] != 0)
        return spmv_cuda_fail(err, SPMV_EINVAL,
                              "device conversion reads a CSR matrix in its own order with its "
                              "values as they are; this one is %s (parameters %d, %d): convert "
                              "from the CSR it came from",
                              spmv_format_name(A->format), (int)A->param[0], (int)A->param[1]);
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
    int rc = conv_pool(&C.pool, err);
    if (!rc) rc = pinned_get((void **)&C.hinfo, err);
    if (!rc) rc = common_pass(&C, err);
    if (!rc) rc = conversions[format](&C, err);
    void *x = nullptr, *y = nullptr; /* the result's, as spmv_cuda_matrix_create makes them */
    if (!rc) rc = spmv_conv_alloc(&C, (int64_t)C.ncols * es, "x", &x, err);
    if (!rc) rc = spmv_conv_alloc(&C, (int64_t)C.nrows * es, "y", &y, err);
    /* COO and CSR never needed a size: the common pass's answer comes with the last wait */
    int at_end = !rc && !C.read;
    if (at_end) rc = queue_read(&C, nullptr, 0, err);
    for (int k = 0; k < C.ntmp; k++) cudaFreeAsync(C.tmp[k], C.s); /* after the work queued */
    spmv_err late; /* a failure already said keeps its message */
    int sync = spmv_cuda_status(cudaStreamSynchronize(C.s), "device conversion", rc ? &late : err);
    if (!rc) rc = sync;
    if (!rc && at_end) rc = finish_read(&C, err);
    pinned_put(C.hinfo);
    if (rc) { /* in stream order: nothing queued can still use them */
        for (int k = 0; k < SPMV_MAXIDX + SPMV_MAXVAL; k++)
            if (C.dev[k]) cudaFreeAsync(C.dev[k], C.s);
        if (x) cudaFreeAsync(x, C.s);
        if (y) cudaFreeAsync(y, C.s);
        cudaGetLastError();
        return rc;
    }
    return spmv_cuda_matrix_adopt(&C.D, C.dev, x, y, es, out, err);
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
