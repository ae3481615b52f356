// csrc/spmv_internal.h: what csrc/ files share and nothing outside csrc/ may include
// SPDX-License-Identifier: BSD-3-Clause
#ifndef SPMV_INTERNAL_H
#define SPMV_INTERNAL_H

#include "spmv.h"

#include <stddef.h>
#include <stdint.h>

/* C's restrict, under the name C++ compilers give it (an exported header compiles as either). */
#ifdef __cplusplus
#define SPMV_RESTRICT __restrict
#else
#define SPMV_RESTRICT restrict
#endif

/* Fill *err (when not NULL) and return code.  fmt is printf-style, cut to fit err->msg. */
#if defined(__GNUC__)
__attribute__((format(printf, 6, 7)))
#endif
SPMV_API int
spmv_fail(spmv_err *err, int code, int64_t where, int64_t value, int64_t limit, const char *fmt,
          ...);

/* The subject of a message spmv_fail may write, printf-style into buf[size]: formatted only when
 * err is not NULL (a caller that takes no message pays no formatting), else buf = "". */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
SPMV_API void
spmv_what(const spmv_err *err, char *buf, size_t size, const char *fmt, ...);

/* malloc/free wrappers: n*size bytes, NULL (and SPMV_ENOMEM in err, with the byte count) on failure
 * or on n*size overflow.  spmv_free(NULL) is a no-op.  Built with SPMV_FAIL_INJECT, the k-th call can
 * be made to fail for the allocation-failure test (tests/c/test_nomem.c). */
SPMV_API void *spmv_malloc(int64_t n, int64_t size, spmv_err *err);
SPMV_API void *spmv_calloc(int64_t n, int64_t size, spmv_err *err);
SPMV_API void spmv_free(void *p);
#ifdef SPMV_FAIL_INJECT
SPMV_API void
spmv_fail_after(int64_t k); /* the k-th allocation from now fails (k >= 1); 0: none fails */
SPMV_API int64_t spmv_alloc_count(void); /* allocations made since spmv_fail_after() */
#endif

/* The guard every padded format applies once it knows its slot count: SPMV_ENOTAPPLICABLE when slots
 * pass int32 (GPU kernels index with int32) or max_fill * max(nnz, nrows).  `what` names the format
 * in the message ("ELL width 812"). */
SPMV_API int spmv_fill_guard(const spmv_fmt *F, int64_t slots, const char *what, spmv_err *err);

/* Bell-Garland ELL width of HYB (also the hyb_width feature): the largest K such that at least
 * T = min(nrows, max(4096, ceil(nrows/3))) rows hold K or more entries.  CUSP's rule with
 * T capped at nrows, so that small matrices keep the width every row fills rather than width 0.
 * Workspace O(max row length).  Returns 0 or SPMV_ENOMEM. */
SPMV_API int spmv_hyb_width(const spmv_csr *A, int32_t *width, spmv_err *err);

/* The same width from hist[0..maxlen] (hist[l] = rows of length l) for callers that have it. */
SPMV_API int32_t spmv_hyb_width_hist(const int64_t *hist, int32_t maxlen, int32_t nrows);

/* First index i in [lo, hi) with a[i] >= key (hi if none); a[lo..hi) non-decreasing.  The one
 * binary search behind the nnz-balanced CSR split and the COO thread chunks. */
