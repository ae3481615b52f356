// csrc/spmv.h: the one public header of pyspmv's C core — checks, features, formats, CPU kernels, timing
// SPDX-License-Identifier: BSD-3-Clause
#ifndef SPMV_H
#define SPMV_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* SPMV_API marks every function of the core's interface.  Empty in the library.  An exported model
 * header (pyspmv.export_c) defines it as `static` before it textually includes the core's sources,
 * so that its copy has internal linkage and clashes neither with libspmv nor with another header. */
#ifndef SPMV_API
#define SPMV_API
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
    SPMV_ENOTAPPLICABLE = -6, /* this format or kernel cannot serve A; err->msg says why */
    SPMV_ESCHEMA = -7,        /* a model whose features or configurations do not match */
    SPMV_ENODEVICE = -8,      /* no usable GPU, or built without CUDA */
    SPMV_ECUDA = -9,          /* the CUDA runtime failed; err->msg holds its string */
    SPMV_ECUSPARSE = -10,     /* cuSPARSE failed; err->msg holds its string */
    SPMV_EINTR = -11          /* the caller's spmv_interrupt check stopped a long call */
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
SPMV_API const char *spmv_strerror(int code);

/* ---- interruption ------------------------------------------------------------------------------ */

/* A caller's way to stop a long call (model evaluation, ranking) from outside, with no global
 * state: the call takes it as an argument and, from the calling thread, calls fn(arg) between
 * units of work (a tree, a row, a point or support vector) once every SPMV_POLL_STEPS steps of
 * work or so; a nonzero return stops it with SPMV_EINTR (outputs then undefined, nothing for the
 * caller to free).  A NULL spmv_interrupt, or a NULL fn, is never asked.  pyspmv's glue passes a
 * check that takes the GIL back and runs Python's signal handlers, so that Ctrl-C stops a ranking
 * running without the GIL. */
typedef struct {
    int (*fn)(void *arg);
    void *arg;
} spmv_interrupt;

/* Steps (tree nodes visited, multiply-adds, terms) between two calls of an spmv_interrupt check:
 * 8 ms of tree walks on a 2-core VM where nodes are read in order (1.8 ns a step), 70 ms where
 * every step misses the cache (17 ns), so that a check that takes a lock back costs nothing
 * measurable and a stop arrives within a tenth of a second.  A build may set it
 * (-DSPMV_POLL_STEPS=N, the core and its callers alike): the fuzz harness asks every 16 steps, so
 * that its small models stop at every place a large one can. */
#ifndef SPMV_POLL_STEPS
#define SPMV_POLL_STEPS ((int64_t)1 << 22)
#endif

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
SPMV_API int spmv_csr_check(const spmv_csr *A, int64_t indptr_len, int64_t indices_len,
                            spmv_err *err);

/* A's pattern copied into indptr_out[nrows+1] and indices_out[indptr[nrows]], and its values
 * (value_size 4 or 8 bytes: float or double) into values_out, converted to out_size bytes, as
 * spmv_csr_check checks them: one pass over the arrays, on the threads where they are large.  The
 * outputs are the caller's, of those lengths (the caller's arrays may be read-only; a copy is what
 * a library that keeps a matrix takes of them).  Returns 0 or spmv_csr_check's status and message;
 * on failure the outputs hold partial copies.  SPMV_EINVAL for a size that is not 4 or 8. */
SPMV_API int spmv_csr_copy(const spmv_csr *A, int64_t indptr_len, int64_t indices_len,
                           const void *values, int value_size, int32_t *indptr_out,
                           int32_t *indices_out, void *values_out, int out_size, spmv_err *err);

/* perm[nrows] = a reverse Cuthill-McKee order of the square matrix A (which spmv_csr_check
 * accepts): perm[k] is the row (and column) of A that comes k-th, the graph of A + A^T numbered
 * breadth first from a vertex of least degree in each component, neighbours by increasing degree
 * and then number, reversed.  Deterministic.  Returns 0, SPMV_ENOTAPPLICABLE (not square),
 * SPMV_EINVAL (NULL) or SPMV_ENOMEM.  O(nnz log(max row length)), 12 nnz + 29 nrows bytes. */
SPMV_API int spmv_order_rcm(const spmv_csr *A, int32_t *perm, spmv_err *err);

/* A format's vals = 8 or 16 (csrc/vtab.c): its table's length and index words for nnz entries; the
 * refusals host and device share (SPMV_EINVAL: other bits; SPMV_ENOTAPPLICABLE: > 2^bits values). */
SPMV_API int spmv_vtab_size(const char *fmt, int32_t bits, int64_t nnz, int64_t ndistinct,
                            int64_t *len, int64_t *words, spmv_err *err);

/* Find the first non-finite entry of v[n]; SPMV_EINVAL with where = its position, else 0.  O(n). */
SPMV_API int spmv_finite_check_f32(const float *v, int64_t n, spmv_err *err);
SPMV_API int spmv_finite_check_f64(const double *v, int64_t n, spmv_err *err);

/* ---- Matrix Market ----------------------------------------------------------------------------- */

