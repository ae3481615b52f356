// kernels/kern.h: internal to kernels/ — a converted matrix on the device, one kernel's entry points
// SPDX-License-Identifier: BSD-3-Clause
//
// Every own kernel (kernels/<format>.cu) is a spmv_cuda_kernel: plan.cu uploads the arrays of a
// spmv_fmt as they are (layouts: csrc/<format>.c), asks the kernel how much device workspace it
// wants, lets it fill that once, then calls run_* for every product.  run_* must write all of
// y[0, nrows) (0 for rows with no entry), since plan.cu poisons y before checked runs; it may read y
// only after setting it itself.  It counts the registry's `launches` kernels and memsets.
#ifndef SPMV_KERN_H
#define SPMV_KERN_H

#include <cuda_runtime.h>
#ifdef __cplusplus
#include <type_traits>
#endif

#include "spmv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A spmv_fmt uploaded: the same scalars and counts, device pointers into the same layout. */
typedef struct {
    int format;
    int32_t nrows, ncols;
    int64_t nnz;
    int32_t param[2];
    int64_t scalar[4];
    int64_t nidx[SPMV_MAXIDX], nval[SPMV_MAXVAL];
    const int32_t *idx[SPMV_MAXIDX]; /* device; NULL where nidx[k] == 0 */
    const void *val[SPMV_MAXVAL];    /* device, float or double; NULL where nval[k] == 0 */
} spmv_dfmt;

/* Thread mapping of one configuration: registry slots SPMV_P_TPV and SPMV_P_BLOCK; and how the
 * matrix streams are cached (spmv_ld below), which the plan decides (spmv_cuda_plan_set_keep). */
typedef struct {
    int32_t tpv;   /* threads per row (CSR vector); csr/adaptive's ept; else unused */
    int32_t block; /* threads per block: 64 .. 1024, a multiple of 32 */
    int32_t keep;  /* 1: keep the matrix in the L2 (it fits, with x and y; no solver said 0) */
} spmv_launch;

/* Where a product's dot w . y goes when a kernel makes it in the same pass (run_dot_*): each of the
 * launch's blocks writes its partial sum to part[blockIdx.x] (dot_blocks of them), and the caller
 * adds them in index order (kernels/dot.cuh's spmv_sum_partials): the same bits for the same launch,
 * and no pass of its own over w and y (kernels/krylov_cg.cu, krylov_bicgstab.cu).  w: a vector of
 * nrows values of the product's type, not y; NULL: x (CG's p . A p). */
typedef struct {
    double *part;
    const void *w;
} spmv_cuda_dot;

/* One own kernel, spmv_cu_<sym>, named by a SPMV_OWN line of csrc/kernels.def. */
typedef struct {
    /* Bytes of device workspace for host matrix H with mapping L (0: none).  Refuses a mapping it
     * cannot serve with SPMV_ENOTAPPLICABLE (SELL's C above the block size, say) and a bad one with
     * SPMV_EINVAL, naming the parameter and its range.  NULL: always 0. */
    int (*prepare)(const spmv_fmt *H, const spmv_launch *L, int64_t *aux_bytes, spmv_err *err);
    /* Fill the workspace once (its cost counts as setup, not as SpMV time).  H: the host arrays,
     * D: the same on the device, aux: aux_bytes of device memory.  NULL when prepare is. */
    int (*setup)(const spmv_fmt *H, const spmv_dfmt *D, const spmv_launch *L, void *aux,
                 cudaStream_t s, spmv_err *err);
    /* y = A x on stream s, asynchronous; returns the first launch error (cudaGetLastError()). */
    cudaError_t (*run_f32)(const spmv_dfmt *D, const spmv_launch *L, const void *aux,
                           const float *x, float *y, cudaStream_t s);
    cudaError_t (*run_f64)(const spmv_dfmt *D, const spmv_launch *L, const void *aux,
                           const double *x, double *y, cudaStream_t s);
    /* 1: setup reads the host matrix's row pointers (H->idx[0]), which a matrix that lives on the
     * device must first copy down (spmv_cuda_plan_create_dev); 0: setup reads sizes only. */
    int host_rows;
    /* y = A x (A square) and *d.out = x . y summed in double, in one pass over the matrix, on stream
     * s, asynchronous; dot_blocks: the blocks it launches (d.part's length).  NULL where the kernel
     * offers none (the dot is then a pass of its own). */
    cudaError_t (*run_dot_f32)(const spmv_dfmt *D, const spmv_launch *L, const void *aux,
                               const float *x, float *y, spmv_cuda_dot d, cudaStream_t s);
    cudaError_t (*run_dot_f64)(const spmv_dfmt *D, const spmv_launch *L, const void *aux,
                               const double *x, double *y, spmv_cuda_dot d, cudaStream_t s);
    int64_t (*dot_blocks)(const spmv_dfmt *D, const spmv_launch *L);
} spmv_cuda_kernel;

