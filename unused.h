/* unused.h: a pyspmv ranking model exported by pyspmv.export_c (portable format 1).
 * Model kind: linear; device: cpu; value type: float64; 15 configurations; output: predicted ms.
 *
 *   unused_NCONFIGS, unused_config_ids[unused_NCONFIGS]
 *   int unused_predict(int32_t nrows, int32_t ncols, const int32_t *indptr, const int32_t *indices, double *ms);
 *   int unused_rank(int32_t nrows, int32_t ncols, const int32_t *indptr, const int32_t *indices, int *order,
 *                double *ms);
 * CSR with sorted, distinct column indices (checked); ms[unused_NCONFIGS], order[unused_NCONFIGS] are the
 * caller's.  Return 0 or a negative SPMV_E* code.  Needs a C99 compiler and libm (-lm); nothing else.
 * The C core below is pyspmv's own (csrc/), included with static linkage.
 * SPDX-License-Identifier: BSD-3-Clause */
#ifndef UNUSED_H
#define UNUSED_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#ifndef PYSPMV_EXPORTED_CORE
#define PYSPMV_EXPORTED_CORE
/* The core's interface with internal linkage (csrc/spmv.h: SPMV_API); no POSIX timing. */
#if defined(__GNUC__)
#define SPMV_API static __attribute__((unused))
#pragma GCC diagnostic push
/* OpenMP pragmas and the variables only they read, when built without -fopenmp */
#pragma GCC diagnostic ignored "-Wunknown-pragmas"
#pragma GCC diagnostic ignored "-Wunused-variable"
#else
#define SPMV_API static
#endif
#define SPMV_DATA static
#define SPMV_NO_TIMING
/* ==== csrc/spmv.h ==== */
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
SPMV_API const char *spmv_strerror(int code);

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
SPMV_API int spmv_csr_check(const spmv_csr *A, int64_t indptr_len, int64_t indices_len, spmv_err *err);

/* Find the first non-finite entry of v[n]; SPMV_EINVAL with where = its position, else 0.  O(n). */
SPMV_API int spmv_finite_check_f32(const float *v, int64_t n, spmv_err *err);
SPMV_API int spmv_finite_check_f64(const double *v, int64_t n, spmv_err *err);

/* ---- features ---------------------------------------------------------------------------------- */

/* GPU properties some features depend on (Guo's strips).  spmv_gpu_props_h100() fills the H100's. */
typedef struct {
    int32_t sm_count;        /* streaming multiprocessors */
    int32_t threads_per_sm;  /* resident threads per SM */
    int32_t warp_size;
} spmv_gpu_props;

SPMV_API void spmv_gpu_props_h100(spmv_gpu_props *p);

#define SPMV_NFEATURES 33

/* Name of feature i in [0, SPMV_NFEATURES), in the order spmv_features_compute writes them; NULL
 * outside that range.  Names and definitions: csrc/features.c. */
SPMV_API const char *spmv_feature_name(int i);

/* out[SPMV_NFEATURES] (caller-allocated) = every matrix feature of A, tiers 0 to 2.  Tier 2 is one
 * pass over indices.  Workspace O(nrows + ncols).  Returns 0, SPMV_EINVAL or SPMV_ENOMEM. */
SPMV_API int spmv_features_compute(const spmv_csr *A, const spmv_gpu_props *dev, double *out, spmv_err *err);

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
SPMV_API int spmv_fmt_size(const spmv_csr *A, spmv_fmt *F, spmv_err *err);

/* Step 2: fill F's caller-allocated arrays from A and values[nnz].  F as left by spmv_fmt_size.
 * Returns 0, SPMV_EINVAL or SPMV_ENOMEM (workspace).  O(nnz + stored slots). */
SPMV_API int spmv_fmt_fill_f32(const spmv_csr *A, const float *values, spmv_fmt *F, spmv_err *err);
SPMV_API int spmv_fmt_fill_f64(const spmv_csr *A, const double *values, spmv_fmt *F, spmv_err *err);

/* Back to CSR: indptr[nrows+1], indices[nnz], values[nnz] (caller-allocated, nnz = F->nnz).
 * Rows come out sorted, exactly as the CSR F was filled from.  Returns 0 or SPMV_ENOMEM. */
SPMV_API int spmv_fmt_to_csr_f32(const spmv_fmt *F, int32_t *indptr, int32_t *indices, float *values,
                                 spmv_err *err);
SPMV_API int spmv_fmt_to_csr_f64(const spmv_fmt *F, int32_t *indptr, int32_t *indices, double *values,
                                 spmv_err *err);

/* Bytes F stores (index arrays as int32, values at elem_size bytes each). */
SPMV_API int64_t spmv_fmt_bytes(const spmv_fmt *F, int elem_size);

/* ---- CPU kernels ------------------------------------------------------------------------------- */

/* y[nrows] = F * x[ncols] on the CPU with kernel variant `kernel` of F's format (see the registry
 * below; 0 is every format's default).  OpenMP threads where built with OpenMP.  Returns 0 or
 * SPMV_EINVAL for an unknown variant.  O(stored slots). */
SPMV_API int spmv_fmt_mv_f32(const spmv_fmt *F, int kernel, const float *x, float *y, spmv_err *err);
SPMV_API int spmv_fmt_mv_f64(const spmv_fmt *F, int kernel, const double *x, double *y, spmv_err *err);

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

/* Run fn `warmup` times, then up to `repeats` times each between two monotonic-clock reads, stopping
 * early once budget_s seconds of timed runs have passed (budget_s <= 0: no budget; at least one timed
 * run is always made).  Quantiles by linear interpolation, as numpy.quantile.  Returns 0, fn's code,
 * SPMV_EINVAL (repeats < 1 or warmup < 0) or SPMV_ENOMEM.  Used by the CPU and the GPU benches. */
SPMV_API int spmv_time(spmv_work_fn fn, void *ctx, int warmup, int repeats, double budget_s, spmv_timing *out,
                       spmv_err *err);

/* Time spmv_fmt_mv_* of F with spmv_time().  x[ncols], y[nrows] caller-allocated. */
SPMV_API int spmv_fmt_bench_f32(const spmv_fmt *F, int kernel, const float *x, float *y, int warmup, int repeats,
                                double budget_s, spmv_timing *out, spmv_err *err);
SPMV_API int spmv_fmt_bench_f64(const spmv_fmt *F, int kernel, const double *x, double *y, int warmup,
                                int repeats, double budget_s, spmv_timing *out, spmv_err *err);
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
SPMV_API int spmv_kernel_count(void);
SPMV_API const spmv_kernel_desc *spmv_kernel_get(int i);

/* The kernel whose id is exactly `id` (without parameters), or NULL. */
SPMV_API const spmv_kernel_desc *spmv_kernel_find(const char *id);

/* ---- models and ranking ------------------------------------------------------------------------ */

/* A design row: the SPMV_NFEATURES matrix features, then one configuration's columns in the order of
 * pyspmv.datasets' X without its string columns, then a model's own per-configuration columns
 * (SPMV_NCOLS + nextra in all).  p_* are the configuration's parameters, NaN where it has none. */
enum {
    SPMV_COL_P_TPV = SPMV_NFEATURES, SPMV_COL_P_BS, SPMV_COL_P_C, SPMV_COL_P_SIGMA, SPMV_COL_P_H,
    SPMV_COL_P_BITS, SPMV_COL_P_B, SPMV_COL_VALUE_BYTES, SPMV_COL_BYTES_MOVED,
    SPMV_COL_PADDING_RATIO, SPMV_COL_LAUNCHES, SPMV_NCOLS
};
#define SPMV_NPCOLS 7 /* p_tpv .. p_b */

/* The configurations a model ranks, as plain arrays (caller-owned).  bytes_moved and padding_ratio
 * come from the format's size query, as pyspmv.config_features computes them. */
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
} spmv_configs;

/* rows[n*(SPMV_NCOLS + C->nextra)] (caller-allocated, row-major) = the design row of A under each
 * configuration of C, with value_bytes 4 or 8; a configuration whose format cannot serve A (size query
 * SPMV_ENOTAPPLICABLE under max_fill, <= 0: SPMV_DEFAULT_MAX_FILL) gets NaN bytes_moved and
 * padding_ratio.  One size query per distinct (format, parameters).  O(nnz * distinct formats).
 * Returns 0, SPMV_EINVAL or SPMV_ENOMEM.  A must pass spmv_csr_check(). */
SPMV_API int spmv_design_rows(const spmv_csr *A, const spmv_gpu_props *dev, const spmv_configs *C,
                              int value_bytes, double max_fill, double *rows, spmv_err *err);

enum {
    SPMV_MODEL_LINEAR = 1, /* per group: intercept + coef . z */
    SPMV_MODEL_TREES,      /* per group and output: init + scale * sum of regression-tree leaves */
    SPMV_MODEL_KNN,        /* per group: (inverse-distance) mean of the k nearest training targets */
    SPMV_MODEL_SVM,        /* per group: sum dual * exp(-gamma |z - sv|^2) + intercept */
    SPMV_MODEL_FORMULA,    /* per group: sum of gated products coef * z[a] * z[b] */
    SPMV_MODEL_CASCADE     /* classifiers chained: minus the probability of the configuration's path */
};
/* Transforms of inputs and of the output. */
enum {
    SPMV_TF_IDENTITY = 0, SPMV_TF_LOG1P, SPMV_TF_LOG, SPMV_TF_LOG10, SPMV_TF_LOG2,
    SPMV_TF_EXP, SPMV_TF_EXPM1, SPMV_TF_POW10, SPMV_TF_POW2
};

/* Tree ensemble, flat node arrays (scikit-learn's tree_ and HistGradientBoosting's predictor nodes).
 * Node t: feature[t] < 0 is a leaf with value[t]; else go to left[t] when z <= threshold[t] (z cast
 * to float first when cast_f32, as DecisionTreeRegressor compares; NaN: left when missing_left[t]). */
typedef struct {
    int32_t nout;            /* outputs per group: 1, or a classifier's classes */
    int32_t ntrees, nnodes;
    const int32_t *tree_ptr; /* [ngroups*nout + 1] trees of (group g, output o) */
    const int32_t *root;     /* [ntrees] first node of each tree */
    const int32_t *feature, *left, *right; /* [nnodes] */
    const double *threshold, *value;       /* [nnodes] */
    const uint8_t *missing_left;           /* [nnodes] or NULL */
    const double *init;      /* [ngroups*nout] */
    double scale;            /* learning rate (1 where leaves already carry it) */
    int cast_f32;
} spmv_trees;

/* Nearest neighbours: group g searches point set set[g] with its own k and target column tcol[g].
 * The query is q = (z - shift) / div (per set; NULL: 0 and 1) and the distance
 * sqrt(sum weight * (q - p)^2) (NULL: weights 1).  The neighbours are the k nearest points whose target
 * is not NaN (ties: the lower point first).  weighting: SPMV_KNN_UNIFORM, the mean; SPMV_KNN_SKLEARN,
 * inverse-distance weights as scikit-learn's weights="distance" (points at distance 0, where any,
 * share the prediction equally); SPMV_KNN_FLOOR, weights 1 / max(d, dmin).  No neighbour: NaN. */
enum { SPMV_KNN_UNIFORM = 0, SPMV_KNN_SKLEARN, SPMV_KNN_FLOOR };
#define SPMV_KNN_MAXK 64
typedef struct {
    int32_t nsets, npoints, ntargets;
    const int32_t *set_ptr;              /* [nsets+1] points of set s */
    const double *points;                /* [npoints*ninputs] */
    const double *target;                /* [npoints*ntargets]; NaN: not measured */
    const double *shift, *div, *weight;  /* [nsets*ninputs] or NULL */
    const int32_t *set, *k, *tcol;       /* [ngroups] */
    int weighting;
    double dmin;
} spmv_knn;

/* RBF support vector machines (SVR, or SVC's decision function): set s is support vectors
 * sv_ptr[s] .. sv_ptr[s+1], decision sum dual * exp(-gamma[s] |z - sv|^2) + intercept[s], with
 * scikit-learn's public dual_coef_ and intercept_ (binary SVC: > 0 means classes_[1]).  Group g's
 * output is set g's; with classify, set ngroups + g is a classifier and the prediction is multiplied
 * by penalty where its decision is not > 0 (Li & Suda: "bad" configurations).  An empty set is its
 * intercept alone (a one-class classifier: +1 or -1). */
typedef struct {
    int32_t nsv, classify;
    const int32_t *sv_ptr;           /* [nsets+1], nsets = ngroups * (1 + classify) */
    const double *sv, *dual;         /* [nsv*ninputs], [nsv] */
    const double *gamma, *intercept; /* [nsets] */
    double penalty;
} spmv_svm;

/* Closed-form (Guo, Wang): first nderived inputs appended to z, derived input q being
 *   v = z[da]*z[db] - z[dc]*z[dd] (index -1: the factor 1, dc = -1: no second product),
 *   v = max(v, dlo); v = v / ddiv; ceil when dceil; v = max(v, dlo2) + dadd
 * (strips: ceil(nrows / threads), at least 1); then per group g, terms term_ptr[g] .. term_ptr[g+1],
 * each coef * z[a] * z[b] (index -1: the factor 1), counted only where lo < z[gate] <= hi (gate -1:
 * always): piecewise linear in strips and row-length statistics, products f(w) * strips. */
typedef struct {
    int32_t nderived;
    const int32_t *da, *db, *dc, *dd, *dceil;       /* [nderived] */
    const double *dlo, *ddiv, *dlo2, *dadd;          /* [nderived] */
    int32_t nterms;
    const int32_t *term_ptr;      /* [ngroups+1] */
    const int32_t *a, *b, *gate;  /* [nterms], indices into z[ninputs + nderived] */
    const double *coef, *lo, *hi; /* [nterms] */
} spmv_formula;

typedef struct spmv_model spmv_model;

/* Classifiers chained (Gao): stage s is a classifier sub[s] (trees, group 0) giving probabilities
 * over its classes (one output: the binary logit, [1 - expit, expit]; several: softmax), or, with
 * sub[s].kind == 0, one class of probability 1.  Group g (a configuration) has nlevels (stage,
 * class) pairs; its score is minus the product of those probabilities, left to right, a pair with
 * stage or class -1 counting 0: the most probable path ranks first. */
typedef struct {
    int32_t nstages, nlevels;
    const spmv_model *sub;        /* [nstages] */
    const int32_t *node, *cls;    /* [ngroups*nlevels] */
} spmv_cascade;

/* A model: inputs taken from a design row, transformed, evaluated by its kind, transformed back.
 * Input k: x = row[in_col[k]]; NaN becomes in_nan[k]; clamped to [in_lo[k], in_hi[k]]; z[k] =
 * (tf(x) - in_shift[k]) / in_div[k].  Prediction ms = max(out_tf(raw), out_lo) (times row[out_col]
 * when out_col >= 0; NaN stays NaN).  Every array is caller-owned and outlives the model. */
struct spmv_model {
    int kind;        /* SPMV_MODEL_* */
    int32_t ngroups; /* sub-models */
    int32_t ncols;   /* design-row length it reads: SPMV_NCOLS + its extra columns */
    int32_t ninputs;
    const int32_t *in_col, *in_tf;                             /* [ninputs] */
    const double *in_nan, *in_lo, *in_hi, *in_shift, *in_div; /* [ninputs] */
    int32_t out_tf, out_col;
    double out_lo;
    const double *coef, *intercept; /* linear: [ngroups*ninputs], [ngroups] */
    spmv_trees trees;
    spmv_knn knn;
    spmv_svm svm;
    spmv_formula formula;
    spmv_cascade cascade;
};

/* Check M's structure: kinds, transforms, every index within its array's declared count.  SPMV_ESCHEMA
 * naming the field otherwise.  O(size of M). */
SPMV_API int spmv_model_check(const spmv_model *M, spmv_err *err);

/* ms[n] = M's prediction for each of n design rows rows[n*stride] (stride >= M->ncols), row i
 * through sub-model group[i] (-1: ms = HUGE_VAL).  Raw outputs, before out_tf, go to raw[n*nout]
 * when raw is not NULL (nout: spmv_model_nout).  Returns 0, SPMV_EINVAL, SPMV_ENOMEM.
 * M must pass spmv_model_check().  O(n * model size). */
/* Raw outputs per row: the trees' nout, 2 for a classifying SVM, else 1. */
SPMV_API int32_t spmv_model_nout(const spmv_model *M);

SPMV_API int spmv_model_predict(const spmv_model *M, const double *rows, int32_t n, int32_t stride,
                                const int32_t *group, double *ms, double *raw, spmv_err *err);

/* The ranking step alone, on rows[C->n*M->ncols] that spmv_design_rows made for ONE matrix (a
 * linear model then evaluates the inputs from its features once): ms and order as spmv_rank. */
SPMV_API int spmv_rank_rows(const spmv_configs *C, const spmv_model *M, const double *rows,
                            const double *add_ms, int32_t *order, double *ms, spmv_err *err);

/* Rank C's configurations for A: ms[C->n] = M's prediction plus add_ms[j] (NULL: none; e.g.
 * conversion cost / expected calls), HUGE_VAL where the configuration cannot serve A or is not
 * ranked; order[C->n] = configuration indices, fastest first (ties: lower index; NaN last).  Features
 * with dev's properties; value_bytes 4 or 8.  Workspace O(C->n * M->ncols + nrows + ncols).
 * Returns 0, SPMV_EINVAL (M->ncols != SPMV_NCOLS + C->nextra, ...) or SPMV_ENOMEM.  A must pass
 * spmv_csr_check() and M spmv_model_check(). */
SPMV_API int spmv_rank(const spmv_csr *A, const spmv_gpu_props *dev, const spmv_configs *C,
                       const spmv_model *M, int value_bytes, const double *add_ms, int32_t *order,
                       double *ms, spmv_err *err);

#ifdef __cplusplus
}
#endif

#endif /* SPMV_H */
/* ==== csrc/spmv_internal.h ==== */
// csrc/spmv_internal.h: what csrc/ files share and nothing outside csrc/ may include
// SPDX-License-Identifier: BSD-3-Clause
#ifndef SPMV_INTERNAL_H
#define SPMV_INTERNAL_H


#include <stdint.h>

/* Fill *err (when not NULL) and return code.  fmt is printf-style, cut to fit err->msg. */
#if defined(__GNUC__)
__attribute__((format(printf, 6, 7)))
#endif
SPMV_API int spmv_fail(spmv_err *err, int code, int64_t where, int64_t value, int64_t limit, const char *fmt,
                       ...);

/* malloc/free wrappers: n*size bytes, NULL (and SPMV_ENOMEM in err, with the byte count) on failure
 * or on n*size overflow.  spmv_free(NULL) is a no-op.  Built with SPMV_FAIL_INJECT, the k-th call can
 * be made to fail for the allocation-failure test (tests/c/test_nomem.c). */
SPMV_API void *spmv_malloc(int64_t n, int64_t size, spmv_err *err);
SPMV_API void *spmv_calloc(int64_t n, int64_t size, spmv_err *err);
SPMV_API void spmv_free(void *p);
#ifdef SPMV_FAIL_INJECT
SPMV_API void spmv_fail_after(int64_t k); /* the k-th allocation from now fails (k >= 1); 0: none fails */
         int64_t spmv_alloc_count(void);  /* allocations made since spmv_fail_after() */
         #endif
         
         /* The guard every padded format applies once it knows its slot count: SPMV_ENOTAPPLICABLE when slots
          * pass int32 (GPU kernels index with int32) or max_fill * max(nnz, nrows).  `what` names the format
          * in the message ("ELL width 812"). */
         int spmv_fill_guard(const spmv_fmt *F, int64_t slots, const char *what, spmv_err *err);

/* Bell-Garland ELL width of HYB (also the hyb_width feature): the largest K such that at least
 * T = min(nrows, max(4096, ceil(nrows/3))) rows hold K or more entries.  CUSP's rule with
 * T capped at nrows, so that small matrices keep the width every row fills rather than width 0.
 * Workspace O(max row length).  Returns 0 or SPMV_ENOMEM. */
SPMV_API int spmv_hyb_width(const spmv_csr *A, int32_t *width, spmv_err *err);

/* The same width from hist[0..maxlen] (hist[l] = rows of length l) for callers that have it. */
SPMV_API int32_t spmv_hyb_width_hist(const int64_t *hist, int32_t maxlen, int32_t nrows);

/* First index i in [lo, hi) with a[i] >= key (hi if none); a[lo..hi) non-decreasing.  The one
 * binary search behind the nnz-balanced CSR split and the COO thread chunks. */