#ifndef SPMV_NO_FILES /* an exported header ranks; it reads no files */
/* What a Matrix Market file's banner and size line declare about its body (csrc/mmread.c). */
enum { SPMV_MM_COORDINATE = 0, SPMV_MM_ARRAY = 1 };
enum { SPMV_MM_REAL = 0, SPMV_MM_INTEGER = 1, SPMV_MM_PATTERN = 2 };
typedef struct {
    int format; /* SPMV_MM_COORDINATE or SPMV_MM_ARRAY */
    int field;  /* SPMV_MM_REAL, _INTEGER or _PATTERN (coordinate only) */
    int32_t nrows, ncols;
    int64_t nentries;   /* entry lines the size line declares (one triangle if symmetric) */
    int64_t first_line; /* the line number of the body's first byte, for messages */
} spmv_mm_body;

/* Parse the body text[len] (the bytes after the size line; no NUL terminator needed) into
 * row[nentries], col[nentries] (coordinate: 0-based; NULL for array) and val[nentries] (NULL for
 * pattern), caller-allocated.  Every byte and every token is checked: entry lines hold exactly
 * their tokens (a pattern line may add one number, checked and dropped), indices lie in [1, nrows] and [1, ncols], values are whole decimal numbers (E or
 * Fortran D exponents; inf, infinity, nan for reals; integer fields hold integers, converted to
 * double), finite text that would read as inf is refused, and there are exactly nentries entry
 * lines; '%' and blank lines may come between them.  Returns 0, SPMV_EINVAL or SPMV_EINDEX with
 * err->where = the offending line number and err->msg naming it.  O(len). */
SPMV_API int spmv_mm_read(const spmv_mm_body *B, const char *text, int64_t len, int32_t *row,
                          int32_t *col, double *val, spmv_err *err);
#endif

/* ---- features ---------------------------------------------------------------------------------- */

/* GPU properties some features depend on (Guo's strips).  spmv_gpu_props_h100() fills the H100's. */
typedef struct {
    int32_t sm_count;       /* streaming multiprocessors */
    int32_t threads_per_sm; /* resident threads per SM */
    int32_t warp_size;
} spmv_gpu_props;

SPMV_API void spmv_gpu_props_h100(spmv_gpu_props *p);

/* Feature indices SPMV_FEATURE_<CODE>, from 0 in the order of csrc/features.def (the one list), and
 * their count SPMV_NFEATURES: the order spmv_features_compute writes them and design rows begin. */
enum {
#define SPMV_FEATURE(CODE, name, tier) SPMV_FEATURE_##CODE,
#include "features.def"
#undef SPMV_FEATURE
    SPMV_NFEATURES
};

/* Name of feature i in [0, SPMV_NFEATURES) (csrc/features.def); NULL outside that range.
 * Definitions: csrc/features.c. */
SPMV_API const char *spmv_feature_name(int i);

/* out[SPMV_NFEATURES] (caller-allocated) = every matrix feature of A, tiers 0 to 2.  Tier 2 is one
 * pass over indices.  Workspace O(nrows + ncols).  indptr must hold nrows+1 entries and indices
 * indptr[nrows]; everything else spmv_csr_check verifies is verified here as it is read (fused into
 * the passes, not a pass of its own).  Returns 0, SPMV_EINVAL, SPMV_EINDEX, SPMV_EUNSORTED (the
 * messages of spmv_csr_check) or SPMV_ENOMEM. */
SPMV_API int spmv_features_compute(const spmv_csr *A, const spmv_gpu_props *dev, double *out,
                                   spmv_err *err);

/* ---- storage formats --------------------------------------------------------------------------- */

/* Format codes SPMV_FMT_<CODE>, from 0 in the order of csrc/formats.def (the one list). */
typedef enum {
#define SPMV_FORMAT(CODE, name) SPMV_FMT_##CODE,
#include "formats.def"
#undef SPMV_FORMAT
    SPMV_NFORMATS
} spmv_format;

/* Name of format f as ids spell it (csrc/formats.def: "csr", "bro_ell", ...); NULL outside
 * [0, SPMV_NFORMATS). */
SPMV_API const char *spmv_format_name(int f);

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
    int format; /* spmv_format */
    int32_t nrows, ncols;
    int64_t nnz;      /* stored entries of the CSR it came from */
    int32_t param[2]; /* format parameters (SELL: C, sigma; BRO-ELL: slice height, symbol bits;
                         HYB: ELL width or -1 for Bell-Garland; BSR: block size); see csrc/<fmt>.c */
    double max_fill; /* refuse (SPMV_ENOTAPPLICABLE) when stored slots > max_fill * max(nnz, nrows);
                         <= 0 means SPMV_DEFAULT_MAX_FILL */
    int64_t scalar[4];         /* derived sizes: ELL width, number of slices, diagonals, ... */
    int64_t nidx[SPMV_MAXIDX]; /* element count of idx[k] */
    int64_t nval[SPMV_MAXVAL]; /* element count of val[k] */
    int32_t *idx[SPMV_MAXIDX]; /* caller-allocated */
    void *val[SPMV_MAXVAL];    /* caller-allocated: float or double as the call's suffix says */
} spmv_fmt;

/* Step 1 of conversion: sizes of F->format for A.  A is checked as by spmv_csr_check with
 * indptr[nrows+1], indices[indptr[nrows]] (its errors: SPMV_EINDEX, SPMV_EUNSORTED, SPMV_EINVAL).
 * Returns 0, SPMV_EINVAL (bad param, message names it and its range), SPMV_ENOTAPPLICABLE (padding past max_fill or a slot count past int32; message
 * says which and by how much) or SPMV_ENOMEM.  O(nnz + nrows). */
SPMV_API int spmv_fmt_size(const spmv_csr *A, spmv_fmt *F, spmv_err *err);