/* The own kernels, one or more per kernels/<format>.cu: csrc/kernels.def's SPMV_OWN lines. */
#define SPMV_OWN(sym, id, CODE, ...) extern const spmv_cuda_kernel spmv_cu_##sym;
#include "kernels.def"

/* Fill err (when not NULL) with code and a printf-style message, where/value/limit -1; returns
 * code.  The kernels' own spmv_fail. */
int spmv_cuda_fail(spmv_err *err, int code, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* SPMV_OK for cudaSuccess; else SPMV_ENOMEM (cudaErrorMemoryAllocation) or SPMV_ECUDA, with
 * "<what>: <CUDA's error string>" in err->msg. */
int spmv_cuda_status(cudaError_t e, const char *what, spmv_err *err);

/* cudaMalloc of bytes (nothing, *out = NULL, for bytes <= 0).  Out of memory is SPMV_ENOMEM with
 * the bytes asked for (err->value), those free (err->limit) and `what` in the message. */
int spmv_cuda_malloc(void **out, int64_t bytes, const char *what, spmv_err *err);

/* SPMV_OK when v, the parameter `param` of `format`, is a power of two in [1, 1024] (SELL's C,
 * BRO-ELL's h: the kernels divide by shifts, spmv_cuda_log2); else SPMV_EINVAL saying so. */
static inline int spmv_cuda_pow2_param(int32_t v, const char *param, const char *format,
                                       spmv_err *err) {
    if (v < 1 || v > 1024 || (v & (v - 1)) != 0)
        return spmv_cuda_fail(
            err, SPMV_EINVAL,
            "The '%s' parameter of %s must be a power of two in [1, 1024]. Got %d "
            "instead.",
            param, format, (int)v);
    return SPMV_OK;
}

/* log2 of v, a power of two in [1, 2^31); else of the next power of two. */
static inline int spmv_cuda_log2(int32_t v) {
    int lg = 0;
    while (lg < 31 && (1 << lg) < v) lg++;
    return lg;
}

/* Blocks of `block` threads covering n work items, at least 1. */
static inline unsigned spmv_cuda_blocks(int64_t n, int block) {
    int64_t b = (n + block - 1) / block;
    return (unsigned)(b > 0 ? b : 1);
}

/* ---- Products that make w . y in their pass (kernels/plan.cu; for kernels/krylov_*.cu) ---- */

/* The blocks of plan p's product with the dot (d.part's length); 0 where p makes none: a cuSPARSE
 * configuration, a locality order, a kernel without run_dot, a matrix that is not square. */
int64_t spmv_cuda_plan_dot_blocks(const struct spmv_cuda_plan *p);
/* y = A x and the blocks' partials of w . y into d.part (w = d.w, or x), on device vectors, on
 * stream (as spmv_cuda_plan_mv_dev with alpha 1, beta 0, the same checks); SPMV_ENOTAPPLICABLE
 * where spmv_cuda_plan_dot_blocks is 0. */
int spmv_cuda_plan_mv_dot_dev(struct spmv_cuda_plan *p, const void *x, void *y, spmv_cuda_dot d,
                              void *stream, spmv_err *err);

/* ---- Vectors (kernels/vec.cu) ---- */

/* y[n] = alpha * t[n] + beta * y[n] (elem_size 4 or 8) on stream s, asynchronous; as BLAS, beta == 0
 * does not read y and t == NULL stands for zeros.  Returns the launch's error. */
cudaError_t spmv_cuda_axpby(int elem_size, int64_t n, double alpha, const void *t, double beta,
                            void *y, cudaStream_t s);
/* x[n] (elem_size 4 or 8) filled on stream s, asynchronously, with fixed values spread over (-1, 1),
 * none 0 and the same in both value types: the x of a timing that needs no host x
 * (spmv_cuda_plan_bench with x NULL).  Returns the launch's error. */
cudaError_t spmv_cuda_fill(int elem_size, int64_t n, void *x, cudaStream_t s);
/* A locality order's permutations (CSR's order=1, csrc/csr.c), perm[n] new -> old, on stream s,
 * asynchronous: gather xp[k] = x[perm[k]]; scatter y[perm[k]] = alpha yp[k] + beta y[perm[k]]
 * (beta == 0 does not read y).  Return the launch's error. */
cudaError_t spmv_cuda_gather(int elem_size, int64_t n, const int32_t *perm, const void *x, void *xp,
                             cudaStream_t s);
cudaError_t spmv_cuda_scatter(int elem_size, int64_t n, const int32_t *perm, double alpha,
                              const void *yp, double beta, void *y, cudaStream_t s);
/* Check a CSR matrix on the device (the rules of spmv_cuda_matrix_wrap_csr), synchronously:
 * SPMV_EINVAL naming the first bad entry (err->where its index), SPMV_ECUDA, SPMV_ENOMEM. */
int spmv_cuda_csr_check(int32_t nrows, int32_t ncols, int64_t nnz, const int32_t *ptr,
                        const int32_t *col, spmv_err *err);

/* ---- cuSPARSE (kernels/cusparse.cu) ---- */

/* Handle, descriptors and buffer for one matrix, made once and reused by every run. */
typedef struct spmv_cusparse spmv_cusparse;

/* Describe D (format CSR, COO, SELL with sigma 1, or BSR) to cuSPARSE for algorithm `alg` (the
 * registry's kernel) with x[ncols] and y[nrows] at the given device addresses, and run the
 * preprocessing cuSPARSE offers.  SPMV_ENOTAPPLICABLE for what cuSPARSE cannot take (with why),
 * SPMV_ECUSPARSE with cuSPARSE's error string, SPMV_ENOMEM for the buffer.  *out is the caller's
 * to free with spmv_cusparse_free. */
int spmv_cusparse_create(const spmv_dfmt *D, int alg, int elem_size, void *x, void *y,
                         cudaStream_t s, spmv_cusparse **out, spmv_err *err);
/* y = A x with what create bound, asynchronous on its stream. */
int spmv_cusparse_run(spmv_cusparse *c, spmv_err *err);
/* y = alpha A x + beta y on other device vectors x[ncols], y[nrows] and stream s (cuSPARSE's
 * descriptors are pointed at them for this call and back after); asynchronous. */
int spmv_cusparse_run_vec(spmv_cusparse *c, const void *x, void *y, double alpha, double beta,
                          cudaStream_t s, spmv_err *err);
/* Bytes of cuSPARSE's external buffer (a per-configuration cost). */
int64_t spmv_cusparse_buffer_bytes(const spmv_cusparse *c);
void spmv_cusparse_free(spmv_cusparse *c);
/* cuSPARSE's version as major*1000 + minor*100 + patch, or a negative code. */
int spmv_cusparse_version(int *version, spmv_err *err);

#ifdef __cplusplus
}