static inline int64_t spmv_lower_bound(const int32_t *a, int64_t lo, int64_t hi,
                                       int64_t key) {
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (a[mid] < key) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Start of thread t's run of COO entries (row[] sorted), moved forward to a row boundary. */
SPMV_API int64_t spmv_coo_chunk(const int32_t *row, int64_t nnz, int t, int nt);

/* Presence bits for formats whose padding could be mistaken for explicit zeros (DIA, BSR). */
static inline int64_t spmv_bitwords(int64_t nbits) { return (nbits + 31) / 32; }
static inline void spmv_bit_set(int32_t *w, int64_t k) {
    w[k >> 5] = (int32_t)((uint32_t)w[k >> 5] | (1u << (k & 31)));
}
static inline int spmv_bit_get(const int32_t *w, int64_t k) {
    return (int)(((uint32_t)w[k >> 5] >> (k & 31)) & 1u);
}

/* Below this many stored slots a kernel runs on one thread: forking costs more than it saves.
 * TODO: untuned; measured only on a 2-core machine. */
#define SPMV_OMP_MIN_WORK 20000

/* Operations of one storage format; one const table per csrc/<format>.c, listed in csrc/format.c.
 * size() sets F->nnz, scalar[], nidx[], nval[]; the others behave as the spmv_fmt_* functions. */
typedef struct {
    int (*size)(const spmv_csr *A, spmv_fmt *F, spmv_err *err);
    int (*fill_f32)(const spmv_csr *A, const float *values, spmv_fmt *F, spmv_err *err);
    int (*fill_f64)(const spmv_csr *A, const double *values, spmv_fmt *F, spmv_err *err);
    int (*to_csr_f32)(const spmv_fmt *F, int32_t *indptr, int32_t *indices, float *values,
                      spmv_err *err);
    int (*to_csr_f64)(const spmv_fmt *F, int32_t *indptr, int32_t *indices, double *values,
                      spmv_err *err);
    int (*mv_f32)(const spmv_fmt *F, int kernel, const float *x, float *y, spmv_err *err);
    int (*mv_f64)(const spmv_fmt *F, int kernel, const double *x, double *y, spmv_err *err);
    int nkernels; /* variants mv accepts: 0 .. nkernels-1 */
} spmv_format_ops;

/* Objects of the interface: `extern` here, `static` in an exported header (see SPMV_API). */
#ifndef SPMV_DATA
#define SPMV_DATA extern
#endif
SPMV_DATA const spmv_format_ops spmv_csr_ops, spmv_coo_ops, spmv_ell_ops, spmv_sell_ops,
    spmv_broell_ops, spmv_hyb_ops, spmv_dia_ops, spmv_jad_ops, spmv_bsr_ops;

/* ELL's size step for an ELL part of width w: guard on nrows*w + extra slots, then scalar[0] = w
 * and nidx[0] = nval[0] = nrows*w.  `extra` is HYB's COO part (0 for ELL). */
SPMV_API int spmv_ell_part_size(const spmv_csr *A, spmv_fmt *F, int32_t w, int64_t extra, const char *what,
                                spmv_err *err);
/* The pieces HYB shares with ELL and COO, one per value type.  ell_part_fill: the first
 * min(len, w) entries of each row, column-major (slot k*nrows + i), padding -1 / 0.  ell_part_rows:
 * y = that ELL part times x; an orphaned `omp for`, so call it inside a parallel region (or
 * serially).  coo_part_chunk: thread t of nt sums its run of row-sorted COO entries into y, setting
 * (add = 0) or adding to (add = 1) each row it finishes; every row is summed by one thread. */
SPMV_API void spmv_ell_part_fill_f32(const spmv_csr *A, const float *values, int32_t w, int32_t *col,
                                     float *v);
SPMV_API void spmv_ell_part_fill_f64(const spmv_csr *A, const double *values, int32_t w, int32_t *col,
                                     double *v);
SPMV_API void spmv_ell_part_rows_f32(int32_t n, int32_t w, const int32_t *col, const float *v,
                                     const float *x, float *y);
SPMV_API void spmv_ell_part_rows_f64(int32_t n, int32_t w, const int32_t *col, const double *v,
                                     const double *x, double *y);
SPMV_API void spmv_coo_part_chunk_f32(const int32_t *row, const int32_t *col, const float *v, int64_t nnz,
                                      const float *x, float *y, int t, int nt, int add);
SPMV_API void spmv_coo_part_chunk_f64(const int32_t *row, const int32_t *col, const double *v, int64_t nnz,
                                      const double *x, double *y, int t, int nt, int add);

/* ---- model evaluation (csrc/model_<kind>.c; driven by csrc/rank.c) ---- */

/* Raw output(s) of group g of M for the transformed inputs z[M->ninputs]: raw[1] (raw[nout] for
 * trees).  The checks validate a kind's own arrays (SPMV_ESCHEMA naming the field). */
SPMV_API void spmv_linear_eval(const spmv_model *M, int32_t g, const double *z, double *raw);
SPMV_API int spmv_linear_check(const spmv_model *M, spmv_err *err);
SPMV_API void spmv_trees_eval(const spmv_model *M, int32_t g, const double *z, double *raw);
SPMV_API int spmv_trees_check(const spmv_model *M, spmv_err *err);
/* Trees for the rows[nr] of group g at once (rows[] reordered): inputs Z[row*ninputs],
 * uniform[ninputs] (1: the same in every row), outputs raw[row*nout]. */
SPMV_API void spmv_trees_eval_rows(const spmv_model *M, int32_t g, int32_t *rows, int32_t nr,
                                   const double *Z, const uint8_t *uniform, double *raw);
SPMV_API void spmv_svm_eval(const spmv_model *M, int32_t g, const double *z, double *raw);
SPMV_API int spmv_svm_check(const spmv_model *M, spmv_err *err);
/* z[ninputs + nderived]: the derived inputs are written after the inputs. */
SPMV_API void spmv_formula_eval(const spmv_model *M, int32_t g, double *z, double *raw);
SPMV_API int spmv_formula_check(const spmv_model *M, spmv_err *err);

/* KNN keeps the sorted neighbours of the last query: the rows of one matrix usually ask the same
 * point set the same question (inputs from matrix features only), and then search once. */
typedef struct {
    double d;
    int32_t i;
} spmv_knn_nb;
typedef struct {
    int32_t set;     /* -1: empty */
    int32_t sorted;  /* nb[0..sorted) are in order; the rest all come after them */
    double *q, *qn;  /* [ninputs]: the last query, the new one */
    spmv_knn_nb *nb; /* [largest set]: its points by distance */
} spmv_knn_cache;
SPMV_API void spmv_knn_eval(const spmv_model *M, int32_t g, const double *z, spmv_knn_cache *c,
                            double *raw);
SPMV_API int spmv_knn_check(const spmv_model *M, spmv_err *err);
/* The largest point set (workspace of spmv_knn_cache.nb). */
SPMV_API int32_t spmv_knn_maxset(const spmv_model *M);

/* Shared by the kinds' checks: an int32 array a[n] with every entry in [lo, hi). */
SPMV_API int spmv_check_range(const int32_t *a, int64_t n, int64_t lo, int64_t hi, const char *what,
                              spmv_err *err);

/* Template plumbing for <fmt>_impl.h files, included once per value type:
 *   #define SPMV_REAL double
 *   #define SPMV_NAME(x) x##_f64
 *   #include "ell_impl.h"
 * The impl file #undefs both at its end. */

#endif /* SPMV_INTERNAL_H */
/* ==== csrc/error.c ==== */
// csrc/error.c: status codes to words, and the one way a callee reports a failure
// SPDX-License-Identifier: BSD-3-Clause

#include <stdarg.h>
#include <stdio.h>

const char *spmv_strerror(int code) {
    switch (code) {
    case SPMV_OK: return "success";
    case SPMV_EINVAL: return "invalid argument";
    case SPMV_EINDEX: return "index out of range";
    case SPMV_EUNSORTED: return "indices unsorted or duplicated";
    case SPMV_EOVERFLOW: return "count past int32";
    case SPMV_ENOMEM: return "out of memory";
    case SPMV_ENOTAPPLICABLE: return "configuration not applicable to this matrix";
    case SPMV_ESCHEMA: return "model schema mismatch";
    case SPMV_ENODEVICE: return "no usable GPU";
    case SPMV_ECUDA: return "CUDA runtime error";
    case SPMV_ECUSPARSE: return "cuSPARSE error";
    default: return "unknown error";
    }
}

int spmv_fail(spmv_err *err, int code, int64_t where, int64_t value, int64_t limit, const char *fmt,
              ...) {
    if (err != NULL) {
        va_list ap;
        err->code = code;
        err->where = where;
        err->value = value;
        err->limit = limit;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}
/* ==== csrc/mem.c ==== */
// csrc/mem.c: the core's allocation wrappers (overflow-checked, failure-injectable in test builds)
// SPDX-License-Identifier: BSD-3-Clause

#include <stdlib.h>

#ifdef SPMV_FAIL_INJECT
/* Test builds only (a separate static library): production code keeps no mutable global state. */
static _Thread_local int64_t fail_at, count;
void spmv_fail_after(int64_t k) { fail_at = k; count = 0; }
int64_t spmv_alloc_count(void) { return count; }
#define INJECTED() (++count, fail_at > 0 && count == fail_at)
#else
#define INJECTED() 0
#endif

static void *alloc(int64_t n, int64_t size, int zero, spmv_err *err) {
    void *p = NULL;
    if (n < 0 || size <= 0 || (n > 0 && n > INT64_MAX / size) || (uint64_t)(n * size) > SIZE_MAX)
        return (void)spmv_fail(err, SPMV_ENOMEM, -1, n, -1,
                               "allocation of %lld elements of %lld bytes overflows",
                               (long long)n, (long long)size), NULL;
    if (!INJECTED()) {
        size_t bytes = (size_t)(n > 0 ? n * size : 1); /* malloc(0) may return NULL */
        p = zero ? calloc(bytes, 1) : malloc(bytes);
    }
    if (p == NULL)
        spmv_fail(err, SPMV_ENOMEM, -1, n * size, -1, "could not allocate %lld bytes",
                  (long long)(n * size));
    return p;
}

void *spmv_malloc(int64_t n, int64_t size, spmv_err *err) { return alloc(n, size, 0, err); }
void *spmv_calloc(int64_t n, int64_t size, spmv_err *err) { return alloc(n, size, 1, err); }
void spmv_free(void *p) { free(p); }
/* ==== csrc/csr.c ==== */
// csrc/csr.c: CSR — the pattern check at the door, CSR as a storage format, its CPU kernels
// SPDX-License-Identifier: BSD-3-Clause
//
// Layout (spmv_fmt with format SPMV_FMT_CSR): idx[0] = indptr[nrows+1], idx[1] = indices[nnz],
// val[0] = values[nnz]; no parameters, no scalars.  Kernel variants: 0 = row-parallel (rows split
// evenly across threads), 1 = nnz-balanced (each thread gets a contiguous run of rows holding about
// nnz/threads entries, so a few long rows do not leave the other threads idle).

#include <math.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

int spmv_csr_check(const spmv_csr *A, int64_t indptr_len, int64_t indices_len, spmv_err *err) {
    if (A == NULL || A->indptr == NULL || (A->indices == NULL && indices_len > 0))
        return spmv_fail(err, SPMV_EINVAL, -1, -1, -1, "CSR arrays must not be NULL");
    if (A->nrows < 1)
        return spmv_fail(err, SPMV_EINVAL, -1, A->nrows, 1,
                         "nrows is %d; an empty matrix (no rows) cannot be multiplied", A->nrows);
    if (A->ncols < 1)
        return spmv_fail(err, SPMV_EINVAL, -1, A->ncols, 1,
                         "ncols is %d; an empty matrix (no columns) cannot be multiplied", A->ncols);
    if (indptr_len != (int64_t)A->nrows + 1)
        return spmv_fail(err, SPMV_EINVAL, -1, indptr_len, (int64_t)A->nrows + 1,
                         "indptr has length %lld; it must be nrows+1 = %lld",
                         (long long)indptr_len, (long long)A->nrows + 1);
    if (A->indptr[0] != 0)
        return spmv_fail(err, SPMV_EINDEX, 0, A->indptr[0], 0, "indptr[0] is %d; it must be 0",
                         A->indptr[0]);
    if ((int64_t)A->indptr[A->nrows] != indices_len)
        return spmv_fail(err, SPMV_EINVAL, A->nrows, A->indptr[A->nrows], indices_len,
                         "indptr[nrows] = %d but indices has length %lld", A->indptr[A->nrows],
                         (long long)indices_len);
    for (int32_t i = 0; i < A->nrows; i++) {
        int32_t p0 = A->indptr[i], p1 = A->indptr[i + 1];
        if (p1 < p0)
            return spmv_fail(err, SPMV_EINDEX, i + 1, p1, p0,
                             "indptr decreases at position %d: %d after %d", i + 1, p1, p0);
        for (int32_t p = p0; p < p1; p++) {
            int32_t j = A->indices[p];
            if (j < 0 || j >= A->ncols)
                return spmv_fail(err, SPMV_EINDEX, i, j, A->ncols,
                                 "column index %d in row %d is outside [0, ncols = %d)", j, i,
                                 A->ncols);
            if (p > p0 && j <= A->indices[p - 1])
                return spmv_fail(err, SPMV_EUNSORTED, i, j, A->indices[p - 1],
                                 "row %d has column %d after column %d: indices must be sorted "
                                 "and free of duplicates (canonicalise with sum_duplicates())",
                                 i, j, A->indices[p - 1]);
        }
    }
    return SPMV_OK;
}

int32_t spmv_hyb_width_hist(const int64_t *hist, int32_t maxlen, int32_t nrows) {
    int64_t third = ((int64_t)nrows + 2) / 3, target = third > 4096 ? third : 4096, atleast = 0;
    if (target > nrows) target = nrows;
    int32_t k = maxlen;
    for (; k > 0; k--) {                     /* atleast = rows with length >= k */
        atleast += hist[k];
        if (atleast >= target) break;
    }
    return k;
}

int spmv_hyb_width(const spmv_csr *A, int32_t *width, spmv_err *err) {
    int32_t maxlen = 0, n = A->nrows;
    for (int32_t i = 0; i < n; i++)
        if (A->indptr[i + 1] - A->indptr[i] > maxlen) maxlen = A->indptr[i + 1] - A->indptr[i];
    int64_t *hist = spmv_calloc((int64_t)maxlen + 1, sizeof(int64_t), err);
    if (hist == NULL) return SPMV_ENOMEM;
    for (int32_t i = 0; i < n; i++) hist[A->indptr[i + 1] - A->indptr[i]]++;
    *width = spmv_hyb_width_hist(hist, maxlen, n);
    spmv_free(hist);
    return SPMV_OK;
}

static int csr_size(const spmv_csr *A, spmv_fmt *F, spmv_err *err) {
    (void)err;
    F->nidx[0] = (int64_t)A->nrows + 1;
    F->nidx[1] = F->nnz;
    F->nval[0] = F->nnz;
    return SPMV_OK;
}

#define SPMV_REAL float
#define SPMV_NAME(x) x##_f32
// csrc/csr_impl.h: CSR fill, back-conversion and CPU kernels for one value type (see csrc/csr.c)
// SPDX-License-Identifier: BSD-3-Clause
// Included by csr.c with SPMV_REAL and SPMV_NAME defined; no include guard on purpose.

static int SPMV_NAME(csr_fill)(const spmv_csr *A, const SPMV_REAL *values, spmv_fmt *F,
                               spmv_err *err) {
    (void)err;
    memcpy(F->idx[0], A->indptr, sizeof(int32_t) * (size_t)F->nidx[0]);
    memcpy(F->idx[1], A->indices, sizeof(int32_t) * (size_t)F->nnz);
    memcpy(F->val[0], values, sizeof(SPMV_REAL) * (size_t)F->nnz);
    return SPMV_OK;
}

static int SPMV_NAME(csr_to_csr)(const spmv_fmt *F, int32_t *indptr, int32_t *indices,
                                 SPMV_REAL *values, spmv_err *err) {
    (void)err;
    memcpy(indptr, F->idx[0], sizeof(int32_t) * (size_t)F->nidx[0]);
    memcpy(indices, F->idx[1], sizeof(int32_t) * (size_t)F->nnz);
    memcpy(values, F->val[0], sizeof(SPMV_REAL) * (size_t)F->nnz);
    return SPMV_OK;
}

static void SPMV_NAME(csr_rows)(const int32_t *indptr, const int32_t *indices, const SPMV_REAL *v,
                                const SPMV_REAL *x, SPMV_REAL *y, int32_t r0, int32_t r1) {
    for (int32_t i = r0; i < r1; i++) {
        SPMV_REAL s = 0;
        for (int32_t p = indptr[i]; p < indptr[i + 1]; p++) s += v[p] * x[indices[p]];
        y[i] = s;
    }
}

static int SPMV_NAME(csr_mv)(const spmv_fmt *F, int kernel, const SPMV_REAL *x, SPMV_REAL *y,
                             spmv_err *err) {
    (void)err;
    const int32_t *indptr = F->idx[0], *indices = F->idx[1];
    const SPMV_REAL *v = (const SPMV_REAL *)F->val[0];
    int32_t n = F->nrows;
    if (kernel == 0) {
#pragma omp parallel for schedule(static) if (F->nnz > SPMV_OMP_MIN_WORK)
        for (int32_t i = 0; i < n; i++) SPMV_NAME(csr_rows)(indptr, indices, v, x, y, i, i + 1);
        return SPMV_OK;
    }
#pragma omp parallel if (F->nnz > SPMV_OMP_MIN_WORK)
    {
        int t = 0, nt = 1;
#ifdef _OPENMP
        t = omp_get_thread_num();
        nt = omp_get_num_threads();
#endif
        int32_t r0 = (int32_t)spmv_lower_bound(indptr, 0, n, F->nnz * t / nt);
        int32_t r1 = t + 1 == nt ? n
                                 : (int32_t)spmv_lower_bound(indptr, 0, n, F->nnz * (t + 1) / nt);
        SPMV_NAME(csr_rows)(indptr, indices, v, x, y, r0, r1);
    }
    return SPMV_OK;
}

int SPMV_NAME(spmv_finite_check)(const SPMV_REAL *v, int64_t n, spmv_err *err) {
    for (int64_t k = 0; k < n; k++)
        if (!isfinite(v[k]))
            return spmv_fail(err, SPMV_EINVAL, k, -1, -1, "entry %lld is %s", (long long)k,
                             isnan(v[k]) ? "nan" : "inf");
    return SPMV_OK;
}

#undef SPMV_REAL
#undef SPMV_NAME
#define SPMV_REAL double
#define SPMV_NAME(x) x##_f64
// csrc/csr_impl.h: CSR fill, back-conversion and CPU kernels for one value type (see csrc/csr.c)
// SPDX-License-Identifier: BSD-3-Clause
// Included by csr.c with SPMV_REAL and SPMV_NAME defined; no include guard on purpose.

static int SPMV_NAME(csr_fill)(const spmv_csr *A, const SPMV_REAL *values, spmv_fmt *F,
                               spmv_err *err) {
    (void)err;
    memcpy(F->idx[0], A->indptr, sizeof(int32_t) * (size_t)F->nidx[0]);
    memcpy(F->idx[1], A->indices, sizeof(int32_t) * (size_t)F->nnz);
    memcpy(F->val[0], values, sizeof(SPMV_REAL) * (size_t)F->nnz);
    return SPMV_OK;
}

static int SPMV_NAME(csr_to_csr)(const spmv_fmt *F, int32_t *indptr, int32_t *indices,
                                 SPMV_REAL *values, spmv_err *err) {
    (void)err;
    memcpy(indptr, F->idx[0], sizeof(int32_t) * (size_t)F->nidx[0]);
    memcpy(indices, F->idx[1], sizeof(int32_t) * (size_t)F->nnz);
    memcpy(values, F->val[0], sizeof(SPMV_REAL) * (size_t)F->nnz);
    return SPMV_OK;
}

static void SPMV_NAME(csr_rows)(const int32_t *indptr, const int32_t *indices, const SPMV_REAL *v,
                                const SPMV_REAL *x, SPMV_REAL *y, int32_t r0, int32_t r1) {
    for (int32_t i = r0; i < r1; i++) {
        SPMV_REAL s = 0;
        for (int32_t p = indptr[i]; p < indptr[i + 1]; p++) s += v[p] * x[indices[p]];
        y[i] = s;
    }
}

static int SPMV_NAME(csr_mv)(const spmv_fmt *F, int kernel, const SPMV_REAL *x, SPMV_REAL *y,
                             spmv_err *err) {
    (void)err;
    const int32_t *indptr = F->idx[0], *indices = F->idx[1];
    const SPMV_REAL *v = (const SPMV_REAL *)F->val[0];
    int32_t n = F->nrows;
    if (kernel == 0) {
#pragma omp parallel for schedule(static) if (F->nnz > SPMV_OMP_MIN_WORK)
        for (int32_t i = 0; i < n; i++) SPMV_NAME(csr_rows)(indptr, indices, v, x, y, i, i + 1);
        return SPMV_OK;
    }
#pragma omp parallel if (F->nnz > SPMV_OMP_MIN_WORK)
    {
        int t = 0, nt = 1;
#ifdef _OPENMP
        t = omp_get_thread_num();
        nt = omp_get_num_threads();
#endif
        int32_t r0 = (int32_t)spmv_lower_bound(indptr, 0, n, F->nnz * t / nt);
        int32_t r1 = t + 1 == nt ? n
                                 : (int32_t)spmv_lower_bound(indptr, 0, n, F->nnz * (t + 1) / nt);
        SPMV_NAME(csr_rows)(indptr, indices, v, x, y, r0, r1);
    }
    return SPMV_OK;
}

int SPMV_NAME(spmv_finite_check)(const SPMV_REAL *v, int64_t n, spmv_err *err) {
    for (int64_t k = 0; k < n; k++)
        if (!isfinite(v[k]))
            return spmv_fail(err, SPMV_EINVAL, k, -1, -1, "entry %lld is %s", (long long)k,
                             isnan(v[k]) ? "nan" : "inf");
    return SPMV_OK;
}

#undef SPMV_REAL
#undef SPMV_NAME

SPMV_API const spmv_format_ops spmv_csr_ops = {
    csr_size, csr_fill_f32, csr_fill_f64, csr_to_csr_f32, csr_to_csr_f64, csr_mv_f32, csr_mv_f64, 2,
};
/* ==== csrc/format.c ==== */
// csrc/format.c: dispatch from a spmv_fmt to its format's operations, and the shared padding guard
// SPDX-License-Identifier: BSD-3-Clause

static const spmv_format_ops *const formats[SPMV_NFORMATS] = {
    [SPMV_FMT_CSR] = &spmv_csr_ops,   [SPMV_FMT_COO] = &spmv_coo_ops,
    [SPMV_FMT_ELL] = &spmv_ell_ops,   [SPMV_FMT_SELL] = &spmv_sell_ops,
    [SPMV_FMT_BROELL] = &spmv_broell_ops, [SPMV_FMT_HYB] = &spmv_hyb_ops,
    [SPMV_FMT_DIA] = &spmv_dia_ops,   [SPMV_FMT_JAD] = &spmv_jad_ops,
    [SPMV_FMT_BSR] = &spmv_bsr_ops,
};

static const char *const names[SPMV_NFORMATS] = {
    "csr", "coo", "ell", "sell", "bro_ell", "hyb", "dia", "jad", "bsr",
};

const char *spmv_format_name(int f) { return f >= 0 && f < SPMV_NFORMATS ? names[f] : NULL; }

static const spmv_format_ops *ops_of(const spmv_fmt *F, spmv_err *err) {
    if (F == NULL || F->format < 0 || F->format >= SPMV_NFORMATS) {
        spmv_fail(err, SPMV_EINVAL, -1, F ? F->format : -1, SPMV_NFORMATS,
                  "format code %d is not in [0, %d)", F ? F->format : -1, SPMV_NFORMATS);
        return NULL;
    }
    return formats[F->format];
}

int spmv_fmt_size(const spmv_csr *A, spmv_fmt *F, spmv_err *err) {
    const spmv_format_ops *op = ops_of(F, err);
    if (op == NULL) return SPMV_EINVAL;
    F->nrows = A->nrows;
    F->ncols = A->ncols;
    F->nnz = A->indptr[A->nrows];
    for (int k = 0; k < SPMV_MAXIDX; k++) F->nidx[k] = 0, F->idx[k] = NULL;
    for (int k = 0; k < SPMV_MAXVAL; k++) F->nval[k] = 0, F->val[k] = NULL;
    for (int k = 0; k < 4; k++) F->scalar[k] = 0;
    return op->size(A, F, err);
}

int spmv_fmt_fill_f32(const spmv_csr *A, const float *values, spmv_fmt *F, spmv_err *err) {
    const spmv_format_ops *op = ops_of(F, err);
    return op ? op->fill_f32(A, values, F, err) : SPMV_EINVAL;
}

int spmv_fmt_fill_f64(const spmv_csr *A, const double *values, spmv_fmt *F, spmv_err *err) {
    const spmv_format_ops *op = ops_of(F, err);
    return op ? op->fill_f64(A, values, F, err) : SPMV_EINVAL;
}

int spmv_fmt_to_csr_f32(const spmv_fmt *F, int32_t *indptr, int32_t *indices, float *values,
                        spmv_err *err) {
    const spmv_format_ops *op = ops_of(F, err);
    return op ? op->to_csr_f32(F, indptr, indices, values, err) : SPMV_EINVAL;
}

int spmv_fmt_to_csr_f64(const spmv_fmt *F, int32_t *indptr, int32_t *indices, double *values,
                        spmv_err *err) {
    const spmv_format_ops *op = ops_of(F, err);
    return op ? op->to_csr_f64(F, indptr, indices, values, err) : SPMV_EINVAL;
}

static int kernel_ok(const spmv_format_ops *op, const spmv_fmt *F, int kernel, spmv_err *err) {
    if (kernel < 0 || kernel >= op->nkernels)
        return spmv_fail(err, SPMV_EINVAL, -1, kernel, op->nkernels,
                         "kernel variant %d of format %s is not in [0, %d)", kernel,
                         names[F->format], op->nkernels);
    return SPMV_OK;
}

int spmv_fmt_mv_f32(const spmv_fmt *F, int kernel, const float *x, float *y, spmv_err *err) {
    const spmv_format_ops *op = ops_of(F, err);
    if (op == NULL) return SPMV_EINVAL;
    int rc = kernel_ok(op, F, kernel, err);
    return rc ? rc : op->mv_f32(F, kernel, x, y, err);
}

int spmv_fmt_mv_f64(const spmv_fmt *F, int kernel, const double *x, double *y, spmv_err *err) {
    const spmv_format_ops *op = ops_of(F, err);
    if (op == NULL) return SPMV_EINVAL;
    int rc = kernel_ok(op, F, kernel, err);
    return rc ? rc : op->mv_f64(F, kernel, x, y, err);
}

int64_t spmv_fmt_bytes(const spmv_fmt *F, int elem_size) {
    int64_t b = 0;
    for (int k = 0; k < SPMV_MAXIDX; k++) b += F->nidx[k] * (int64_t)sizeof(int32_t);
    for (int k = 0; k < SPMV_MAXVAL; k++) b += F->nval[k] * (int64_t)elem_size;
    return b;
}

int spmv_fill_guard(const spmv_fmt *F, int64_t slots, const char *what, spmv_err *err) {
    double fill = F->max_fill > 0 ? F->max_fill : SPMV_DEFAULT_MAX_FILL;
    int64_t base = F->nnz > F->nrows ? F->nnz : F->nrows;
    if (slots > INT32_MAX)
        return spmv_fail(err, SPMV_ENOTAPPLICABLE, -1, slots, INT32_MAX,
                         "%s needs %lld stored slots, past the int32 limit %d", what,
                         (long long)slots, INT32_MAX);
    if ((double)slots > fill * (double)base)
        return spmv_fail(err, SPMV_ENOTAPPLICABLE, -1, slots, (int64_t)(fill * (double)base),
                         "%s pads to %lld stored slots, %.1fx max(nnz, nrows) = %lld, past "
                         "max_fill=%g",
                         what, (long long)slots, (double)slots / (double)base, (long long)base,
                         fill);
    return SPMV_OK;
}
/* ==== csrc/features.c ==== */
// csrc/features.c: matrix features, tiers 0 to 2 (names, definitions, one pass over indices)
// SPDX-License-Identifier: BSD-3-Clause
//
// len_i is the length of row i; "over non-empty rows" means rows with len_i > 0 (the feature is 0
// when there are none); every ratio is 0 when its denominator is; sd is the population sd.
//
// tier 0, O(1):  nrows, ncols, nnz, density = nnz/(nrows*ncols), nnz_mean = nnz/nrows.
// tier 1, O(nrows), from indptr:
//   nnz_min, nnz_max, nnz_mode (most frequent len_i, smallest on ties), nnz_median (numpy.median),
//   nnz_sd, nnz_cov = sd/mean, nnz_max_minus_mean, ell_fill = nrows*nnz_max/nnz, empty_rows,
//   hyb_width (Bell-Garland, spmv_hyb_width), and Guo's strips: full-GPU iterations (sm_count *
//   threads_per_sm threads) of a thread-per-row, warp-per-row and thread-per-nonzero kernel:
//   gpu_strips_rows = ceil(nrows/T), gpu_strips_warps = ceil(nrows*warp_size/T),
//   gpu_strips_nnz = ceil(nnz/T).
// tier 2, O(nnz + nrows + ncols), one pass over indices, row by row:
//   dist_min, dist_max    min and max gap col[k+1]-col[k] between neighbours in a row [Lehnert]
//   bandwidth             max |col - row| [Lehnert]
//   col_span_mean         mean over non-empty rows of last col - first col [distavg]
//   cluster_mean          mean over non-empty rows of the longest run j, j+1, j+2, ... in the row
//   ndiag, dia_fill       distinct offsets col-row; ndiag*nrows/nnz [Gao]
//   diag_dist_mean, _sd   of the gaps between consecutive occupied offsets (0 if ndiag < 2) [Li & Suda]
//   low_band_mean, up_band_mean, low_band_sd, up_band_sd
//                         over non-empty rows of max(0, i - first col), max(0, last col - i) [Li & Suda]
//   x_seg_row_mean        mean over non-empty rows of the distinct 128-byte segments of a float64 x
//                         the row reads (segment = col/16)
//   x_seg_warp_mean       mean over the ceil(nrows/32) groups of 32 consecutive rows (empty groups
//                         count 0) of the distinct segments the group reads: what one warp of a
//                         thread-per-row kernel fetches

#include <math.h>
#include <stdint.h>
#include <string.h>

void spmv_gpu_props_h100(spmv_gpu_props *p) {
    p->sm_count = 132;
    p->threads_per_sm = 2048;
    p->warp_size = 32;
}

enum {
    F_NROWS, F_NCOLS, F_NNZ, F_DENSITY, F_NNZ_MEAN,
    F_NNZ_MIN, F_NNZ_MAX, F_NNZ_MODE, F_NNZ_MEDIAN, F_NNZ_SD, F_NNZ_COV, F_NNZ_MAX_MINUS_MEAN,
    F_ELL_FILL, F_EMPTY_ROWS, F_HYB_WIDTH, F_STRIPS_ROWS, F_STRIPS_WARPS, F_STRIPS_NNZ,
    F_DIST_MIN, F_DIST_MAX, F_BANDWIDTH, F_COL_SPAN_MEAN, F_CLUSTER_MEAN, F_NDIAG, F_DIA_FILL,
    F_DIAG_DIST_MEAN, F_DIAG_DIST_SD, F_LOW_BAND_MEAN, F_UP_BAND_MEAN, F_LOW_BAND_SD, F_UP_BAND_SD,
    F_X_SEG_ROW_MEAN, F_X_SEG_WARP_MEAN, F_COUNT
};
_Static_assert(F_COUNT == SPMV_NFEATURES, "feature enum and SPMV_NFEATURES disagree");

static const char *const feature_names[SPMV_NFEATURES] = {
    [F_NROWS] = "nrows", [F_NCOLS] = "ncols", [F_NNZ] = "nnz", [F_DENSITY] = "density",
    [F_NNZ_MEAN] = "nnz_mean", [F_NNZ_MIN] = "nnz_min", [F_NNZ_MAX] = "nnz_max",
    [F_NNZ_MODE] = "nnz_mode", [F_NNZ_MEDIAN] = "nnz_median", [F_NNZ_SD] = "nnz_sd",
    [F_NNZ_COV] = "nnz_cov", [F_NNZ_MAX_MINUS_MEAN] = "nnz_max_minus_mean",
    [F_ELL_FILL] = "ell_fill", [F_EMPTY_ROWS] = "empty_rows", [F_HYB_WIDTH] = "hyb_width",
    [F_STRIPS_ROWS] = "gpu_strips_rows", [F_STRIPS_WARPS] = "gpu_strips_warps",
    [F_STRIPS_NNZ] = "gpu_strips_nnz", [F_DIST_MIN] = "dist_min", [F_DIST_MAX] = "dist_max",
    [F_BANDWIDTH] = "bandwidth", [F_COL_SPAN_MEAN] = "col_span_mean",
    [F_CLUSTER_MEAN] = "cluster_mean", [F_NDIAG] = "ndiag", [F_DIA_FILL] = "dia_fill",
    [F_DIAG_DIST_MEAN] = "diag_dist_mean", [F_DIAG_DIST_SD] = "diag_dist_sd",
    [F_LOW_BAND_MEAN] = "low_band_mean", [F_UP_BAND_MEAN] = "up_band_mean",
    [F_LOW_BAND_SD] = "low_band_sd", [F_UP_BAND_SD] = "up_band_sd",
    [F_X_SEG_ROW_MEAN] = "x_seg_row_mean", [F_X_SEG_WARP_MEAN] = "x_seg_warp_mean",
};

const char *spmv_feature_name(int i) {
    return i >= 0 && i < SPMV_NFEATURES ? feature_names[i] : NULL;
}

static double ratio(double num, double den) { return den != 0 ? num / den : 0.0; }

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* The k-th smallest row length (0-based) from the histogram of lengths. */
static int32_t hist_kth(const int64_t *hist, int64_t k) {
    int32_t len = 0;
    for (int64_t below = hist[0]; below <= k; below += hist[++len]) {}
    return len;
}

/* Tiers 0 and 1: everything indptr alone determines. */
static int features_rows(const spmv_csr *A, const spmv_gpu_props *dev, double *out, spmv_err *err) {
    int rc = SPMV_OK;
    const int32_t *ip = A->indptr;
    int32_t n = A->nrows, lmin = INT32_MAX, lmax = 0, hyb = 0;
    int64_t nnz = ip[n], empty = 0, *hist = NULL;
    /* The sd in one pass, exactly: squares about the integer m0 nearest the mean add up in uint64
     * (at most nnz*max + nnz^2/n < 2^63), then sum (len-mean)^2 = sum (len-m0)^2 - n (mean-m0)^2.
     * An integer sum also keeps the loop free of a floating-point add chain. */
    int64_t m0 = (nnz + n / 2) / n;
    uint64_t sq = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t len = ip[i + 1] - ip[i];
        int64_t d = len - m0;
        lmin = len < lmin ? len : lmin;
        lmax = len > lmax ? len : lmax;
        empty += len == 0;
        sq += (uint64_t)(d * d);
    }
    double mean = (double)nnz / n, dm = mean - (double)m0;
    double sd = sqrt(fmax((double)sq - n * dm * dm, 0) / n);

    hist = spmv_calloc((int64_t)lmax + 1, sizeof(int64_t), err);
    if (hist == NULL) {
        rc = SPMV_ENOMEM;
        goto done;
    }
    for (int32_t i = 0; i < n; i++) hist[ip[i + 1] - ip[i]]++;
    int32_t mode = 0;
    for (int32_t len = 1; len <= lmax; len++)
        if (hist[len] > hist[mode]) mode = len;  /* strict: the smallest length wins ties */
    double median = n % 2 ? hist_kth(hist, n / 2)
                          : 0.5 * ((double)hist_kth(hist, n / 2 - 1) + hist_kth(hist, n / 2));
    hyb = spmv_hyb_width_hist(hist, lmax, n);

    int64_t T = (int64_t)dev->sm_count * dev->threads_per_sm;
    out[F_NROWS] = n;
    out[F_NCOLS] = A->ncols;
    out[F_NNZ] = (double)nnz;
    out[F_DENSITY] = (double)nnz / ((double)n * A->ncols);
    out[F_NNZ_MEAN] = mean;
    out[F_NNZ_MIN] = lmin;
    out[F_NNZ_MAX] = lmax;
    out[F_NNZ_MODE] = mode;
    out[F_NNZ_MEDIAN] = median;
    out[F_NNZ_SD] = sd;
    out[F_NNZ_COV] = ratio(sd, mean);
    out[F_NNZ_MAX_MINUS_MEAN] = lmax - mean;
    out[F_ELL_FILL] = ratio((double)n * lmax, (double)nnz);
    out[F_EMPTY_ROWS] = (double)empty;
    out[F_HYB_WIDTH] = hyb;
    out[F_STRIPS_ROWS] = (double)ceil_div(n, T);
    out[F_STRIPS_WARPS] = (double)ceil_div((int64_t)n * dev->warp_size, T);
    out[F_STRIPS_NNZ] = (double)ceil_div(nnz, T);
done:
    spmv_free(hist);
    return rc;
}

/* Sum of squared deviations over many values, fed in blocks: each block's own is taken about its
 * exact mean from a buffer that stays in L1, and blocks are merged with Chan, Golub and LeVeque's
 * update.  Values are shifted by the first one so that means carry rounding error on the scale of
 * the spread, not of the values: a narrow band far from the diagonal would otherwise lose digits.
 * As accurate as a two-pass sd without a second pass over indices or an O(nrows) buffer. */
#define BLOCK 256
typedef struct {
    int64_t count, sum; /* sum of value - shift, exact */
    int32_t shift;
    double m2;
} moments;

static void moments_add(moments *m, const int32_t *v, int32_t k) {
    if (m->count == 0) m->shift = v[0];
    int64_t s = 0;
    for (int32_t j = 0; j < k; j++) s += (int64_t)v[j] - m->shift;
    double mb = (double)s / k, a0 = 0, a1 = 0, a2 = 0, a3 = 0, sh = m->shift;
    int32_t j = 0;
    for (; j + 4 <= k; j += 4) {            /* four sums: the adds pipeline instead of chaining */
        double d0 = (v[j] - sh) - mb, d1 = (v[j + 1] - sh) - mb;
        double d2 = (v[j + 2] - sh) - mb, d3 = (v[j + 3] - sh) - mb;
        a0 += d0 * d0;
        a1 += d1 * d1;
        a2 += d2 * d2;
        a3 += d3 * d3;
    }
    for (; j < k; j++) {
        double d = (v[j] - sh) - mb;
        a0 += d * d;
    }
    double m2b = (a0 + a1) + (a2 + a3);
    if (m->count > 0) {
        double delta = mb - (double)m->sum / (double)m->count;
        m2b += delta * delta * ((double)m->count * k / (double)(m->count + k));
    }
    m->m2 += m2b;
    m->sum += s;
    m->count += k;
}

static int32_t max_i32(int32_t a, int32_t b) { return a > b ? a : b; }

static int word_zero(const uint8_t *p) {
    uint64_t w;
    memcpy(&w, p, sizeof w);
    return w == 0;
}

/* Tier 2 in one pass over indices.  Workspace: one byte per offset col-row (nrows+ncols-1) marking
 * the occupied diagonals, and one int32 per 128-byte segment of x stamped with the id of the last
 * row group that read it, so a group counts each segment once without clearing anything. */
static int features_pattern(const spmv_csr *A, double *out, spmv_err *err) {
    int rc = SPMV_OK;
    const int32_t *ip = A->indptr, *ix = A->indices;
    int32_t n = A->nrows;
    int64_t noff = (int64_t)n + A->ncols - 1, nseg = ((int64_t)A->ncols + 15) >> 4;
    uint8_t *mark = spmv_calloc(noff, 1, err);
    int32_t *stamp = mark == NULL ? NULL : spmv_calloc(nseg, sizeof(int32_t), err);
    if (stamp == NULL) {
        rc = SPMV_ENOMEM;
        goto done;
    }
    int32_t gmin = INT32_MAX, gmax = 0, band = 0, blo[BLOCK], bup[BLOCK];
    int64_t span = 0, cluster = 0, segr = 0, segw = 0;
    moments mlo = {0, 0, 0, 0}, mup = {0, 0, 0, 0};
    for (int32_t b0 = 0; b0 < n; b0 += BLOCK) {     /* BLOCK is a multiple of the group size 32 */
        int32_t b1 = n - b0 < BLOCK ? n : b0 + BLOCK, nb = 0;
        for (int32_t i = b0; i < b1; i++) {
            const int32_t *q = ix + ip[i], *qe = ix + ip[i + 1];
            if (q == qe) continue;
            uint8_t *mk = mark + (n - 1 - i);   /* mk[col] marks offset col - i */
            int32_t g = (i >> 5) + 1;           /* group id; 0 is the never-stamped value */
            int32_t first = *q, c = first, s = c >> 4, run = 0, best = 0, segs = 1;
            mk[c] = 1;
            segw += stamp[s] != g;
            stamp[s] = g;
            for (q++; q < qe; q++) {            /* compares become cmov/setcc */
                int32_t cn = *q, d = cn - c, sn = cn >> 4;
                gmin = d < gmin ? d : gmin;
                gmax = d > gmax ? d : gmax;
                run = d == 1 ? run + 1 : 0;
                best = run > best ? run : best;
                mk[cn] = 1;
                if (sn != s) {                  /* sorted: a segment recurs only in a run. The
                                                   branch halves the time of stencils (one stamp
                                                   per segment, not per entry) but doubles it where
                                                   segments change unpredictably (pushpull).
                                                   TODO: tune on more matrices. */
                    segs++;
                    segw += stamp[sn] != g;
                    stamp[sn] = g;
                }
                c = cn;
                s = sn;
            }
            int32_t lo = max_i32(i - first, 0), up = max_i32(c - i, 0);
            band = max_i32(band, max_i32(lo, up));  /* sorted: the extremes end the row */
            span += c - first;
            cluster += best;
            segr += segs;
            blo[nb] = lo;
            bup[nb++] = up;
        }
        if (nb > 0) {
            moments_add(&mlo, blo, nb);
            moments_add(&mup, bup, nb);
        }
    }

    /* Occupied offsets in ascending order: count them, then the sd of their gaps about the mean
     * gap, which the extremes fix: (last - first) / (ndiag - 1).  Both walks skip empty words. */
    int64_t ndiag = 0, ofirst = -1, olast = -1;
    for (int64_t k = 0; k < noff; k++) {
        if ((k & 7) == 0 && noff - k >= 8 && word_zero(mark + k)) {
            k += 7;
            continue;
        }
        if (mark[k]) {
            ndiag++;
            ofirst = ofirst < 0 ? k : ofirst;
            olast = k;
        }
    }
    double gap_mean = 0, gap_ss = 0;
    if (ndiag >= 2) {
        gap_mean = (double)(olast - ofirst) / (double)(ndiag - 1);
        for (int64_t k = ofirst + 1, prev = ofirst; k <= olast; k++) {
            if ((k & 7) == 0 && olast - k >= 8 && word_zero(mark + k)) {
                k += 7;
                continue;
            }
            if (mark[k]) {
                double d = (double)(k - prev) - gap_mean;
                gap_ss += d * d;
                prev = k;
            }
        }
    }

    int64_t nnz = ip[n], rows = mlo.count;
    double r = (double)rows;
    out[F_DIST_MIN] = gmin == INT32_MAX ? 0 : gmin;
    out[F_DIST_MAX] = gmax;
    out[F_BANDWIDTH] = band;
    out[F_COL_SPAN_MEAN] = ratio((double)span, r);
    out[F_CLUSTER_MEAN] = ratio((double)(cluster + rows), r);  /* best counted steps, not entries */
    out[F_NDIAG] = (double)ndiag;
    out[F_DIA_FILL] = ratio((double)ndiag * n, (double)nnz);
    out[F_DIAG_DIST_MEAN] = gap_mean;
    out[F_DIAG_DIST_SD] = ndiag >= 2 ? sqrt(gap_ss / (double)(ndiag - 1)) : 0;
    out[F_LOW_BAND_MEAN] = ratio((double)(mlo.sum + (int64_t)mlo.shift * rows), r);
    out[F_UP_BAND_MEAN] = ratio((double)(mup.sum + (int64_t)mup.shift * rows), r);
    out[F_LOW_BAND_SD] = rows ? sqrt(mlo.m2 / r) : 0;
    out[F_UP_BAND_SD] = rows ? sqrt(mup.m2 / r) : 0;
    out[F_X_SEG_ROW_MEAN] = ratio((double)segr, r);
    out[F_X_SEG_WARP_MEAN] = (double)segw / (double)ceil_div(n, 32);
done:
    spmv_free(stamp);
    spmv_free(mark);
    return rc;
}

int spmv_features_compute(const spmv_csr *A, const spmv_gpu_props *dev, double *out, spmv_err *err) {
    if (A == NULL || A->indptr == NULL || dev == NULL || out == NULL)
        return spmv_fail(err, SPMV_EINVAL, -1, -1, -1, "features need a matrix, GPU properties and "
                         "an output array, not NULL");
    if (A->nrows < 1 || A->ncols < 1)
        return spmv_fail(err, SPMV_EINVAL, -1, A->nrows < 1 ? A->nrows : A->ncols, 1,
                         "matrix is %d x %d; features need nrows, ncols >= 1", A->nrows, A->ncols);
    if (A->indices == NULL && A->indptr[A->nrows] > 0)
        return spmv_fail(err, SPMV_EINVAL, -1, -1, -1, "indices must not be NULL when nnz > 0");
    if (dev->sm_count < 1 || dev->threads_per_sm < 1 || dev->warp_size < 1)
        return spmv_fail(err, SPMV_EINVAL, -1, -1, 1,
                         "GPU properties must be positive: sm_count %d, threads_per_sm %d, "
                         "warp_size %d", dev->sm_count, dev->threads_per_sm, dev->warp_size);
    for (int k = 0; k < SPMV_NFEATURES; k++) out[k] = 0;
    int rc = features_rows(A, dev, out, err);
    return rc ? rc : features_pattern(A, out, err);
}
/* ==== csrc/coo.c ==== */
// csrc/coo.c: COO — size query, conversion from CSR, back to CSR, CPU kernel
// SPDX-License-Identifier: BSD-3-Clause
//
// Layout (spmv_fmt with format SPMV_FMT_COO): idx[0] = row[nnz], idx[1] = col[nnz],
// val[0] = values[nnz], in CSR's row-major order (rows non-decreasing, columns increasing within a
// row).  No parameters, no scalars, no padding.  Kernel variant 0: y = 0, then each thread takes a
// contiguous run of about nnz/threads entries whose ends are moved to row boundaries, so every row
// is summed by one thread in one order: no atomics, and the same bits for any thread count.

#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static int coo_size(const spmv_csr *A, spmv_fmt *F, spmv_err *err) {
    (void)A;
    (void)err;
    F->nidx[0] = F->nnz;
    F->nidx[1] = F->nnz;
    F->nval[0] = F->nnz;
    return SPMV_OK;
}

