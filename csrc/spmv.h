// csrc/spmv.h: the one public header of pyspmv's C core — checks, features, formats, CPU kernels, timing
// SPDX-License-Identifier: BSD-3-Clause
#ifndef SPMV_H
#define SPMV_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status ------------------------------------------------------------------------------------ */

/* Every fallible function returns SPMV_OK or one of these negative codes. */
enum {
    SPMV_OK = 0,
    SPMV_EINVAL = -1,         /* bad argument: shape, length, parameter out of range */
    SPMV_EINDEX = -2,         /* an index out of its range */
    SPMV_EUNSORTED = -3,      /* column indices unsorted or duplicated within a row */
    SPMV_EOVERFLOW = -4,      /* a count past int32 (or a byte size past int64) */
    SPMV_ENOMEM = -5,         /* allocation failed; err->value holds the bytes asked for */
    SPMV_ENOTAPPLICABLE = -6, /* this format or kernel cannot serve this matrix; err->msg says why */
    SPMV_ESCHEMA = -7,        /* a model whose features or configurations do not match */
    SPMV_ENODEVICE = -8,      /* no usable GPU, or built without CUDA */
    SPMV_ECUDA = -9,          /* the CUDA runtime failed; err->msg holds its string */
    SPMV_ECUSPARSE = -10      /* cuSPARSE failed; err->msg holds its string */
};

/* Detail of a failure, filled by the callee when err != NULL.  Owned by the caller: no global errno,
 * no static buffer.  where/value/limit are -1 when they do not apply. */
typedef struct {
    int code;
    int64_t where; /* row, index or array position the failure is about */
    int64_t value; /* the offending value */
    int64_t limit; /* the bound it broke */
    char msg[160];
} spmv_err;

/* A static English name of a status code ("column index out of range", ...).  Never NULL. */
const char *spmv_strerror(int code);

/* ---- CSR --------------------------------------------------------------------------------------- */

/* A CSR pattern.  nnz = indptr[nrows].  Values travel separately, typed by the _f32/_f64 suffix, so
 * that pattern-only work (checks, features, size queries) needs no dtype. */
typedef struct {
    int32_t nrows, ncols;
    const int32_t *indptr;  /* [nrows+1] */
    const int32_t *indices; /* [nnz] */
} spmv_csr;

/* Check a CSR pattern, scipy's check_format list: nrows, ncols >= 1; indptr_len == nrows+1;
 * indptr[0] == 0, non-decreasing, indptr[nrows] == indices_len; 0 <= indices < ncols; strictly
 * increasing within each row (SPMV_EUNSORTED names the row for unsorted and duplicate indices alike).
 * O(nnz + nrows).  Every other function taking a spmv_csr requires A to pass this check. */
int spmv_csr_check(const spmv_csr *A, int64_t indptr_len, int64_t indices_len, spmv_err *err);

/* Find the first non-finite entry of v[n]; SPMV_EINVAL with where = its position, else 0.  O(n). */
int spmv_finite_check_f32(const float *v, int64_t n, spmv_err *err);
int spmv_finite_check_f64(const double *v, int64_t n, spmv_err *err);

/* ---- features ---------------------------------------------------------------------------------- */

/* GPU properties some features depend on (Guo's strips).  spmv_gpu_props_h100() fills the H100's. */
typedef struct {
    int32_t sm_count;        /* streaming multiprocessors */
    int32_t threads_per_sm;  /* resident threads per SM */
    int32_t warp_size;
} spmv_gpu_props;

void spmv_gpu_props_h100(spmv_gpu_props *p);

#define SPMV_NFEATURES 33

/* Name of feature i in [0, SPMV_NFEATURES), in the order spmv_features_compute writes them; NULL
 * outside that range.  Names and definitions: csrc/features.c. */
const char *spmv_feature_name(int i);

/* out[SPMV_NFEATURES] (caller-allocated) = every matrix feature of A, tiers 0 to 2.  Tier 2 is one
 * pass over indices.  Workspace O(nrows + ncols).  Returns 0, SPMV_EINVAL or SPMV_ENOMEM. */
int spmv_features_compute(const spmv_csr *A, const spmv_gpu_props *dev, double *out, spmv_err *err);

/* ---- storage formats --------------------------------------------------------------------------- */