/* Step 2: fill F's caller-allocated arrays from A and values[nnz].  F as left by spmv_fmt_size; A
 * checked again as there.  Returns 0, SPMV_EINVAL, SPMV_EINDEX, SPMV_EUNSORTED, SPMV_ENOMEM or SPMV_ENOTAPPLICABLE (spmv_vtab_size).  O(nnz + stored slots). */
SPMV_API int spmv_fmt_fill_f32(const spmv_csr *A, const float *values, spmv_fmt *F, spmv_err *err);
SPMV_API int spmv_fmt_fill_f64(const spmv_csr *A, const double *values, spmv_fmt *F, spmv_err *err);

/* Back to CSR: indptr[nrows+1], indices[nnz], values[nnz] (caller-allocated, nnz = F->nnz).
 * Rows come out sorted, exactly as the CSR F was filled from.  Returns 0 or SPMV_ENOMEM. */
SPMV_API int spmv_fmt_to_csr_f32(const spmv_fmt *F, int32_t *indptr, int32_t *indices,
                                 float *values, spmv_err *err);
SPMV_API int spmv_fmt_to_csr_f64(const spmv_fmt *F, int32_t *indptr, int32_t *indices,
                                 double *values, spmv_err *err);

/* Check a filled F before reading it, for F that did not come straight from spmv_fmt_fill_* (a state
 * from Python, a file): nrows, ncols >= 1, 0 <= nnz <= INT32_MAX; parameters in their ranges;
 * scalar[] consistent with the shape and parameters; every nidx[k], nval[k] equal to what the layout
 * of csrc/<format>.c derives from them (at most INT32_MAX; unused slots 0) with non-NULL arrays;
 * pointer arrays starting at 0, non-decreasing and ending at their totals; permutations (SELL,
 * JAD) permutations; every stored column in [0, ncols) and increasing along its row, padding
 * (column -1, symbol 0, presence bit 0) only after a row's entries or outside the matrix; stored
 * entries counting exactly nnz.  Returns 0, SPMV_EINVAL (a count, scalar or parameter; the message
 * names the array and the count it must have), SPMV_EINDEX (an index or pointer out of range),
 * SPMV_EUNSORTED or SPMV_ENOMEM (a permutation's bitmap).  O(stored slots + nrows).
 * spmv_fmt_to_csr_*, spmv_fmt_mv_*, spmv_fmt_bench_* and spmv_fmt_bytes require F to pass it (or to
 * come from spmv_fmt_fill_*): they do not re-check on every product. */
SPMV_API int spmv_fmt_check(const spmv_fmt *F, spmv_err *err);

/* Check F's values (float for _f32): every padding slot holds zero, as spmv_fmt_fill_* leaves it,
 * so that the kernels that multiply padding (DIA, BSR) agree with F's own entries.  F must have
 * passed spmv_fmt_check.  Returns 0, SPMV_EINVAL (the message says how many padding slots hold
 * non-zeros) or SPMV_ENOMEM.  O(stored slots), with a CSR copy of F's entries as workspace. */
SPMV_API int spmv_fmt_check_values_f32(const spmv_fmt *F, spmv_err *err);
SPMV_API int spmv_fmt_check_values_f64(const spmv_fmt *F, spmv_err *err);

/* Bytes F stores (index arrays as int32, values at elem_size bytes each). */
SPMV_API int64_t spmv_fmt_bytes(const spmv_fmt *F, int elem_size);

/* ---- CPU kernels ------------------------------------------------------------------------------- */

/* y[nrows] = F * x[ncols] on the CPU with kernel variant `kernel` of F's format (see the registry
 * below; 0 is every format's default).  OpenMP threads where built with OpenMP.  Returns 0 or
 * SPMV_EINVAL for an unknown variant.  O(stored slots). */
SPMV_API int spmv_fmt_mv_f32(const spmv_fmt *F, int kernel, const float *x, float *y,
                             spmv_err *err);
SPMV_API int spmv_fmt_mv_f64(const spmv_fmt *F, int kernel, const double *x, double *y,
                             spmv_err *err);

/* y[nrows] = alpha * F * x[ncols] + beta * y with kernel variant `kernel`, as BLAS's gemv: with
 * alpha == 0 the product is not computed, with beta == 0 y is not read (NaN there does not
 * propagate).  work[nrows] (caller-allocated) takes F * x when alpha != 0 and beta != 0, and may be
 * NULL otherwise; x, y and work must not overlap.  Returns 0 or SPMV_EINVAL (an unknown variant, or
 * work NULL where needed).  O(stored slots + nrows); one pass over y past the product. */
SPMV_API int spmv_fmt_mv_scaled_f32(const spmv_fmt *F, int kernel, float alpha, const float *x,
                                    float beta, float *y, float *work, spmv_err *err);
SPMV_API int spmv_fmt_mv_scaled_f64(const spmv_fmt *F, int kernel, double alpha, const double *x,
                                    double beta, double *y, double *work, spmv_err *err);

/* ---- timing ------------------------------------------------------------------------------------ */

typedef struct {
    double median_ms, q25_ms, q75_ms, min_ms;
    int64_t runs; /* timed runs actually made (fewer than asked when the budget ran out) */
} spmv_timing;

#ifndef SPMV_NO_TIMING /* an exported header leaves timing out: it needs POSIX clocks */
/* One timed unit of work; returns 0 or a negative code, which stops the timing.  *ms arrives as -1;
 * work timed by its own clock (a GPU's events) stores its time there, else the harness's monotonic
 * clock around the call counts. */