/* Start of thread t's run of entries: the nominal split nnz*t/nt pushed forward past the rest of
 * the row it falls in.  row[] is non-decreasing, so a binary search finds the next row's start. */
int64_t spmv_coo_chunk(const int32_t *row, int64_t nnz, int t, int nt) {
    int64_t b = nnz * t / nt;
    if (b <= 0 || b >= nnz) return b <= 0 ? 0 : nnz;
    return spmv_lower_bound(row, b, nnz, (int64_t)row[b - 1] + 1);
}

#define SPMV_REAL float
#define SPMV_NAME(x) x##_f32
// csrc/coo_impl.h: COO fill, back-conversion and CPU kernel for one value type (see csrc/coo.c)
// SPDX-License-Identifier: BSD-3-Clause
// Included by coo.c with SPMV_REAL and SPMV_NAME defined; no include guard on purpose.

static int SPMV_NAME(coo_fill)(const spmv_csr *A, const SPMV_REAL *values, spmv_fmt *F,
                               spmv_err *err) {
    (void)err;
    int32_t *row = F->idx[0];
    const int32_t *indptr = A->indptr;
#pragma omp parallel for schedule(static) if (F->nnz > SPMV_OMP_MIN_WORK)
    for (int32_t i = 0; i < A->nrows; i++)
        for (int32_t p = indptr[i]; p < indptr[i + 1]; p++) row[p] = i;
    if (F->nnz > 0) {
        memcpy(F->idx[1], A->indices, sizeof(int32_t) * (size_t)F->nnz);
        memcpy(F->val[0], values, sizeof(SPMV_REAL) * (size_t)F->nnz);
    }
    return SPMV_OK;
}

static int SPMV_NAME(coo_to_csr)(const spmv_fmt *F, int32_t *indptr, int32_t *indices,
                                 SPMV_REAL *values, spmv_err *err) {
    (void)err;
    const int32_t *row = F->idx[0];
    memset(indptr, 0, sizeof(int32_t) * ((size_t)F->nrows + 1));
    for (int64_t p = 0; p < F->nnz; p++) indptr[row[p] + 1]++;
    for (int32_t i = 0; i < F->nrows; i++) indptr[i + 1] += indptr[i];
    if (F->nnz > 0) {                        /* entries are already in CSR order */
        memcpy(indices, F->idx[1], sizeof(int32_t) * (size_t)F->nnz);
        memcpy(values, F->val[0], sizeof(SPMV_REAL) * (size_t)F->nnz);
    }
    return SPMV_OK;
}

void SPMV_NAME(spmv_coo_part_chunk)(const int32_t *row, const int32_t *col, const SPMV_REAL *v,
                                    int64_t nnz, const SPMV_REAL *x, SPMV_REAL *y, int t, int nt,
                                    int add) {
    int64_t p = spmv_coo_chunk(row, nnz, t, nt), p1 = spmv_coo_chunk(row, nnz, t + 1, nt);
    while (p < p1) {
        int32_t r = row[p];
        SPMV_REAL s = 0;
        for (; p < p1 && row[p] == r; p++) s += v[p] * x[col[p]];
        y[r] = add ? y[r] + s : s;
    }
}

static int SPMV_NAME(coo_mv)(const spmv_fmt *F, int kernel, const SPMV_REAL *x, SPMV_REAL *y,
                             spmv_err *err) {
    (void)kernel;
    (void)err;
    int64_t nnz = F->nnz;
    int32_t n = F->nrows;
#pragma omp parallel if (nnz > SPMV_OMP_MIN_WORK)
    {
        int t = 0, nt = 1;
#ifdef _OPENMP
        t = omp_get_thread_num();
        nt = omp_get_num_threads();
#endif
#pragma omp for schedule(static)
        for (int32_t i = 0; i < n; i++) y[i] = 0;  /* implicit barrier: rows without entries */
        SPMV_NAME(spmv_coo_part_chunk)(F->idx[0], F->idx[1], (const SPMV_REAL *)F->val[0], nnz, x,
                                       y, t, nt, 0);
    }
    return SPMV_OK;
}

#undef SPMV_REAL
#undef SPMV_NAME
#define SPMV_REAL double
#define SPMV_NAME(x) x##_f64
// csrc/coo_impl.h: COO fill, back-conversion and CPU kernel for one value type (see csrc/coo.c)
// SPDX-License-Identifier: BSD-3-Clause
// Included by coo.c with SPMV_REAL and SPMV_NAME defined; no include guard on purpose.

static int SPMV_NAME(coo_fill)(const spmv_csr *A, const SPMV_REAL *values, spmv_fmt *F,
                               spmv_err *err) {
    (void)err;
    int32_t *row = F->idx[0];
    const int32_t *indptr = A->indptr;
#pragma omp parallel for schedule(static) if (F->nnz > SPMV_OMP_MIN_WORK)
    for (int32_t i = 0; i < A->nrows; i++)
        for (int32_t p = indptr[i]; p < indptr[i + 1]; p++) row[p] = i;
    if (F->nnz > 0) {
        memcpy(F->idx[1], A->indices, sizeof(int32_t) * (size_t)F->nnz);
        memcpy(F->val[0], values, sizeof(SPMV_REAL) * (size_t)F->nnz);
    }
    return SPMV_OK;
}

static int SPMV_NAME(coo_to_csr)(const spmv_fmt *F, int32_t *indptr, int32_t *indices,
                                 SPMV_REAL *values, spmv_err *err) {
    (void)err;
    const int32_t *row = F->idx[0];
    memset(indptr, 0, sizeof(int32_t) * ((size_t)F->nrows + 1));
    for (int64_t p = 0; p < F->nnz; p++) indptr[row[p] + 1]++;
    for (int32_t i = 0; i < F->nrows; i++) indptr[i + 1] += indptr[i];
    if (F->nnz > 0) {                        /* entries are already in CSR order */
        memcpy(indices, F->idx[1], sizeof(int32_t) * (size_t)F->nnz);
        memcpy(values, F->val[0], sizeof(SPMV_REAL) * (size_t)F->nnz);
    }
    return SPMV_OK;
}

void SPMV_NAME(spmv_coo_part_chunk)(const int32_t *row, const int32_t *col, const SPMV_REAL *v,
                                    int64_t nnz, const SPMV_REAL *x, SPMV_REAL *y, int t, int nt,
                                    int add) {
    int64_t p = spmv_coo_chunk(row, nnz, t, nt), p1 = spmv_coo_chunk(row, nnz, t + 1, nt);
    while (p < p1) {
        int32_t r = row[p];
        SPMV_REAL s = 0;
        for (; p < p1 && row[p] == r; p++) s += v[p] * x[col[p]];
        y[r] = add ? y[r] + s : s;
    }
}

static int SPMV_NAME(coo_mv)(const spmv_fmt *F, int kernel, const SPMV_REAL *x, SPMV_REAL *y,
                             spmv_err *err) {
    (void)kernel;
    (void)err;
    int64_t nnz = F->nnz;
    int32_t n = F->nrows;
#pragma omp parallel if (nnz > SPMV_OMP_MIN_WORK)
    {
        int t = 0, nt = 1;
#ifdef _OPENMP
        t = omp_get_thread_num();
        nt = omp_get_num_threads();
#endif
#pragma omp for schedule(static)
        for (int32_t i = 0; i < n; i++) y[i] = 0;  /* implicit barrier: rows without entries */
        SPMV_NAME(spmv_coo_part_chunk)(F->idx[0], F->idx[1], (const SPMV_REAL *)F->val[0], nnz, x,
                                       y, t, nt, 0);
    }
    return SPMV_OK;
}

#undef SPMV_REAL
#undef SPMV_NAME

SPMV_API const spmv_format_ops spmv_coo_ops = {
    coo_size, coo_fill_f32, coo_fill_f64, coo_to_csr_f32, coo_to_csr_f64, coo_mv_f32, coo_mv_f64, 1,
};
/* ==== csrc/ell.c ==== */
// csrc/ell.c: ELL — size query, conversion from CSR, back to CSR, CPU kernel
// SPDX-License-Identifier: BSD-3-Clause
//
// Layout (spmv_fmt with format SPMV_FMT_ELL): scalar[0] = W, the longest row's length.
// idx[0] = col[nrows*W] and val[0] = values[nrows*W], column-major: slot k of row i lives at
// k*nrows + i (int64 arithmetic), so that consecutive GPU threads (rows) read consecutive words.
// A row's entries fill its first slots in CSR order; the rest is padding, column -1 and value 0.
// W = 0 (nnz = 0) gives empty arrays and y = 0.  No parameters.  Refused (SPMV_ENOTAPPLICABLE)
// when nrows*W passes max_fill * max(nnz, nrows): one long row pads every other row to its length.
// Kernel variant 0: row-parallel, each row stops at its first padding slot.

#include <stdio.h>

/* Also HYB's ELL part: `extra` slots stored elsewhere (its COO part) count toward the guard. */
int spmv_ell_part_size(const spmv_csr *A, spmv_fmt *F, int32_t w, int64_t extra, const char *what,
                       spmv_err *err) {
    int64_t slots = (int64_t)A->nrows * w;
    int rc = spmv_fill_guard(F, slots + extra, what, err);
    if (rc) return rc;
    F->scalar[0] = w;
    F->nidx[0] = slots;
    F->nval[0] = slots;
    return SPMV_OK;
}

static int ell_size(const spmv_csr *A, spmv_fmt *F, spmv_err *err) {
    int32_t w = 0;
    for (int32_t i = 0; i < A->nrows; i++)
        if (A->indptr[i + 1] - A->indptr[i] > w) w = A->indptr[i + 1] - A->indptr[i];
    char what[48];
    snprintf(what, sizeof what, "ELL width %d", (int)w);
    return spmv_ell_part_size(A, F, w, 0, what, err);
}

#define SPMV_REAL float
#define SPMV_NAME(x) x##_f32
// csrc/ell_impl.h: ELL fill, back-conversion and CPU kernel for one value type (see csrc/ell.c)
// SPDX-License-Identifier: BSD-3-Clause
// Included by ell.c with SPMV_REAL and SPMV_NAME defined; no include guard on purpose.

void SPMV_NAME(spmv_ell_part_fill)(const spmv_csr *A, const SPMV_REAL *values, int32_t w,
                                   int32_t *col, SPMV_REAL *v) {
    int32_t n = A->nrows;
    const int32_t *indptr = A->indptr, *indices = A->indices;
#pragma omp parallel for schedule(static) if ((int64_t)n * w > SPMV_OMP_MIN_WORK)
    for (int32_t i = 0; i < n; i++) {
        int32_t p0 = indptr[i], len = indptr[i + 1] - p0;
        for (int32_t k = 0; k < w; k++) {
            int64_t s = (int64_t)k * n + i;
            col[s] = k < len ? indices[p0 + k] : -1;
            v[s] = k < len ? values[p0 + k] : (SPMV_REAL)0;
        }
    }
}

void SPMV_NAME(spmv_ell_part_rows)(int32_t n, int32_t w, const int32_t *col, const SPMV_REAL *v,
                                   const SPMV_REAL *x, SPMV_REAL *y) {
#pragma omp for schedule(static)
    for (int32_t i = 0; i < n; i++) {
        SPMV_REAL s = 0;
        for (int32_t k = 0; k < w; k++) {
            int64_t q = (int64_t)k * n + i;
            if (col[q] < 0) break;           /* padding only follows a row's entries */
            s += v[q] * x[col[q]];
        }
        y[i] = s;
    }
}

static int SPMV_NAME(ell_fill)(const spmv_csr *A, const SPMV_REAL *values, spmv_fmt *F,
                               spmv_err *err) {
    (void)err;
    SPMV_NAME(spmv_ell_part_fill)(A, values, (int32_t)F->scalar[0], F->idx[0],
                                  (SPMV_REAL *)F->val[0]);
    return SPMV_OK;
}

static int SPMV_NAME(ell_to_csr)(const spmv_fmt *F, int32_t *indptr, int32_t *indices,
                                 SPMV_REAL *values, spmv_err *err) {
    (void)err;
    const int32_t *col = F->idx[0];
    const SPMV_REAL *v = (const SPMV_REAL *)F->val[0];
    int32_t n = F->nrows, w = (int32_t)F->scalar[0];
    int64_t work = F->nidx[0];
    indptr[0] = 0;
#pragma omp parallel for schedule(static) if (work > SPMV_OMP_MIN_WORK)
    for (int32_t i = 0; i < n; i++) {
        int32_t k = 0;
        while (k < w && col[(int64_t)k * n + i] >= 0) k++;
        indptr[i + 1] = k;
    }
    for (int32_t i = 0; i < n; i++) indptr[i + 1] += indptr[i];
#pragma omp parallel for schedule(static) if (work > SPMV_OMP_MIN_WORK)
    for (int32_t i = 0; i < n; i++) {
        int32_t p0 = indptr[i], len = indptr[i + 1] - p0;
        for (int32_t k = 0; k < len; k++) {
            indices[p0 + k] = col[(int64_t)k * n + i];
            values[p0 + k] = v[(int64_t)k * n + i];
        }
    }
    return SPMV_OK;
}

static int SPMV_NAME(ell_mv)(const spmv_fmt *F, int kernel, const SPMV_REAL *x, SPMV_REAL *y,
                             spmv_err *err) {
    (void)kernel;
    (void)err;
#pragma omp parallel if (F->nidx[0] > SPMV_OMP_MIN_WORK)
    SPMV_NAME(spmv_ell_part_rows)(F->nrows, (int32_t)F->scalar[0], F->idx[0],
                                  (const SPMV_REAL *)F->val[0], x, y);
    return SPMV_OK;
}

#undef SPMV_REAL
#undef SPMV_NAME
#define SPMV_REAL double
#define SPMV_NAME(x) x##_f64
// csrc/ell_impl.h: ELL fill, back-conversion and CPU kernel for one value type (see csrc/ell.c)
// SPDX-License-Identifier: BSD-3-Clause
// Included by ell.c with SPMV_REAL and SPMV_NAME defined; no include guard on purpose.

void SPMV_NAME(spmv_ell_part_fill)(const spmv_csr *A, const SPMV_REAL *values, int32_t w,
                                   int32_t *col, SPMV_REAL *v) {
    int32_t n = A->nrows;
    const int32_t *indptr = A->indptr, *indices = A->indices;
#pragma omp parallel for schedule(static) if ((int64_t)n * w > SPMV_OMP_MIN_WORK)
    for (int32_t i = 0; i < n; i++) {
        int32_t p0 = indptr[i], len = indptr[i + 1] - p0;
        for (int32_t k = 0; k < w; k++) {
            int64_t s = (int64_t)k * n + i;
            col[s] = k < len ? indices[p0 + k] : -1;
            v[s] = k < len ? values[p0 + k] : (SPMV_REAL)0;
        }
    }
}

void SPMV_NAME(spmv_ell_part_rows)(int32_t n, int32_t w, const int32_t *col, const SPMV_REAL *v,
                                   const SPMV_REAL *x, SPMV_REAL *y) {
#pragma omp for schedule(static)
    for (int32_t i = 0; i < n; i++) {
        SPMV_REAL s = 0;
        for (int32_t k = 0; k < w; k++) {
            int64_t q = (int64_t)k * n + i;
            if (col[q] < 0) break;           /* padding only follows a row's entries */
            s += v[q] * x[col[q]];
        }
        y[i] = s;
    }
}

static int SPMV_NAME(ell_fill)(const spmv_csr *A, const SPMV_REAL *values, spmv_fmt *F,
                               spmv_err *err) {
    (void)err;
    SPMV_NAME(spmv_ell_part_fill)(A, values, (int32_t)F->scalar[0], F->idx[0],
                                  (SPMV_REAL *)F->val[0]);
    return SPMV_OK;
}

static int SPMV_NAME(ell_to_csr)(const spmv_fmt *F, int32_t *indptr, int32_t *indices,
                                 SPMV_REAL *values, spmv_err *err) {
    (void)err;
    const int32_t *col = F->idx[0];
    const SPMV_REAL *v = (const SPMV_REAL *)F->val[0];
    int32_t n = F->nrows, w = (int32_t)F->scalar[0];
    int64_t work = F->nidx[0];
    indptr[0] = 0;
#pragma omp parallel for schedule(static) if (work > SPMV_OMP_MIN_WORK)
    for (int32_t i = 0; i < n; i++) {
        int32_t k = 0;
        while (k < w && col[(int64_t)k * n + i] >= 0) k++;
        indptr[i + 1] = k;
    }
    for (int32_t i = 0; i < n; i++) indptr[i + 1] += indptr[i];
#pragma omp parallel for schedule(static) if (work > SPMV_OMP_MIN_WORK)
    for (int32_t i = 0; i < n; i++) {
        int32_t p0 = indptr[i], len = indptr[i + 1] - p0;
        for (int32_t k = 0; k < len; k++) {
            indices[p0 + k] = col[(int64_t)k * n + i];
            values[p0 + k] = v[(int64_t)k * n + i];
        }
    }
    return SPMV_OK;
}

static int SPMV_NAME(ell_mv)(const spmv_fmt *F, int kernel, const SPMV_REAL *x, SPMV_REAL *y,
                             spmv_err *err) {
    (void)kernel;
    (void)err;
#pragma omp parallel if (F->nidx[0] > SPMV_OMP_MIN_WORK)
    SPMV_NAME(spmv_ell_part_rows)(F->nrows, (int32_t)F->scalar[0], F->idx[0],
                                  (const SPMV_REAL *)F->val[0], x, y);
    return SPMV_OK;
}

#undef SPMV_REAL
#undef SPMV_NAME

