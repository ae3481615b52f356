// kernels/convert.cuh: internal to kernels/ — conversion on the device from a resident CSR to every
// own format (kernels/convert.cu dispatches; each format's conversion sits in kernels/<format>.cu)
// SPDX-License-Identifier: BSD-3-Clause
//
// Each conversion gives the arrays, scalars and counts that csrc/<format>.c's spmv_fmt_size and
// spmv_fmt_fill_* give for the same CSR and parameters, bit for bit, and refuses what they refuse
// with the same codes.  The work is parallel device primitives (CUB's scans and radix sorts, one
// thread per entry or per stored slot) with a few small reads back to the host where a size
// decides an allocation.  Everything runs on the legacy default stream, synchronously.
#ifndef SPMV_CONVERT_CUH
#define SPMV_CONVERT_CUH

#include <cstdint>
#include <cstdio>

#include "kern.h"
#include "spmv_cuda.h"

#define SPMV_CONV_MAXTMP 16

/* One conversion: the CSR it reads, the result it builds, the workspace it holds. */
typedef struct {
    /* the input CSR (device) and what the common pass found */
    int32_t nrows, ncols;
    int64_t nnz;
    const int32_t *ptr, *col; /* ptr[nrows+1], col[nnz] */
    const void *val;          /* val[nnz] of elem_size bytes */
    int elem_size;
    int32_t maxlen;     /* the longest row */
    const int32_t *rid; /* the row of each entry, once spmv_conv_rid made it */
    double max_fill;    /* > 0 */
    cudaStream_t s;
    /* the result: D's arrays are dev[] (SPMV_MAXIDX index arrays, then SPMV_MAXVAL value arrays) */
    spmv_dfmt D;
    void *dev[SPMV_MAXIDX + SPMV_MAXVAL];
    /* workspace freed when the conversion ends */
    void *tmp[SPMV_CONV_MAXTMP];
    int ntmp;
} spmv_conv;

/* The conversion of one format: fills C->D (scalars, counts) and C->dev, or returns a code. */
typedef int (*spmv_conv_fn)(spmv_conv *C, spmv_err *err);

/* spmv_conv_<name>, beside each format's kernels in kernels/<name>.cu (csrc/formats.def's list). */
#define SPMV_FORMAT(CODE, name) int spmv_conv_##name(spmv_conv *C, spmv_err *err);
#include "formats.def"
#undef SPMV_FORMAT

/* ---- helpers (kernels/convert.cu) ---- */

/* Index array k (is_val 0) or value array k (is_val 1) of the result, n elements (int32 or
 * elem_size bytes), set in C->D and C->dev; nothing for n == 0. */
int spmv_conv_out(spmv_conv *C, int is_val, int k, int64_t n, const char *what, spmv_err *err);
/* bytes of workspace, freed at the end of the conversion (NULL for bytes <= 0). */
int spmv_conv_tmp(spmv_conv *C, int64_t bytes, const char *what, void **out, spmv_err *err);
/* rows[nnz] = the row of each entry: each non-empty row's number scattered to its first entry, then
 * an inclusive max-scan (two passes over nnz words, where a binary search per entry costs ~log2(nrows)
 * dependent reads in every pass that needs rows). */
int spmv_conv_rows(spmv_conv *C, int32_t *rows, spmv_err *err);
/* C->rid, made on first use into workspace. */
int spmv_conv_rid(spmv_conv *C, spmv_err *err);
/* Copy bytes from the device to the host and wait for the stream (a size deciding what follows). */
int spmv_conv_get(spmv_conv *C, void *host, const void *dev, int64_t bytes, spmv_err *err);
/* The host's padding guard (csrc/format.c spmv_fill_guard): SPMV_ENOTAPPLICABLE past int32 or past
 * max_fill * max(nnz, nrows) slots, the same message. */
int spmv_conv_guard(const spmv_conv *C, int64_t slots, const char *what, spmv_err *err);
/* The status of the last launch, named. */
int spmv_conv_launched(const char *what, spmv_err *err);
/* Blocks for a grid-stride loop over n items with `block` threads (at least 1, at most 65535*64). */
unsigned spmv_conv_grid(int64_t n, int block);
/* Bits needed for v >= 0 (0 for 0). */
int spmv_conv_bits(uint64_t v);

/* HYB's ELL part (kernels/ell.cu): ecol[nrows*w] and ev[nrows*w] from the CSR, each row's
 * first min(len, w) entries, column-major, padding -1 and 0. */
int spmv_conv_ell_part(spmv_conv *C, int32_t w, int32_t *ecol, void *ev, spmv_err *err);

/* Matrix internals (kernels/plan.cu): the device format of M and its value size; a new matrix
 * owning the arrays dev[] laid out by D (it takes them whatever happens: freed on failure), with
 * x and y allocated as spmv_cuda_matrix_create does. */
const spmv_dfmt *spmv_cuda_matrix_dfmt(const spmv_cuda_matrix *M, int *elem_size);
int spmv_cuda_matrix_adopt(const spmv_dfmt *D, void *const *dev, int elem_size,
                           spmv_cuda_matrix **out, spmv_err *err);

/* ---- device helpers ---- */

/* The row holding entry p < ptr[n]: the last r with ptr[r] <= p (empty rows skipped). */
__device__ __forceinline__ int32_t spmv_conv_row_of(const int32_t *__restrict__ ptr, int32_t n,
                                                    int64_t p) {
    int32_t lo = 0, hi = n; /* ptr[lo] <= p < ptr[hi] */
    while (hi - lo > 1) {
        int32_t mid = lo + (hi - lo) / 2;
        if ((int64_t)ptr[mid] <= p)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* The last s in [0, n) with a[s] <= q, for a[0] <= q and a non-decreasing (slice of slot q). */
template <typename I>
__device__ __forceinline__ int64_t spmv_conv_last_le(const I *__restrict__ a, int64_t n,
                                                     int64_t q) {
    int64_t lo = 0, hi = n;
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if ((int64_t)a[mid] <= q)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* The largest v of the warp's 32 lanes, in every lane (shuffles: any architecture). */
template <typename T> __device__ __forceinline__ T spmv_conv_warp_max(T v) {
    for (int o = 16; o > 0; o /= 2) {
        T w = __shfl_xor_sync(0xffffffffu, v, o);
        v = v > w ? v : w;
    }
    return v;
}

#define SPMV_CONV_LOOP(i, n)                                                                       \
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n);                      \
         i += (int64_t)gridDim.x * blockDim.x)

/* CUB's two-call pattern: call(tmp, bytes) is a CUB algorithm with its workspace first; asked for
 * the size, given workspace from spmv_conv_tmp, run on C->s. */
template <typename F>
static int spmv_conv_cub(spmv_conv *C, const char *what, F call, spmv_err *err) {
    size_t bytes = 0;
    void *t = nullptr;
    int rc = spmv_cuda_status(call(t, bytes), what, err);
    if (!rc) rc = spmv_conv_tmp(C, bytes > 16 ? (int64_t)bytes : 16, what, &t, err);
    if (!rc) rc = spmv_cuda_status(call(t, bytes), what, err);
    return rc;
}

#endif /* SPMV_CONVERT_CUH */