typedef enum {
    SPMV_FMT_CSR = 0,
    SPMV_FMT_COO,
    SPMV_FMT_ELL,
    SPMV_FMT_SELL,
    SPMV_FMT_BROELL,
    SPMV_FMT_HYB,
    SPMV_FMT_DIA,
    SPMV_FMT_JAD,
    SPMV_FMT_BSR,
    SPMV_NFORMATS
} spmv_format;

/* Name of format f as ids spell it ("csr", "coo", "ell", "sell", "bro_ell", "hyb", "dia", "jad",
 * "bsr"); NULL outside [0, SPMV_NFORMATS). */
const char *spmv_format_name(int f);

#define SPMV_MAXIDX 4
#define SPMV_MAXVAL 2
#define SPMV_DEFAULT_MAX_FILL 20.0

/* A matrix in one storage format: up to SPMV_MAXIDX int32 arrays and SPMV_MAXVAL value arrays.
 * What each array and scalar holds is documented per format in csrc/<format>.c.
 *
 * Conversion is two calls (size first, then fill, so the caller owns every array):
 *   1. the caller sets format, nrows, ncols, param[] and max_fill, and calls spmv_fmt_size(), which
 *      sets nnz, scalar[] and the element counts nidx[], nval[] (0 for unused slots);
 *   2. the caller allocates idx[k] with nidx[k] int32 and val[k] with nval[k] reals (float for _f32,
 *      double for _f64) and calls spmv_fmt_fill_*().
 * Padding slots hold column -1 (or a presence bit of 0) and value 0, so the pattern survives: every
 * format converts back to the same CSR exactly, explicit zeros included. */
typedef struct {
    int format;       /* spmv_format */
    int32_t nrows, ncols;
    int64_t nnz;      /* stored entries of the CSR it came from */
    int32_t param[2]; /* format parameters (SELL: C, sigma; BRO-ELL: slice height, symbol bits;
                         HYB: ELL width or -1 for Bell-Garland; BSR: block size); see csrc/<fmt>.c */
    double max_fill;  /* refuse (SPMV_ENOTAPPLICABLE) when stored slots > max_fill * max(nnz, nrows);
                         <= 0 means SPMV_DEFAULT_MAX_FILL */
    int64_t scalar[4];               /* derived sizes: ELL width, number of slices, diagonals, ... */
    int64_t nidx[SPMV_MAXIDX];       /* element count of idx[k] */
    int64_t nval[SPMV_MAXVAL];       /* element count of val[k] */
    int32_t *idx[SPMV_MAXIDX];       /* caller-allocated */
    void *val[SPMV_MAXVAL];          /* caller-allocated: float or double as the call's suffix says */
} spmv_fmt;

/* Step 1 of conversion: sizes of F->format for A.  Returns 0, SPMV_EINVAL (bad param, message names
 * it and its range), SPMV_ENOTAPPLICABLE (padding past max_fill or a slot count past int32; message
 * says which and by how much) or SPMV_ENOMEM.  O(nnz + nrows). */
int spmv_fmt_size(const spmv_csr *A, spmv_fmt *F, spmv_err *err);

/* Step 2: fill F's caller-allocated arrays from A and values[nnz].  F as left by spmv_fmt_size.
 * Returns 0, SPMV_EINVAL or SPMV_ENOMEM (workspace).  O(nnz + stored slots). */
int spmv_fmt_fill_f32(const spmv_csr *A, const float *values, spmv_fmt *F, spmv_err *err);
int spmv_fmt_fill_f64(const spmv_csr *A, const double *values, spmv_fmt *F, spmv_err *err);

/* Back to CSR: indptr[nrows+1], indices[nnz], values[nnz] (caller-allocated, nnz = F->nnz).
 * Rows come out sorted, exactly as the CSR F was filled from.  Returns 0 or SPMV_ENOMEM. */
int spmv_fmt_to_csr_f32(const spmv_fmt *F, int32_t *indptr, int32_t *indices, float *values,
                        spmv_err *err);
int spmv_fmt_to_csr_f64(const spmv_fmt *F, int32_t *indptr, int32_t *indices, double *values,
                        spmv_err *err);

/* Bytes F stores (index arrays as int32, values at elem_size bytes each). */
int64_t spmv_fmt_bytes(const spmv_fmt *F, int elem_size);

/* ---- CPU kernels ------------------------------------------------------------------------------- */