typedef int (*spmv_work_fn)(void *ctx, double *ms, spmv_err *err);

/* Run fn `warmup` times (fewer where the budget ends them first: spmv_warmup_more), then up to
 * `repeats` times each between two monotonic-clock reads, stopping early once budget_s seconds of
 * timed runs have passed (budget_s <= 0: no budget; at least one timed run is always made).
 * Quantiles by linear interpolation, as numpy.quantile.  Returns 0, fn's code, SPMV_EINVAL
 * (repeats < 1 or warmup < 0) or SPMV_ENOMEM.  Used by the CPU and the GPU benches. */
SPMV_API int spmv_time(spmv_work_fn fn, void *ctx, int warmup, int repeats, double budget_s,
                       spmv_timing *out, spmv_err *err);

/* Warm-up runs after the first of `warmup` (>= 1), which took first_ms: as many as fit in budget_s at
 * that time, the first included, up to warmup - 1 (all of them when budget_s <= 0).  A product slower
 * than budget_s / warmup would otherwise spend most of a configuration's time untimed: ten warm-ups of
 * a 200 ms padded product on a 50 ms budget.  One run still precedes the timed ones. */
SPMV_API int spmv_warmup_more(int warmup, double first_ms, double budget_s);

/* out = median, quartiles (as spmv_time) and minimum of the n >= 1 times t[n] in ms, runs = n; sorts
 * t in place.  For harnesses that time their own way (the GPU's batched events).  Returns 0, or
 * SPMV_EINVAL (n < 1, t or out NULL) with out untouched.  O(n log n). */
SPMV_API int spmv_timing_summary(double *t, int64_t n, spmv_timing *out, spmv_err *err);

/* Time spmv_fmt_mv_* of F with spmv_time().  x[ncols], y[nrows] caller-allocated. */
SPMV_API int spmv_fmt_bench_f32(const spmv_fmt *F, int kernel, const float *x, float *y, int warmup,
                                int repeats, double budget_s, spmv_timing *out, spmv_err *err);
SPMV_API int spmv_fmt_bench_f64(const spmv_fmt *F, int kernel, const double *x, double *y,
                                int warmup, int repeats, double budget_s, spmv_timing *out,
                                spmv_err *err);
#endif

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
    const char *id;                          /* "library/format[/kernel]" */
    int device;                              /* SPMV_DEV_* */
    int library;                             /* SPMV_LIB_*: whose kernel */
    int format;                              /* spmv_format */
    int kernel;                              /* variant: spmv_fmt_mv_*'s or a cuSPARSE algorithm
                                                 (0 = its default); 0 for an own CUDA kernel,
                                                 which kernels/plan.cu finds by registry index */
    const char *param_name[SPMV_NPARAM];     /* names in ids; NULL: unused slot */
    int32_t grid[SPMV_NPARAM][SPMV_MAXGRID]; /* values configs() expands */
    int ngrid[SPMV_NPARAM];
    int32_t param_default[SPMV_NPARAM]; /* value when a parameter is unused or left out */
    int launches;                       /* GPU kernel launches and memsets per product; 0 on
                                                 the CPU (a per-configuration feature) */
    int deterministic;                  /* 1: same bits on every run */
    const char *cusparse_format; /* a cuSPARSE kernel's cusparseFormat_t and cusparseSpMVAlg_t */
    const char *cusparse_alg;    /* enumerators, as named in cusparse.h ("CUSPARSE_FORMAT_CSR",
                                    "CUSPARSE_SPMV_CSR_ALG2"); NULL for the others */
} spmv_kernel_desc;

/* Number of registered kernels and the i-th one (NULL outside [0, count)). */
SPMV_API int spmv_kernel_count(void);
SPMV_API const spmv_kernel_desc *spmv_kernel_get(int i);

/* The kernel whose id is exactly `id` (without parameters), or NULL. */
SPMV_API const spmv_kernel_desc *spmv_kernel_find(const char *id);

/* ---- configurations (csrc/config.c) ------------------------------------------------------------ */

/* One configuration: a registry kernel and the values of its parameter slots.  Made by
 * spmv_config_parse from an id, or by spmv_config_expand; everything downstream (design rows,
 * CPU variants, GPU plans) reads it, never the id again. */
typedef struct {
    int32_t kernel;             /* index in the registry (spmv_kernel_get) */
    int32_t param[SPMV_NPARAM]; /* every slot, param_default where the id leaves it out */
    int32_t given; /* bit k: slot k named in the id (printed, and its design column set) */
} spmv_config;

/* Longest configuration id spmv_config_id writes, NUL included. */
#define SPMV_CONFIG_ID_MAX 128

/* Parse a configuration id: a registry kernel id ("library/format[/kernel]") followed by
 * "/name=value" items, each of a parameter of that kernel, each at most once, in any order.  A value
 * is ASCII decimal digits ("-" first only where the slot's default is negative, such as HYB's k),
 * within int32, and where the kernel has a grid for the parameter one of its values.  Parameters
 * left out take their defaults.  Returns 0 or SPMV_EINVAL, with err->msg naming the id and what is
 * allowed, and err->where the byte offset in id of the failing part (0: the kernel is unknown). */
SPMV_API int spmv_config_parse(const char *id, spmv_config *c, spmv_err *err);