SPMV_API const spmv_format_ops spmv_ell_ops = {
    ell_size, ell_fill_f32, ell_fill_f64, ell_to_csr_f32, ell_to_csr_f64, ell_mv_f32, ell_mv_f64, 1,
};
/* ==== csrc/sell.c ==== */
// csrc/sell.c: SELL-C-sigma — size query, conversion from CSR, back to CSR, CPU kernel
// SPDX-License-Identifier: BSD-3-Clause
//
// Layout (spmv_fmt with format SPMV_FMT_SELL): param[0] = C, the slice height (a power of two in
// [1, 1024]); param[1] = sigma, the sorting window (1, or a positive multiple of C up to 2^20).
// Rows are sorted by length, descending and stably, within each window of sigma consecutive rows
// (sigma = 1: no sorting), so that rows of one slice have similar lengths; because sigma is a
// multiple of C, a window never splits a slice.
//   scalar[0] = nslices = ceil(nrows / C), scalar[1] = total slots;
//   idx[0] = perm[nrows]: perm[r] = the original row at sorted position r;
//   idx[1] = slice_ptr[nslices+1]: slot offsets; slice s has width W_s (its longest row) and
//            C*W_s slots;
//   idx[2] = col[slots], val[0] = values[slots]: slot k of lane l of slice s at
//            slice_ptr[s] + k*C + l, so that C consecutive GPU threads read consecutive words.
// A row's entries fill its first slots in CSR order; the rest is padding, column -1 and value 0,
// and lanes past nrows in the last slice are all padding.  Refused (SPMV_ENOTAPPLICABLE) when
// slots pass max_fill * max(nnz, nrows).  Kernel variant 0: slice-parallel, each lane stopping
// at its first padding slot.

#include <stdio.h>

#define SELL_MAX_C 1024
#define SELL_MAX_SIGMA (1 << 20)

static int sell_params(const spmv_fmt *F, spmv_err *err) {
    int32_t c = F->param[0], sigma = F->param[1];
    if (c < 1 || c > SELL_MAX_C || (c & (c - 1)) != 0)
        return spmv_fail(err, SPMV_EINVAL, -1, c, SELL_MAX_C,
                         "The 'c' parameter of sell must be a power of two in [1, %d]. Got %d "
                         "instead.", SELL_MAX_C, c);
    if (sigma != 1 && (sigma < 1 || sigma > SELL_MAX_SIGMA || sigma % c != 0))
        return spmv_fail(err, SPMV_EINVAL, -1, sigma, SELL_MAX_SIGMA,
                         "The 'sigma' parameter of sell must be 1 or a positive multiple of c = %d "
                         "up to %d. Got %d instead.", c, SELL_MAX_SIGMA, sigma);
    return SPMV_OK;
}

static int32_t row_len(const spmv_csr *A, int32_t i) { return A->indptr[i + 1] - A->indptr[i]; }

/* perm[nrows] = rows sorted by length, descending and stably, within each window of sigma rows.
 * A counting sort per window: its histogram spans only that window's longest row, so the whole
 * sort is O(nrows + nnz) however long the longest row of the matrix is. */
static int sell_perm(const spmv_csr *A, int32_t sigma, int32_t *perm, spmv_err *err) {
    int32_t n = A->nrows, maxlen = 0;
    if (sigma == 1) {
        for (int32_t i = 0; i < n; i++) perm[i] = i;
        return SPMV_OK;
    }
    for (int32_t i = 0; i < n; i++)
        if (row_len(A, i) > maxlen) maxlen = row_len(A, i);
    int32_t *hist = spmv_malloc((int64_t)maxlen + 1, sizeof(int32_t), err);
    if (hist == NULL) return SPMV_ENOMEM;
    for (int32_t w0 = 0; w0 < n; w0 = n - w0 > sigma ? w0 + sigma : n) {
        int32_t w1 = n - w0 > sigma ? w0 + sigma : n, m = 0;
        for (int32_t i = w0; i < w1; i++)
            if (row_len(A, i) > m) m = row_len(A, i);
        for (int32_t L = 0; L <= m; L++) hist[L] = 0;
        for (int32_t i = w0; i < w1; i++) hist[row_len(A, i)]++;
        int32_t pos = w0;
        for (int32_t L = m; L >= 0; L--) {   /* hist[L] becomes the first position of length L */
            int32_t cnt = hist[L];
            hist[L] = pos;
            pos += cnt;
        }
        for (int32_t i = w0; i < w1; i++) perm[hist[row_len(A, i)]++] = i;
    }
    spmv_free(hist);
    return SPMV_OK;
}

/* Width of slice s: the longest of its rows (lanes past nrows count as empty). */
static int32_t slice_width(const spmv_csr *A, const int32_t *perm, int32_t c, int64_t s) {
    int32_t w = 0;
    for (int64_t r = s * c; r < (s + 1) * c && r < A->nrows; r++)
        if (row_len(A, perm[r]) > w) w = row_len(A, perm[r]);
    return w;
}

/* Stored entries of sorted row r: its slots up to the first padding one. */
static int32_t sell_len(const spmv_fmt *F, int64_t r) {
    const int32_t *sp = F->idx[1], *col = F->idx[2];
    int32_t c = F->param[0];
    int64_t s = r / c, l = r % c;
    int32_t w = (sp[s + 1] - sp[s]) / c, k = 0;
    while (k < w && col[sp[s] + (int64_t)k * c + l] >= 0) k++;
    return k;
}

static int sell_size(const spmv_csr *A, spmv_fmt *F, spmv_err *err) {
    int rc = sell_params(F, err);
    if (rc) return rc;
    int32_t c = F->param[0];
    int64_t nslices = ((int64_t)A->nrows + c - 1) / c, slots = 0;
    int32_t *perm = spmv_malloc(A->nrows, sizeof(int32_t), err);
    if (perm == NULL) return SPMV_ENOMEM;
    rc = sell_perm(A, F->param[1], perm, err);
    if (rc) goto done;
    for (int64_t s = 0; s < nslices; s++) slots += (int64_t)c * slice_width(A, perm, c, s);
    char what[48];
    snprintf(what, sizeof what, "SELL-%d-%d", (int)c, (int)F->param[1]);
    rc = spmv_fill_guard(F, slots, what, err);
    if (rc) goto done;
    F->scalar[0] = nslices;
    F->scalar[1] = slots;
    F->nidx[0] = A->nrows;
    F->nidx[1] = nslices + 1;
    F->nidx[2] = slots;
    F->nval[0] = slots;
done:
    spmv_free(perm);
    return rc;
}

#define SPMV_REAL float
#define SPMV_NAME(x) x##_f32
// csrc/sell_impl.h: SELL-C-sigma fill, back-conversion and CPU kernel for one value type
// SPDX-License-Identifier: BSD-3-Clause
// Included by sell.c with SPMV_REAL and SPMV_NAME defined; no include guard on purpose.

static int SPMV_NAME(sell_fill)(const spmv_csr *A, const SPMV_REAL *values, spmv_fmt *F,
                                spmv_err *err) {
    int32_t *perm = F->idx[0], *sp = F->idx[1], *col = F->idx[2], c = F->param[0];
    SPMV_REAL *v = (SPMV_REAL *)F->val[0];
    int64_t nslices = F->scalar[0];
    int32_t n = A->nrows;
    const int32_t *indptr = A->indptr, *indices = A->indices;
    int rc = sell_perm(A, F->param[1], perm, err);
    if (rc) return rc;
    sp[0] = 0;
    for (int64_t s = 0; s < nslices; s++)
        sp[s + 1] = sp[s] + c * slice_width(A, perm, c, s);
#pragma omp parallel for schedule(static) if (F->scalar[1] > SPMV_OMP_MIN_WORK)
    for (int64_t s = 0; s < nslices; s++) {
        int32_t w = (sp[s + 1] - sp[s]) / c;
        for (int32_t l = 0; l < c; l++) {
            int64_t r = s * c + l;
            int32_t p0 = 0, len = 0;
            if (r < n) p0 = indptr[perm[r]], len = indptr[perm[r] + 1] - p0;
            for (int32_t k = 0; k < w; k++) {
                int64_t q = sp[s] + (int64_t)k * c + l;
                col[q] = k < len ? indices[p0 + k] : -1;
                v[q] = k < len ? values[p0 + k] : (SPMV_REAL)0;
            }
        }
    }
    return SPMV_OK;
}

static int SPMV_NAME(sell_to_csr)(const spmv_fmt *F, int32_t *indptr, int32_t *indices,
                                  SPMV_REAL *values, spmv_err *err) {
    (void)err;
    const int32_t *perm = F->idx[0], *sp = F->idx[1], *col = F->idx[2];
    const SPMV_REAL *v = (const SPMV_REAL *)F->val[0];
    int32_t n = F->nrows, c = F->param[0];
    int64_t work = F->scalar[1];
    indptr[0] = 0;
#pragma omp parallel for schedule(static) if (work > SPMV_OMP_MIN_WORK)
    for (int32_t r = 0; r < n; r++) indptr[perm[r] + 1] = sell_len(F, r);
    for (int32_t i = 0; i < n; i++) indptr[i + 1] += indptr[i];
#pragma omp parallel for schedule(static) if (work > SPMV_OMP_MIN_WORK)
    for (int32_t r = 0; r < n; r++) {
        int32_t i = perm[r], p0 = indptr[i], len = indptr[i + 1] - p0;
        int64_t base = sp[r / c] + r % c;
        for (int32_t k = 0; k < len; k++) {
            indices[p0 + k] = col[base + (int64_t)k * c];
            values[p0 + k] = v[base + (int64_t)k * c];
        }
    }
    return SPMV_OK;
}

static int SPMV_NAME(sell_mv)(const spmv_fmt *F, int kernel, const SPMV_REAL *x, SPMV_REAL *y,
                              spmv_err *err) {
    (void)kernel;
    (void)err;
    const int32_t *perm = F->idx[0], *sp = F->idx[1], *col = F->idx[2];
    const SPMV_REAL *v = (const SPMV_REAL *)F->val[0];
    int32_t n = F->nrows, c = F->param[0];
    int64_t nslices = F->scalar[0];
#pragma omp parallel for schedule(static) if (F->scalar[1] > SPMV_OMP_MIN_WORK)
    for (int64_t s = 0; s < nslices; s++) {
        int32_t w = (sp[s + 1] - sp[s]) / c;
        for (int32_t l = 0; l < c && s * c + l < n; l++) {
            SPMV_REAL sum = 0;
            for (int32_t k = 0; k < w; k++) {
                int64_t q = sp[s] + (int64_t)k * c + l;
                if (col[q] < 0) break;       /* padding only follows a row's entries */
                sum += v[q] * x[col[q]];
            }
            y[perm[s * c + l]] = sum;
        }
    }
    return SPMV_OK;
}

#undef SPMV_REAL
#undef SPMV_NAME
#define SPMV_REAL double
#define SPMV_NAME(x) x##_f64
// csrc/sell_impl.h: SELL-C-sigma fill, back-conversion and CPU kernel for one value type
// SPDX-License-Identifier: BSD-3-Clause
// Included by sell.c with SPMV_REAL and SPMV_NAME defined; no include guard on purpose.

static int SPMV_NAME(sell_fill)(const spmv_csr *A, const SPMV_REAL *values, spmv_fmt *F,
                                spmv_err *err) {
    int32_t *perm = F->idx[0], *sp = F->idx[1], *col = F->idx[2], c = F->param[0];
    SPMV_REAL *v = (SPMV_REAL *)F->val[0];
    int64_t nslices = F->scalar[0];
    int32_t n = A->nrows;
    const int32_t *indptr = A->indptr, *indices = A->indices;
    int rc = sell_perm(A, F->param[1], perm, err);
    if (rc) return rc;
    sp[0] = 0;
    for (int64_t s = 0; s < nslices; s++)
        sp[s + 1] = sp[s] + c * slice_width(A, perm, c, s);
#pragma omp parallel for schedule(static) if (F->scalar[1] > SPMV_OMP_MIN_WORK)
    for (int64_t s = 0; s < nslices; s++) {
        int32_t w = (sp[s + 1] - sp[s]) / c;
        for (int32_t l = 0; l < c; l++) {
            int64_t r = s * c + l;
            int32_t p0 = 0, len = 0;
            if (r < n) p0 = indptr[perm[r]], len = indptr[perm[r] + 1] - p0;
            for (int32_t k = 0; k < w; k++) {
                int64_t q = sp[s] + (int64_t)k * c + l;
                col[q] = k < len ? indices[p0 + k] : -1;
                v[q] = k < len ? values[p0 + k] : (SPMV_REAL)0;
            }
        }
    }
    return SPMV_OK;
}

static int SPMV_NAME(sell_to_csr)(const spmv_fmt *F, int32_t *indptr, int32_t *indices,
                                  SPMV_REAL *values, spmv_err *err) {
    (void)err;
    const int32_t *perm = F->idx[0], *sp = F->idx[1], *col = F->idx[2];
    const SPMV_REAL *v = (const SPMV_REAL *)F->val[0];
    int32_t n = F->nrows, c = F->param[0];
    int64_t work = F->scalar[1];
    indptr[0] = 0;
#pragma omp parallel for schedule(static) if (work > SPMV_OMP_MIN_WORK)
    for (int32_t r = 0; r < n; r++) indptr[perm[r] + 1] = sell_len(F, r);
    for (int32_t i = 0; i < n; i++) indptr[i + 1] += indptr[i];
#pragma omp parallel for schedule(static) if (work > SPMV_OMP_MIN_WORK)
    for (int32_t r = 0; r < n; r++) {
        int32_t i = perm[r], p0 = indptr[i], len = indptr[i + 1] - p0;
        int64_t base = sp[r / c] + r % c;
        for (int32_t k = 0; k < len; k++) {
            indices[p0 + k] = col[base + (int64_t)k * c];
            values[p0 + k] = v[base + (int64_t)k * c];
        }
    }
    return SPMV_OK;
}

static int SPMV_NAME(sell_mv)(const spmv_fmt *F, int kernel, const SPMV_REAL *x, SPMV_REAL *y,
                              spmv_err *err) {
    (void)kernel;
    (void)err;
    const int32_t *perm = F->idx[0], *sp = F->idx[1], *col = F->idx[2];
    const SPMV_REAL *v = (const SPMV_REAL *)F->val[0];
    int32_t n = F->nrows, c = F->param[0];
    int64_t nslices = F->scalar[0];
#pragma omp parallel for schedule(static) if (F->scalar[1] > SPMV_OMP_MIN_WORK)
    for (int64_t s = 0; s < nslices; s++) {
        int32_t w = (sp[s + 1] - sp[s]) / c;
        for (int32_t l = 0; l < c && s * c + l < n; l++) {
            SPMV_REAL sum = 0;
            for (int32_t k = 0; k < w; k++) {
                int64_t q = sp[s] + (int64_t)k * c + l;
                if (col[q] < 0) break;       /* padding only follows a row's entries */
                sum += v[q] * x[col[q]];
            }
            y[perm[s * c + l]] = sum;
        }
    }
    return SPMV_OK;
}

#undef SPMV_REAL
#undef SPMV_NAME

SPMV_API const spmv_format_ops spmv_sell_ops = {
    sell_size, sell_fill_f32, sell_fill_f64, sell_to_csr_f32, sell_to_csr_f64, sell_mv_f32,
    sell_mv_f64, 1,
};
/* ==== csrc/broell.c ==== */
// csrc/broell.c: BRO-ELL — size query, conversion from CSR, back to CSR, CPU kernel
// SPDX-License-Identifier: BSD-3-Clause
//
// Bit-representation-optimised ELL (Tang et al.): sliced ELL whose column indices are delta-coded
// and packed into 32-bit words, trading a few shifts for less index traffic.
// Layout (spmv_fmt with format SPMV_FMT_BROELL): param[0] = h, the slice height (a power of two in
// [1, 1024]); param[1] = bits: 0 = adaptive per slice, or a fixed 8, 16 or 32.
// Symbols of a row: sym_0 = col_0 + 1, sym_k = col_k - col_{k-1}; every real symbol is >= 1, so 0
// marks padding.  Slice s holds rows s*h .. s*h+h-1; W_s = its longest row; b_s = bits, or
// (adaptive) the bit length of its largest symbol, at least 1; spw_s = 32 / b_s symbols per word
// (symbols never straddle words); nw_s = ceil(W_s / spw_s) words per row.
//   scalar[0] = nslices = ceil(nrows / h), scalar[1] = total words, scalar[2] = total value slots;
//   idx[0] = word_ptr[nslices+1], idx[1] = val_ptr[nslices+1];
//   idx[2] = slice_info[2*nslices]: (W_s, b_s) pairs;
//   idx[3] = words (uint32 bit patterns in int32): word w of lane l of slice s at
//            word_ptr[s] + w*h + l; symbol j of a row sits in its word j / spw_s at bit offset
//            (j % spw_s) * b_s;
//   val[0] = values: value j of lane l of slice s at val_ptr[s] + j*h + l (padding 0).
// Lanes past nrows are all zero.  With fixed bits < 32 a delta >= 2^bits cannot be coded:
// SPMV_ENOTAPPLICABLE naming the row and the delta.  Refused as well when value slots pass
// max_fill * max(nnz, nrows).  Kernel variant 0: row-parallel; col = -1, then for each symbol
// until the first 0: col += sym, sum += v * x[col].

#include <stdio.h>

#define BROELL_MAX_H 1024

static int broell_params(const spmv_fmt *F, spmv_err *err) {
    int32_t h = F->param[0], bits = F->param[1];
    if (h < 1 || h > BROELL_MAX_H || (h & (h - 1)) != 0)
        return spmv_fail(err, SPMV_EINVAL, -1, h, BROELL_MAX_H,
                         "The 'h' parameter of bro_ell must be a power of two in [1, %d]. Got %d "
                         "instead.", BROELL_MAX_H, h);
    if (bits != 0 && bits != 8 && bits != 16 && bits != 32)
        return spmv_fail(err, SPMV_EINVAL, -1, bits, 32,
                         "The 'bits' parameter of bro_ell must be 0 (adaptive), 8, 16 or 32. Got "
                         "%d instead.", bits);
    return SPMV_OK;
}

/* Width and symbol bits of slice s; SPMV_ENOTAPPLICABLE when a delta does not fit fixed bits. */
static int broell_slice(const spmv_csr *A, int32_t h, int32_t bits, int64_t s, int32_t *width,
                        int32_t *nbits, spmv_err *err) {
    int32_t w = 0;
    uint32_t maxsym = 0;
    for (int64_t i = s * h; i < (s + 1) * h && i < A->nrows; i++) {
        int32_t p0 = A->indptr[i], p1 = A->indptr[i + 1];
        if (p1 - p0 > w) w = p1 - p0;
        for (int32_t p = p0; p < p1; p++) {
            /* col_0 + 1 <= ncols <= INT32_MAX and sorted columns: no int32 overflow */
            uint32_t sym = (uint32_t)(A->indices[p] - (p > p0 ? A->indices[p - 1] : -1));
            if (sym > maxsym) maxsym = sym;
        }
    }
    int32_t b = 1;
    while (b < 32 && (maxsym >> b) != 0) b++;
    if (bits != 0 && b > bits) {
        for (int64_t i = s * h; i < (s + 1) * h && i < A->nrows; i++)  /* name the first culprit */
            for (int32_t p = A->indptr[i]; p < A->indptr[i + 1]; p++) {
                int64_t d = (int64_t)A->indices[p] - (p > A->indptr[i] ? A->indices[p - 1] : -1);
                if (d >= ((int64_t)1 << bits))
                    return spmv_fail(err, SPMV_ENOTAPPLICABLE, i, d, (int64_t)1 << bits,
                                     "BRO-ELL with bits=%d cannot code the column delta %lld in "
                                     "row %lld (needs %d bits; use bits=0 for adaptive)",
                                     (int)bits, (long long)d, (long long)i, (int)b);
            }
    }
    *width = w;
    *nbits = bits != 0 ? bits : b;
    return SPMV_OK;
}

/* Words per row of a slice of width w with b-bit symbols. */
static int32_t broell_nwords(int32_t w, int32_t b) {
    int32_t spw = 32 / b;
    return (w + spw - 1) / spw;
}

static int broell_size(const spmv_csr *A, spmv_fmt *F, spmv_err *err) {
    int rc = broell_params(F, err);
    if (rc) return rc;
    int32_t h = F->param[0];
    int64_t nslices = ((int64_t)A->nrows + h - 1) / h, words = 0, vals = 0;
    for (int64_t s = 0; s < nslices; s++) {
        int32_t w, b;
        rc = broell_slice(A, h, F->param[1], s, &w, &b, err);
        if (rc) return rc;
        words += (int64_t)h * broell_nwords(w, b);
        vals += (int64_t)h * w;
    }
    char what[48];
    snprintf(what, sizeof what, "BRO-ELL with h=%d", (int)h);
    rc = spmv_fill_guard(F, vals, what, err);      /* words <= value slots: this covers both */
    if (rc) return rc;
    F->scalar[0] = nslices;
    F->scalar[1] = words;
    F->scalar[2] = vals;
    F->nidx[0] = nslices + 1;
    F->nidx[1] = nslices + 1;
    F->nidx[2] = 2 * nslices;
    F->nidx[3] = words;
    F->nval[0] = vals;
    return SPMV_OK;
}

/* Symbol j of lane l in a slice whose words start at words[base]. */
static inline uint32_t broell_sym(const int32_t *words, int64_t base, int32_t h, int32_t l,
                                  int32_t j, int32_t b) {
    int32_t spw = 32 / b;
    uint32_t mask = b == 32 ? 0xffffffffu : (1u << b) - 1u;
    uint32_t word = (uint32_t)words[base + (int64_t)(j / spw) * h + l];
    return (word >> ((j % spw) * b)) & mask;
}

/* Stored entries of row i: its symbols up to the first 0. */
static int32_t broell_len(const spmv_fmt *F, int32_t i) {
    int32_t h = F->param[0], s = i / h, l = i % h;
    int32_t w = F->idx[2][2 * s], b = F->idx[2][2 * s + 1], j = 0;
    while (j < w && broell_sym(F->idx[3], F->idx[0][s], h, l, j, b) != 0) j++;
    return j;
}

#define SPMV_REAL float
#define SPMV_NAME(x) x##_f32
// csrc/broell_impl.h: BRO-ELL fill, back-conversion and CPU kernel for one value type
// SPDX-License-Identifier: BSD-3-Clause
// Included by broell.c with SPMV_REAL and SPMV_NAME defined; no include guard on purpose.

static int SPMV_NAME(broell_fill)(const spmv_csr *A, const SPMV_REAL *values, spmv_fmt *F,
                                  spmv_err *err) {
    int32_t *wp = F->idx[0], *vp = F->idx[1], *info = F->idx[2], *words = F->idx[3];
    int32_t h = F->param[0], n = A->nrows;
    SPMV_REAL *v = (SPMV_REAL *)F->val[0];
    const int32_t *indptr = A->indptr, *indices = A->indices;
    int64_t nslices = F->scalar[0];
    wp[0] = vp[0] = 0;
    for (int64_t s = 0; s < nslices; s++) {
        int32_t w, b;
        int rc = broell_slice(A, h, F->param[1], s, &w, &b, err);
        if (rc) return rc;
        info[2 * s] = w;
        info[2 * s + 1] = b;
        wp[s + 1] = wp[s] + h * broell_nwords(w, b);
        vp[s + 1] = vp[s] + h * w;
    }
#pragma omp parallel for schedule(static) if (F->scalar[2] > SPMV_OMP_MIN_WORK)
    for (int64_t s = 0; s < nslices; s++) {
        int32_t w = info[2 * s], b = info[2 * s + 1], spw = 32 / b, nw = broell_nwords(w, b);
        for (int32_t l = 0; l < h; l++) {
            int64_t i = s * h + l;
            int32_t p0 = 0, len = 0;
            if (i < n) p0 = indptr[i], len = indptr[i + 1] - p0;
            for (int32_t q = 0; q < nw; q++) {
                uint32_t word = 0;
                for (int32_t t = 0, j = q * spw; t < spw && j < len; t++, j++) {
                    uint32_t sym = (uint32_t)(indices[p0 + j] - (j > 0 ? indices[p0 + j - 1] : -1));
                    word |= sym << (t * b);  /* t*b <= 32 - b: never a full-width shift */
                }
                words[wp[s] + (int64_t)q * h + l] = (int32_t)word;
            }
            for (int32_t j = 0; j < w; j++)
                v[vp[s] + (int64_t)j * h + l] = j < len ? values[p0 + j] : (SPMV_REAL)0;
        }
    }
    return SPMV_OK;
}

static int SPMV_NAME(broell_to_csr)(const spmv_fmt *F, int32_t *indptr, int32_t *indices,
                                    SPMV_REAL *values, spmv_err *err) {
    (void)err;
    const int32_t *wp = F->idx[0], *vp = F->idx[1], *info = F->idx[2], *words = F->idx[3];
    const SPMV_REAL *v = (const SPMV_REAL *)F->val[0];
    int32_t n = F->nrows, h = F->param[0];
    int64_t work = F->scalar[2];
    indptr[0] = 0;
#pragma omp parallel for schedule(static) if (work > SPMV_OMP_MIN_WORK)
    for (int32_t i = 0; i < n; i++) indptr[i + 1] = broell_len(F, i);
    for (int32_t i = 0; i < n; i++) indptr[i + 1] += indptr[i];
#pragma omp parallel for schedule(static) if (work > SPMV_OMP_MIN_WORK)
    for (int32_t i = 0; i < n; i++) {
        int32_t s = i / h, l = i % h, b = info[2 * s + 1], p0 = indptr[i];
        int32_t len = indptr[i + 1] - p0;
        int64_t col = -1;
        for (int32_t j = 0; j < len; j++) {
            col += broell_sym(words, wp[s], h, l, j, b);
            indices[p0 + j] = (int32_t)col;
            values[p0 + j] = v[vp[s] + (int64_t)j * h + l];
        }
    }
    return SPMV_OK;
}

static int SPMV_NAME(broell_mv)(const spmv_fmt *F, int kernel, const SPMV_REAL *x, SPMV_REAL *y,
                                spmv_err *err) {
    (void)kernel;
    (void)err;
    const int32_t *wp = F->idx[0], *vp = F->idx[1], *info = F->idx[2], *words = F->idx[3];
    const SPMV_REAL *v = (const SPMV_REAL *)F->val[0];
    int32_t n = F->nrows, h = F->param[0];
#pragma omp parallel for schedule(static) if (F->scalar[2] > SPMV_OMP_MIN_WORK)
    for (int32_t i = 0; i < n; i++) {
        int32_t s = i / h, l = i % h, w = info[2 * s], b = info[2 * s + 1];
        int64_t col = -1;
        SPMV_REAL sum = 0;
        for (int32_t j = 0; j < w; j++) {
            uint32_t sym = broell_sym(words, wp[s], h, l, j, b);
            if (sym == 0) break;             /* padding only follows a row's entries */
            col += sym;
            sum += v[vp[s] + (int64_t)j * h + l] * x[col];
        }
        y[i] = sum;
    }
    return SPMV_OK;
}

#undef SPMV_REAL
#undef SPMV_NAME
#define SPMV_REAL double
#define SPMV_NAME(x) x##_f64
// csrc/broell_impl.h: BRO-ELL fill, back-conversion and CPU kernel for one value type
// SPDX-License-Identifier: BSD-3-Clause
// Included by broell.c with SPMV_REAL and SPMV_NAME defined; no include guard on purpose.

static int SPMV_NAME(broell_fill)(const spmv_csr *A, const SPMV_REAL *values, spmv_fmt *F,
                                  spmv_err *err) {
    int32_t *wp = F->idx[0], *vp = F->idx[1], *info = F->idx[2], *words = F->idx[3];
    int32_t h = F->param[0], n = A->nrows;
    SPMV_REAL *v = (SPMV_REAL *)F->val[0];
    const int32_t *indptr = A->indptr, *indices = A->indices;
    int64_t nslices = F->scalar[0];
    wp[0] = vp[0] = 0;
    for (int64_t s = 0; s < nslices; s++) {
        int32_t w, b;
        int rc = broell_slice(A, h, F->param[1], s, &w, &b, err);
        if (rc) return rc;
        info[2 * s] = w;
        info[2 * s + 1] = b;
        wp[s + 1] = wp[s] + h * broell_nwords(w, b);
        vp[s + 1] = vp[s] + h * w;
    }
#pragma omp parallel for schedule(static) if (F->scalar[2] > SPMV_OMP_MIN_WORK)
    for (int64_t s = 0; s < nslices; s++) {
        int32_t w = info[2 * s], b = info[2 * s + 1], spw = 32 / b, nw = broell_nwords(w, b);
        for (int32_t l = 0; l < h; l++) {
            int64_t i = s * h + l;
            int32_t p0 = 0, len = 0;
            if (i < n) p0 = indptr[i], len = indptr[i + 1] - p0;
            for (int32_t q = 0; q < nw; q++) {
                uint32_t word = 0;
                for (int32_t t = 0, j = q * spw; t < spw && j < len; t++, j++) {
                    uint32_t sym = (uint32_t)(indices[p0 + j] - (j > 0 ? indices[p0 + j - 1] : -1));
                    word |= sym << (t * b);  /* t*b <= 32 - b: never a full-width shift */
                }
                words[wp[s] + (int64_t)q * h + l] = (int32_t)word;
            }
            for (int32_t j = 0; j < w; j++)
                v[vp[s] + (int64_t)j * h + l] = j < len ? values[p0 + j] : (SPMV_REAL)0;
        }
    }
    return SPMV_OK;
}