static inline int64_t spmv_lower_bound(const int32_t *a, int64_t lo, int64_t hi, int64_t key) {
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (a[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Set bits of x: portable C (no builtin), for the pass's offsets and BSR's tiles. */
static inline int64_t spmv_popcount64(uint64_t x) {
    x = x - ((x >> 1) & 0x5555555555555555u);
    x = (x & 0x3333333333333333u) + ((x >> 2) & 0x3333333333333333u);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fu;
    return (int64_t)((x * 0x0101010101010101u) >> 56);
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
 * pyspmv's threads wait passively (pyspmv/_openmp.py), so each threaded product pays for waking
 * them: about 0.04 ms on the idle 2-core dev VM, where one thread beat two up to about 250,000
 * entries (benchmarks/results/omp_wait_4000.md: real matrices of 4,000-200,000 entries took 3.55x
 * one thread's time in geometric mean at 4000, up to 11x).  With spinning threads
 * (OMP_WAIT_POLICY=active) 4000 is right (studies/2026-11-23-omp-threshold/omp_threshold.md: 1.3-1.45x
 * faster than 20000 on the dev VM and a 16-core Xeon): a build may set it
 * (-Dc_args=-DSPMV_OMP_MIN_WORK=N). */
#ifndef SPMV_OMP_MIN_WORK
#define SPMV_OMP_MIN_WORK 250000
#endif

typedef struct spmv_summary spmv_summary;     /* below */
typedef struct spmv_pass_part spmv_pass_part; /* below */

/* Operations and facts of one storage format: one const table spmv_<name>_ops per csrc/<name>.c,
 * found through csrc/formats.def.  size() sets F->nnz, scalar[], nidx[], nval[]; the others behave
 * as the spmv_fmt_* functions. */
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
    /* spmv_fmt_check's part for this format (shape and nnz already checked): lengths first, then
     * scalars and parameters, then the arrays' contents, each before anything it makes readable. */
    int (*check)(const spmv_fmt *F, spmv_err *err);
    /* size() from a one-pass summary of A (spmv_summary), which need() (NULL: nothing) has asked
     * for what the format needs; same results and errors as size(). */
    int (*size_summary)(spmv_summary *S, spmv_fmt *F, spmv_err *err);
    int (*need)(spmv_summary *S, const spmv_fmt *F, spmv_err *err);
    /* NULL, or the format's part of the one pass: what it gathers there for size_summary
     * (spmv_fmt_need asks for it before need runs). */
    const spmv_pass_part *pass;
    int32_t unread; /* bit k: no kernel reads idx[k] (spmv_format_unread) */
    int finite_x;   /* kernels multiply padding zeros by x (spmv_format_finite_x) */
    int vals_slot;  /* 1 + the parameter slot of a value table's bits (csrc/vtab.c); 0: none */
    /* 1: size_summary reads the pattern pass's results beyond its own part (spmv_fmt_pattern) */
    int pattern;
} spmv_format_ops;

/* ---- value tables (csrc/vtab.c; sizes and refusals: spmv_vtab_size, spmv.h) ---- */

/* tab[len] and words[words] (spmv_vtab_size's) from the nnz values in storage order, es = 4 or 8
 * bytes each; fmt names the format in messages.  SPMV_ENOTAPPLICABLE past 2^bits distinct values. */
SPMV_API int spmv_vtab_fill(const void *stored, int es, int64_t nnz, int32_t bits, void *tab,
                            int32_t *words, const char *fmt, spmv_err *err);
/* SPMV_EINDEX where an index passes the table or a slot past nnz is not 0. */
SPMV_API int spmv_vtab_check(const int32_t *words, int64_t nnz, int32_t bits, const char *fmt,
                             spmv_err *err);
/* Entry q's index. */
static inline uint32_t spmv_vtab_get(const int32_t *words, int64_t q, int32_t bits) {
    int64_t bit = q * bits;
    return ((uint32_t)words[bit >> 5] >> (bit & 31)) & ((1u << bits) - 1u);
}

/* ---- configurations (csrc/config.c) ---- */

/* *R = C, or where C gives ids instead of columns (format NULL), C with its columns resolved from
 * them into one allocation *block (spmv_free it; NULL when nothing was allocated).  Returns 0,
 * SPMV_EINVAL (an id that does not parse; err->where its index) or SPMV_ENOMEM. */
SPMV_API int spmv_configs_resolve(const spmv_configs *C, spmv_configs *R, void **block,
                                  spmv_err *err);

/* ---- the one pass (csrc/pass.c) and the summary the size_summary ops read ---- */

/* A format's part of the one pass: what its size_summary needs that only the entries give,
 * gathered while the pass has them in cache.  The format declares it (its ops' .pass), its need op
 * asks for it (spmv_pass_result), and the pass runs every part asked for through these hooks
 * without knowing any by name: a format that needs a new quantity changes its own file only.
 * Each thread keeps its own state; merge takes them in thread order, so that a result is the same
 * for any thread count.  NULL hooks do nothing. */
typedef struct {
    const spmv_csr *A;
    int64_t rows;         /* rows passed: nrows, or the sampled blocks' */
    int32_t nrange;       /* > 0: sampling the blocks at range[0..nrange), on one thread */
    int nt;               /* threads; thread t passes rows [split[t], split[t+1]) */
    const int32_t *split; /* [nt + 1] */
} spmv_pass_view;

/* Rows [r0, r1) of A just passed by one thread, r0 a multiple of SPMV_PASS_BLOCK, in row order
 * within the thread.  Every column is in [0, ncols) and none past its row's last; order is checked
 * after the pass (a part must stay in bounds on rows out of order; its result is then dropped). */
typedef struct {
    const spmv_csr *A;
    const int32_t *ix; /* A's indices, never NULL (NULL + 0 is undefined in C) */
    int32_t r0, r1;
    int64_t at;         /* r0's place among the rows passed (r0 unless sampling) */
    const int32_t *gap; /* [r1 - r0]: each row's largest gap between neighbours (0: < 2 entries) */
} spmv_pass_block;

struct spmv_pass_part {
    int64_t size;  /* bytes of the part's result, zeroed when first asked for */
    int64_t tsize; /* bytes of one thread's state, zeroed before open (0: none) */
    /* Before the rows: the result's workspace for V; 1 to sit this pass out (size_summary then
     * counts without it), or SPMV_ENOMEM. */
    int (*start)(void *res, const spmv_pass_view *V, spmv_err *err);
    /* Thread t's state before its rows (its workspace), or SPMV_ENOMEM; only with tsize > 0 (the
     * other hooks then get ts = NULL). */
    int (*open)(const void *res, void *ts, const spmv_pass_view *V, int t, spmv_err *err);
    /* Rows B of the thread whose state is ts; res may be written only where no other thread's
     * rows write (rows of its own). */
    void (*block)(void *res, void *ts, const spmv_pass_block *B);
    /* After the rows, thread t's state into res, t = 0, 1, ... nt - 1 in order. */
    void (*merge)(void *res, void *ts, const spmv_pass_view *V, int t);
    void (*close)(void *ts); /* frees a thread's workspace (on every path; its state zeroed or
                                opened) */
    void (*free)(void *res); /* frees the result's workspace (spmv_summary_free) */
};

/* What a pass is asked for beyond the features: the parts the need ops asked for, and whether it
 * samples.  Zeroed by whoever makes the summary. */
typedef struct {
    /* nrange > 0: only the blocks of SPMV_PASS_BLOCK rows starting at range[0..nrange) (ascending
     * multiples of SPMV_PASS_BLOCK), whose indptr the caller has checked; the parts then see the
     * sampled rows in order (spmv_pass_block.at). */
    const int32_t *range;
    int32_t nrange;
    int32_t nparts;
    const spmv_pass_part *part[SPMV_NFORMATS]; /* at most one per format */
    void *res[SPMV_NFORMATS];                  /* their results */
    int done[SPMV_NFORMATS];                   /* the pass gathered them (start did not decline) */
} spmv_pass;
#define SPMV_PASS_BLOCK SPMV_SAMPLE_BLOCK

/* *res = part's result in P, made (zeroed, part->size bytes) on the first ask.  SPMV_OK,
 * SPMV_ENOMEM, or SPMV_EINVAL past one part per format.  spmv_pass_found: the result once the pass
 * has gathered it (start did not decline), else NULL. */
SPMV_API int spmv_pass_result(spmv_pass *P, const spmv_pass_part *part, void **res, spmv_err *err);
SPMV_API void *spmv_pass_found(const spmv_pass *P, const spmv_pass_part *part);
/* Frees the parts' results (their free hooks, then the results); P then asks for nothing. */
SPMV_API void spmv_pass_free(spmv_pass *P);

/* Count, exact sum of value - shift, and the sum of squared deviations of a set of integers. */
typedef struct {
    int64_t count, sum;
    int32_t shift;
    double m2;
} spmv_moments;

/* The pass's totals, from which csrc/features.c makes the tier-2 features. */
typedef struct {
    int32_t gmin, gmax, band; /* gaps between neighbours (INT32_MAX: none), max |col-row| */
    int64_t span, cluster, segr, segw; /* sums over non-empty rows, x segments per row and group */
    int64_t groups;                    /* groups of 32 rows passed */
    spmv_moments lo, up;     /* over non-empty rows of max(0, i - first), max(0, last - i) */
    int64_t ndiag;           /* occupied offsets col - row */
    double gap_mean, gap_ss; /* of the gaps between consecutive occupied offsets */
} spmv_pattern;

/* One pass over A's indices (indptr already checked: features_rows), validating them: SPMV_EINDEX
 * or SPMV_EUNSORTED as spmv_csr_check names the first bad entry, or SPMV_ENOMEM.  Threads above a
 * size; the same bits for any thread count.  O(nnz + nrows + threads * (nrows + ncols)). */
SPMV_API int spmv_pattern_pass(const spmv_csr *A, spmv_pass *P, spmv_pattern *R, spmv_err *err);

/* A valid matrix summarised by one pass, for the formats' size_summary ops: what they need to
 * give the same sizes as their size() without reading the entries again. */
struct spmv_summary {
    const spmv_csr *A; /* passed spmv_features_compute's checks */
    /* The matrix itself: A where the pass read every row, the matrix A's rows were sampled from
     * where the rows are estimated (spmv_features_estimate); NULL: A. */
    const spmv_csr *whole;
    int32_t lmax;       /* longest row */
    int64_t *hist;      /* [lmax+1] rows of each length */
    int32_t hyb_width;  /* spmv_hyb_width_hist of hist */
    int64_t ndiag;      /* distinct offsets col - row */
    spmv_pass pass;     /* the formats' parts of the pass: what the need ops asked */
    int32_t *runs;      /* [2 nruns] scratch (NULL until needed): row lengths sorted descending
                             within windows of runs_sigma rows, as (length, rows) pairs */
    int64_t nruns;      /* pairs in runs */
    int32_t runs_sigma; /* 0: runs holds nothing */
    /* Per window of win rows (the gcd of the slice heights the need ops named; 0: none), its
     * longest row: every slice of a multiple of win rows then takes its width from height / win
     * windows, not from its rows. */
    int32_t win;
    int32_t *wlen; /* [ceil(nrows / win)], NULL until spmv_summary_windows */
};

/* Features of A (as spmv_features_compute) and S filled for the needs already registered in S
 * (S zeroed first, then the need ops); free with spmv_summary_free.  Same returns. */
SPMV_API int spmv_features_summary(const spmv_csr *A, const spmv_gpu_props *dev, double *out,
                                   spmv_summary *S, spmv_err *err);
/* The same without the pattern pass (a pass over every entry): the features it gives stay 0 and S
 * holds the rows' part only, which serves every format spmv_fmt_pattern says 0 of. */
SPMV_API int spmv_features_rows(const spmv_csr *A, const spmv_gpu_props *dev, double *out,
                                spmv_summary *S, spmv_err *err);
SPMV_API void spmv_summary_free(spmv_summary *S);
/* A need op's slice height h >= 1: S->win becomes gcd(S->win, h). */
SPMV_API void spmv_summary_window(spmv_summary *S, int32_t h);
/* *use: whether slices of h rows can take their maxima from S's windows (h a multiple of
 * S->win), which are built on first use (O(nrows)).  SPMV_OK or SPMV_ENOMEM. */
SPMV_API int spmv_summary_windows(spmv_summary *S, int32_t h, int *use, spmv_err *err);
/* spmv_csr_check's check of the columns of rows [r0, r1) of A, whose indptr there the caller has
 * checked (non-decreasing, within A's indices): each in [0, ncols) and after the one before it. */
SPMV_API int spmv_csr_check_rows(const spmv_csr *A, int32_t r0, int32_t r1, spmv_err *err);
/* The blocks of SPMV_PASS_BLOCK rows spmv_design_rows_estimate samples from A (nrows >= 1,
 * indptr[nrows+1] with indptr[nrows] = nnz; the rest read clamped, unchecked): 0 for the exact path
 * (sample_rows <= 0, or half of A's blocks or more), else k >= 1 whose blocks hold at most
 * sample_nnz entries where sample_nnz > 0, unless k = 1.  O(k^2) at most, k <= sample_rows / 256 + 1. */
SPMV_API int64_t spmv_sample_blocks(const int32_t *indptr, int32_t nrows, int32_t sample_rows,
                                    int64_t sample_nnz);
/* The same estimated from a sample: As is the CSR of A's rows in the blocks S->pass.range names
 * (indptr rebased, indices copied), from which tier 1 and S come; tier 2 comes from those rows of
 * A itself, so that offsets and bands keep their row numbers.  Shape, nnz and what they alone
 * give are exact; empty_rows is scaled; the rest is the sample's. */
SPMV_API int spmv_features_estimate(const spmv_csr *A, const spmv_csr *As,
                                    const spmv_gpu_props *dev, double *out, spmv_summary *S,
                                    spmv_err *err);

/* spmv_fmt_size from a summary: the same F or the same error.  The format's need op (if any)
 * must have seen F before the summary was made; S's scratch may change (a cache of sorts). */
SPMV_API int spmv_fmt_size_summary(spmv_summary *S, spmv_fmt *F, spmv_err *err);
/* Register what F's size_summary needs from the pass.  What a pass cannot hold (more BSR block
 * sizes than one pass counts) size_summary computes by the format's size() instead. */
SPMV_API int spmv_fmt_need(spmv_summary *S, const spmv_fmt *F, spmv_err *err);
/* Whether F's size_summary needs the pattern pass (its part of the pass, or the format's pattern
 * flag), rather than the rows' part of the summary alone (spmv_features_rows). */
SPMV_API int spmv_fmt_pattern(const spmv_fmt *F);

/* spmv_fmt_size without checking A: for callers that have just validated A themselves
 * (spmv_design_rows, after spmv_features_compute). */
SPMV_API int spmv_fmt_size_checked(const spmv_csr *A, spmv_fmt *F, spmv_err *err);

/* Helpers of the check ops (csrc/format.c); each fails with a message naming the format and the
 * array.  spmv_fmt_scalar: lo <= scalar[k] <= hi.  spmv_fmt_lengths: nidx[k], nval[k] equal the
 * expected counts (at most INT32_MAX) and arrays with entries are not NULL; what[] names the
 * SPMV_MAXIDX index then SPMV_MAXVAL value slots (NULL: unused).  spmv_fmt_ptr: p[0..n] starts at
 * 0, never decreases, steps by multiples of step and ends at last.  spmv_fmt_perm: perm[n] is a
 * permutation of [0, n) (SPMV_ENOMEM: its workspace).  spmv_fmt_col: col in [0, ncols) and past
 * *prev (the row's previous column, -1 at its start), then *prev = col.  spmv_fmt_count: the
 * entries counted equal F->nnz, so that back-conversion fills exactly the arrays it was given. */
SPMV_API int spmv_fmt_scalar(const spmv_fmt *F, int k, int64_t lo, int64_t hi, const char *what,
                             spmv_err *err);
SPMV_API int spmv_fmt_lengths(const spmv_fmt *F, const int64_t *nidx, const int64_t *nval,
                              const char *const *what, spmv_err *err);
SPMV_API int spmv_fmt_ptr(const spmv_fmt *F, const int32_t *p, int64_t n, int64_t last,
                          int64_t step, const char *what, spmv_err *err);
SPMV_API int spmv_fmt_perm(const spmv_fmt *F, const int32_t *perm, int32_t n, const char *what,
                           spmv_err *err);
SPMV_API int spmv_fmt_col(const spmv_fmt *F, int64_t row, int64_t col, int64_t *prev,
                          const char *what, spmv_err *err);
SPMV_API int spmv_fmt_count(const spmv_fmt *F, int64_t count, spmv_err *err);

/* Objects of the interface, declared here for the library.  An exported header defines each before
 * its first use (csrc/meson.build puts format.c after the formats, model.c after the model kinds)
 * and declares none (SPMV_NO_DATA_DECLS): C++ has no declaration of an object with internal linkage
 * that is not also its definition. */
#ifndef SPMV_NO_DATA_DECLS
#define SPMV_FORMAT(CODE, name) extern const spmv_format_ops spmv_##name##_ops;
#include "formats.def"
#undef SPMV_FORMAT
#endif

/* ELL's size step for an ELL part of width w: guard on nrows*w + extra slots, then scalar[0] = w
 * and nidx[0] = nval[0] = nrows*w.  `extra` is HYB's COO part (0 for ELL). */
SPMV_API int spmv_ell_part_size(const spmv_csr *A, spmv_fmt *F, int32_t w, int64_t extra,
                                const char *what, spmv_err *err);
/* The pieces HYB shares with ELL and COO, one per value type.  ell_part_fill: the first
 * min(len, w) entries of each row, column-major (slot k*nrows + i), padding -1 / 0.  ell_part_rows:
 * y = that ELL part times x; an orphaned `omp for`, so call it inside a parallel region (or
 * serially).  coo_part_chunk: thread t of nt sums its run of row-sorted COO entries into y, setting
 * (add = 0) or adding to (add = 1) each row it finishes; every row is summed by one thread. */
/* Check row i of an ELL part of width w (spmv_fmt_check): its entries (columns via spmv_fmt_col,
 * continuing *prev), then only padding -1; *len = its entries. */
SPMV_API int spmv_ell_part_row(const spmv_fmt *F, int32_t i, int32_t w, const int32_t *col,
                               int64_t *prev, int32_t *len, spmv_err *err);
SPMV_API void spmv_ell_part_fill_f32(const spmv_csr *A, const float *values, int32_t w,
                                     int32_t *col, float *v);
SPMV_API void spmv_ell_part_fill_f64(const spmv_csr *A, const double *values, int32_t w,
                                     int32_t *col, double *v);
SPMV_API void spmv_ell_part_rows_f32(int32_t n, int32_t w, const int32_t *col, const float *v,
                                     const float *x, float *y);
SPMV_API void spmv_ell_part_rows_f64(int32_t n, int32_t w, const int32_t *col, const double *v,
                                     const double *x, double *y);
SPMV_API void spmv_coo_part_chunk_f32(const int32_t *row, const int32_t *col, const float *v,
                                      int64_t nnz, const float *x, float *y, int t, int nt,
                                      int add);
SPMV_API void spmv_coo_part_chunk_f64(const int32_t *row, const int32_t *col, const double *v,
                                      int64_t nnz, const double *x, double *y, int t, int nt,
                                      int add);

/* ---- interruption and cost ---- */

/* A long call's spmv_interrupt as its evaluators see it: they count the steps they take (the units
 * of spmv_model_cost) and ask the caller's check once every SPMV_POLL_STEPS; once it says stop,
 * every later spmv_poll_step says so at once and the evaluators return early. */
typedef struct {
    const spmv_interrupt *intr; /* NULL: never asked */
    int64_t left;               /* steps before the next check */
    int stopped;
} spmv_poll;

static inline void spmv_poll_init(spmv_poll *p, const spmv_interrupt *intr) {
    p->intr = intr != NULL && intr->fn != NULL ? intr : NULL;
    p->left = SPMV_POLL_STEPS;
    p->stopped = 0;
}

/* Count `steps` done; nonzero once the caller's check has said stop. */
static inline int spmv_poll_step(spmv_poll *p, int64_t steps) {
    if (p->intr == NULL || p->stopped) return p->stopped;
    p->left -= steps;
    if (p->left > 0) return 0;
    p->left = SPMV_POLL_STEPS;
    p->stopped = p->intr->fn(p->intr->arg) != 0;
    return p->stopped;
}

/* Sums and products of step counts (>= 0), saturating at INT64_MAX rather than wrapping: a hostile
 * model's cost must compare as large. */
static inline int64_t spmv_sat_add(int64_t a, int64_t b) {
    return a > INT64_MAX - b ? INT64_MAX : a + b;
}
static inline int64_t spmv_sat_mul(int64_t a, int64_t b) {
    return a != 0 && b > INT64_MAX / a ? INT64_MAX : a * b;
}

/* ---- model evaluation: one table of operations per kind (csrc/model_<kind>.c, found through
 * csrc/models.def; csrc/model.c owns the inputs, the output transform, the field checks and the
 * row loop) ---- */

/* Operations and fields of one model kind.  A new kind is its csrc/model_<kind>.c with one of
 * these and its entry (code, name, parameters struct) in csrc/models.def.
 *   fields: the kind's spmv_model_field table (SPMV_MODEL_FIELD names and places each entry),
 *           nfields entries; spmv_model_check checks them before check runs.
 *   check: NULL, or what the table cannot say (indices within their arrays, trees that end,
 *          ...); SPMV_ESCHEMA naming the field.
 *   nout:  raw outputs per row (NULL: 1).
 *   ws:    bytes of eval's workspace (NULL: none); when w is not NULL, also initialises w[that many
 *          bytes] (8-byte aligned).
 *   cost:  *steps = the most steps eval (or rows, per row) takes for one row of any group,
 *          inputs excluded (spmv_model_cost adds them); M has passed check.  0 or SPMV_ENOMEM.
 *   eval:  raw[nout] of group g for one design row whose inputs are z[ninputs]; fresh is 0 only
 *          when z is the previous call's z (a kind may keep work per input vector in w).  Counts
 *          its steps on p (spmv_poll) between units of work and returns early once p says stop.
 *   rows:  NULL, or every row at once: raw[i*nout] for each row i with group[i] >= 0; shared: all
 *          rows are one matrix's (spmv_rank_rows).  Returns 0, a negative code, or 1 to leave
 *          these rows to eval.  Counts its steps on p as eval does (SPMV_EINTR once stopped).
 *   out:   NULL, or the prediction y (after the output transform) adjusted by the raw outputs. */
typedef struct {
    const spmv_model_field *fields;
    int32_t nfields;
    int (*check)(const spmv_model *M, spmv_err *err);
    int (*cost)(const spmv_model *M, int64_t *steps, spmv_err *err);
    int32_t (*nout)(const spmv_model *M);
    int64_t (*ws)(const spmv_model *M, void *w);
    void (*eval)(const spmv_model *M, int32_t g, const double *row, const double *z, int fresh,
                 void *w, spmv_poll *p, double *raw);
    int (*rows)(const spmv_model *M, const double *rows, int32_t n, int32_t stride,
                const int32_t *group, int shared, spmv_poll *p, double *raw, spmv_err *err);
    double (*out)(const spmv_model *M, const double *raw, double y);
} spmv_model_ops;

/* A field table entry: member `member` of kind `kind`'s parameters, named "kind.member" as specs
 * and files spell it, then the entry's other designators in spmv_model_field's order (C++ takes no
 * other order). */
#define SPMV_MODEL_FIELD(kind, member, ...)                                                        \
    { .name = #kind "." #member, __VA_ARGS__, .offset = offsetof(spmv_model, kind.member) }
#define SPMV_NFIELDS(table) ((int32_t)(sizeof(table) / sizeof((table)[0])))
/* The usual entries: an int in [l, h], a finite real, an array of (len[0]) * (len[1]) entries. */
#define SPMV_KIND_INT(kind, member, l, h)                                                          \
    SPMV_MODEL_FIELD(kind, member, .type = SPMV_FIELD_INT, .lo = (l), .hi = (h))
#define SPMV_KIND_REAL(kind, member) SPMV_MODEL_FIELD(kind, member, .type = SPMV_FIELD_REAL)
#define SPMV_KIND_ARRAY(kind, member, t, ...)                                                      \
    SPMV_MODEL_FIELD(kind, member, .type = (t), .len = {__VA_ARGS__})

#ifndef SPMV_NO_DATA_DECLS /* see the formats' */
#define SPMV_MODEL(CODE, name, ...) extern const spmv_model_ops spmv_##name##_ops;
#include "models.def"
#undef SPMV_MODEL
#endif

/* The operations of kind (0: a cascade's one-class stage, which is never evaluated), NULL outside
 * [0, SPMV_MODEL_NKINDS). */
SPMV_API const spmv_model_ops *spmv_model_ops_of(int kind);

/* Input k of one row: x = row[in_col[k]], NaN -> in_nan, clamped, transformed, shifted, divided.
 * memo (NULL: none) holds [2*ninputs]: each input's last clamped x and its z (consecutive rows of
 * one matrix share its features: a log per feature per configuration would otherwise dominate a
 * linear model's cost); spmv_model_memo_init empties it. */
SPMV_API double spmv_model_input(const spmv_model *M, int32_t k, const double *row, double *memo);
SPMV_API void spmv_model_inputs(const spmv_model *M, const double *row, double *z, double *memo);
SPMV_API void spmv_model_memo_init(double *memo, int32_t ni);

/* spmv_model_predict, told whether the rows are all one matrix's (shared: spmv_rank_rows), so that
 * inputs read from matrix-level columns only are computed once. */
SPMV_API int spmv_model_predict_rows(const spmv_model *M, const double *rows, int32_t n,
                                     int32_t stride, const int32_t *group, int shared, double *ms,
                                     double *raw, const spmv_interrupt *intr, spmv_err *err);

/* The longest walk from each node of a tree ensemble to a leaf, in nodes (a leaf: 1), into
 * h[nnodes] (caller-allocated): one pass from the last node back, as every child comes after its
 * parent (the trees' and the forest's checks).  feature[t] < 0 marks a leaf.  O(nnodes). */
SPMV_API void spmv_tree_heights(const int32_t *feature, const int32_t *left, const int32_t *right,
                                int32_t nnodes, int32_t *h);

/* Shared by the kinds' checks: an int32 array a[n] with every entry in [lo, hi). */
SPMV_API int spmv_check_range(const int32_t *a, int64_t n, int64_t lo, int64_t hi, const char *what,
                              spmv_err *err);

/* Template plumbing for <fmt>_impl.h files, included once per value type:
 *   #define SPMV_REAL double
 *   #define SPMV_NAME(x) x##_f64
 *   #include "ell_impl.h"
 * The impl file #undefs both at its end. */

#endif /* SPMV_INTERNAL_H */