/* The canonical id of c into buf[size] (snprintf's contract: the length it needs, NUL excluded,
 * truncated to size): the kernel id, then "/name=value" for each given slot in slot order, so that
 * parsing it gives c back.  -1 where c->kernel is not a registry index. */
SPMV_API int spmv_config_id(const spmv_config *c, char *buf, size_t size);

/* Every configuration of device (SPMV_DEV_*): each registry kernel, in registry order, expanded
 * over its parameter grid (slots with a grid, the first slot outermost; those slots given).  The
 * number of them; written to out[] unless out is NULL (call once with NULL to size out). */
SPMV_API int32_t spmv_config_expand(int device, spmv_config *out);

/* ---- models and ranking ------------------------------------------------------------------------ */

/* A design row: the SPMV_NFEATURES matrix features, then one configuration's columns in the order of
 * pyspmv.datasets' X without its string columns, then a model's own per-configuration columns
 * (SPMV_NCOLS + nextra in all).  p_* are the configuration's parameters, NaN where it has none. */
enum {
    SPMV_COL_CONFIG_ = SPMV_NFEATURES - 1, /* anchor: the parameter columns follow the features */
/* p_<name> for each SPMV_PARAM of csrc/kernels.def, in its order */
#define SPMV_PARAM(CODE, name) SPMV_COL_P_##CODE,
#include "kernels.def"
    SPMV_COL_VALUE_BYTES,
    SPMV_COL_BYTES_MOVED,
    SPMV_COL_PADDING_RATIO,
    SPMV_COL_LAUNCHES,
    SPMV_NCOLS
};
#define SPMV_NPCOLS (SPMV_COL_VALUE_BYTES - SPMV_NFEATURES) /* the p_* columns */

/* The configurations a model ranks, as plain arrays (caller-owned).  bytes_moved and padding_ratio
 * come from the format's size query, as pyspmv.config_features computes them.  format, param,
 * unread, p and launches are the configurations' columns (spmv_config_columns); where format is
 * NULL, the core resolves them from ids[n] (spmv_config_parse) on every call instead, as an
 * exported model header does. */
typedef struct {
    int32_t n;              /* configurations */
    const int32_t *format;  /* [n] spmv_format */
    const int32_t *param;   /* [2n] the format's parameters (spmv_fmt.param) */
    const int32_t *unread;  /* [n] bit k set: the kernel never reads index array k (not moved) */
    const double *p;        /* [SPMV_NPCOLS*n] p_tpv .. p_b of each configuration, NaN where none */
    const double *launches; /* [n] */
    const int32_t *group;   /* [n] the model's sub-model of each configuration; -1: not ranked */
    int32_t nextra;         /* the model's own columns per configuration */
    const double *extra;    /* [nextra*n], row-major */
    const char *const *ids; /* [n] configuration ids, read only where format is NULL */
} spmv_configs;

/* One configuration's columns in an spmv_configs table and its design row. */
typedef struct {
    int32_t format;        /* spmv_format */
    int32_t param[2];      /* spmv_fmt.param: slots 0 and 1 */
    int32_t unread;        /* spmv_format_unread of its format */
    double p[SPMV_NPCOLS]; /* p_* columns: the given slots' values, NaN for the others */
    double launches;       /* the kernel's launches */
} spmv_config_cols;

/* out = the columns of c.  Returns 0 or SPMV_EINVAL (c->kernel not a registry index, or a parameter
 * name of its kernel outside kernels.def's SPMV_PARAM lists). */
SPMV_API int spmv_config_columns(const spmv_config *c, spmv_config_cols *out, spmv_err *err);

/* The columns of an spmv_configs table from ids[n] (spmv_config_parse, spmv_config_columns), into
 * the caller's format[n], param[2n], unread[n], p[SPMV_NPCOLS*n] and launches[n].  Returns 0 or
 * SPMV_EINVAL with err->where the index of the first id that fails and the grammar's message. */
SPMV_API int spmv_configs_table(int32_t n, const char *const *ids, int32_t *format, int32_t *param,
                                int32_t *unread, double *p, double *launches, spmv_err *err);

/* rows[n*(SPMV_NCOLS + C->nextra)] (caller-allocated, row-major) = the design row of A under each
 * configuration of C, with value_bytes 4 or 8; a configuration whose format cannot serve A (size query
 * SPMV_ENOTAPPLICABLE under max_fill, <= 0: SPMV_DEFAULT_MAX_FILL) gets NaN bytes_moved and
 * padding_ratio, exactly as the format's size query gives them.  One pass over the entries
 * (threads above a size, the same bits for any count) gives the features and a summary of A from
 * which each distinct (format, parameters) takes its size in O(nrows) or less.  O(nnz + nrows *
 * distinct formats + nrows + ncols).  Returns 0, SPMV_EINVAL, SPMV_EINDEX, SPMV_EUNSORTED or
 * SPMV_ENOMEM.  A is validated as spmv_features_compute does. */
SPMV_API int spmv_design_rows(const spmv_csr *A, const spmv_gpu_props *dev, const spmv_configs *C,
                              int value_bytes, double max_fill, double *rows, spmv_err *err);