static int SPMV_NAME(broell_to_csr)(const spmv_fmt *F, int32_t *indptr, int32_t *indices,
                                    SPMV_REAL *values, spmv_err *err) {
    (void)err;
    const int32_t *wp = F->idx[0], *vp = F->idx[1], *info = F->idx[2], *words = F->idx[3];
    const SPMV_REAL *v = (const SPMV_REAL *)F->val[0];
    int32_t n = F->nrows, h = F->param[0];
    int64_t work = F->scalar[2];
    indptr[0] = 0;
#pragma omp parallel for schedule(static) if (work > SPMV_OMP_MIN_WORK)
    for (int32_t i = 0; i < n; i++) indptr[i + 1] = broell_len(F, i);
    for (int32_t i = 0; i < n; i++) indptr[i + 1] += indptr[i];
#pragma omp parallel for schedule(static) if (work > SPMV_OMP_MIN_WORK)
    for (int32_t i = 0; i < n; i++) {
        int32_t s = i / h, l = i % h, b = info[2 * s + 1], p0 = indptr[i];
        int32_t len = indptr[i + 1] - p0;
        int64_t col = -1;
        for (int32_t j = 0; j < len; j++) {
            col += broell_sym(words, wp[s], h, l, j, b);
            indices[p0 + j] = (int32_t)col;
            values[p0 + j] = v[vp[s] + (int64_t)j * h + l];
        }
    }
    return SPMV_OK;
}

static int SPMV_NAME(broell_mv)(const spmv_fmt *F, int kernel, const SPMV_REAL *x, SPMV_REAL *y,
                                spmv_err *err) {
    (void)kernel;
    (void)err;
    const int32_t *wp = F->idx[0], *vp = F->idx[1], *info = F->idx[2], *words = F->idx[3];
    const SPMV_REAL *v = (const SPMV_REAL *)F->val[0];
    int32_t n = F->nrows, h = F->param[0];
#pragma omp parallel for schedule(static) if (F->scalar[2] > SPMV_OMP_MIN_WORK)
    for (int32_t i = 0; i < n; i++) {
        int32_t s = i / h, l = i % h, w = info[2 * s], b = info[2 * s + 1];
        int64_t col = -1;
        SPMV_REAL sum = 0;
        for (int32_t j = 0; j < w; j++) {
            uint32_t sym = broell_sym(words, wp[s], h, l, j, b);
            if (sym == 0) break;             /* padding only follows a row's entries */
            col += sym;
            sum += v[vp[s] + (int64_t)j * h + l] * x[col];
        }
        y[i] = sum;
    }
    return SPMV_OK;
}

#undef SPMV_REAL
#undef SPMV_NAME

SPMV_API const spmv_format_ops spmv_broell_ops = {
    broell_size,       broell_fill_f32, broell_fill_f64, broell_to_csr_f32, broell_to_csr_f64,
    broell_mv_f32,     broell_mv_f64,   1,
};
/* ==== csrc/hyb.c ==== */
// csrc/hyb.c: HYB (ELL + COO) — size query, conversion from CSR, back to CSR, CPU kernel
// SPDX-License-Identifier: BSD-3-Clause
//
// Layout (spmv_fmt with format SPMV_FMT_HYB): param[0] = K, the ELL width, or -1 for Bell and
// Garland's rule (spmv_hyb_width).  scalar[0] = K used, scalar[1] = coo_nnz.  Each row's first
// min(len, K) entries go to the ELL part, the rest to the COO part:
//   idx[0] = ELL col[nrows*K], val[0] = ELL values[nrows*K], column-major as in csrc/ell.c
//            (slot k of row i at k*nrows + i; padding column -1, value 0);
//   idx[1] = COO row[coo_nnz], idx[2] = COO col[coo_nnz], val[1] = COO values[coo_nnz], in CSR's
//            row-major order.
// K larger than the longest row is allowed; the padding guard (nrows*K + coo_nnz slots) decides.
// Kernel variant 0: the ELL part row-parallel writing y, then the COO part added by threads that
// each own a contiguous run of entries moved to row boundaries, as csrc/coo.c does.

#include <stdio.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static int hyb_size(const spmv_csr *A, spmv_fmt *F, spmv_err *err) {
    int32_t k = F->param[0];
    if (k < -1)
        return spmv_fail(err, SPMV_EINVAL, -1, k, -1,
                         "The 'k' parameter of hyb must be -1 (Bell-Garland width) or an ELL "
                         "width in [0, %d]. Got %d instead.", INT32_MAX, k);
    if (k == -1) {
        int rc = spmv_hyb_width(A, &k, err);
        if (rc) return rc;
    }
    int64_t coo = 0;
    for (int32_t i = 0; i < A->nrows; i++) {
        int32_t len = A->indptr[i + 1] - A->indptr[i];
        if (len > k) coo += len - k;
    }
    char what[80];
    snprintf(what, sizeof what, "HYB with ELL width %d and %lld COO entries", (int)k,
             (long long)coo);
    int rc = spmv_ell_part_size(A, F, k, coo, what, err);
    if (rc) return rc;
    F->scalar[1] = coo;
    F->nidx[1] = coo;
    F->nidx[2] = coo;
    F->nval[1] = coo;
    return SPMV_OK;
}

#define SPMV_REAL float
#define SPMV_NAME(x) x##_f32
// csrc/hyb_impl.h: HYB fill, back-conversion and CPU kernel for one value type (see csrc/hyb.c)
// SPDX-License-Identifier: BSD-3-Clause
// Included by hyb.c with SPMV_REAL and SPMV_NAME defined; no include guard on purpose.

static int SPMV_NAME(hyb_fill)(const spmv_csr *A, const SPMV_REAL *values, spmv_fmt *F,
                               spmv_err *err) {
    (void)err;
    int32_t *ecol = F->idx[0], *crow = F->idx[1], *ccol = F->idx[2];
    SPMV_REAL *ev = (SPMV_REAL *)F->val[0], *cv = (SPMV_REAL *)F->val[1];
    int32_t n = A->nrows, w = (int32_t)F->scalar[0];
    const int32_t *indptr = A->indptr, *indices = A->indices;
    SPMV_NAME(spmv_ell_part_fill)(A, values, w, ecol, ev);
    int64_t q = 0;                           /* the COO part is O(coo_nnz): one serial pass */
    for (int32_t i = 0; i < n; i++)
        for (int64_t p = (int64_t)indptr[i] + w; p < indptr[i + 1]; p++, q++) {
            crow[q] = i;
            ccol[q] = indices[p];
            cv[q] = values[p];
        }
    return SPMV_OK;
}

static int SPMV_NAME(hyb_to_csr)(const spmv_fmt *F, int32_t *indptr, int32_t *indices,
                                 SPMV_REAL *values, spmv_err *err) {
    (void)err;
    const int32_t *ecol = F->idx[0], *crow = F->idx[1], *ccol = F->idx[2];
    const SPMV_REAL *ev = (const SPMV_REAL *)F->val[0], *cv = (const SPMV_REAL *)F->val[1];
    int32_t n = F->nrows, w = (int32_t)F->scalar[0];
    int64_t coo = F->scalar[1], q = 0;
    int32_t pos = 0;
    indptr[0] = 0;
    for (int32_t i = 0; i < n; i++) {        /* a row's COO entries follow its ELL ones */
        for (int32_t k = 0; k < w; k++) {
            int64_t s = (int64_t)k * n + i;
            if (ecol[s] < 0) break;
            indices[pos] = ecol[s];
            values[pos++] = ev[s];
        }
        for (; q < coo && crow[q] == i; q++) {
            indices[pos] = ccol[q];
            values[pos++] = cv[q];
        }
        indptr[i + 1] = pos;
    }
    return SPMV_OK;
}

static int SPMV_NAME(hyb_mv)(const spmv_fmt *F, int kernel, const SPMV_REAL *x, SPMV_REAL *y,
                             spmv_err *err) {
    (void)kernel;
    (void)err;
    const int32_t *ecol = F->idx[0], *crow = F->idx[1], *ccol = F->idx[2];
    const SPMV_REAL *ev = (const SPMV_REAL *)F->val[0], *cv = (const SPMV_REAL *)F->val[1];
    int32_t n = F->nrows, w = (int32_t)F->scalar[0];
    int64_t coo = F->scalar[1];
#pragma omp parallel if (F->nidx[0] + coo > SPMV_OMP_MIN_WORK)
    {
        int t = 0, nt = 1;
#ifdef _OPENMP
        t = omp_get_thread_num();
        nt = omp_get_num_threads();
#endif
        SPMV_NAME(spmv_ell_part_rows)(n, w, ecol, ev, x, y);  /* ends in a barrier */
        SPMV_NAME(spmv_coo_part_chunk)(crow, ccol, cv, coo, x, y, t, nt, 1);
    }
    return SPMV_OK;
}

#undef SPMV_REAL
#undef SPMV_NAME
#define SPMV_REAL double
#define SPMV_NAME(x) x##_f64
// csrc/hyb_impl.h: HYB fill, back-conversion and CPU kernel for one value type (see csrc/hyb.c)
// SPDX-License-Identifier: BSD-3-Clause
// Included by hyb.c with SPMV_REAL and SPMV_NAME defined; no include guard on purpose.

static int SPMV_NAME(hyb_fill)(const spmv_csr *A, const SPMV_REAL *values, spmv_fmt *F,
                               spmv_err *err) {
    (void)err;
    int32_t *ecol = F->idx[0], *crow = F->idx[1], *ccol = F->idx[2];
    SPMV_REAL *ev = (SPMV_REAL *)F->val[0], *cv = (SPMV_REAL *)F->val[1];
    int32_t n = A->nrows, w = (int32_t)F->scalar[0];
    const int32_t *indptr = A->indptr, *indices = A->indices;
    SPMV_NAME(spmv_ell_part_fill)(A, values, w, ecol, ev);
    int64_t q = 0;                           /* the COO part is O(coo_nnz): one serial pass */
    for (int32_t i = 0; i < n; i++)
        for (int64_t p = (int64_t)indptr[i] + w; p < indptr[i + 1]; p++, q++) {
            crow[q] = i;
            ccol[q] = indices[p];
            cv[q] = values[p];
        }
    return SPMV_OK;
}

static int SPMV_NAME(hyb_to_csr)(const spmv_fmt *F, int32_t *indptr, int32_t *indices,
                                 SPMV_REAL *values, spmv_err *err) {
    (void)err;
    const int32_t *ecol = F->idx[0], *crow = F->idx[1], *ccol = F->idx[2];
    const SPMV_REAL *ev = (const SPMV_REAL *)F->val[0], *cv = (const SPMV_REAL *)F->val[1];
    int32_t n = F->nrows, w = (int32_t)F->scalar[0];
    int64_t coo = F->scalar[1], q = 0;
    int32_t pos = 0;
    indptr[0] = 0;
    for (int32_t i = 0; i < n; i++) {        /* a row's COO entries follow its ELL ones */
        for (int32_t k = 0; k < w; k++) {
            int64_t s = (int64_t)k * n + i;
            if (ecol[s] < 0) break;
            indices[pos] = ecol[s];
            values[pos++] = ev[s];
        }
        for (; q < coo && crow[q] == i; q++) {
            indices[pos] = ccol[q];
            values[pos++] = cv[q];
        }
        indptr[i + 1] = pos;
    }
    return SPMV_OK;
}

static int SPMV_NAME(hyb_mv)(const spmv_fmt *F, int kernel, const SPMV_REAL *x, SPMV_REAL *y,
                             spmv_err *err) {
    (void)kernel;
    (void)err;
    const int32_t *ecol = F->idx[0], *crow = F->idx[1], *ccol = F->idx[2];
    const SPMV_REAL *ev = (const SPMV_REAL *)F->val[0], *cv = (const SPMV_REAL *)F->val[1];
    int32_t n = F->nrows, w = (int32_t)F->scalar[0];
    int64_t coo = F->scalar[1];
#pragma omp parallel if (F->nidx[0] + coo > SPMV_OMP_MIN_WORK)
    {
        int t = 0, nt = 1;
#ifdef _OPENMP
        t = omp_get_thread_num();
        nt = omp_get_num_threads();
#endif
        SPMV_NAME(spmv_ell_part_rows)(n, w, ecol, ev, x, y);  /* ends in a barrier */
        SPMV_NAME(spmv_coo_part_chunk)(crow, ccol, cv, coo, x, y, t, nt, 1);
    }
    return SPMV_OK;
}

#undef SPMV_REAL
#undef SPMV_NAME

SPMV_API const spmv_format_ops spmv_hyb_ops = {
    hyb_size, hyb_fill_f32, hyb_fill_f64, hyb_to_csr_f32, hyb_to_csr_f64, hyb_mv_f32, hyb_mv_f64, 1,
};
/* ==== csrc/dia.c ==== */
// csrc/dia.c: DIA — size query, conversion from CSR, back to CSR, CPU kernel
// SPDX-License-Identifier: BSD-3-Clause
//
// Layout (spmv_fmt with format SPMV_FMT_DIA): scalar[0] = ndiag, the number of distinct offsets
// col - row present in A.  idx[0] = offsets[ndiag], ascending.  data and presence bits are laid out
// diagonal by diagonal, indexed by row:
//   val[0] = data[ndiag*nrows], data[d*nrows + i] = A[i, i + offsets[d]], or 0 where A has no entry
//            (or where i + offsets[d] falls outside [0, ncols));
//   idx[1] = presence bits, spmv_bitwords(ndiag*nrows) words (spmv_bit_set/get): bit d*nrows + i is
//            set iff A stores an entry at (i, i + offsets[d]) -- explicit zeros included, which a
//            zero in data alone could not tell from padding.
// No parameters.  Refused (SPMV_ENOTAPPLICABLE) when ndiag*nrows passes max_fill * max(nnz, nrows).
// Kernel variant 0: y[i] = sum over d with 0 <= i + offsets[d] < ncols of data[d*nrows + i] *
// x[i + offsets[d]], by blocks of rows (one thread each) and, within a block, diagonal by diagonal
// so that the inner loop runs over contiguous data and x.  The padding zeros are multiplied by x
// too, so a non-finite x would turn them into NaN; the Python layer refuses non-finite x for DIA.

#include <stdio.h>
#include <string.h>

/* Rows per kernel block: a block's y stays in L1 while every diagonal passes over it.
 * TODO: untuned. */
#define DIA_BLOCK 1024

/* Mark the offsets A uses in mark[nrows+ncols-1] (offset o at o + nrows - 1); returns how many. */
static int64_t dia_mark(const spmv_csr *A, uint8_t *mark) {
    int64_t ndiag = 0;
    for (int32_t i = 0; i < A->nrows; i++)
        for (int32_t p = A->indptr[i]; p < A->indptr[i + 1]; p++) {
            int64_t o = (int64_t)A->indices[p] - i + A->nrows - 1;
            if (!mark[o]) mark[o] = 1, ndiag++;
        }
    return ndiag;
}

static int dia_size(const spmv_csr *A, spmv_fmt *F, spmv_err *err) {
    int64_t span = (int64_t)A->nrows + A->ncols - 1;
    uint8_t *mark = spmv_calloc(span, 1, err);
    if (mark == NULL) return SPMV_ENOMEM;
    int64_t ndiag = dia_mark(A, mark), slots = ndiag * A->nrows;
    spmv_free(mark);
    char what[48];
    snprintf(what, sizeof what, "DIA with %lld diagonals", (long long)ndiag);
    int rc = spmv_fill_guard(F, slots, what, err);
    if (rc) return rc;
    F->scalar[0] = ndiag;
    F->nidx[0] = ndiag;
    F->nidx[1] = spmv_bitwords(slots);
    F->nval[0] = slots;
    return SPMV_OK;
}

/* F's offsets[] from A, and *slot = workspace[nrows+ncols-1] mapping offset + nrows - 1 to its
 * diagonal number, for the fill to place entries in O(1) each.  The caller frees *slot. */
static int dia_offsets(const spmv_csr *A, spmv_fmt *F, int32_t **slot, spmv_err *err) {
    int64_t span = (int64_t)A->nrows + A->ncols - 1;
    int32_t *s = spmv_calloc(span, sizeof(int32_t), err);
    if (s == NULL) return SPMV_ENOMEM;
    for (int32_t i = 0; i < A->nrows; i++)
        for (int32_t p = A->indptr[i]; p < A->indptr[i + 1]; p++)
            s[(int64_t)A->indices[p] - i + A->nrows - 1] = 1;
    int32_t d = 0;
    for (int64_t o = 0; o < span; o++)
        if (s[o]) {
            F->idx[0][d] = (int32_t)(o - (A->nrows - 1));
            s[o] = d++;
        }
    *slot = s;
    return SPMV_OK;
}

#define SPMV_REAL float
#define SPMV_NAME(x) x##_f32
// csrc/dia_impl.h: DIA fill, back-conversion and CPU kernel for one value type (see csrc/dia.c)
// SPDX-License-Identifier: BSD-3-Clause
// Included by dia.c with SPMV_REAL and SPMV_NAME defined; no include guard on purpose.

static int SPMV_NAME(dia_fill)(const spmv_csr *A, const SPMV_REAL *values, spmv_fmt *F,
                               spmv_err *err) {
    int32_t *slot = NULL, *bits = F->idx[1], n = A->nrows;
    SPMV_REAL *data = (SPMV_REAL *)F->val[0];
    int rc = dia_offsets(A, F, &slot, err);
    if (rc) goto done;
    if (F->nval[0] > 0) memset(data, 0, sizeof(SPMV_REAL) * (size_t)F->nval[0]);
    if (F->nidx[1] > 0) memset(bits, 0, sizeof(int32_t) * (size_t)F->nidx[1]);
    /* serial: neighbouring rows share presence-bit words */
    for (int32_t i = 0; i < n; i++)
        for (int32_t p = A->indptr[i]; p < A->indptr[i + 1]; p++) {
            int64_t s = (int64_t)slot[(int64_t)A->indices[p] - i + n - 1] * n + i;
            data[s] = values[p];
            spmv_bit_set(bits, s);
        }
done:
    spmv_free(slot);
    return rc;
}

static int SPMV_NAME(dia_to_csr)(const spmv_fmt *F, int32_t *indptr, int32_t *indices,
                                 SPMV_REAL *values, spmv_err *err) {
    (void)err;
    const int32_t *off = F->idx[0], *bits = F->idx[1];
    const SPMV_REAL *data = (const SPMV_REAL *)F->val[0];
    int32_t n = F->nrows, pos = 0;
    int64_t ndiag = F->scalar[0];
    indptr[0] = 0;
    for (int32_t i = 0; i < n; i++) {        /* ascending offsets give ascending columns */
        for (int64_t d = 0; d < ndiag; d++) {
            int64_t s = d * n + i;
            if (!spmv_bit_get(bits, s)) continue;
            indices[pos] = i + off[d];
            values[pos++] = data[s];
        }
        indptr[i + 1] = pos;
    }
    return SPMV_OK;
}

static int SPMV_NAME(dia_mv)(const spmv_fmt *F, int kernel, const SPMV_REAL *x, SPMV_REAL *y,
                             spmv_err *err) {
    (void)kernel;
    (void)err;
    const int32_t *off = F->idx[0];
    const SPMV_REAL *data = (const SPMV_REAL *)F->val[0];
    int32_t n = F->nrows, ncols = F->ncols;
    int64_t ndiag = F->scalar[0];
    int32_t nblocks = (int32_t)(((int64_t)n + DIA_BLOCK - 1) / DIA_BLOCK);
#pragma omp parallel for schedule(static) if (F->nval[0] > SPMV_OMP_MIN_WORK)
    for (int32_t b = 0; b < nblocks; b++) {
        int64_t i0 = (int64_t)b * DIA_BLOCK, i1 = i0 + DIA_BLOCK < n ? i0 + DIA_BLOCK : n;
        for (int64_t i = i0; i < i1; i++) y[i] = 0;
        for (int64_t d = 0; d < ndiag; d++) {
            int64_t o = off[d];
            int64_t lo = i0 > -o ? i0 : -o, hi = i1 < ncols - o ? i1 : ncols - o;  /* x in range */
            const SPMV_REAL *dd = data + d * n;
            for (int64_t i = lo; i < hi; i++) y[i] += dd[i] * x[i + o];
        }
    }
    return SPMV_OK;
}

#undef SPMV_REAL
#undef SPMV_NAME
#define SPMV_REAL double
#define SPMV_NAME(x) x##_f64
// csrc/dia_impl.h: DIA fill, back-conversion and CPU kernel for one value type (see csrc/dia.c)
// SPDX-License-Identifier: BSD-3-Clause
// Included by dia.c with SPMV_REAL and SPMV_NAME defined; no include guard on purpose.

static int SPMV_NAME(dia_fill)(const spmv_csr *A, const SPMV_REAL *values, spmv_fmt *F,
                               spmv_err *err) {
    int32_t *slot = NULL, *bits = F->idx[1], n = A->nrows;
    SPMV_REAL *data = (SPMV_REAL *)F->val[0];
    int rc = dia_offsets(A, F, &slot, err);
    if (rc) goto done;
    if (F->nval[0] > 0) memset(data, 0, sizeof(SPMV_REAL) * (size_t)F->nval[0]);
    if (F->nidx[1] > 0) memset(bits, 0, sizeof(int32_t) * (size_t)F->nidx[1]);
    /* serial: neighbouring rows share presence-bit words */
    for (int32_t i = 0; i < n; i++)
        for (int32_t p = A->indptr[i]; p < A->indptr[i + 1]; p++) {
            int64_t s = (int64_t)slot[(int64_t)A->indices[p] - i + n - 1] * n + i;
            data[s] = values[p];
            spmv_bit_set(bits, s);
        }
done:
    spmv_free(slot);
    return rc;
}

static int SPMV_NAME(dia_to_csr)(const spmv_fmt *F, int32_t *indptr, int32_t *indices,
                                 SPMV_REAL *values, spmv_err *err) {
    (void)err;
    const int32_t *off = F->idx[0], *bits = F->idx[1];
    const SPMV_REAL *data = (const SPMV_REAL *)F->val[0];
    int32_t n = F->nrows, pos = 0;
    int64_t ndiag = F->scalar[0];
    indptr[0] = 0;
    for (int32_t i = 0; i < n; i++) {        /* ascending offsets give ascending columns */
        for (int64_t d = 0; d < ndiag; d++) {
            int64_t s = d * n + i;
            if (!spmv_bit_get(bits, s)) continue;
            indices[pos] = i + off[d];
            values[pos++] = data[s];
        }
        indptr[i + 1] = pos;
    }
    return SPMV_OK;
}

static int SPMV_NAME(dia_mv)(const spmv_fmt *F, int kernel, const SPMV_REAL *x, SPMV_REAL *y,
                             spmv_err *err) {
    (void)kernel;
    (void)err;
    const int32_t *off = F->idx[0];
    const SPMV_REAL *data = (const SPMV_REAL *)F->val[0];
    int32_t n = F->nrows, ncols = F->ncols;
    int64_t ndiag = F->scalar[0];
    int32_t nblocks = (int32_t)(((int64_t)n + DIA_BLOCK - 1) / DIA_BLOCK);
#pragma omp parallel for schedule(static) if (F->nval[0] > SPMV_OMP_MIN_WORK)
    for (int32_t b = 0; b < nblocks; b++) {
        int64_t i0 = (int64_t)b * DIA_BLOCK, i1 = i0 + DIA_BLOCK < n ? i0 + DIA_BLOCK : n;
        for (int64_t i = i0; i < i1; i++) y[i] = 0;
        for (int64_t d = 0; d < ndiag; d++) {
            int64_t o = off[d];
            int64_t lo = i0 > -o ? i0 : -o, hi = i1 < ncols - o ? i1 : ncols - o;  /* x in range */
            const SPMV_REAL *dd = data + d * n;
            for (int64_t i = lo; i < hi; i++) y[i] += dd[i] * x[i + o];
        }
    }
    return SPMV_OK;
}

#undef SPMV_REAL
#undef SPMV_NAME

SPMV_API const spmv_format_ops spmv_dia_ops = {
    dia_size, dia_fill_f32, dia_fill_f64, dia_to_csr_f32, dia_to_csr_f64, dia_mv_f32, dia_mv_f64, 1,
};
/* ==== csrc/jad.c ==== */
// csrc/jad.c: JAD (jagged diagonals) — size query, conversion from CSR, back to CSR, CPU kernel
// SPDX-License-Identifier: BSD-3-Clause
//
// Layout (spmv_fmt with format SPMV_FMT_JAD): no parameters.  Rows are permuted by length,
// descending and stably; jagged diagonal k holds entry k of every permuted row longer than k, which
// is a prefix of the permuted rows, so entry k of permuted row r is at jd_ptr[k] + r and no slot is
// padding (no fill guard needed: there are exactly nnz slots).
//   scalar[0] = njd, the longest row's length;
//   idx[0] = perm[nrows]: perm[r] = the original row at permuted position r;
//   idx[1] = jd_ptr[njd+1]: start of each jagged diagonal;
//   idx[2] = col[nnz], val[0] = values[nnz], diagonal after diagonal.
// Kernel variant 0: row-parallel over permuted rows; row r walks diagonals k while
// jd_ptr[k] + r < jd_ptr[k+1] and writes y[perm[r]] (0 for empty rows).

static int32_t jad_maxlen(const spmv_csr *A) {
    int32_t m = 0;
    for (int32_t i = 0; i < A->nrows; i++)
        if (A->indptr[i + 1] - A->indptr[i] > m) m = A->indptr[i + 1] - A->indptr[i];
    return m;
}

static int jad_size(const spmv_csr *A, spmv_fmt *F, spmv_err *err) {
    (void)err;
    int32_t njd = jad_maxlen(A);
    F->scalar[0] = njd;
    F->nidx[0] = A->nrows;
    F->nidx[1] = (int64_t)njd + 1;
    F->nidx[2] = F->nnz;
    F->nval[0] = F->nnz;
    return SPMV_OK;
}

/* perm (a stable counting sort by descending length) and jd_ptr, into F's arrays. */
static int jad_perm(const spmv_csr *A, spmv_fmt *F, spmv_err *err) {
    int32_t n = A->nrows, njd = (int32_t)F->scalar[0], *perm = F->idx[0], *jd = F->idx[1];
    int32_t *first = spmv_calloc((int64_t)njd + 1, sizeof(int32_t), err);
    if (first == NULL) return SPMV_ENOMEM;
    for (int32_t i = 0; i < n; i++) first[A->indptr[i + 1] - A->indptr[i]]++;
    /* rows longer than L come first: first[L] = their count = jagged diagonal L's length */
    int32_t longer = 0;
    for (int32_t L = njd; L >= 0; L--) {
        int32_t cnt = first[L];
        first[L] = longer;
        longer += cnt;
    }
    jd[0] = 0;
    for (int32_t k = 0; k < njd; k++) jd[k + 1] = jd[k] + first[k];
    for (int32_t i = 0; i < n; i++) perm[first[A->indptr[i + 1] - A->indptr[i]]++] = i;
    spmv_free(first);
    return SPMV_OK;
}

/* Entries of permuted row r: diagonals shrink, so it is in every diagonal until the first it is
 * past. */
static int32_t jad_len(const int32_t *jd, int32_t njd, int32_t r) {
    int32_t k = 0;
    while (k < njd && (int64_t)jd[k] + r < jd[k + 1]) k++;
    return k;
}

#define SPMV_REAL float
#define SPMV_NAME(x) x##_f32
// csrc/jad_impl.h: JAD fill, back-conversion and CPU kernel for one value type (see csrc/jad.c)
// SPDX-License-Identifier: BSD-3-Clause
// Included by jad.c with SPMV_REAL and SPMV_NAME defined; no include guard on purpose.