/* y[nrows] = F * x[ncols] on the CPU with kernel variant `kernel` of F's format (see the registry
 * below; 0 is every format's default).  OpenMP threads where built with OpenMP.  Returns 0 or
 * SPMV_EINVAL for an unknown variant.  O(stored slots). */
int spmv_fmt_mv_f32(const spmv_fmt *F, int kernel, const float *x, float *y, spmv_err *err);
int spmv_fmt_mv_f64(const spmv_fmt *F, int kernel, const double *x, double *y, spmv_err *err);

/* ---- timing ------------------------------------------------------------------------------------ */

typedef struct {
    double median_ms, q25_ms, q75_ms, min_ms;
    int64_t runs; /* timed runs actually made (fewer than asked when the budget ran out) */
} spmv_timing;

/* One timed unit of work; returns 0 or a negative code, which stops the timing.  *ms arrives as -1;
 * work timed by its own clock (a GPU's events) stores its time there, else the harness's monotonic
 * clock around the call counts. */
typedef int (*spmv_work_fn)(void *ctx, double *ms, spmv_err *err);

/* Run fn `warmup` times, then up to `repeats` times each between two monotonic-clock reads, stopping
 * early once budget_s seconds of timed runs have passed (budget_s <= 0: no budget; at least one timed
 * run is always made).  Quantiles by linear interpolation, as numpy.quantile.  Returns 0, fn's code,
 * SPMV_EINVAL (repeats < 1 or warmup < 0) or SPMV_ENOMEM.  Used by the CPU and the GPU benches. */
int spmv_time(spmv_work_fn fn, void *ctx, int warmup, int repeats, double budget_s, spmv_timing *out,
              spmv_err *err);

/* Time spmv_fmt_mv_* of F with spmv_time().  x[ncols], y[nrows] caller-allocated. */
int spmv_fmt_bench_f32(const spmv_fmt *F, int kernel, const float *x, float *y, int warmup, int repeats,
                       double budget_s, spmv_timing *out, spmv_err *err);
int spmv_fmt_bench_f64(const spmv_fmt *F, int kernel, const double *x, double *y, int warmup,
                       int repeats, double budget_s, spmv_timing *out, spmv_err *err);

/* ---- configuration registry -------------------------------------------------------------------- */

enum { SPMV_DEV_CPU = 0, SPMV_DEV_CUDA = 1 };
enum { SPMV_LIB_PYSPMV = 0, SPMV_LIB_CUSPARSE = 1 };

#define SPMV_MAXGRID 8
#define SPMV_NPARAM 4
/* Parameter slots of a kernel: 0 and 1 are spmv_fmt.param (the format's own); 2 and 3 belong to a
 * GPU kernel's thread mapping, threads per row and threads per block. */
enum { SPMV_P_TPV = 2, SPMV_P_BLOCK = 3 };

/* One kernel of the registry; configurations are its expansion over the parameter grid.  A config id
 * is `id` followed by "/name=value" for each named parameter in slot order, e.g.
 * "cpu/sell/c=8/sigma=64" or "pyspmv/csr/vector/tpv=8/bs=256". */
typedef struct {
    const char *id;                           /* "library/format[/kernel]" */
    int device;                               /* SPMV_DEV_* */
    int library;                              /* SPMV_LIB_*: whose kernel */
    int format;                               /* spmv_format */
    int kernel;                               /* variant: spmv_fmt_mv_*'s, a CUDA kernel's, or a
                                                 cuSPARSE algorithm (0 = its default) */
    const char *param_name[SPMV_NPARAM];      /* names in ids; NULL: unused slot */
    int32_t grid[SPMV_NPARAM][SPMV_MAXGRID];  /* values configs() expands */
    int ngrid[SPMV_NPARAM];
    int32_t param_default[SPMV_NPARAM];       /* value when a parameter is unused or left out */
    int launches;                             /* GPU kernel launches and memsets per product; 0 on
                                                 the CPU (a per-configuration feature) */
    int deterministic;                        /* 1: same bits on every run */
} spmv_kernel_desc;

/* Number of registered kernels and the i-th one (NULL outside [0, count)). */
int spmv_kernel_count(void);
const spmv_kernel_desc *spmv_kernel_get(int i);

/* The kernel whose id is exactly `id` (without parameters), or NULL. */
const spmv_kernel_desc *spmv_kernel_find(const char *id);

#ifdef __cplusplus
}
#endif

#endif /* SPMV_H */