/* spmv_design_rows estimated from a sample of A's rows: blocks of 256 consecutive rows, one from
 * the middle of each of as many equal strata of A, as many as hold sample_rows rows (rounded up)
 * and, where sample_nnz > 0, at most sample_nnz entries: first as many as hold sample_nnz at A's
 * mean entries per block, then fewer while the blocks chosen hold more (one block at least, which
 * may hold more).  Cost O(sampled entries + nrows/256 + ncols + configurations), not O(nnz).
 * Features from the sample, except what the shape and indptr[nrows] give exactly; bytes_moved
 * scales the sample's storage by nnz / sampled entries; padding ratios and not-applicable
 * decisions are the sample's.  Only the sampled rows are checked (indptr and indices;
 * SPMV_EINDEX, SPMV_EUNSORTED as spmv_design_rows): pass spmv_csr_check first where A is not
 * known valid.  The exact spmv_design_rows with sample_rows <= 0, a sample of half of A's blocks
 * or more, or where one of A's blocks holds more than twice the entries of the fullest sampled
 * block (the sample missed long rows, which every padded format pads to). */
SPMV_API int spmv_design_rows_estimate(const spmv_csr *A, const spmv_gpu_props *dev,
                                       const spmv_configs *C, int value_bytes, double max_fill,
                                       int32_t sample_rows, int64_t sample_nnz, double *rows,
                                       spmv_err *err);

/* Rows per block of the one pass, of a sample's blocks, and the step of a coarse indptr. */
#define SPMV_SAMPLE_BLOCK 256

/* For a matrix whose rows are not all in host memory (one that lives on the GPU): coarse[nblk + 1]
 * holds its indptr at the start of each block of SPMV_SAMPLE_BLOCK rows (rows 0, 256, ...) and at
 * nrows, nblk = ceil(nrows / 256).  spmv_sample_plan writes the start rows of the blocks spmv_design_rows_estimate
 * would sample into range[] (room for sample_rows / 256 + 1 items) and returns their count k, or 0 where
 * it would take the exact path (then the whole matrix is needed).  O(nrows / 256); coarse is read
 * as it comes (hostile values clamp to [0, coarse[nblk]]). */
SPMV_API int64_t spmv_sample_plan(const int32_t *coarse, int32_t nrows, int32_t sample_rows,
                                  int64_t sample_nnz, int32_t *range);
/* spmv_design_rows_estimate of A given by coarse and, in A, only the sampled rows: A->indptr at
 * rows 0, nrows and the rows of each block spmv_sample_plan names (its last row's end included),
 * A->indices at those rows' entries; nothing else of A is read.  The same rows, bit for bit, as
 * spmv_design_rows_estimate of the whole A.  Each sampled block's ends are checked against coarse
 * (SPMV_EINDEX); SPMV_EINVAL where the plan is 0 (the exact path). */
SPMV_API int spmv_design_rows_sampled(const spmv_csr *A, const int32_t *coarse,
                                      const spmv_gpu_props *dev, const spmv_configs *C,
                                      int value_bytes, double max_fill, int32_t sample_rows,
                                      int64_t sample_nnz, double *rows, spmv_err *err);

/* Name of design-row column i in [0, SPMV_NCOLS): the features, then "p_tpv" .. "p_b",
 * "value_bytes", "bytes_moved", "padding_ratio", "launches"; NULL outside.  The one definition of
 * the schema: pyspmv reads its column names from here. */
SPMV_API const char *spmv_design_column_name(int i);

/* bytes[n], padding[n] (caller-allocated) = bytes moved and padding ratio of each configuration of
 * C for A, as in spmv_design_rows (only C's format, param and unread are read); NaN where the
 * format cannot serve A, with the reason in why[j] (why[n] caller-allocated, or NULL; code 0 where
 * it can).  One pass over A, as spmv_design_rows.  Returns 0, SPMV_EINVAL, SPMV_EINDEX,
 * SPMV_EUNSORTED or SPMV_ENOMEM. */
SPMV_API int spmv_config_sizes(const spmv_csr *A, const spmv_configs *C, int value_bytes,
                               double max_fill, double *bytes, double *padding, spmv_err *why,
                               spmv_err *err);

/* Bit k set: index array k of format f is never read by a kernel (DIA's and BSR's presence bits,
 * kept for exact round trips): spmv_configs.unread of its configurations.  0 outside the formats. */
SPMV_API int32_t spmv_format_unread(int f);

/* 1 where format f's kernels multiply stored padding zeros by x (DIA, BSR), so that a non-finite x
 * would turn padding into NaN: callers refuse such an x.  0 otherwise and outside the formats. */
SPMV_API int spmv_format_finite_x(int f);

/* Model kinds SPMV_MODEL_<CODE>, from 1 in the order of csrc/models.def (the one list); 0 is a
 * cascade's one-class stage, never evaluated.  What each kind computes: its entry in models.def
 * and csrc/model_<name>.c. */
enum {
    SPMV_MODEL_CONSTANT = 0,
#define SPMV_MODEL(CODE, name, ...) SPMV_MODEL_##CODE,
#include "models.def"
#undef SPMV_MODEL
    SPMV_MODEL_NKINDS /* one past the last kind */
};
/* Transforms of inputs and of the output. */
enum {
    SPMV_TF_IDENTITY = 0,
    SPMV_TF_LOG1P,
    SPMV_TF_LOG,
    SPMV_TF_LOG10,
    SPMV_TF_LOG2,
    SPMV_TF_EXP,
    SPMV_TF_EXPM1,
    SPMV_TF_POW10,
    SPMV_TF_POW2,
    SPMV_TF_SLOG1P /* sign(x) * log1p(|x|): a signed statistic keeps its sign */
};