static int SPMV_NAME(jad_fill)(const spmv_csr *A, const SPMV_REAL *values, spmv_fmt *F,
                               spmv_err *err) {
    int rc = jad_perm(A, F, err);
    if (rc) return rc;
    const int32_t *perm = F->idx[0], *jd = F->idx[1], *indptr = A->indptr, *indices = A->indices;
    int32_t *col = F->idx[2], n = A->nrows;
    SPMV_REAL *v = (SPMV_REAL *)F->val[0];
#pragma omp parallel for schedule(static) if (F->nnz > SPMV_OMP_MIN_WORK)
    for (int32_t r = 0; r < n; r++) {
        int32_t p0 = indptr[perm[r]], len = indptr[perm[r] + 1] - p0;
        for (int32_t k = 0; k < len; k++) {
            col[jd[k] + r] = indices[p0 + k];
            v[jd[k] + r] = values[p0 + k];
        }
    }
    return SPMV_OK;
}

static int SPMV_NAME(jad_to_csr)(const spmv_fmt *F, int32_t *indptr, int32_t *indices,
                                 SPMV_REAL *values, spmv_err *err) {
    (void)err;
    const int32_t *perm = F->idx[0], *jd = F->idx[1], *col = F->idx[2];
    const SPMV_REAL *v = (const SPMV_REAL *)F->val[0];
    int32_t n = F->nrows, njd = (int32_t)F->scalar[0];
    indptr[0] = 0;
#pragma omp parallel for schedule(static) if (F->nnz > SPMV_OMP_MIN_WORK)
    for (int32_t r = 0; r < n; r++) indptr[perm[r] + 1] = jad_len(jd, njd, r);
    for (int32_t i = 0; i < n; i++) indptr[i + 1] += indptr[i];
#pragma omp parallel for schedule(static) if (F->nnz > SPMV_OMP_MIN_WORK)
    for (int32_t r = 0; r < n; r++) {
        int32_t p0 = indptr[perm[r]], len = indptr[perm[r] + 1] - p0;
        for (int32_t k = 0; k < len; k++) {
            indices[p0 + k] = col[jd[k] + r];
            values[p0 + k] = v[jd[k] + r];
        }
    }
    return SPMV_OK;
}

static int SPMV_NAME(jad_mv)(const spmv_fmt *F, int kernel, const SPMV_REAL *x, SPMV_REAL *y,
                             spmv_err *err) {
    (void)kernel;
    (void)err;
    const int32_t *perm = F->idx[0], *jd = F->idx[1], *col = F->idx[2];
    const SPMV_REAL *v = (const SPMV_REAL *)F->val[0];
    int32_t n = F->nrows, njd = (int32_t)F->scalar[0];
#pragma omp parallel for schedule(static) if (F->nnz > SPMV_OMP_MIN_WORK)
    for (int32_t r = 0; r < n; r++) {
        SPMV_REAL sum = 0;
        for (int32_t k = 0; k < njd && (int64_t)jd[k] + r < jd[k + 1]; k++)
            sum += v[jd[k] + r] * x[col[jd[k] + r]];
        y[perm[r]] = sum;
    }
    return SPMV_OK;
}

#undef SPMV_REAL
#undef SPMV_NAME
#define SPMV_REAL double
#define SPMV_NAME(x) x##_f64
// csrc/jad_impl.h: JAD fill, back-conversion and CPU kernel for one value type (see csrc/jad.c)
// SPDX-License-Identifier: BSD-3-Clause
// Included by jad.c with SPMV_REAL and SPMV_NAME defined; no include guard on purpose.

static int SPMV_NAME(jad_fill)(const spmv_csr *A, const SPMV_REAL *values, spmv_fmt *F,
                               spmv_err *err) {
    int rc = jad_perm(A, F, err);
    if (rc) return rc;
    const int32_t *perm = F->idx[0], *jd = F->idx[1], *indptr = A->indptr, *indices = A->indices;
    int32_t *col = F->idx[2], n = A->nrows;
    SPMV_REAL *v = (SPMV_REAL *)F->val[0];
#pragma omp parallel for schedule(static) if (F->nnz > SPMV_OMP_MIN_WORK)
    for (int32_t r = 0; r < n; r++) {
        int32_t p0 = indptr[perm[r]], len = indptr[perm[r] + 1] - p0;
        for (int32_t k = 0; k < len; k++) {
            col[jd[k] + r] = indices[p0 + k];
            v[jd[k] + r] = values[p0 + k];
        }
    }
    return SPMV_OK;
}

static int SPMV_NAME(jad_to_csr)(const spmv_fmt *F, int32_t *indptr, int32_t *indices,
                                 SPMV_REAL *values, spmv_err *err) {
    (void)err;
    const int32_t *perm = F->idx[0], *jd = F->idx[1], *col = F->idx[2];
    const SPMV_REAL *v = (const SPMV_REAL *)F->val[0];
    int32_t n = F->nrows, njd = (int32_t)F->scalar[0];
    indptr[0] = 0;
#pragma omp parallel for schedule(static) if (F->nnz > SPMV_OMP_MIN_WORK)
    for (int32_t r = 0; r < n; r++) indptr[perm[r] + 1] = jad_len(jd, njd, r);
    for (int32_t i = 0; i < n; i++) indptr[i + 1] += indptr[i];
#pragma omp parallel for schedule(static) if (F->nnz > SPMV_OMP_MIN_WORK)
    for (int32_t r = 0; r < n; r++) {
        int32_t p0 = indptr[perm[r]], len = indptr[perm[r] + 1] - p0;
        for (int32_t k = 0; k < len; k++) {
            indices[p0 + k] = col[jd[k] + r];
            values[p0 + k] = v[jd[k] + r];
        }
    }
    return SPMV_OK;
}

static int SPMV_NAME(jad_mv)(const spmv_fmt *F, int kernel, const SPMV_REAL *x, SPMV_REAL *y,
                             spmv_err *err) {
    (void)kernel;
    (void)err;
    const int32_t *perm = F->idx[0], *jd = F->idx[1], *col = F->idx[2];
    const SPMV_REAL *v = (const SPMV_REAL *)F->val[0];
    int32_t n = F->nrows, njd = (int32_t)F->scalar[0];
#pragma omp parallel for schedule(static) if (F->nnz > SPMV_OMP_MIN_WORK)
    for (int32_t r = 0; r < n; r++) {
        SPMV_REAL sum = 0;
        for (int32_t k = 0; k < njd && (int64_t)jd[k] + r < jd[k + 1]; k++)
            sum += v[jd[k] + r] * x[col[jd[k] + r]];
        y[perm[r]] = sum;
    }
    return SPMV_OK;
}

#undef SPMV_REAL
#undef SPMV_NAME

SPMV_API const spmv_format_ops spmv_jad_ops = {
    jad_size, jad_fill_f32, jad_fill_f64, jad_to_csr_f32, jad_to_csr_f64, jad_mv_f32, jad_mv_f64, 1,
};
/* ==== csrc/bsr.c ==== */
// csrc/bsr.c: BSR — size query, conversion from CSR, back to CSR, CPU kernel
// SPDX-License-Identifier: BSD-3-Clause
//
// Layout (spmv_fmt with format SPMV_FMT_BSR): param[0] = b, the block size in [1, 32].  The matrix
// is cut into b x b blocks; only blocks holding at least one entry are stored.
//   scalar[0] = nbrows = ceil(nrows / b), scalar[1] = nbcols = ceil(ncols / b),
//   scalar[2] = nblocks;
//   idx[0] = block_ptr[nbrows+1]; idx[1] = block_col[nblocks], ascending within a block row;
//   idx[2] = presence bits, spmv_bitwords(nblocks*b*b) words: bit (blk*b + r)*b + c is set iff A
//            has an entry at (block row*b + r, block_col[blk]*b + c), so explicit zeros survive
//            the round trip and padding zeros do not appear;
//   val[0] = values[nblocks*b*b], row-major within each block, 0 where absent.
// Edge blocks reach past nrows and ncols; those rows and columns hold nothing.  Refused
// (SPMV_ENOTAPPLICABLE) when nblocks*b*b passes max_fill * max(nnz, nrows).  Kernel variant 0:
// block-row-parallel, dense b x b products skipping rows >= nrows and columns >= ncols, so x is
// never read past ncols.  Padding zeros are multiplied by x, so an inf or nan in x would leak into
// rows with no entry in that column: the Python layer refuses non-finite x for BSR.

#include <stdio.h>

#define BSR_MAX_B 32

/* The next block column of block row `br` given one cursor per row into indices (cur[r] up to
 * indptr[row+1]): the smallest col/b among the rows' next entries, or -1 when every row is done.
 * Columns are sorted within rows, so repeated calls merge the rows and visit block columns in
 * ascending order without a sort or an nbcols-long workspace. */
static int32_t bsr_next(const spmv_csr *A, int32_t r0, int32_t rows, int32_t b,
                        const int32_t *cur) {
    int32_t bc = -1;
    for (int32_t r = 0; r < rows; r++)
        if (cur[r] < A->indptr[r0 + r + 1]) {
            int32_t c = A->indices[cur[r]] / b;
            if (bc < 0 || c < bc) bc = c;
        }
    return bc;
}

static int32_t bsr_rows(int32_t nrows, int32_t b, int64_t br) {
    int64_t left = nrows - br * b;
    return left < b ? (int32_t)left : b;
}

/* Blocks are counted in one pass over the entries with a mark per block column holding the last
 * block row that touched it (scipy's csr_count_blocks): one division per entry, where merging the
 * rows of each block row as the fill does costs O(b) per block and made the size query the bulk of
 * pyspmv.rank() (2.6 ms of 7 for every format of a 290k-entry matrix at b = 2). */
static int bsr_size(const spmv_csr *A, spmv_fmt *F, spmv_err *err) {
    int32_t b = F->param[0];
    if (b < 1 || b > BSR_MAX_B)
        return spmv_fail(err, SPMV_EINVAL, -1, b, BSR_MAX_B,
                         "The 'b' parameter of bsr must be a block size in [1, %d]. Got %d "
                         "instead.", BSR_MAX_B, b);
    int64_t nbrows = ((int64_t)A->nrows + b - 1) / b, nbcols = ((int64_t)A->ncols + b - 1) / b;
    int64_t nblocks = 0;
    int32_t *mark = spmv_malloc(nbcols, sizeof(int32_t), err);
    if (mark == NULL) return SPMV_ENOMEM;
    for (int64_t k = 0; k < nbcols; k++) mark[k] = -1;
    int shift = 0; /* b a power of two (every registered b): a shift instead of a division */
    while (shift < 5 && (1 << shift) < b) shift++;
    for (int32_t r = 0; r < A->nrows; r++) {
        int32_t br = r / b;
        const int32_t *c = A->indices + A->indptr[r], *end = A->indices + A->indptr[r + 1];
        if ((1 << shift) == b) {
            for (; c < end; c++)
                if (mark[*c >> shift] != br) mark[*c >> shift] = br, nblocks++;
        } else {
            for (; c < end; c++)
                if (mark[*c / b] != br) mark[*c / b] = br, nblocks++;
        }
    }
    spmv_free(mark);
    int64_t slots = nblocks * b * b;
    char what[48];
    snprintf(what, sizeof what, "BSR with b=%d", (int)b);
    int rc = spmv_fill_guard(F, slots, what, err);
    if (rc) return rc;
    F->scalar[0] = nbrows;
    F->scalar[1] = nbcols;
    F->scalar[2] = nblocks;
    F->nidx[0] = nbrows + 1;
    F->nidx[1] = nblocks;
    F->nidx[2] = spmv_bitwords(slots);
    F->nval[0] = slots;
    return SPMV_OK;
}

/* Stored entries of row r of block row br: the set bits of its b-bit runs, one per block. */
static int32_t bsr_len(const spmv_fmt *F, int64_t br, int32_t r) {
    const int32_t *bp = F->idx[0], *bits = F->idx[2];
    int32_t b = F->param[0], len = 0;
    for (int64_t blk = bp[br]; blk < bp[br + 1]; blk++)
        for (int32_t c = 0; c < b; c++) len += spmv_bit_get(bits, (blk * b + r) * b + c);
    return len;
}

#define SPMV_REAL float
#define SPMV_NAME(x) x##_f32
// csrc/bsr_impl.h: BSR fill, back-conversion and CPU kernel for one value type (see csrc/bsr.c)
// SPDX-License-Identifier: BSD-3-Clause
// Included by bsr.c with SPMV_REAL and SPMV_NAME defined; no include guard on purpose.

/* Serial: neighbouring blocks, even of different block rows, share presence-bit words. */
static int SPMV_NAME(bsr_fill)(const spmv_csr *A, const SPMV_REAL *values, spmv_fmt *F,
                               spmv_err *err) {
    (void)err;
    int32_t *bp = F->idx[0], *bcol = F->idx[1], *bits = F->idx[2], b = F->param[0];
    int32_t cur[BSR_MAX_B], bc;
    SPMV_REAL *v = (SPMV_REAL *)F->val[0];
    const int32_t *indptr = A->indptr, *indices = A->indices;
    int64_t nbrows = F->scalar[0], bb = (int64_t)b * b, blk = 0;
    for (int64_t k = 0; k < F->nidx[2]; k++) bits[k] = 0;
    bp[0] = 0;
    for (int64_t br = 0; br < nbrows; br++) {
        int32_t r0 = (int32_t)(br * b), rows = bsr_rows(A->nrows, b, br);
        for (int32_t r = 0; r < rows; r++) cur[r] = indptr[r0 + r];
        while ((bc = bsr_next(A, r0, rows, b, cur)) >= 0) {
            bcol[blk] = bc;
            for (int64_t q = 0; q < bb; q++) v[blk * bb + q] = 0;
            for (int32_t r = 0; r < rows; r++)
                for (; cur[r] < indptr[r0 + r + 1] && indices[cur[r]] / b == bc; cur[r]++) {
                    int64_t q = blk * bb + (int64_t)r * b + (indices[cur[r]] - bc * b);
                    spmv_bit_set(bits, q);
                    v[q] = values[cur[r]];
                }
            blk++;
        }
        bp[br + 1] = (int32_t)blk;
    }
    return SPMV_OK;
}

static int SPMV_NAME(bsr_to_csr)(const spmv_fmt *F, int32_t *indptr, int32_t *indices,
                                 SPMV_REAL *values, spmv_err *err) {
    (void)err;
    const int32_t *bp = F->idx[0], *bcol = F->idx[1], *bits = F->idx[2];
    const SPMV_REAL *v = (const SPMV_REAL *)F->val[0];
    int32_t n = F->nrows, b = F->param[0];
    int64_t nbrows = F->scalar[0], work = F->nval[0];
    indptr[0] = 0;
#pragma omp parallel for schedule(static) if (work > SPMV_OMP_MIN_WORK)
    for (int64_t br = 0; br < nbrows; br++)
        for (int32_t r = 0; r < bsr_rows(n, b, br); r++) indptr[br * b + r + 1] = bsr_len(F, br, r);
    for (int32_t i = 0; i < n; i++) indptr[i + 1] += indptr[i];
#pragma omp parallel for schedule(static) if (work > SPMV_OMP_MIN_WORK)
    for (int64_t br = 0; br < nbrows; br++)
        for (int32_t r = 0; r < bsr_rows(n, b, br); r++) {
            int32_t p = indptr[br * b + r];
            for (int64_t blk = bp[br]; blk < bp[br + 1]; blk++)
                for (int32_t c = 0; c < b; c++) {
                    int64_t q = (blk * b + r) * b + c;
                    if (!spmv_bit_get(bits, q)) continue;
                    indices[p] = bcol[blk] * b + c;
                    values[p++] = v[q];
                }
        }
    return SPMV_OK;
}

static int SPMV_NAME(bsr_mv)(const spmv_fmt *F, int kernel, const SPMV_REAL *x, SPMV_REAL *y,
                             spmv_err *err) {
    (void)kernel;
    (void)err;
    const int32_t *bp = F->idx[0], *bcol = F->idx[1];
    const SPMV_REAL *v = (const SPMV_REAL *)F->val[0];
    int32_t n = F->nrows, ncols = F->ncols, b = F->param[0];
    int64_t nbrows = F->scalar[0];
#pragma omp parallel for schedule(static) if (F->nval[0] > SPMV_OMP_MIN_WORK)
    for (int64_t br = 0; br < nbrows; br++)
        for (int32_t r = 0; r < bsr_rows(n, b, br); r++) {
            SPMV_REAL sum = 0;
            for (int64_t blk = bp[br]; blk < bp[br + 1]; blk++) {
                int64_t c0 = (int64_t)bcol[blk] * b;
                int32_t cn = ncols - c0 < b ? (int32_t)(ncols - c0) : b;
                const SPMV_REAL *vr = v + (blk * b + r) * b;
                for (int32_t c = 0; c < cn; c++) sum += vr[c] * x[c0 + c];
            }
            y[br * b + r] = sum;
        }
    return SPMV_OK;
}

#undef SPMV_REAL
#undef SPMV_NAME
#define SPMV_REAL double
#define SPMV_NAME(x) x##_f64
// csrc/bsr_impl.h: BSR fill, back-conversion and CPU kernel for one value type (see csrc/bsr.c)
// SPDX-License-Identifier: BSD-3-Clause
// Included by bsr.c with SPMV_REAL and SPMV_NAME defined; no include guard on purpose.

/* Serial: neighbouring blocks, even of different block rows, share presence-bit words. */
static int SPMV_NAME(bsr_fill)(const spmv_csr *A, const SPMV_REAL *values, spmv_fmt *F,
                               spmv_err *err) {
    (void)err;
    int32_t *bp = F->idx[0], *bcol = F->idx[1], *bits = F->idx[2], b = F->param[0];
    int32_t cur[BSR_MAX_B], bc;
    SPMV_REAL *v = (SPMV_REAL *)F->val[0];
    const int32_t *indptr = A->indptr, *indices = A->indices;
    int64_t nbrows = F->scalar[0], bb = (int64_t)b * b, blk = 0;
    for (int64_t k = 0; k < F->nidx[2]; k++) bits[k] = 0;
    bp[0] = 0;
    for (int64_t br = 0; br < nbrows; br++) {
        int32_t r0 = (int32_t)(br * b), rows = bsr_rows(A->nrows, b, br);
        for (int32_t r = 0; r < rows; r++) cur[r] = indptr[r0 + r];
        while ((bc = bsr_next(A, r0, rows, b, cur)) >= 0) {
            bcol[blk] = bc;
            for (int64_t q = 0; q < bb; q++) v[blk * bb + q] = 0;
            for (int32_t r = 0; r < rows; r++)
                for (; cur[r] < indptr[r0 + r + 1] && indices[cur[r]] / b == bc; cur[r]++) {
                    int64_t q = blk * bb + (int64_t)r * b + (indices[cur[r]] - bc * b);
                    spmv_bit_set(bits, q);
                    v[q] = values[cur[r]];
                }
            blk++;
        }
        bp[br + 1] = (int32_t)blk;
    }
    return SPMV_OK;
}

static int SPMV_NAME(bsr_to_csr)(const spmv_fmt *F, int32_t *indptr, int32_t *indices,
                                 SPMV_REAL *values, spmv_err *err) {
    (void)err;
    const int32_t *bp = F->idx[0], *bcol = F->idx[1], *bits = F->idx[2];
    const SPMV_REAL *v = (const SPMV_REAL *)F->val[0];
    int32_t n = F->nrows, b = F->param[0];
    int64_t nbrows = F->scalar[0], work = F->nval[0];
    indptr[0] = 0;
#pragma omp parallel for schedule(static) if (work > SPMV_OMP_MIN_WORK)
    for (int64_t br = 0; br < nbrows; br++)
        for (int32_t r = 0; r < bsr_rows(n, b, br); r++) indptr[br * b + r + 1] = bsr_len(F, br, r);
    for (int32_t i = 0; i < n; i++) indptr[i + 1] += indptr[i];
#pragma omp parallel for schedule(static) if (work > SPMV_OMP_MIN_WORK)
    for (int64_t br = 0; br < nbrows; br++)
        for (int32_t r = 0; r < bsr_rows(n, b, br); r++) {
            int32_t p = indptr[br * b + r];
            for (int64_t blk = bp[br]; blk < bp[br + 1]; blk++)
                for (int32_t c = 0; c < b; c++) {
                    int64_t q = (blk * b + r) * b + c;
                    if (!spmv_bit_get(bits, q)) continue;
                    indices[p] = bcol[blk] * b + c;
                    values[p++] = v[q];
                }
        }
    return SPMV_OK;
}

static int SPMV_NAME(bsr_mv)(const spmv_fmt *F, int kernel, const SPMV_REAL *x, SPMV_REAL *y,
                             spmv_err *err) {
    (void)kernel;
    (void)err;
    const int32_t *bp = F->idx[0], *bcol = F->idx[1];
    const SPMV_REAL *v = (const SPMV_REAL *)F->val[0];
    int32_t n = F->nrows, ncols = F->ncols, b = F->param[0];
    int64_t nbrows = F->scalar[0];
#pragma omp parallel for schedule(static) if (F->nval[0] > SPMV_OMP_MIN_WORK)
    for (int64_t br = 0; br < nbrows; br++)
        for (int32_t r = 0; r < bsr_rows(n, b, br); r++) {
            SPMV_REAL sum = 0;
            for (int64_t blk = bp[br]; blk < bp[br + 1]; blk++) {
                int64_t c0 = (int64_t)bcol[blk] * b;
                int32_t cn = ncols - c0 < b ? (int32_t)(ncols - c0) : b;
                const SPMV_REAL *vr = v + (blk * b + r) * b;
                for (int32_t c = 0; c < cn; c++) sum += vr[c] * x[c0 + c];
            }
            y[br * b + r] = sum;
        }
    return SPMV_OK;
}

#undef SPMV_REAL
#undef SPMV_NAME

SPMV_API const spmv_format_ops spmv_bsr_ops = {
    bsr_size, bsr_fill_f32, bsr_fill_f64, bsr_to_csr_f32, bsr_to_csr_f64, bsr_mv_f32, bsr_mv_f64, 1,
};
/* ==== csrc/registry.c ==== */
// csrc/registry.c: the registry of kernels, the single source of truth for configurations
// SPDX-License-Identifier: BSD-3-Clause
//
// pyspmv.configs() expands each entry over its parameter grid; nothing else keeps a list.  A named
// parameter with an empty grid stays out of generated ids and takes param_default (HYB's ELL width:
// -1 = Bell-Garland), though an id may still set it ("cpu/hyb/k=4").  The GPU entries live here
// too, so that configurations can be listed, featurised and ranked on machines without a GPU.

#include <string.h>

/* Thread mappings of the own CUDA kernels: block sizes and threads per row. */
#define BS {64, 128, 256, 512, 1024}
#define TPV {2, 4, 8, 16, 32}

#define CPU(name, fmt, variant)                                                                   \
    .id = name, .device = SPMV_DEV_CPU, .library = SPMV_LIB_PYSPMV, .format = fmt, .kernel = variant
#define OWN(name, fmt, variant)                                                                   \
    .id = name, .device = SPMV_DEV_CUDA, .library = SPMV_LIB_PYSPMV, .format = fmt, .kernel = variant
#define CUSPARSE(name, fmt, alg)                                                                  \
    .id = name, .device = SPMV_DEV_CUDA, .library = SPMV_LIB_CUSPARSE, .format = fmt, .kernel = alg
/* Only a block size, from BS, default 256. */
#define BLOCK_ONLY                                                                                \
    .param_name = {NULL, NULL, NULL, "bs"}, .grid = {{0}, {0}, {0}, BS}, .ngrid = {0, 0, 0, 5},    \
    .param_default = {0, 0, 0, 256}

static const spmv_kernel_desc kernels[] = {
    /* ---- CPU (csrc/<format>.c) ---- */
    {CPU("cpu/csr/rows", SPMV_FMT_CSR, 0), .deterministic = 1},
    {CPU("cpu/csr/nnz", SPMV_FMT_CSR, 1), .deterministic = 1},
    {CPU("cpu/coo", SPMV_FMT_COO, 0), .deterministic = 1},
    {CPU("cpu/ell", SPMV_FMT_ELL, 0), .deterministic = 1},
    /* C at SIMD widths (4 doubles or 8 floats per AVX2 register, 8/16 with AVX-512) */
    {CPU("cpu/sell", SPMV_FMT_SELL, 0), .param_name = {"c", "sigma"},
     .grid = {{4, 8, 16}, {1, 64, 256}}, .ngrid = {3, 3}, .param_default = {8, 1}, .deterministic = 1},
    {CPU("cpu/bro_ell", SPMV_FMT_BROELL, 0), .param_name = {"h", "bits"},
     .grid = {{32, 256}, {0, 32}}, .ngrid = {2, 2}, .param_default = {32, 0}, .deterministic = 1},
    {CPU("cpu/hyb", SPMV_FMT_HYB, 0), .param_name = {"k"}, .param_default = {-1}, .deterministic = 1},
    {CPU("cpu/dia", SPMV_FMT_DIA, 0), .deterministic = 1},
    {CPU("cpu/jad", SPMV_FMT_JAD, 0), .deterministic = 1},
    {CPU("cpu/bsr", SPMV_FMT_BSR, 0), .param_name = {"b"}, .grid = {{2, 4, 8}}, .ngrid = {3},
     .param_default = {4}, .deterministic = 1},

    /* ---- own CUDA kernels (kernels/<format>.cu) ---- */
    {OWN("pyspmv/csr/scalar", SPMV_FMT_CSR, 0), BLOCK_ONLY, .launches = 1, .deterministic = 1},
    {OWN("pyspmv/csr/vector", SPMV_FMT_CSR, 1), .param_name = {NULL, NULL, "tpv", "bs"},
     .grid = {{0}, {0}, TPV, BS}, .ngrid = {0, 0, 5, 5}, .param_default = {0, 0, 8, 256},
     .launches = 1, .deterministic = 1},
    {OWN("pyspmv/csr/adaptive", SPMV_FMT_CSR, 2), BLOCK_ONLY, .launches = 1, .deterministic = 1},
    /* one launch: the last block to finish adds the carries between blocks, in a fixed order */
    {OWN("pyspmv/coo", SPMV_FMT_COO, 0), BLOCK_ONLY, .launches = 1, .deterministic = 1},
    {OWN("pyspmv/ell", SPMV_FMT_ELL, 0), BLOCK_ONLY, .launches = 1, .deterministic = 1},
    /* one thread per row of a slice; sigma a multiple of every C */
    {OWN("pyspmv/sell", SPMV_FMT_SELL, 0), .param_name = {"c", "sigma", NULL, "bs"},
     .grid = {{16, 32, 64}, {1, 256, 4096}, {0}, BS}, .ngrid = {3, 3, 0, 5},
     .param_default = {32, 1, 0, 256}, .launches = 1, .deterministic = 1},
    {OWN("pyspmv/bro_ell", SPMV_FMT_BROELL, 0), .param_name = {"h", "bits", NULL, "bs"},
     .grid = {{32, 128}, {0, 32}, {0}, BS}, .ngrid = {2, 2, 0, 5},
     .param_default = {32, 0, 0, 256}, .launches = 1, .deterministic = 1},
    {OWN("pyspmv/hyb", SPMV_FMT_HYB, 0), .param_name = {"k", NULL, NULL, "bs"},
     .grid = {{0}, {0}, {0}, BS}, .ngrid = {0, 0, 0, 5}, .param_default = {-1, 0, 0, 256},
     .launches = 2, .deterministic = 1},
    {OWN("pyspmv/dia", SPMV_FMT_DIA, 0), BLOCK_ONLY, .launches = 1, .deterministic = 1},
    {OWN("pyspmv/jad", SPMV_FMT_JAD, 0), BLOCK_ONLY, .launches = 1, .deterministic = 1},

    /* ---- cuSPARSE's generic API (kernels/cusparse.cu); kernel = algorithm ----
     * launches: kernels and memsets per cusparseSpMV, counted as CUDA-graph nodes on the H100
     * (cuSPARSE 12.6); determinism as cuSPARSE documents it, and as 20 repeated runs showed. */
    {CUSPARSE("cusparse/csr/default", SPMV_FMT_CSR, 0), .launches = 2, .deterministic = 0},
    {CUSPARSE("cusparse/csr/alg1", SPMV_FMT_CSR, 1), .launches = 2, .deterministic = 0},
    {CUSPARSE("cusparse/csr/alg2", SPMV_FMT_CSR, 2), .launches = 3, .deterministic = 1},
    {CUSPARSE("cusparse/coo/alg1", SPMV_FMT_COO, 1), .launches = 2, .deterministic = 0},
    {CUSPARSE("cusparse/coo/alg2", SPMV_FMT_COO, 2), .launches = 3, .deterministic = 1},
    /* cuSPARSE's sliced ELL has no row permutation: sigma stays 1 */
    {CUSPARSE("cusparse/sell/alg1", SPMV_FMT_SELL, 1), .param_name = {"c"},
     .grid = {{8, 32}}, .ngrid = {2}, .param_default = {32, 1}, .launches = 1, .deterministic = 1},
    {CUSPARSE("cusparse/bsr", SPMV_FMT_BSR, 0), .param_name = {"b"}, .grid = {{2, 4, 8}},
     .ngrid = {3}, .param_default = {4}, .launches = 1, .deterministic = 1},
};