/* A load of a matrix stream (indices, values), each word read once per product.  EVICT: evict-first
 * (__ldcs), so that a matrix larger than the L2 passes through it and leaves x there; else default
 * caching (__ldg), which keeps a matrix that fits the L2 there from one product to the next.  SELL's
 * kernel alone takes the choice: on the H200 (studies/2026-12-01-matrix-stream-caching, two same-run
 * A/Bs on 26 and 28 scaled real matrices), default caching ran its products 1.05-1.10 times as fast
 * in geometric mean where the CSR floor was 25-40 MB and 0.96-0.98 times past 60 MB, where
 * csr/adaptive's ran 0.96-1.01 times and JAD's 0.93-1.05 (slower below 25 MB): those stay
 * evict-first, as do ELL's, COO's, DIA's, BRO-ELL's and HYB's (unmeasured). */
template <bool EVICT, typename T> __device__ __forceinline__ T spmv_ld(const T *p) {
    if constexpr (EVICT)
        return __ldcs(p);
    else
        return __ldg(p);
}

/* f(std::bool_constant<evict>()) for a plan's launch: evict-first unless it keeps the matrix
 * (spmv_launch's keep). */
template <typename F> __host__ __forceinline__ void spmv_by_evict(const spmv_launch *L, F f) {
    if (L->keep)
        f(std::false_type());
    else
        f(std::true_type());
}