/* SPMV_KNN_* of spmv_knn.weighting, and the largest k it takes (csrc/models.def). */
enum { SPMV_KNN_UNIFORM = 0, SPMV_KNN_SKLEARN, SPMV_KNN_FLOOR };
#define SPMV_KNN_MAXK 64

typedef struct spmv_model spmv_model;

/* The parameters struct of each kind, spmv_<name>, with its members and its contract in
 * csrc/models.def. */
#define SPMV_MODEL(CODE, name, ...)                                                                \
    typedef struct {                                                                               \
        __VA_ARGS__                                                                                \
    } spmv_##name;
#include "models.def"
#undef SPMV_MODEL

/* A model: inputs taken from a design row, transformed, evaluated by its kind, transformed back.
 * Input k: x = row[in_col[k]]; NaN becomes in_nan[k]; clamped to [in_lo[k], in_hi[k]]; z[k] =
 * (tf(x) - in_shift[k]) / in_div[k].  Prediction ms = max(out_tf(raw), out_lo) (times row[out_col]
 * when out_col >= 0; NaN stays NaN).  spmv_rank orders by ms * q^rank_bytes_pow, q the bytes the
 * configuration moves per byte of the matrix's values (its bytes_moved / (nnz * value_bytes)), and
 * reports ms: between two near-equal predictions the one that moves fewer bytes comes first
 * (0: by ms alone; design rows only).  Every array is caller-owned and outlives the model.  The rows
 * are design rows (spmv_rank), or a caller's own feature vector followed by the configuration's
 * extra columns (spmv_rank_features). */
struct spmv_model {
    int kind;        /* SPMV_MODEL_* */
    int32_t ngroups; /* sub-models */
    int32_t ncols;   /* row length it reads: SPMV_NCOLS (or nfeatures) + its extra columns */
    int32_t ninputs;
    const int32_t *in_col, *in_tf;                            /* [ninputs] */
    const double *in_nan, *in_lo, *in_hi, *in_shift, *in_div; /* [ninputs] */
    int32_t out_tf, out_col;
    double out_lo;
    double rank_bytes_pow; /* in [0, 1] */
    /* The parameters of each kind, spmv_<name> as member `name` (csrc/models.def): only the
     * member of M's own kind is read. */
#define SPMV_MODEL(CODE, name, ...) spmv_##name name;
#include "models.def"
#undef SPMV_MODEL
};

/* The fields of a model, described once: every scalar and array of the head (spmv_model's own) and
 * of each kind (its parameters struct), by the name model specs and files give them ("ngroups",
 * "trees.root"; linear's "coef" and "intercept").  The glue parses specs from these tables and
 * spmv_model_check checks every field against them; pyspmv reads them as its schema.
 *   SPMV_FIELD_INT, SPMV_FIELD_REAL: an int32_t or a double; INT within [lo, hi], REAL finite
 *     (or -inf with SPMV_FIELD_NEG_INF).
 *   SPMV_FIELD_I32, SPMV_FIELD_F64, SPMV_FIELD_U8: a pointer to int32_t, double or uint8_t entries,
 *     as many as spmv_model_field_len says; NULL only when it says 0, or with SPMV_FIELD_OPTIONAL.
 *   SPMV_FIELD_MODELS: a pointer to sub-models (a cascade's stages), as many as the INT field
 *     len[0] holds (SPMV_FIELD_DERIVED: set from the list of sub-models, not given by name); bit k
 *     of hi set: a sub-model may be of kind k. */
enum {
    SPMV_FIELD_INT = 0,
    SPMV_FIELD_REAL,
    SPMV_FIELD_I32,
    SPMV_FIELD_F64,
    SPMV_FIELD_U8,
    SPMV_FIELD_MODELS
};
enum { SPMV_FIELD_OPTIONAL = 1, SPMV_FIELD_NEG_INF = 2, SPMV_FIELD_DERIVED = 4 };
typedef struct {
    const char
        *name; /* "trees.root": the kind's name, a dot and its member's (head: the member's) */
    int type, flags;
    int64_t lo, hi;
    /* arrays: entries = (len[0] + plus[0]) * (len[1] + plus[1]) + add, len[k] naming INT fields of
     * the head or the kind (NULL: the factor 1) */
    const char *len[2];
    int32_t plus[2];
    int32_t add;
    size_t offset; /* of the value or pointer in spmv_model */
} spmv_model_field;

/* The fields of kind `kind` (SPMV_MODEL_*; 0: none) into *n, and its name ("trees"; "constant" for
 * 0) into *name when not NULL; kind -1: the head's fields (name "head").  NULL (*n = 0) outside
 * [-1, SPMV_MODEL_NKINDS).  Static tables in the order a parser reads them: every scalar before
 * the arrays whose lengths it gives. */
SPMV_API const spmv_model_field *spmv_model_fields(int kind, int32_t *n, const char **name);

/* Entries of array field f of M (head or M's kind): its length rule on M's INT fields; 0 for a
 * scalar, -1 when the rule names a field the head and M's kind lack. */
SPMV_API int64_t spmv_model_field_len(const spmv_model *M, const spmv_model_field *f);