int spmv_kernel_count(void) { return (int)(sizeof kernels / sizeof kernels[0]); }

const spmv_kernel_desc *spmv_kernel_get(int i) {
    return i >= 0 && i < spmv_kernel_count() ? &kernels[i] : NULL;
}

const spmv_kernel_desc *spmv_kernel_find(const char *id) {
    for (int i = 0; id != NULL && i < spmv_kernel_count(); i++)
        if (strcmp(kernels[i].id, id) == 0) return &kernels[i];
    return NULL;
}
/* ==== csrc/model_linear.c ==== */
// csrc/model_linear.c: linear models (Lehnert) — per group, intercept + coefficients . inputs
// SPDX-License-Identifier: BSD-3-Clause
//
// Per-format feature selection is a zero coefficient; log-transformed features and runtime are the
// model's input and output transforms (csrc/rank.c).

void spmv_linear_eval(const spmv_model *M, int32_t g, const double *z, double *raw) {
    const double *w = M->coef + (int64_t)g * M->ninputs;
    double y = 0;
    for (int32_t k = 0; k < M->ninputs; k++) y += w[k] * z[k];
    raw[0] = y + M->intercept[g];
}

int spmv_linear_check(const spmv_model *M, spmv_err *err) {
    if ((M->coef == NULL && M->ninputs > 0) || M->intercept == NULL)
        return spmv_fail(err, SPMV_ESCHEMA, -1, -1, -1,
                         "a linear model needs coef[ngroups*ninputs] and intercept[ngroups]");
    return SPMV_OK;
}
/* ==== csrc/model_trees.c ==== */
// csrc/model_trees.c: tree ensembles (gradient boosting, regression and per-class) as flat node
// arrays SPDX-License-Identifier: BSD-3-Clause
//
// A loop walks each tree; nested generated ifs would compile slowly and bloat on large ensembles.
// Comparisons are scikit-learn's: DecisionTreeRegressor (GradientBoosting*) casts X to float32 and
// compares against float64 thresholds; HistGradientBoosting* compares float64.  The sum runs tree
// by tree in fitting order, init + scale * leaf each time, as predict_stages does, so that the
// result carries the same rounding.

#include <math.h>

void spmv_trees_eval(const spmv_model *M, int32_t g, const double *z, double *raw) {
    const spmv_trees *T = &M->trees;
    for (int32_t o = 0; o < T->nout; o++) {
        int32_t go = g * T->nout + o;
        double y = T->init[go];
        for (int32_t t = T->tree_ptr[go]; t < T->tree_ptr[go + 1]; t++) {
            int32_t n = T->root[t];
            while (T->feature[n] >= 0) {
                double x = z[T->feature[n]];
                int left;
                if (isnan(x))
                    left = T->missing_left != NULL && T->missing_left[n];
                else
                    left = (T->cast_f32 ? (double)(float)x : x) <= T->threshold[n];
                n = left ? T->left[n] : T->right[n];
            }
            y += T->scale * T->value[n];
        }
        raw[o] = y;
    }
}

/* Rows part[lo..hi) at node n of a tree: each reaches one leaf and adds scale * its value.  A
 * split on an input that every row shares (uniform[f]: the matrix's features, within one ranking)
 * sends them all one way after one comparison; any other split partitions them in place. */
static void tree_batch(const spmv_trees *T, int32_t n, int32_t *part, int32_t lo, int32_t hi,
                       const double *Z, int32_t d, const uint8_t *uniform, double *R, int32_t nout,
                       int32_t o) {
    for (;;) {
        int32_t f = T->feature[n];
        if (f < 0) {
            double v = T->scale * T->value[n];
            for (int32_t r = lo; r < hi; r++) R[(int64_t)part[r] * nout + o] += v;
            return;
        }
        double thr = T->threshold[n];
        int ml = T->missing_left != NULL && T->missing_left[n];
        if (uniform[f]) {
            double x = Z[(int64_t)part[lo] * d + f];
            n = (x <= thr || (x != x && ml)) ? T->left[n] : T->right[n];
            continue;
        }
        int32_t i = lo, j = hi; /* [lo, i) go left, [j, hi) go right */
        while (i < j) {
            double x = Z[(int64_t)part[i] * d + f];
            if (x <= thr || (x != x && ml)) {
                i++;
            } else {
                int32_t t = part[i];
                part[i] = part[--j];
                part[j] = t;
            }
        }
        if (i > lo) tree_batch(T, T->left[n], part, lo, i, Z, d, uniform, R, nout, o);
        if (hi > i) {
            n = T->right[n]; /* the right side without recursing */
            lo = i;
            continue;
        }
        return;
    }
}

/* The same sums for the rows[nr] of group g at once, tree by tree in fitting order, so that each
 * row adds its leaves in the order of the one-row walk.  Z[row*ninputs]: inputs (already cast to
 * float when cast_f32); uniform[ninputs]: inputs equal in every row; raw[row*nout]: outputs.
 * rows[] is reordered. */
void spmv_trees_eval_rows(const spmv_model *M, int32_t g, int32_t *rows, int32_t nr,
                          const double *Z, const uint8_t *uniform, double *raw) {
    const spmv_trees *T = &M->trees;
    int32_t d = M->ninputs, nout = T->nout;
    for (int32_t o = 0; o < nout; o++) {
        int32_t go = g * nout + o;
        for (int32_t r = 0; r < nr; r++) raw[(int64_t)rows[r] * nout + o] = T->init[go];
        for (int32_t t = T->tree_ptr[go]; t < T->tree_ptr[go + 1]; t++)
            tree_batch(T, T->root[t], rows, 0, nr, Z, d, uniform, raw, nout, o);
    }
}

