// kernels/convert.cuh: internal to kernels/ — conversion on the device from a resident CSR to every
// own format (kernels/convert.cu dispatches; each format's conversion sits in kernels/<format>.cu)
// SPDX-License-Identifier: BSD-3-Clause
//
// Each conversion gives the arrays, scalars and counts that csrc/<format>.c's spmv_fmt_size and
// spmv_fmt_fill_* give for the same CSR and parameters, bit for bit, and refuses what they refuse
// with the same codes.  The work is parallel device primitives (CUB's scans and radix sorts, one
// thread per entry or per stored slot), all queued on one stream (the legacy default stream, so
// that it follows the caller's work there) with its memory from a stream-ordered pool: no
// cudaMalloc, no cudaFree, no device-wide wait.  The host waits at most twice: once where a size
// decides an allocation (spmv_conv_read: the common pass's answer and the format's sizes in one
// copy to pinned memory), and once at the end; COO and CSR, whose sizes the host knows, wait once.
#ifndef SPMV_CONVERT_CUH
#define SPMV_CONVERT_CUH

#include <cstdint>
#include <cstdio>

#include "kern.h"
#include "spmv_cuda.h"

#define SPMV_CONV_MAXTMP 16

/* What the device tells the host, in one copy (spmv_conv_read): zeroed once at the start, then
 * written by the common pass and the format's passes (maxima and totals by block-reduced atomics). */
typedef struct {
    unsigned long long nbad;  /* ~((row << 32) | entry) of the first unsorted column; 0: none */
    unsigned long long nbad2; /* BRO-ELL: the same for the first symbol past fixed bits */
    unsigned long long n[2];  /* the format's totals */
    int32_t maxlen;           /* the longest row */
    int32_t k;                /* HYB's ELL width */
} spmv_conv_info;

/* bytes of the format's own device values read back with the info (spmv_conv_read's extra) */
#define SPMV_CONV_MAXEXTRA 16

/* One conversion: the CSR it reads, the result it builds, the workspace it holds. */
typedef struct {
    /* the input CSR (device) and what the common pass found */
    int32_t nrows, ncols;
    int64_t nnz;
    const int32_t *ptr, *col; /* ptr[nrows+1], col[nnz] */
    const void *val;          /* val[nnz] of elem_size bytes */
    int elem_size;
    int32_t maxlen;     /* the longest row, once spmv_conv_read ran */
    const int32_t *rid; /* the row of each entry, once spmv_conv_rid made it */
    double max_fill;    /* > 0 */
    cudaStream_t s;
    cudaMemPool_t pool;    /* the device's conversion pool (spmv_conv_alloc) */
    spmv_conv_info *info;  /* device, zeroed before the common pass */
    spmv_conv_info *hinfo; /* pinned host: what spmv_conv_read copied, the extra bytes after it */
    int read;              /* spmv_conv_read has run */
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
 * elem_size bytes), set in C->D and C->dev, from the pool in stream order; nothing for n == 0. */
int spmv_conv_out(spmv_conv *C, int is_val, int k, int64_t n, const char *what, spmv_err *err);
/* bytes of workspace from the pool, freed in stream order at the end of the conversion (NULL for
 * bytes <= 0). */
int spmv_conv_tmp(spmv_conv *C, int64_t bytes, const char *what, void **out, spmv_err *err);
/* bytes from the pool on C->s into *out (NULL for bytes <= 0): the allocator under both. */
int spmv_conv_alloc(spmv_conv *C, int64_t bytes, const char *what, void **out, spmv_err *err);
/* rows[nnz] = the row of each entry: each non-empty row's number scattered to its first entry, then
 * an inclusive max-scan (two passes over nnz words, where a binary search per entry costs ~log2(nrows)
 * dependent reads in every pass that needs rows). */
int spmv_conv_rows(spmv_conv *C, int32_t *rows, spmv_err *err);
/* The same, copying col into ccol[nnz] and the values into cval[nnz] in the scatter's pass. */
int spmv_conv_rows_copy(spmv_conv *C, int32_t *rows, int32_t *ccol, void *cval, spmv_err *err);
/* C->rid, made on first use into workspace. */
int spmv_conv_rid(spmv_conv *C, spmv_err *err);
/* The one wait for sizes: copies C->info (and extra_bytes <= SPMV_CONV_MAXEXTRA from extra, a
 * total the format's passes left on the device, to spmv_conv_extra) to pinned memory, waits for
 * the stream, sets C->maxlen and refuses unsorted columns as the host does.  At most once per
 * conversion; the dispatcher runs it at the end where the format did not. */
int spmv_conv_read(spmv_conv *C, const void *extra, int64_t extra_bytes, spmv_err *err);
/* Where spmv_conv_read put its extra bytes (pinned host memory). */
void *spmv_conv_extra(spmv_conv *C);
/* A parameter refused (rc, its message in *perr): the host checks the CSR before the parameters,
 * so the common pass's answer is read first and an unsorted CSR is refused as such. */