/* Most steps evaluating a model may take to rank one matrix: spmv_model_cost of one row times the
 * configurations ranked.  A file of 84 KB can otherwise describe a walk of 2e13 tree nodes (a chain
 * of 1e5 nodes under 2e8 roots: 15 hours).  2^28 is 400 times the shipped defaults' 6.6e5 (cuda) and
 * 1.8e5 (cpu) and ten times a 1,000-tree forest of depth 40 over 135 configurations.  On a 2-core
 * VM it walks in 0.5 s where nodes are read in order and 4.5 s where every step misses the cache,
 * which an spmv_interrupt check stops.  spmv_model_check refuses a row past it (a ranking has at
 * least one); a caller that knows the configurations refuses their product (pyspmv's model_new,
 * so load_model, rank and export_c). */
#define SPMV_MODEL_MAX_STEPS ((int64_t)1 << 28)

/* Check M's structure: the kind, then every field of the head and of M's kind against its table
 * (ranges, finite reals, arrays present), then what the kind itself requires (every index within
 * its array's declared count, trees whose walks end, ...), then its cost (spmv_model_cost) against
 * SPMV_MODEL_MAX_STEPS.  SPMV_ESCHEMA naming the field (or the cost and the limit) otherwise, or
 * SPMV_ENOMEM (the cost's workspace, one int32 per tree node).  O(size of M). */
SPMV_API int spmv_model_check(const spmv_model *M, spmv_err *err);

/* *steps = the most steps predicting one row may take, through its costliest group: the inputs,
 * then per kind the longest root-to-leaf walk of each tree summed over the group's trees (a forest:
 * over all trees, plus trees x outputs additions), a point set's points x (inputs + 1 + log2 of
 * its size) (k nearest neighbours), support vectors x (inputs + 1) (SVM), derived inputs and terms
 * (formula), the stages' own costs (cascade).  Saturates at INT64_MAX.  An upper bound: spmv_rank
 * of C costs at most C->n times it, and each spmv_interrupt check comes within SPMV_POLL_STEPS of
 * these steps.  M must pass spmv_model_check's structural part (it calls this itself).  Returns 0
 * or SPMV_ENOMEM.  O(size of M). */
SPMV_API int spmv_model_cost(const spmv_model *M, int64_t *steps, spmv_err *err);

/* Raw outputs per row: the trees' nout, 2 for a classifying SVM, else 1. */
SPMV_API int32_t spmv_model_nout(const spmv_model *M);

/* ms[n] = M's prediction for each of n design rows rows[n*stride] (stride >= M->ncols), row i
 * through sub-model group[i] (-1: ms = HUGE_VAL).  Raw outputs, before out_tf, go to raw[n*nout]
 * when raw is not NULL (nout: spmv_model_nout).  intr (NULL: none) may stop it between trees,
 * points or rows.  Returns 0, SPMV_EINVAL, SPMV_ENOMEM or SPMV_EINTR.  M must pass
 * spmv_model_check().  O(n * spmv_model_cost). */
SPMV_API int spmv_model_predict(const spmv_model *M, const double *rows, int32_t n, int32_t stride,
                                const int32_t *group, double *ms, double *raw,
                                const spmv_interrupt *intr, spmv_err *err);

/* The ranking step alone, on rows[C->n*M->ncols] that spmv_design_rows made for ONE matrix (a
 * linear model then evaluates the inputs from its features once): ms, order, intr and returns as
 * spmv_rank. */
SPMV_API int spmv_rank_rows(const spmv_configs *C, const spmv_model *M, const double *rows,
                            const double *add_ms, int32_t *order, double *ms,
                            const spmv_interrupt *intr, spmv_err *err);

/* Rank C's configurations for A: ms[C->n] = M's prediction plus add_ms[j] (NULL: none; e.g.
 * conversion cost / expected calls), HUGE_VAL where the configuration cannot serve A or is not
 * ranked; order[C->n] = configuration indices, fastest first (ties: lower index; NaN last).  Features
 * with dev's properties; value_bytes 4 or 8.  Workspace O(C->n * M->ncols + nrows + ncols).
 * intr (NULL: none) may stop the model's evaluation between trees, points or rows.  Returns 0,
 * SPMV_EINVAL (M->ncols != SPMV_NCOLS + C->nextra, ...), SPMV_EINDEX, SPMV_EUNSORTED (A, validated
 * as by spmv_design_rows), SPMV_ENOMEM or SPMV_EINTR.  M must pass spmv_model_check().
 * O(nnz + C->n * spmv_model_cost). */
SPMV_API int spmv_rank(const spmv_csr *A, const spmv_gpu_props *dev, const spmv_configs *C,
                       const spmv_model *M, int value_bytes, const double *add_ms, int32_t *order,
                       double *ms, const spmv_interrupt *intr, spmv_err *err);

/* Rank C's configurations for a caller's own feature vector (a model fitted on the caller's
 * statistics, not pyspmv's): row j = features[nfeatures] then C->extra[j*C->nextra ..], so
 * M->ncols must be nfeatures + C->nextra (only C's n, group, nextra and extra are read).  ms[C->n]
 * = M's prediction plus add_ms[j] (NULL: none), HUGE_VAL where not ranked; order[C->n] and intr
 * as spmv_rank.  Returns 0, SPMV_EINVAL, SPMV_ENOMEM or SPMV_EINTR.  M must pass
 * spmv_model_check(). */
SPMV_API int spmv_rank_features(const spmv_configs *C, const spmv_model *M, const double *features,
                                int32_t nfeatures, const double *add_ms, int32_t *order, double *ms,
                                const spmv_interrupt *intr, spmv_err *err);

#ifdef __cplusplus
}
#endif

#endif /* SPMV_H */