/* Entry q's value in a format that may keep its values as a table (csrc/vtab.c; JAD's and CSR's
 * `vals`): stored (VB 0), or the table val's entry at q's VB-bit index in vix.  STREAM: the value
 * or index stream is read once, with evict-first loads (spmv_ld); else default caching, for
 * mappings whose next steps read the same lines or whose matrix stays in the L2.  The table itself
 * (at most a few hundred values where it suits) is read through the read-only cache, where it
 * stays. */
template <typename T, int VB, bool STREAM>
__device__ __forceinline__ T spmv_value(const T *__restrict__ val, const void *__restrict__ vix,
                                        int64_t q) {
    if constexpr (VB == 0) {
        return spmv_ld<STREAM>(val + q);
    } else if constexpr (VB == 8) {
        return __ldg(val + spmv_ld<STREAM>(static_cast<const unsigned char *>(vix) + q));
    } else {
        static_assert(VB == 16, "a table's indices take 8 or 16 bits");
        return __ldg(val + spmv_ld<STREAM>(static_cast<const unsigned short *>(vix) + q));
    }
}

/* f(std::integral_constant<int, vb>()) for a table's index bits vb of 0, 8 or 16. */
template <typename F> __host__ __forceinline__ void spmv_by_vals(int32_t vb, F f) {
    if (vb == 8)
        f(std::integral_constant<int, 8>());
    else if (vb == 16)
        f(std::integral_constant<int, 16>());
    else
        f(std::integral_constant<int, 0>());
}

/* Defines the own kernel spmv_cu_<sym> from prepare and setup (or NULL) and run, a function
 * template over the value type with run_f32's parameters: run<float> and run<double> are its two
 * entry points. */
#define SPMV_CUDA_KERNEL(sym, prepare, setup, run)                                                 \
    extern "C" const spmv_cuda_kernel spmv_cu_##sym = {prepare, setup, run<float>, run<double>,    \
                                                       0,       NULL,  NULL,       NULL}
/* The same for a kernel that also makes x . y in its pass, from one function template launch: run's
 * parameters and, before the stream, a const spmv_cuda_dot * (NULL: no dot); blocks, the launch's
 * block count. */
#define SPMV_CUDA_KERNEL_DOT(sym, prepare, setup, launch, blocks)                                  \
    template <typename T>                                                                          \
    static cudaError_t sym##_run(const spmv_dfmt *D, const spmv_launch *L, const void *aux,        \
                                 const T *x, T *y, cudaStream_t s) {                               \
        return launch<T>(D, L, aux, x, y, NULL, s);                                                \
    }                                                                                              \
    template <typename T>                                                                          \
    static cudaError_t sym##_run_dot(const spmv_dfmt *D, const spmv_launch *L, const void *aux,    \
                                     const T *x, T *y, spmv_cuda_dot d, cudaStream_t s) {          \
        return launch<T>(D, L, aux, x, y, &d, s);                                                  \
    }                                                                                              \
    extern "C" const spmv_cuda_kernel spmv_cu_##sym = {prepare,                                    \
                                                       setup,                                      \
                                                       sym##_run<float>,                           \
                                                       sym##_run<double>,                          \
                                                       0,                                          \
                                                       sym##_run_dot<float>,                       \
                                                       sym##_run_dot<double>,                      \
                                                       blocks}
/* The same for a kernel whose setup reads the host row pointers (host_rows). */
#define SPMV_CUDA_KERNEL_HOST_ROWS(sym, prepare, setup, run)                                       \
    extern "C" const spmv_cuda_kernel spmv_cu_##sym = {prepare, setup, run<float>, run<double>,    \
                                                       1,       NULL,  NULL,       NULL}
#endif

#endif /* SPMV_KERN_H */