int spmv_trees_check(const spmv_model *M, spmv_err *err) {
    const spmv_trees *T = &M->trees;
    if (T->nout < 1 || T->tree_ptr == NULL || T->init == NULL ||
        (T->ntrees > 0 && T->root == NULL) ||
        (T->nnodes > 0 && (T->feature == NULL || T->left == NULL || T->right == NULL ||
                           T->threshold == NULL || T->value == NULL)))
        return spmv_fail(
            err, SPMV_ESCHEMA, -1, T->nout, 1,
            "a tree model needs nout >= 1, tree_ptr[ngroups*nout+1], init, root[ntrees] "
            "and feature, left, right, threshold, value[nnodes]");
    int64_t ngo = (int64_t)M->ngroups * T->nout;
    int rc =
        spmv_check_range(T->tree_ptr, ngo + 1, 0, (int64_t)T->ntrees + 1, "trees.tree_ptr", err);
    for (int64_t i = 0; rc == 0 && i < ngo; i++)
        if (T->tree_ptr[i + 1] < T->tree_ptr[i])
            rc = spmv_fail(err, SPMV_ESCHEMA, i, T->tree_ptr[i + 1], T->tree_ptr[i],
                           "trees.tree_ptr decreases at %lld", (long long)i);
    if (rc == 0) rc = spmv_check_range(T->root, T->ntrees, 0, T->nnodes, "trees.root", err);
    if (rc == 0) rc = spmv_check_range(T->feature, T->nnodes, -1, M->ninputs, "trees.feature", err);
    /* Children must come after their parent, so that every walk ends (scikit-learn numbers nodes
     * depth first). */
    for (int32_t n = 0; rc == 0 && n < T->nnodes; n++) {
        if (T->feature[n] < 0) continue;
        int32_t c = T->left[n] <= T->right[n] ? T->left[n] : T->right[n];
        int32_t d = T->left[n] <= T->right[n] ? T->right[n] : T->left[n];
        if (c <= n || d >= T->nnodes)
            rc = spmv_fail(err, SPMV_ESCHEMA, n, c <= n ? c : d, T->nnodes,
                           "trees: node %d has child %d outside (%d, %d)", (int)n,
                           (int)(c <= n ? c : d), (int)n, (int)T->nnodes);
    }
    return rc;
}
/* ==== csrc/model_knn.c ==== */
// csrc/model_knn.c: k nearest neighbours (Lehnert) — normalised, weighted, inverse-distance mean
// SPDX-License-Identifier: BSD-3-Clause
//
// Brute force over the group's point set, sorted once per distinct query: the training matrices
// number hundreds to thousands, and every configuration of one matrix asks the same query, each
// walking the sorted list to its first k points measured with that configuration.

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int nb_cmp(const void *a, const void *b) {
    const spmv_knn_nb *x = a, *y = b;
    if (x->d != y->d) return x->d < y->d ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

static int nb_less(const spmv_knn_nb *x, const spmv_knn_nb *y) { return nb_cmp(x, y) < 0; }

static void nb_swap(spmv_knn_nb *a, spmv_knn_nb *b) {
    spmv_knn_nb t = *a;
    *a = *b;
    *b = t;
}

/* Reorder a[0..n) so that a[0..p) are its p smallest (in nb_cmp order, which is total: distance,
 * then point), a[p..n) the rest.  Hoare-partition quickselect, median-of-three pivots: expected
 * O(n), against O(n log n) for sorting all the points when only the nearest few are read. */
static void nb_select(spmv_knn_nb *a, int32_t n, int32_t p) {
    int32_t lo = 0, hi = n - 1;
    while (hi > lo) {
        int32_t mid = lo + (hi - lo) / 2;
        if (nb_less(&a[mid], &a[lo])) nb_swap(&a[mid], &a[lo]);
        if (nb_less(&a[hi], &a[lo])) nb_swap(&a[hi], &a[lo]);
        if (nb_less(&a[hi], &a[mid])) nb_swap(&a[hi], &a[mid]);
        spmv_knn_nb pivot = a[mid];
        int32_t i = lo, j = hi;
        while (i <= j) {
            while (nb_less(&a[i], &pivot)) i++;
            while (nb_less(&pivot, &a[j])) j--;
            if (i <= j) nb_swap(&a[i++], &a[j--]);
        }
        if (p - 1 <= j)
            hi = j; /* the p-th smallest lies left of the cut */
        else if (p - 1 >= i)
            lo = i;
        else
            break;
    }
}

/* Points sorted up front per query: enough for k finite targets unless many are NaN. */
#define KNN_PREFIX 256

int32_t spmv_knn_maxset(const spmv_model *M) {
    int32_t m = 0;
    for (int32_t s = 0; s < M->knn.nsets; s++)
        if (M->knn.set_ptr[s + 1] - M->knn.set_ptr[s] > m)
            m = M->knn.set_ptr[s + 1] - M->knn.set_ptr[s];
    return m;
}

void spmv_knn_eval(const spmv_model *M, int32_t g, const double *z, spmv_knn_cache *c,
                   double *raw) {
    const spmv_knn *K = &M->knn;
    int32_t s = K->set[g], d = M->ninputs, p0 = K->set_ptr[s], n = K->set_ptr[s + 1] - p0;
    int64_t o = (int64_t)s * d;
    for (int32_t j = 0; j < d; j++)
        c->qn[j] = K->shift ? (z[j] - K->shift[o + j]) / K->div[o + j] : z[j];
    if (c->set != s || memcmp(c->q, c->qn, (size_t)d * sizeof *c->q) != 0) {
        for (int32_t i = 0; i < n; i++) {
            const double *v = K->points + (int64_t)(p0 + i) * d;
            double d2 = 0;
            for (int32_t j = 0; j < d; j++) {
                double e = c->qn[j] - v[j];
                d2 += (K->weight ? K->weight[o + j] : 1.0) * (e * e);
            }
            c->nb[i].d = sqrt(d2);
            c->nb[i].i = p0 + i;
        }
        c->sorted = n < KNN_PREFIX ? n : KNN_PREFIX;
        if (c->sorted < n) nb_select(c->nb, n, c->sorted);
        qsort(c->nb, (size_t)c->sorted, sizeof *c->nb, nb_cmp);
        memcpy(c->q, c->qn, (size_t)d * sizeof *c->q);
        c->set = s;
    }
    const double *y = K->target + K->tcol[g];
    int32_t nt = K->ntargets, k = K->k[g], m = 0, zeros = 0;
    double yk[SPMV_KNN_MAXK], dk[SPMV_KNN_MAXK];
    for (int32_t i = 0; i < n && m < k; i++) {
        if (i == c->sorted) { /* past the prefix: sort the rest */
            qsort(c->nb + i, (size_t)(n - i), sizeof *c->nb, nb_cmp);
            c->sorted = n;
        }
        double v = y[(int64_t)c->nb[i].i * nt];
        if (isnan(v)) continue;
        yk[m] = v;
        dk[m] = c->nb[i].d;
        zeros += dk[m++] == 0;
    }
    double num = 0, den = 0;
    for (int32_t j = 0; j < m; j++) {
        double w = 1;
        if (K->weighting == SPMV_KNN_SKLEARN)
            w = zeros ? (dk[j] == 0) : 1 / dk[j];
        else if (K->weighting == SPMV_KNN_FLOOR)
            w = 1 / (dk[j] > K->dmin ? dk[j] : K->dmin);
        num += yk[j] * w;
        den += w;
    }
    raw[0] = m == 0 ? NAN : K->weighting == SPMV_KNN_UNIFORM ? num / m : num / den;
}

int spmv_knn_check(const spmv_model *M, spmv_err *err) {
    const spmv_knn *K = &M->knn;
    if (K->set_ptr == NULL || K->set == NULL || K->k == NULL || K->tcol == NULL ||
        K->target == NULL || (K->points == NULL && M->ninputs > 0) || K->ntargets < 1 ||
        (K->shift == NULL) != (K->div == NULL) || K->weighting < SPMV_KNN_UNIFORM ||
        K->weighting > SPMV_KNN_FLOOR)
        return spmv_fail(
            err, SPMV_ESCHEMA, -1, -1, -1,
            "a KNN model needs set_ptr[nsets+1], points, target, set, k, tcol[ngroups], "
            "ntargets >= 1, shift and div both or neither, weighting in [0, 2]");
    int rc = spmv_check_range(K->set_ptr, (int64_t)K->nsets + 1, 0, (int64_t)K->npoints + 1,
                              "knn.set_ptr", err);
    for (int32_t s = 0; rc == 0 && s < K->nsets; s++)
        if (K->set_ptr[s + 1] <= K->set_ptr[s])
            rc = spmv_fail(err, SPMV_ESCHEMA, s, K->set_ptr[s + 1], K->set_ptr[s],
                           "knn: point set %d is empty", (int)s);
    if (rc == 0) rc = spmv_check_range(K->set, M->ngroups, 0, K->nsets, "knn.set", err);
    if (rc == 0) rc = spmv_check_range(K->k, M->ngroups, 1, SPMV_KNN_MAXK + 1, "knn.k", err);
    if (rc == 0) rc = spmv_check_range(K->tcol, M->ngroups, 0, K->ntargets, "knn.tcol", err);
    return rc;
}
/* ==== csrc/model_svm.c ==== */
// csrc/model_svm.c: RBF support vector machines (Li & Suda) — SVR, and SVC's decision function
// SPDX-License-Identifier: BSD-3-Clause

#include <math.h>

static double svm_decision(const spmv_model *M, int32_t s, const double *z) {
    const spmv_svm *S = &M->svm;
    int32_t d = M->ninputs;
    double y = 0;
    for (int32_t i = S->sv_ptr[s]; i < S->sv_ptr[s + 1]; i++) {
        const double *v = S->sv + (int64_t)i * d;
        double d2 = 0;
        for (int32_t k = 0; k < d; k++) {
            double e = z[k] - v[k];
            d2 += e * e;
        }
        y += S->dual[i] * exp(-S->gamma[s] * d2);
    }
    return y + S->intercept[s];
}

void spmv_svm_eval(const spmv_model *M, int32_t g, const double *z, double *raw) {
    raw[0] = svm_decision(M, g, z);
    if (M->svm.classify) raw[1] = svm_decision(M, M->ngroups + g, z);
}

int spmv_svm_check(const spmv_model *M, spmv_err *err) {
    const spmv_svm *S = &M->svm;
    if (S->sv_ptr == NULL || S->gamma == NULL || S->intercept == NULL ||
        (S->classify != 0 && S->classify != 1) ||
        (S->nsv > 0 && (S->dual == NULL || (S->sv == NULL && M->ninputs > 0))))
        return spmv_fail(err, SPMV_ESCHEMA, -1, -1, -1,
                         "an SVM model needs classify 0 or 1, sv_ptr[nsets+1], sv[nsv*ninputs], "
                         "dual[nsv], gamma and intercept[nsets]");
    int64_t nsets = (int64_t)M->ngroups * (1 + S->classify);
    int rc = spmv_check_range(S->sv_ptr, nsets + 1, 0, (int64_t)S->nsv + 1, "svm.sv_ptr", err);
    for (int64_t s = 0; rc == 0 && s < nsets; s++)
        if (S->sv_ptr[s + 1] < S->sv_ptr[s])
            rc = spmv_fail(err, SPMV_ESCHEMA, s, S->sv_ptr[s + 1], S->sv_ptr[s],
                           "svm.sv_ptr decreases at set %lld", (long long)s);
    return rc;
}
/* ==== csrc/model_formula.c ==== */
// csrc/model_formula.c: closed-form models (Guo & Wang, Wang, Gu & Li) as gated products of inputs
// SPDX-License-Identifier: BSD-3-Clause
//
// Derived inputs give the strips (ceil(rows / threads of the whole GPU), at least 1) and HYB's COO
// part; a term is coef * z[a] * z[b], counted where lo < z[gate] <= hi.  Two linear segments split
// at a threshold are terms gated on the two sides; ELL's f(w) + (s - 1) g(w) is a product term per
// coefficient; HYB is its ELL terms plus its COO term.

#include <math.h>

static double factor(const double *z, int32_t i) { return i >= 0 ? z[i] : 1.0; }

void spmv_formula_eval(const spmv_model *M, int32_t g, double *z, double *raw) {
    const spmv_formula *F = &M->formula;
    for (int32_t q = 0; q < F->nderived; q++) {
        double v = factor(z, F->da[q]) * factor(z, F->db[q]);
        if (F->dc[q] >= 0) v = v - factor(z, F->dc[q]) * factor(z, F->dd[q]);
        v = v < F->dlo[q] ? F->dlo[q] : v;
        v = v / F->ddiv[q];
        if (F->dceil[q]) v = ceil(v);
        v = v < F->dlo2[q] ? F->dlo2[q] : v;
        z[M->ninputs + q] = v + F->dadd[q];
    }
    double y = 0;
    for (int32_t t = F->term_ptr[g]; t < F->term_ptr[g + 1]; t++) {
        if (F->gate[t] >= 0) {
            double v = z[F->gate[t]];
            if (!(v > F->lo[t] && v <= F->hi[t])) continue;
        }
        y += F->coef[t] * (factor(z, F->a[t]) * factor(z, F->b[t]));
    }
    raw[0] = y;
}

int spmv_formula_check(const spmv_model *M, spmv_err *err) {
    const spmv_formula *F = &M->formula;
    if (F->term_ptr == NULL || F->nderived < 0 || F->nterms < 0 ||
        (F->nterms > 0 && (F->a == NULL || F->b == NULL || F->gate == NULL || F->coef == NULL ||
                           F->lo == NULL || F->hi == NULL)) ||
        (F->nderived > 0 &&
         (F->da == NULL || F->db == NULL || F->dc == NULL || F->dd == NULL || F->dceil == NULL ||
          F->dlo == NULL || F->ddiv == NULL || F->dlo2 == NULL || F->dadd == NULL)))
        return spmv_fail(err, SPMV_ESCHEMA, -1, -1, -1,
                         "a formula model needs term_ptr[ngroups+1], a, b, gate, coef, lo, hi "
                         "[nterms] and da, db, dc, dd, dceil, dlo, ddiv, dlo2, dadd [nderived]");
    int64_t nz = (int64_t)M->ninputs + F->nderived;
    int rc = spmv_check_range(F->term_ptr, (int64_t)M->ngroups + 1, 0, (int64_t)F->nterms + 1,
                              "formula.term_ptr", err);
    for (int32_t g = 0; rc == 0 && g < M->ngroups; g++)
        if (F->term_ptr[g + 1] < F->term_ptr[g])
            rc = spmv_fail(err, SPMV_ESCHEMA, g, F->term_ptr[g + 1], F->term_ptr[g],
                           "formula.term_ptr decreases at group %d", (int)g);
    /* a derived input reads the inputs and the derived inputs before it */
    for (int32_t q = 0; rc == 0 && q < F->nderived; q++) {
        int32_t idx[4] = {F->da[q], F->db[q], F->dc[q], F->dd[q]};
        rc = spmv_check_range(idx, 4, -1, M->ninputs + q, "formula derived input", err);
    }
    if (rc == 0) rc = spmv_check_range(F->dceil, F->nderived, 0, 2, "formula.dceil", err);
    if (rc == 0) rc = spmv_check_range(F->a, F->nterms, -1, nz, "formula.a", err);
    if (rc == 0) rc = spmv_check_range(F->b, F->nterms, -1, nz, "formula.b", err);
    if (rc == 0) rc = spmv_check_range(F->gate, F->nterms, -1, nz, "formula.gate", err);
    return rc;
}
/* ==== csrc/rank.c ==== */
// csrc/rank.c: design rows, a model's inputs and output, evaluation by kind, cascades, spmv_rank()
// SPDX-License-Identifier: BSD-3-Clause
//
// The same source serves the library and every exported model header (pyspmv.export_c), so that a
// model gives the same numbers in Python, in the core and in a header.

#include <math.h>
#include <stdlib.h>
#include <string.h>

int spmv_check_range(const int32_t *a, int64_t n, int64_t lo, int64_t hi, const char *what,
                     spmv_err *err) {
    if (n > 0 && a == NULL)
        return spmv_fail(err, SPMV_ESCHEMA, -1, -1, -1, "%s is NULL but should hold %lld entries",
                         what, (long long)n);
    for (int64_t i = 0; i < n; i++)
        if (a[i] < lo || a[i] >= hi)
            return spmv_fail(err, SPMV_ESCHEMA, i, a[i], hi,
                             "%s[%lld] = %d is outside [%lld, %lld)", what, (long long)i, (int)a[i],
                             (long long)lo, (long long)hi);
    return SPMV_OK;
}

/* ---- design rows ---- */

int spmv_design_rows(const spmv_csr *A, const spmv_gpu_props *dev, const spmv_configs *C,
                     int value_bytes, double max_fill, double *rows, spmv_err *err) {
    if (A == NULL || dev == NULL || C == NULL || (C->n > 0 && rows == NULL))
        return spmv_fail(err, SPMV_EINVAL, -1, -1, -1,
                         "design rows need a matrix, GPU properties, "
                         "configurations and an output array, not NULL");
    if (value_bytes != 4 && value_bytes != 8)
        return spmv_fail(err, SPMV_EINVAL, -1, value_bytes, 8,
                         "value_bytes must be 4 or 8. Got %d instead.", value_bytes);
    if (C->n < 0 || C->nextra < 0 ||
        (C->n > 0 && (C->format == NULL || C->param == NULL || C->unread == NULL || C->p == NULL ||
                      C->launches == NULL || (C->nextra > 0 && C->extra == NULL))))
        return spmv_fail(err, SPMV_EINVAL, -1, C->n, -1,
                         "configurations: n = %d, nextra = %d, "
                         "and every array of n entries must be given",
                         (int)C->n, (int)C->nextra);
    for (int32_t j = 0; j < C->n; j++)
        if (C->format[j] < 0 || C->format[j] >= SPMV_NFORMATS)
            return spmv_fail(err, SPMV_EINVAL, j, C->format[j], SPMV_NFORMATS,
                             "configuration %d has format code %d, not in [0, %d)", (int)j,
                             (int)C->format[j], SPMV_NFORMATS);
    double feat[SPMV_NFEATURES];
    int rc = spmv_features_compute(A, dev, feat, err);
    if (rc) return rc;
    int64_t stride = SPMV_NCOLS + C->nextra, nnz = A->indptr[A->nrows];
    for (int32_t j = 0; j < C->n; j++) {
        double *r = rows + j * stride;
        memcpy(r, feat, sizeof feat);
        for (int k = 0; k < SPMV_NPCOLS; k++)
            r[SPMV_COL_P_TPV + k] = C->p[(int64_t)j * SPMV_NPCOLS + k];
        r[SPMV_COL_VALUE_BYTES] = value_bytes;
        r[SPMV_COL_LAUNCHES] = C->launches[j];
        for (int32_t k = 0; k < C->nextra; k++)
            r[SPMV_NCOLS + k] = C->extra[(int64_t)j * C->nextra + k];
        int32_t same = 0; /* an earlier configuration with the same format: reuse */
        while (same < j &&
               !(C->format[same] == C->format[j] && C->param[2 * same] == C->param[2 * j] &&
                 C->param[2 * same + 1] == C->param[2 * j + 1] && C->unread[same] == C->unread[j]))
            same++;
        if (same < j) {
            r[SPMV_COL_BYTES_MOVED] = rows[same * stride + SPMV_COL_BYTES_MOVED];
            r[SPMV_COL_PADDING_RATIO] = rows[same * stride + SPMV_COL_PADDING_RATIO];
            continue;
        }
        spmv_fmt F;
        memset(&F, 0, sizeof F);
        F.format = C->format[j];
        F.param[0] = C->param[2 * j];
        F.param[1] = C->param[2 * j + 1];
        F.max_fill = max_fill;
        rc = spmv_fmt_size(A, &F, err);
        if (rc == SPMV_ENOTAPPLICABLE) {
            r[SPMV_COL_BYTES_MOVED] = r[SPMV_COL_PADDING_RATIO] = NAN;
            continue;
        }
        if (rc) return rc;
        int64_t idx = 0, slots = 0;
        for (int k = 0; k < SPMV_MAXIDX; k++)
            if (!((C->unread[j] >> k) & 1)) idx += 4 * F.nidx[k];
        for (int k = 0; k < SPMV_MAXVAL; k++) slots += F.nval[k];
        /* as pyspmv.config_features: integers first, one conversion to double */
        r[SPMV_COL_BYTES_MOVED] = (double)(idx + value_bytes * (slots + A->nrows + A->ncols));
        r[SPMV_COL_PADDING_RATIO] = nnz ? (double)slots / (double)nnz : 1.0;
    }
    return SPMV_OK;
}

/* ---- inputs and outputs ---- */

static double tf_apply(int tf, double x) {
    switch (tf) {
    case SPMV_TF_LOG1P:
        return log1p(x);
    case SPMV_TF_LOG:
        return log(x);
    case SPMV_TF_LOG10:
        return log10(x);
    case SPMV_TF_LOG2:
        return log2(x);
    case SPMV_TF_EXP:
        return exp(x);
    case SPMV_TF_EXPM1:
        return expm1(x);
    case SPMV_TF_POW10:
        return pow(10.0, x);
    case SPMV_TF_POW2:
        return exp2(x);
    default:
        return x;
    }
}

/* Input k of one row.  memo (NULL: none) holds each input's last value x and result z:
 * consecutive rows of one matrix share its features, so a log per feature per configuration
 * would otherwise dominate a linear model's cost. */
static double model_input(const spmv_model *M, int32_t k, const double *row, double *memo) {
    int32_t ni = M->ninputs;
    double x = row[M->in_col[k]], z;
    if (isnan(x)) x = M->in_nan[k];
    if (x < M->in_lo[k]) x = M->in_lo[k];
    if (x > M->in_hi[k]) x = M->in_hi[k];
    if (memo != NULL && memcmp(&x, &memo[k], sizeof x) == 0) return memo[ni + k];
    z = (tf_apply(M->in_tf[k], x) - M->in_shift[k]) / M->in_div[k];
    if (memo != NULL) {
        memo[k] = x;
        memo[ni + k] = z;
    }
    return z;
}

/* Every input of one row into z[ninputs]. */
static void model_inputs(const spmv_model *M, const double *row, double *z, double *memo) {
    for (int32_t k = 0; k < M->ninputs; k++) z[k] = model_input(M, k, row, memo);
}

/* An empty memo: NaN bits match no clamped input that is not NaN itself, and a NaN input maps
 * to the same z every time. */
static void memo_init(double *memo, int32_t ni) {
    for (int32_t k = 0; k < ni; k++) memo[k] = memo[ni + k] = NAN;
}

int32_t spmv_model_nout(const spmv_model *M) {
    if (M->kind == SPMV_MODEL_TREES) return M->trees.nout;
    return M->kind == SPMV_MODEL_SVM && M->svm.classify ? 2 : 1;
}

/* Workspace of one model's evaluation.  A cascade's stages each have their own, and keep their
 * class probabilities for the last inputs: the stages read matrix features only, so a ranking
 * evaluates each once. */
typedef struct model_ws {
    double *z, *raw; /* [ninputs + derived], [nout] */
    double *memo;    /* [2*ninputs], model_inputs' */
    spmv_knn_cache knn;
    struct model_ws *stage; /* cascades: [nstages] */
    double *proba;          /* as a stage: its class probabilities [nout + 1] for the inputs in z */
    int valid;
} model_ws;

static int32_t model_nz(const spmv_model *M) {
    return M->ninputs + (M->kind == SPMV_MODEL_FORMULA ? M->formula.nderived : 0);
}

/* Doubles, neighbour records and stage records M's workspace takes (added to the counts). */
static void model_ws_count(const spmv_model *M, int64_t *nd, int64_t *nnb, int64_t *nst) {
    *nd += model_nz(M) + spmv_model_nout(M) + 4 * (int64_t)M->ninputs + spmv_model_nout(M) + 1;
    if (M->kind == SPMV_MODEL_KNN) *nnb += spmv_knn_maxset(M);
    if (M->kind != SPMV_MODEL_CASCADE) return;
    *nst += M->cascade.nstages;
    for (int32_t s = 0; s < M->cascade.nstages; s++)
        model_ws_count(&M->cascade.sub[s], nd, nnb, nst);
}

static void model_ws_init(const spmv_model *M, model_ws *w, double **d, spmv_knn_nb **nb,
                          model_ws **st) {
    int32_t nout = spmv_model_nout(M);
    w->z = *d;
    w->raw = w->z + model_nz(M);
    w->knn.q = w->raw + nout;
    w->knn.qn = w->knn.q + M->ninputs;
    w->proba = w->knn.qn + M->ninputs;
    w->memo = w->proba + nout + 1;
    memo_init(w->memo, M->ninputs);
    *d = w->memo + 2 * M->ninputs;
    w->knn.set = -1;
    w->knn.nb = *nb;
    if (M->kind == SPMV_MODEL_KNN) *nb += spmv_knn_maxset(M);
    w->valid = 0;
    w->stage = NULL;
    if (M->kind != SPMV_MODEL_CASCADE) return;
    w->stage = *st;
    *st += M->cascade.nstages;
    for (int32_t s = 0; s < M->cascade.nstages; s++)
        model_ws_init(&M->cascade.sub[s], &w->stage[s], d, nb, st);
}

static void model_raw(const spmv_model *M, int32_t g, const double *row, model_ws *w);

/* Class probabilities of a cascade stage for this row (GradientBoostingClassifier.predict_proba:
 * expit of the logit for two classes, a softmax for more), recomputed only when its inputs change.
 */
static const double *stage_proba(const spmv_model *S, const double *row, model_ws *w) {
    if (S->kind == 0) {
        w->proba[0] = 1;
        return w->proba;
    }
    double *zn = w->knn.qn; /* new inputs, compared with the last */
    model_inputs(S, row, zn, w->memo);
    if (w->valid && memcmp(zn, w->z, (size_t)S->ninputs * sizeof(double)) == 0) return w->proba;
    memcpy(w->z, zn, (size_t)S->ninputs * sizeof(double));
    model_raw(S, 0, row, w);
    int32_t nout = spmv_model_nout(S);
    if (nout == 1) {
        w->proba[1] = 1 / (1 + exp(-w->raw[0]));
        w->proba[0] = 1 - w->proba[1];
    } else {
        double mx = w->raw[0], sum = 0;
        for (int32_t o = 1; o < nout; o++) mx = w->raw[o] > mx ? w->raw[o] : mx;
        for (int32_t o = 0; o < nout; o++) sum += (w->proba[o] = exp(w->raw[o] - mx));
        for (int32_t o = 0; o < nout; o++) w->proba[o] /= sum;
    }
    w->valid = 1;
    return w->proba;
}

/* Raw output(s) of group g for one design row into w->raw; the inputs are already in w->z. */
static void model_raw(const spmv_model *M, int32_t g, const double *row, model_ws *w) {
    switch (M->kind) {
    case SPMV_MODEL_LINEAR:
        spmv_linear_eval(M, g, w->z, w->raw);
        break;
    case SPMV_MODEL_TREES:
        spmv_trees_eval(M, g, w->z, w->raw);
        break;
    case SPMV_MODEL_KNN:
        spmv_knn_eval(M, g, w->z, &w->knn, w->raw);
        break;
    case SPMV_MODEL_SVM:
        spmv_svm_eval(M, g, w->z, w->raw);
        break;
    case SPMV_MODEL_FORMULA:
        spmv_formula_eval(M, g, w->z, w->raw);
        break;
    default: { /* SPMV_MODEL_CASCADE */
        const spmv_cascade *K = &M->cascade;
        double p = 1;
        for (int32_t l = 0; l < K->nlevels; l++) {
            int32_t s = K->node[(int64_t)g * K->nlevels + l],
                    c = K->cls[(int64_t)g * K->nlevels + l];
            p *= s < 0 || c < 0 ? 0.0 : stage_proba(&K->sub[s], row, &w->stage[s])[c];
        }
        w->raw[0] = -p;
    }
    }
}

static int check_stage(const spmv_model *M, int32_t s, spmv_err *err) {
    const spmv_model *S = &M->cascade.sub[s];
    if (S->kind == 0) return SPMV_OK;
    if (S->kind != SPMV_MODEL_TREES || S->ngroups != 1 || S->ncols > M->ncols)
        return spmv_fail(err, SPMV_ESCHEMA, s, S->kind, SPMV_MODEL_TREES,
                         "cascade stage %d must be a tree classifier of one group reading at most "
                         "the cascade's %d columns, or kind 0",
                         (int)s, (int)M->ncols);
    return spmv_model_check(S, err);
}

int spmv_model_check(const spmv_model *M, spmv_err *err) {
    if (M == NULL) return spmv_fail(err, SPMV_EINVAL, -1, -1, -1, "model is NULL");
    if (M->kind < SPMV_MODEL_LINEAR || M->kind > SPMV_MODEL_CASCADE)
        return spmv_fail(err, SPMV_ESCHEMA, -1, M->kind, SPMV_MODEL_CASCADE + 1,
                         "model kind %d is not in [%d, %d]", M->kind, SPMV_MODEL_LINEAR,
                         SPMV_MODEL_CASCADE);
    if (M->ngroups < 1 || M->ninputs < 0 || M->ncols < SPMV_NCOLS)
        return spmv_fail(err, SPMV_ESCHEMA, -1, M->ngroups, 1,
                         "model: ngroups = %d (>= 1), "
                         "ninputs = %d (>= 0), ncols = %d (>= %d)",
                         (int)M->ngroups, (int)M->ninputs, (int)M->ncols, SPMV_NCOLS);
    if (M->ninputs > 0 && (M->in_nan == NULL || M->in_lo == NULL || M->in_hi == NULL ||
                           M->in_shift == NULL || M->in_div == NULL))
        return spmv_fail(err, SPMV_ESCHEMA, -1, -1, -1,
                         "model inputs need in_col, in_tf, in_nan, "
                         "in_lo, in_hi, in_shift and in_div");
    int rc = spmv_check_range(M->in_col, M->ninputs, 0, M->ncols, "in_col", err);
    if (rc == 0) rc = spmv_check_range(M->in_tf, M->ninputs, 0, SPMV_TF_POW2 + 1, "in_tf", err);
    if (rc == 0) rc = spmv_check_range(&M->out_tf, 1, 0, SPMV_TF_POW2 + 1, "out_tf", err);
    if (rc == 0) rc = spmv_check_range(&M->out_col, 1, -1, M->ncols, "out_col", err);
    if (rc) return rc;
    switch (M->kind) {
    case SPMV_MODEL_LINEAR:
        return spmv_linear_check(M, err);
    case SPMV_MODEL_TREES:
        return spmv_trees_check(M, err);
    case SPMV_MODEL_KNN:
        return spmv_knn_check(M, err);
    case SPMV_MODEL_SVM:
        return spmv_svm_check(M, err);
    case SPMV_MODEL_FORMULA:
        return spmv_formula_check(M, err);
    default:
        break;
    }
    const spmv_cascade *K = &M->cascade;
    if (K->nstages < 1 || K->nlevels < 1 || K->sub == NULL || K->node == NULL || K->cls == NULL)
        return spmv_fail(err, SPMV_ESCHEMA, -1, K->nstages, 1,
                         "a cascade needs stages (sub[nstages]) and node, cls[ngroups*nlevels]");
    int64_t np = (int64_t)M->ngroups * K->nlevels;
    rc = spmv_check_range(K->node, np, -1, K->nstages, "cascade.node", err);
    for (int32_t s = 0; rc == 0 && s < K->nstages; s++) rc = check_stage(M, s, err);
    for (int64_t i = 0; rc == 0 && i < np; i++) {
        int32_t s = K->node[i];
        int32_t ncls = s < 0 ? 1 : K->sub[s].kind == 0 ? 1 : spmv_model_nout(&K->sub[s]);
        ncls += ncls == 1 && s >= 0 && K->sub[s].kind != 0; /* one logit, two classes */
        if (K->cls[i] < -1 || K->cls[i] >= ncls)
            rc = spmv_fail(err, SPMV_ESCHEMA, i, K->cls[i], ncls,
                           "cascade.cls[%lld] = %d is outside [-1, %d)", (long long)i,
                           (int)K->cls[i], (int)ncls);
    }
    return rc;
}

static double out_apply(const spmv_model *M, const double *raw, const double *row) {
    double y = tf_apply(M->out_tf, raw[0]);
    if (y < M->out_lo) y = M->out_lo; /* NaN stays NaN */
    if (M->out_col >= 0) y *= row[M->out_col];
    if (M->kind == SPMV_MODEL_SVM && M->svm.classify && !(raw[1] > 0)) y *= M->svm.penalty;
    return y;
}

/* Tree ensembles over all rows at once (spmv_trees_eval_rows): inputs of every row first, the
 * inputs every row shares marked, rows sorted by group (counting sort), then each group's rows
 * through its trees together. */
static int predict_trees(const spmv_model *M, const double *rows, int32_t n, int32_t stride,
                         const int32_t *group, double *ms, double *raw, spmv_err *err) {
    int32_t nout = M->trees.nout, ng = M->ngroups, ni = M->ninputs;
    double *Z = spmv_malloc((int64_t)(n + 2) * ni + (int64_t)n * nout, sizeof(double), err);
    int32_t *idx = Z == NULL ? NULL : spmv_malloc((int64_t)n + ng + 1, sizeof(int32_t), err);
    uint8_t *uniform = idx == NULL ? NULL : spmv_malloc(ni, 1, err);
    if (uniform == NULL) {
        spmv_free(idx);
        spmv_free(Z);
        return SPMV_ENOMEM;
    }
    double *R = Z + (int64_t)n * ni, *memo = R + (int64_t)n * nout;
    int32_t *ptr = idx + n, first = -1; /* ptr[g+1]: rows of groups <= g */
    memo_init(memo, ni);
    for (int32_t g = 0; g <= ng; g++) ptr[g] = 0;
    for (int32_t k = 0; k < ni; k++) uniform[k] = 1;
    for (int32_t i = 0; i < n; i++) {
        if (group[i] < 0) continue;
        double *z = Z + (int64_t)i * ni;
        ptr[group[i] + 1]++;
        model_inputs(M, rows + (int64_t)i * stride, z, memo);
        if (M->trees.cast_f32) /* as DecisionTreeRegressor reads X */
            for (int32_t k = 0; k < ni; k++) z[k] = (double)(float)z[k];
        if (first < 0) first = i;
        for (int32_t k = 0; k < ni; k++)
            uniform[k] &= memcmp(&z[k], &Z[(int64_t)first * ni + k], sizeof(double)) == 0;
    }
    for (int32_t g = 0; g < ng; g++) ptr[g + 1] += ptr[g];
    for (int32_t i = 0; i < n; i++)
        if (group[i] >= 0) idx[ptr[group[i]]++] = i;
    for (int32_t g = ng; g > 0; g--) ptr[g] = ptr[g - 1]; /* back to starts */
    ptr[0] = 0;
    for (int32_t g = 0; g < ng; g++)
        if (ptr[g + 1] > ptr[g])
            spmv_trees_eval_rows(M, g, idx + ptr[g], ptr[g + 1] - ptr[g], Z, uniform, R);
    for (int32_t i = 0; i < n; i++) {
        const double *r = R + (int64_t)i * nout;
        ms[i] = group[i] < 0 ? HUGE_VAL : out_apply(M, r, rows + (int64_t)i * stride);
        for (int32_t o = 0; raw != NULL && o < nout; o++)
            raw[(int64_t)i * nout + o] = group[i] < 0 ? NAN : r[o];
    }
    spmv_free(uniform);
    spmv_free(idx);
    spmv_free(Z);
    return SPMV_OK;
}

/* A linear model over the rows of one matrix (spmv_rank): the inputs from the matrix's features
 * and value size are the same in every row, so their part of each group's sum is computed once per
 * group, and a row pays only for its configuration's own inputs. */
static int predict_linear_shared(const spmv_model *M, const double *rows, int32_t n, int32_t stride,
                                 const int32_t *group, double *ms, spmv_err *err) {
    int32_t ni = M->ninputs, ng = M->ngroups, nv = 0, first = -1;
    double *z = spmv_malloc(3 * (int64_t)ni + 2 * (int64_t)ng, sizeof(double), err);
    int32_t *var = z == NULL ? NULL : spmv_malloc(ni, sizeof(int32_t), err);
    if (var == NULL) {
        spmv_free(z);
        return SPMV_ENOMEM;
    }
    double *memo = z + ni, *part = memo + 2 * ni, *have = part + ng;
    memo_init(memo, ni);
    for (int32_t g = 0; g < ng; g++) have[g] = 0;
    for (int32_t k = 0; k < ni; k++)
        if (!(M->in_col[k] < SPMV_NFEATURES || M->in_col[k] == SPMV_COL_VALUE_BYTES)) var[nv++] = k;
    for (int32_t i = 0; i < n; i++) {
        const double *row = rows + (int64_t)i * stride;
        int32_t g = group[i];
        if (g < 0) {
            ms[i] = HUGE_VAL;
            continue;
        }
        const double *w = M->coef + (int64_t)g * ni;
        if (first < 0) {
            first = i;
            model_inputs(M, row, z, memo);
        }
        if (!have[g]) {
            double s = 0;
            for (int32_t k = 0, v = 0; k < ni; k++) {
                if (v < nv && var[v] == k) {
                    v++;
                    continue;
                }
                s += w[k] * z[k];
            }
            part[g] = s;
            have[g] = 1;
        }
        double y = part[g], raw;
        for (int32_t v = 0; v < nv; v++) y += w[var[v]] * model_input(M, var[v], row, memo);
        raw = y + M->intercept[g];
        ms[i] = out_apply(M, &raw, row);
    }
    spmv_free(var);
    spmv_free(z);
    return SPMV_OK;
}

int spmv_model_predict(const spmv_model *M, const double *rows, int32_t n, int32_t stride,
                       const int32_t *group, double *ms, double *raw, spmv_err *err) {
    if (M == NULL || n < 0 || (n > 0 && (rows == NULL || group == NULL || ms == NULL)))
        return spmv_fail(err, SPMV_EINVAL, -1, n, -1,
                         "predict needs a model, rows, groups and an "
                         "output array for n = %d rows",
                         (int)n);
    if (stride < M->ncols)
        return spmv_fail(err, SPMV_EINVAL, -1, stride, M->ncols,
                         "rows hold %d columns; the model reads %d", (int)stride, (int)M->ncols);
    for (int32_t i = 0; i < n; i++)
        if (group[i] < -1 || group[i] >= M->ngroups)
            return spmv_fail(err, SPMV_EINVAL, i, group[i], M->ngroups,
                             "group[%d] = %d is outside [-1, %d)", (int)i, (int)group[i],
                             (int)M->ngroups);
    if (M->kind == SPMV_MODEL_TREES) return predict_trees(M, rows, n, stride, group, ms, raw, err);
    int rc = SPMV_OK;
    int32_t nout = spmv_model_nout(M);
    int64_t nd = 0, nnb = 0, nst = 0;
    model_ws_count(M, &nd, &nnb, &nst);
    double *d = spmv_malloc(nd, sizeof(double), err), *dp = d;
    spmv_knn_nb *nb = d == NULL ? NULL : spmv_malloc(nnb, sizeof *nb, err), *nbp = nb;
    model_ws *st = nb == NULL ? NULL : spmv_malloc(nst, sizeof *st, err), *sp = st;
    if (st == NULL) {
        rc = SPMV_ENOMEM;
        goto done;
    }
    model_ws w;
    model_ws_init(M, &w, &dp, &nbp, &sp);
    for (int32_t i = 0; i < n; i++) {
        const double *row = rows + (int64_t)i * stride;
        int32_t g = group[i];
        if (g < 0) {
            ms[i] = HUGE_VAL;
            for (int32_t o = 0; raw != NULL && o < nout; o++) raw[(int64_t)i * nout + o] = NAN;
            continue;
        }
        model_inputs(M, row, w.z, w.memo);
        model_raw(M, g, row, &w);
        ms[i] = out_apply(M, w.raw, row);
        if (raw != NULL) memcpy(raw + (int64_t)i * nout, w.raw, (size_t)nout * sizeof(double));
    }
done:
    spmv_free(st);
    spmv_free(nb);
    spmv_free(d);
    return rc;
}

/* ---- ranking ---- */

typedef struct {
    double ms;
    int32_t i;
} ranked;

static inline int ranked_cmp(const ranked *x, const ranked *y) {
    int xn = isnan(x->ms), yn = isnan(y->ms);
    if (xn != yn) return xn - yn; /* NaN last */
    if (!xn && x->ms != y->ms) return x->ms < y->ms ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* Bottom-up merge sort of a[n] by ranked_cmp's order (tmp[n] workspace); returns the sorted copy.
 * qsort's calls through a comparator cost more than the model on a hundred configurations. */
static const ranked *ranked_sort(ranked *a, ranked *tmp, int32_t n) {
    for (int32_t w = 1; w < n; w *= 2) {
        for (int32_t lo = 0; lo < n; lo += 2 * w) {
            int32_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int32_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) tmp[k++] = ranked_cmp(&a[j], &a[i]) < 0 ? a[j++] : a[i++];
            while (i < mid) tmp[k++] = a[i++];
            while (j < hi) tmp[k++] = a[j++];
        }
        ranked *t = a;
        a = tmp;
        tmp = t;
    }
    return a;
}

static int rank_check(const spmv_configs *C, const spmv_model *M, int32_t *order, double *ms,
                      spmv_err *err) {
    if (C == NULL || M == NULL || (C->n > 0 && (order == NULL || ms == NULL || C->group == NULL)))
        return spmv_fail(err, SPMV_EINVAL, -1, -1, -1,
                         "rank needs configurations (with groups), a model, order and ms arrays, "
                         "not NULL");
    if (M->ncols != SPMV_NCOLS + C->nextra)
        return spmv_fail(err, SPMV_EINVAL, -1, M->ncols, SPMV_NCOLS + C->nextra,
                         "the model reads %d columns, the configurations give %d", (int)M->ncols,
                         (int)(SPMV_NCOLS + C->nextra));
    for (int32_t j = 0; j < C->n; j++)
        if (C->group[j] < -1 || C->group[j] >= M->ngroups)
            return spmv_fail(err, SPMV_EINVAL, j, C->group[j], M->ngroups,
                             "configuration %d has group %d, outside [-1, %d)", (int)j,
                             (int)C->group[j], (int)M->ngroups);
    return SPMV_OK;
}

int spmv_rank_rows(const spmv_configs *C, const spmv_model *M, const double *rows,
                   const double *add_ms, int32_t *order, double *ms, spmv_err *err) {
    int rc = rank_check(C, M, order, ms, err);
    if (rc) return rc;
    int32_t n = C->n;
    ranked *r = spmv_malloc(2 * (int64_t)n, sizeof(ranked), err);
    if (r == NULL) return SPMV_ENOMEM;
    if (M->kind == SPMV_MODEL_LINEAR) /* one matrix: its features are shared */
        rc = predict_linear_shared(M, rows, n, M->ncols, C->group, ms, err);
    else
        rc = spmv_model_predict(M, rows, n, M->ncols, C->group, ms, NULL, err);
    if (rc) goto done;
    for (int32_t j = 0; j < n; j++) {
        if (isnan(rows[(int64_t)j * M->ncols + SPMV_COL_BYTES_MOVED]))
            ms[j] = HUGE_VAL;
        else if (add_ms != NULL)
            ms[j] += add_ms[j];
        r[j].ms = ms[j];
        r[j].i = j;
    }
    const ranked *s = ranked_sort(r, r + n, n);
    for (int32_t j = 0; j < n; j++) order[j] = s[j].i;
done:
    spmv_free(r);
    return rc;
}

int spmv_rank(const spmv_csr *A, const spmv_gpu_props *dev, const spmv_configs *C,
              const spmv_model *M, int value_bytes, const double *add_ms, int32_t *order,
              double *ms, spmv_err *err) {
    int rc = rank_check(C, M, order, ms, err);
    if (rc) return rc;
    double *rows = spmv_malloc((int64_t)C->n * M->ncols, sizeof(double), err);
    if (rows == NULL) return SPMV_ENOMEM;
    rc = spmv_design_rows(A, dev, C, value_bytes, 0, rows, err);
    if (rc == 0) rc = spmv_rank_rows(C, M, rows, add_ms, order, ms, err);
    spmv_free(rows);
    return rc;
}
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
#endif /* PYSPMV_EXPORTED_CORE */

/* ---- model unused ---- */
#define unused_NCONFIGS 15
static const int32_t unused_m_in_col[11] = {
    2, 0, 6, 4, 9, 12, 24, 23, 41, 42, 44
};
static const int32_t unused_m_in_tf[11] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0
};
static const double unused_m_in_nan[11] = {
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, NAN
};
static const double unused_m_in_lo[11] = {
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -HUGE_VAL
};
static const double unused_m_in_hi[11] = {
    1.7976931348623157e+308, 1.7976931348623157e+308, 1.7976931348623157e+308, 1.7976931348623157e+308, 1.7976931348623157e+308, 1.7976931348623157e+308, 1.7976931348623157e+308, 1.7976931348623157e+308, 1.7976931348623157e+308, 1.7976931348623157e+308, HUGE_VAL
};
static const double unused_m_in_shift[11] = {
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
};
static const double unused_m_in_div[11] = {
    1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0
};
static const double unused_m_coef[77] = {
    0.43720850757427115, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0,
    0.46241142644304156, 0.0, 0.0, 0.0, 0.0, 0.31121093387854, 0.0, 0.0, 0.0, 1.0, 0.0, 0.41980047955864935,
    0.0, 0.0, 0.0, 0.0, 0.3294385586253857, 0.0, 0.0, 0.0, 1.0, 0.46524709052420943, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, -1.9518996673265805, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0, 2.471977144133384, 0.0, 1.0, 0.6182538401581361, 0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.5786111521404343, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0, 1.0
};
static const double unused_m_intercept[7] = {
    -9.87048520985519, -9.689881938500202, -9.411876314784596, -10.111091604704288, -17.31129526848858, -11.160267806601073, -10.983416791287183
};
static const int32_t unused_cfg_format[15] = {
    0, 0, 1, 2, 3, 3, 3, 3, 3, 3, 3, 3,
    3, 5, 7
};
static const int32_t unused_cfg_param[30] = {
    0, 0, 0, 0, 0, 0, 0, 0, 4, 1, 4, 64,
    4, 256, 8, 1, 8, 64, 8, 256, 16, 1, 16, 64,
    16, 256, -1, 0, 0, 0
};
static const int32_t unused_cfg_unread[15] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0
};
static const double unused_cfg_p[105] = {
    NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN,
    NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN,
    NAN, NAN, NAN, NAN, NAN, NAN, 4.0, 1.0, NAN, NAN, NAN, NAN,
    NAN, 4.0, 64.0, NAN, NAN, NAN, NAN, NAN, 4.0, 256.0, NAN, NAN,
    NAN, NAN, NAN, 8.0, 1.0, NAN, NAN, NAN, NAN, NAN, 8.0, 64.0,
    NAN, NAN, NAN, NAN, NAN, 8.0, 256.0, NAN, NAN, NAN, NAN, NAN,
    16.0, 1.0, NAN, NAN, NAN, NAN, NAN, 16.0, 64.0, NAN, NAN, NAN,
    NAN, NAN, 16.0, 256.0, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN,
    NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN
};
static const double unused_cfg_launches[15] = {
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0
};
static const int32_t unused_cfg_group[15] = {
    2, 1, 0, 3, 6, 6, 6, 6, 6, 6, 6, 6,
    6, 4, 5
};
static const double unused_cfg_extra[15] = {
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0
};

SPMV_API const char *const unused_config_ids[unused_NCONFIGS] = {
    "cpu/csr/rows",
    "cpu/csr/nnz",
    "cpu/coo",
    "cpu/ell",
    "cpu/sell/c=4/sigma=1",
    "cpu/sell/c=4/sigma=64",
    "cpu/sell/c=4/sigma=256",
    "cpu/sell/c=8/sigma=1",
    "cpu/sell/c=8/sigma=64",
    "cpu/sell/c=8/sigma=256",
    "cpu/sell/c=16/sigma=1",
    "cpu/sell/c=16/sigma=64",
    "cpu/sell/c=16/sigma=256",
    "cpu/hyb",
    "cpu/jad"
};

SPMV_API const spmv_model unused_model = {.kind = 1, .ngroups = 7, .ncols = 45, .ninputs = 11, .out_tf = 5, .out_col = -1, .out_lo = -HUGE_VAL, .in_col = unused_m_in_col, .in_tf = unused_m_in_tf, .in_nan = unused_m_in_nan, .in_lo = unused_m_in_lo, .in_hi = unused_m_in_hi, .in_shift = unused_m_in_shift, .in_div = unused_m_in_div, .coef = unused_m_coef, .intercept = unused_m_intercept};

SPMV_API const spmv_configs unused_configs = {.n = 15, .nextra = 1, .format = unused_cfg_format, .param = unused_cfg_param, .unread = unused_cfg_unread, .p = unused_cfg_p, .launches = unused_cfg_launches, .group = unused_cfg_group, .extra = unused_cfg_extra};

/* Same as unused_predict, plus order[0..unused_NCONFIGS) = configuration indices, fastest first. */
SPMV_API int unused_rank(int32_t nrows, int32_t ncols, const int32_t *indptr, const int32_t *indices, int *order,
                   double *ms) {
    spmv_csr A;
    spmv_gpu_props dev;
    int32_t o[unused_NCONFIGS];
    int rc;
    if (indptr == NULL || ms == NULL || nrows < 1 || ncols < 1) return SPMV_EINVAL;
    A.nrows = nrows;
    A.ncols = ncols;
    A.indptr = indptr;
    A.indices = indices;
    dev.sm_count = 132;
    dev.threads_per_sm = 2048;
    dev.warp_size = 32;
    rc = spmv_csr_check(&A, (int64_t)nrows + 1, indptr[nrows] >= 0 ? indptr[nrows] : 0, NULL);
    if (rc == 0) rc = spmv_rank(&A, &dev, &unused_configs, &unused_model, 8, NULL, o, ms, NULL);
    if (rc == 0 && order != NULL)
        for (int j = 0; j < unused_NCONFIGS; j++) order[j] = (int)o[j];
    return rc;
}

/* Predicted runtime in ms of every configuration for a CSR matrix; returns 0 or a negative error code. */
SPMV_API int unused_predict(int32_t nrows, int32_t ncols, const int32_t *indptr, const int32_t *indices, double *ms) {
    return unused_rank(nrows, ncols, indptr, indices, NULL, ms);
}

#endif /* UNUSED_H */