int spmv_conv_param_fail(spmv_conv *C, int rc, const spmv_err *perr, spmv_err *err);
/* Copy bytes from the device to the host and wait for the stream (refusal messages only). */
int spmv_conv_get(spmv_conv *C, void *host, const void *dev, int64_t bytes, spmv_err *err);
/* The host's padding guard (csrc/format.c spmv_fill_guard): SPMV_ENOTAPPLICABLE past int32 or past
 * max_fill * max(nnz, nrows) slots, the same message. */
int spmv_conv_guard(const spmv_conv *C, int64_t slots, const char *what, spmv_err *err);
/* The status of the last launch, named. */
int spmv_conv_launched(const char *what, spmv_err *err);
/* Blocks for a grid-stride loop over n items with `block` threads (at least 1, at most 65535*64). */
unsigned spmv_conv_grid(int64_t n, int block);
/* The same, at most SPMV_CONV_REDUCE_GRID: for kernels that end with an atomic per block on one
 * address (enough blocks to fill any GPU, not thousands of atomics in a row). */
#define SPMV_CONV_REDUCE_GRID 2048u
unsigned spmv_conv_grid_reduce(int64_t n, int block);
/* Bits needed for v >= 0 (0 for 0). */
int spmv_conv_bits(uint64_t v);

/* A value table (csrc/vtab.c; JAD's and CSR's vals) of the CSR's values, the host's arrays bit for
 * bit: their bits sorted and the distinct ones kept in *tab[*ntab] (workspace, ascending as
 * unsigned integers of elem_size bytes), the host's refusal past 2^vals of them (fmt names the
 * format), then the result's table (value array 0, C->D.nval[0] long) zeroed and filled and its
 * index words (index array 3, C->D.nidx[3] long) zeroed for the format's kernel to fill. */
int spmv_conv_vtab(spmv_conv *C, int32_t vals, const char *fmt, const void **tab, int32_t *ntab,
                   spmv_err *err);

/* HYB's ELL part (kernels/ell.cu): ecol[nrows*w] and ev[nrows*w] from the CSR, each row's
 * first min(len, w) entries, column-major, padding -1 and 0. */
int spmv_conv_ell_part(spmv_conv *C, int32_t w, int32_t *ecol, void *ev, spmv_err *err);

/* Matrix internals (kernels/plan.cu): the device format of M and its value size; a new matrix
 * owning the arrays dev[] laid out by D and its x and y, all from the conversion's pool
 * (spmv_cuda_matrix_free gives them back to it); it takes them whatever happens (freed on
 * failure). */
const spmv_dfmt *spmv_cuda_matrix_dfmt(const spmv_cuda_matrix *M, int *elem_size);
int spmv_cuda_matrix_adopt(const spmv_dfmt *D, void *const *dev, void *x, void *y, int elem_size,
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

/* The first i in [lo, hi) with a[i] >= key (hi if none), a[lo..hi) non-decreasing. */
template <typename I, typename K>
__device__ __forceinline__ int32_t spmv_conv_lower_bound(const I *__restrict__ a, int32_t lo,
                                                         int32_t hi, K key) {
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (a[mid] < key)
            lo = mid + 1;
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

/* Adds v of every thread of the block to *dst: a warp's sum by shuffles, one shared atomic per
 * warp, one global atomic per block (same-address atomics from every thread serialise).  Every
 * thread of the block calls it, outside divergent code. */
__device__ __forceinline__ void spmv_conv_block_add(unsigned long long *dst, unsigned long long v) {
    __shared__ unsigned long long part;
    if (threadIdx.x == 0) part = 0;
    __syncthreads();
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0 && v != 0) atomicAdd(&part, v);
    __syncthreads();
    if (threadIdx.x == 0 && part != 0) atomicAdd(dst, part);
}

/* The index of value v (its bits, K of its size) in tab[ntab] (spmv_conv_vtab's), as VB bits,
 * into slot q of the VB-bit index array vix: a byte or a short of its own, so threads never share
 * a word. */
template <int VB, typename K, typename T>
__device__ __forceinline__ void spmv_conv_vtab_put(const K *__restrict__ tab, int32_t ntab, T v,
                                                   void *__restrict__ vix, int64_t q) {
    K k;
    memcpy(&k, &v, sizeof k);
    int32_t lo = spmv_conv_lower_bound(tab, 0, ntab, k); /* k's own entry */
    if constexpr (VB == 8)
        static_cast<unsigned char *>(vix)[q] = (unsigned char)lo;
    else
        static_cast<unsigned short *>(vix)[q] = (unsigned short)lo;
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
