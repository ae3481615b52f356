// kernels/spmv_cuda.h: the C-callable face of pyspmv's CUDA side — device, plans, timed products
// SPDX-License-Identifier: BSD-3-Clause
//
// A plan is one configuration (registry kernel + thread mapping) bound to one converted matrix on
// the device: its arrays uploaded, the kernel's workspace or cuSPARSE's handle, descriptors and
// buffer made, x and y allocated.  Everything a product needs is made at creation, so that a timed
// run is the launches alone.  Device 0 of the visible devices (CUDA_VISIBLE_DEVICES picks others).
#ifndef SPMV_CUDA_H
#define SPMV_CUDA_H

#include "spmv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Number of usable CUDA devices in *count.  Returns 0, or SPMV_ENODEVICE with the reason in
 * err->msg (no driver, no device, driver older than the runtime). */
int spmv_cuda_device_count(int *count, spmv_err *err);

/* What a table of GPU timings must record about the device and the software. */
typedef struct {
    char name[256];
    int cc_major, cc_minor;
    int sm_count, max_threads_per_sm, max_threads_per_block, warp_size;
    int clock_khz, mem_clock_khz, mem_bus_bits; /* as the runtime reports them (0 if it cannot) */
    int64_t l2_bytes, global_mem_bytes;
    int driver_version, runtime_version, cusparse_version; /* major*1000 + minor*10 (CUDA's way) */
    /* L2's persisting set-aside: the most the device allows, and this context's limit when asked
     * (where hosts differ, so may solves that rely on L2: kernels/krylov_l2.cu; 0 if unknown) */
    int64_t l2_persist_max, l2_persist_limit;
} spmv_cuda_info;

int spmv_cuda_get_info(spmv_cuda_info *info, spmv_err *err);

/* Device-to-device copy bandwidth in GB/s, counting bytes read plus bytes written, over a buffer of
 * `bytes` (median of `repeats` timed copies after a warm-up).  The reference every kernel's
 * effective bandwidth is compared with, measured in the same run. */
int spmv_cuda_copy_bandwidth(int64_t bytes, int repeats, double *gbps, spmv_err *err);

/* Page-locks the caller's host buffer [ptr, ptr + bytes) (cudaHostRegister) so that copies of it over
 * the host link run at the link's speed rather than through the driver's staging buffers, until
 * spmv_cuda_host_unpin(ptr): for a vector uploaded many times (x of each configuration timed).  The
 * caller keeps the buffer alive and unmoved meanwhile.  Returns 0, SPMV_EINVAL (NULL or bytes < 1)
 * or SPMV_ECUDA (e.g. already pinned; the buffer is then as it was). */
int spmv_cuda_host_pin(void *ptr, int64_t bytes, spmv_err *err);
int spmv_cuda_host_unpin(void *ptr, spmv_err *err);

typedef struct spmv_cuda_matrix spmv_cuda_matrix;
typedef struct spmv_cuda_plan spmv_cuda_plan;

/* Upload F (host arrays, elem_size 4 or 8, checked by spmv_fmt_check first) and allocate x and y:
 * the device side every plan of F's format shares.  Returns 0 and *out (the caller's, for
 * spmv_cuda_matrix_free, after every plan made on it), SPMV_ENODEVICE, SPMV_ENOMEM (device memory:
 * err->value = bytes asked for, err->limit = bytes free), SPMV_EINVAL or SPMV_ECUDA.  Synchronous. */
int spmv_cuda_matrix_create(const spmv_fmt *F, int elem_size, spmv_cuda_matrix **out,
                            spmv_err *err);
/* Device bytes of the matrix arrays, x and y; milliseconds the upload took. */
int64_t spmv_cuda_matrix_bytes(const spmv_cuda_matrix *M);
double spmv_cuda_matrix_upload_ms(const spmv_cuda_matrix *M);
/* Free M (NULL is fine); its plans must be freed first.  Waits for the device first (products may
 * still read M on any stream); a device conversion's arrays go back to the conversions' pool. */
void spmv_cuda_matrix_free(spmv_cuda_matrix *M);

/* Make a plan for configuration c (spmv_config_parse: its registry kernel, and the thread mapping
 * of its slots SPMV_P_TPV and SPMV_P_BLOCK) over M, which was made from the host matrix F (F's
 * sizes are compared with M's): the kernel's workspace or cuSPARSE's handle, descriptors and
 * buffer, its stream and timing events.  The own kernel is found by c->kernel in a table made from
 * csrc/kernels.def, not by id.  M must outlive the plan; plans on one M share its x and y, so use
 * them one at a time.  Returns 0 and *out (the caller's, for spmv_cuda_plan_free), SPMV_ENOMEM,
 * SPMV_ENOTAPPLICABLE, SPMV_EINVAL, SPMV_ECUDA or SPMV_ECUSPARSE.  Synchronous. */
int spmv_cuda_plan_create_on(spmv_cuda_matrix *M, const spmv_fmt *F, const spmv_config *c,
                             spmv_cuda_plan **out, spmv_err *err);

/* spmv_cuda_matrix_create then spmv_cuda_plan_create_on: a plan that owns its matrix (freed with
 * it).  Returns what those return. */
int spmv_cuda_plan_create(const spmv_fmt *F, const spmv_config *c, int elem_size,
                          spmv_cuda_plan **out, spmv_err *err);

/* y[nrows] = A x[ncols] (host arrays of the plan's type): x uploaded, y on the device poisoned with
 * NaN so that entries a kernel fails to write show, one product, y downloaded.  Synchronous. */
int spmv_cuda_plan_mv(spmv_cuda_plan *p, const void *x, void *y, spmv_err *err);

/* Upload x once (NULL: x made on the device instead, spmv_cuda_fill's values, no host x and no
 * upload: a timing that needs no particular x), then time products: `warmup` untimed (fewer where
 * the budget ends them first, as spmv_time: spmv_warmup_more of the first one's time), then up to
 * `repeats` each between two CUDA events recorded around its launches alone, within budget_s
 * seconds of timed runs (<= 0: no budget; at least one run).  Products are queued in batches (up
 * to 32, fewer where the budget would end sooner) behind a gate kernel that holds the stream until
 * the host has queued the whole batch, so the events measure the GPU's time for each product, not
 * the host's launch latency, and the host waits once per batch instead of once per product.  A
 * batch whose gate gave up waiting (200 ms of the GPU's global timer: the host was descheduled) is
 * timed again.  y[nrows] (host, may be NULL) receives the
 * last product.  Returns 0, SPMV_EINVAL, SPMV_ENOMEM, SPMV_ECUDA or SPMV_ECUSPARSE. */
int spmv_cuda_plan_bench(spmv_cuda_plan *p, const void *x, void *y, int warmup, int repeats,
                         double budget_s, spmv_timing *out, spmv_err *err);

/* The most products spmv_cuda_plan_bench_runs queues back to back in one timed run. */
#define SPMV_CUDA_MAX_RUN 1024

/* spmv_cuda_plan_bench, each of the `repeats` timings a run of `run` products (1 to
 * SPMV_CUDA_MAX_RUN) queued back to back between two events, its time over `run`: what a product
 * costs among others on a stream, as a solver's iterations run it, without the events around each
 * one (about 2 microseconds a product on the H200 for a matrix inside its L2: docs/results/gpu.md).
 * run = 1 is spmv_cuda_plan_bench.  Returns as spmv_cuda_plan_bench. */
int spmv_cuda_plan_bench_runs(spmv_cuda_plan *p, const void *x, void *y, int warmup, int repeats,
                              int run, double budget_s, spmv_timing *out, spmv_err *err);

/* ---- Products on the caller's device vectors ---- */

/* y = alpha * A x + beta * y with x[ncols] and y[nrows] device arrays of the plan's value type
 * (contiguous; cudaMalloc'd, managed or any device memory of the plan's device), used in place: no
 * copy to or from the host.  Queued on `stream` (a cudaStream_t; NULL: the legacy default stream),
 * asynchronous: the caller synchronises as for its own kernels.  As BLAS: beta == 0 does not read y
 * (NaN there does not propagate), alpha == 0 does not compute the product.  A plan used on a stream
 * other than its last one first waits for its last product there, so that its workspace is never
 * shared by two products at once; the caller still must not call one plan from two threads at the
 * same time.  Returns 0, SPMV_EINVAL (x and y overlap; a pointer the runtime does not know as device
 * memory of the plan's device, with which one in err->msg), SPMV_ECUDA or SPMV_ECUSPARSE. */
int spmv_cuda_plan_mv_dev(spmv_cuda_plan *p, const void *x, void *y, double alpha, double beta,
                          void *stream, spmv_err *err);

/* The CUDA device ordinal the plan's arrays live on. */
int spmv_cuda_plan_device(const spmv_cuda_plan *p);

/* Whether p's kernel may load the matrix's streams with default caching (keep 1: SELL's does), so
 * that the next product finds them in the L2, or must load them evict-first (0), so that they pass
 * through it.  A new plan sets 1 where the matrix, x and y fit the L2 together: products that
 * follow one another.  A Krylov solver sets 0 for the plans it runs (spmv_cuda_krylov_start and the
 * calls after it): its iterations read their vectors several times each between two products, and
 * a kept matrix pushes them out (studies/2026-12-01-matrix-stream-caching).  Changes no result. */
void spmv_cuda_plan_set_keep(spmv_cuda_plan *p, int keep);
/* p's setting of the above: 1 keep, 0 evict-first. */
int spmv_cuda_plan_keep(const spmv_cuda_plan *p);

/* ---- Matrices that already live on the device ---- */

/* A CSR matrix whose arrays are the caller's device arrays, read in place (borrowed: M must not
 * outlive them, and frees none of them): row_ptr[nrows + 1] and col[nnz] int32, val[nnz] of
 * elem_size 4 or 8, the layout of csrc/csr.c.  Checked on the device before use (row_ptr[0] = 0,
 * non-decreasing, row_ptr[nrows] = nnz, 0 <= col < ncols): SPMV_EINVAL names the first bad entry.
 * x and y for host-vector products are allocated as spmv_cuda_matrix_create does. */
int spmv_cuda_matrix_wrap_csr(int32_t nrows, int32_t ncols, int64_t nnz, const int32_t *row_ptr,
                              const int32_t *col, const void *val, int elem_size,
                              spmv_cuda_matrix **out, spmv_err *err);

/* The sizes and scalars of M as a host spmv_fmt with no arrays (idx and val NULL): what a plan's
 * checks compare, for a matrix that has no host copy. */
void spmv_cuda_matrix_header(const spmv_cuda_matrix *M, spmv_fmt *F);

/* A plan for configuration c over M without a host copy of the matrix (M from
 * spmv_cuda_matrix_wrap_csr or a device conversion).  As spmv_cuda_plan_create_on otherwise. */
int spmv_cuda_plan_create_dev(spmv_cuda_matrix *M, const spmv_config *c, spmv_cuda_plan **out,
                              spmv_err *err);

/* Device bytes the plan holds: workspace or cuSPARSE buffer, plus matrix arrays, x and y when it
 * owns its matrix. */
int64_t spmv_cuda_plan_bytes(const spmv_cuda_plan *p);

/* Milliseconds spent setting up the kernel or cuSPARSE, plus the upload when the plan owns its
 * matrix. */
double spmv_cuda_plan_setup_ms(const spmv_cuda_plan *p);

/* Free everything of p (NULL is fine). */
void spmv_cuda_plan_free(spmv_cuda_plan *p);

/* ---- Conversion on the device ---- */

/* Convert S, a CSR on the device (spmv_cuda_matrix_wrap_csr, or spmv_cuda_matrix_create of a CSR),
 * to `format` (spmv_format) with parameters param[2] as spmv_fmt_size takes them, without a trip
 * to the host: *out is a new device matrix owning its arrays (spmv_cuda_matrix_free, after S or
 * before it: it keeps nothing of S), holding exactly the arrays, scalars and counts that
 * spmv_fmt_size and spmv_fmt_fill_* give for the same CSR and parameters, so that the plans of its
 * format run on it (spmv_cuda_plan_create_dev).  Refuses what the host conversion refuses, with
 * its codes and messages: SPMV_EINVAL (an unknown format, a parameter out of its range, S not a
 * CSR or with no rows), SPMV_EUNSORTED (columns not increasing within a row: duplicates must be
 * summed first), SPMV_ENOTAPPLICABLE (padding past max_fill * max(nnz, nrows), a slot count past
 * int32, a BRO-ELL delta past fixed bits); also SPMV_ENOMEM (device memory) and SPMV_ECUDA.
 * max_fill <= 0 means SPMV_DEFAULT_MAX_FILL.  Runs on the legacy default stream and returns when
 * the result is complete.  Parallel device work throughout (scans, radix sorts, a thread per entry
 * or stored slot); the host waits for one read of sizes (none for COO and CSR) and for the end.
 * Workspace and the result's arrays come from a stream-ordered pool per device kept across
 * conversions, which holds on to at most max(256 MiB, 1/64 of the device's memory) unused. */
int spmv_cuda_matrix_convert(const spmv_cuda_matrix *S, int format, const int32_t param[2],
                             spmv_cuda_matrix **out, spmv_err *err);
int spmv_cuda_matrix_convert_fill(const spmv_cuda_matrix *S, int format, const int32_t param[2],
                                  double max_fill, spmv_cuda_matrix **out, spmv_err *err);

/* Bytes per value of M: 4 (float) or 8 (double). */
int spmv_cuda_matrix_elem_size(const spmv_cuda_matrix *M);

/* Copy M's arrays to the host: F->idx[k] and F->val[k] are the caller's buffers of F->nidx[k] int32
 * and F->nval[k] values (spmv_cuda_matrix_header gives the counts; set the arrays, then call this);
 * F's shape, parameters and scalars are set from M.  Returns 0, SPMV_EINVAL (a count that differs
 * from M's, or a NULL buffer) or SPMV_ECUDA.  Synchronous. */
int spmv_cuda_matrix_download(const spmv_cuda_matrix *M, spmv_fmt *F, spmv_err *err);

/* ---- Krylov solvers on the device (kernels/krylov.cu) ---- */

/* A CG, BiCGSTAB or restarted GMRES solve whose vectors and scalars live on the device, its
 * products made by a plan given at each call (so that a solve may change configuration between
 * calls).  Vectors are n long, of elem_size 4 or 8 (the plans' value type).  Not for two threads
 * at once. */
typedef struct spmv_cuda_krylov spmv_cuda_krylov;

enum { SPMV_KRYLOV_CG = 0, SPMV_KRYLOV_BICGSTAB = 1, SPMV_KRYLOV_GMRES = 2 };
/* Where a solve stands (spmv_cuda_krylov_status.state). */
enum {
    SPMV_KRYLOV_RUNNING = 0,
    SPMV_KRYLOV_CONVERGED = 1,
    SPMV_KRYLOV_BREAKDOWN = 2,      /* a divisor of the recurrence vanished or is not finite */
    SPMV_KRYLOV_BREAKDOWN_OMEGA = 3 /* BiCGSTAB's omega vanished */
};
enum { SPMV_KRYLOV_B = 0, SPMV_KRYLOV_X = 1 };

typedef struct {
    int64_t iterations; /* GMRES: inner iterations over all cycles */
    int64_t products;   /* of A (a preconditioner's products not counted) */
    int64_t cycles;     /* GMRES: restart cycles completed */
    int state;          /* SPMV_KRYLOV_* */
    double residual;    /* CG, BiCGSTAB: the recurrence's residual norm; GMRES: the true one at the
                           last restart */
    double estimate;    /* GMRES: the least-squares residual estimate of the last inner iteration */
} spmv_cuda_krylov_status;

/* out[n] = M in[n] on device vectors, called from inside spmv_cuda_krylov_iterate with the solver's
 * stream drained (the glue applies a Python preconditioner through it).  Returns 0 or a negative
 * SPMV_E* code, which stops the solve and is returned by the call that made it. */
typedef int (*spmv_cuda_precond_fn)(void *ctx, const void *in, void *out, spmv_err *err);

/* A solver of `method` (SPMV_KRYLOV_*) for n unknowns; restart: GMRES's cycle length in [1, 1024]
 * (ignored otherwise).  Allocates every vector and scalar once (GMRES: a basis of n * (restart+1)).
 * Returns 0 and *out (the caller's, for spmv_cuda_krylov_free), SPMV_ENODEVICE, SPMV_ENOMEM,
 * SPMV_EINVAL or SPMV_ECUDA.  Synchronous. */
int spmv_cuda_krylov_create(int method, int64_t n, int elem_size, int restart,
                            spmv_cuda_krylov **out, spmv_err *err);
/* Copy b or x (which: SPMV_KRYLOV_B, SPMV_KRYLOV_X) into the solver from src, or x out of it into
 * dst: n values, host or device memory (cudaMemcpyDefault); exactly one of src and dst.  `stream`
 * (NULL: none) is synchronised first, so that the caller's work on its vectors is done.
 * Synchronous. */
int spmv_cuda_krylov_vector(spmv_cuda_krylov *k, int which, const void *src, void *dst,
                            void *stream, spmv_err *err);
/* *out = the 2-norm of the loaded b (the stopping test's scale where b came as a device vector).
 * Synchronous; before spmv_cuda_krylov_start (it resets the solver's scalars). */
int spmv_cuda_krylov_norm_b(spmv_cuda_krylov *k, double *out, spmv_err *err);
/* Copy n values from src to dst, host or device memory either (cudaMemcpyDefault), on the solver's
 * stream, synchronously: a preconditioner function's way in and out of the solver's vectors. */
int spmv_cuda_krylov_copy(spmv_cuda_krylov *k, void *dst, const void *src, spmv_err *err);
/* The preconditioner M (an approximate inverse of A; right-preconditioned BiCGSTAB and GMRES, CG
 * with z = M r), at most one of: inv_diag[n] (host or device, copied: Jacobi, fused into the
 * vector kernels), a plan whose product is M (it must outlive the solve; its matrix streams are
 * set evict-first, spmv_cuda_plan_set_keep), or fn with ctx.  All NULL: none.  Returns 0,
 * SPMV_EINVAL, SPMV_ENOMEM or SPMV_ECUDA. */
int spmv_cuda_krylov_set_precond(spmv_cuda_krylov *k, const void *inv_diag, spmv_cuda_plan *M,
                                 spmv_cuda_precond_fn fn, void *ctx, spmv_err *err);
/* Start a solve of A x = b from the loaded x, or from zero where x_zero (the solver sets x to zero
 * itself: no x need be loaded, and no product is needed), with the stopping test |r| <= tol: the
 * initial residual, counters reset.  Synchronous.  This call and those below that take a plan set
 * its matrix streams evict-first (spmv_cuda_plan_set_keep). */
int spmv_cuda_krylov_start(spmv_cuda_krylov *k, spmv_cuda_plan *A, double tol, int x_zero,
                           spmv_err *err);
/* Run up to max_iters iterations with A's plan (GMRES: inner iterations, and no cycle past
 * max_cycles in all), returning early at convergence or breakdown; *st (may be NULL) says where
 * the solve stands.  CG and BiCGSTAB queue a few iterations ahead of the one whose scalars the host
 * waits for; the work queued past the stop does nothing.  On return the device is idle for the
 * solver.  Returns 0, SPMV_EINVAL (a plan on another device; iterate before start), SPMV_ECUDA,
 * SPMV_ECUSPARSE or a preconditioner function's code. */
int spmv_cuda_krylov_iterate(spmv_cuda_krylov *k, spmv_cuda_plan *A, int64_t max_iters,
                             int64_t max_cycles, spmv_cuda_krylov_status *st, spmv_err *err);
/* Make A's plan ready for the iterations, as the first spmv_cuda_krylov_iterate with it does: a
 * trial product of A (and of M's plan) on the solver's vectors, synchronised, whose failure it
 * returns, then (CG, BiCGSTAB) four iterations captured as a CUDA graph.  Lets a caller switch plans
 * only after this succeeded, and keeps that work out of the first iterations it times. */
int spmv_cuda_krylov_prepare(spmv_cuda_krylov *k, spmv_cuda_plan *A, spmv_err *err);
/* Whether CG and BiCGSTAB iterations run four to a CUDA graph (on, the default: captured
 * at the first iterate with a plan; a capture that fails turns it off) or kernel by kernel (off).
 * Drops the graph captured so far, which is bound to its plan's address: call it before freeing a
 * plan the solve iterated with, so that a new plan at the same address is captured anew.  Returns
 * the previous setting. */
int spmv_cuda_krylov_set_graphs(spmv_cuda_krylov *k, int on);
/* Whether the solver's vectors are kept in L2 between the kernels of its iterations (on, the
 * default; CG and BiCGSTAB): a persisting access-policy window over them on the solver's stream and
 * in its graphs, with the device's L2 set-aside raised to what the window needs (up to the device's
 * limit; spmv_cuda_krylov_free sets it back where this solver raised it and nobody changed it
 * since).  Takes effect at once, and again at each spmv_cuda_krylov_start; on a GPU without a
 * set-aside, or one that refuses the window, it does nothing.  The results do not change, only
 * where the vectors are read from.  Returns the previous setting. */
int spmv_cuda_krylov_set_l2(spmv_cuda_krylov *k, int on);
/* A host word that another thread sets (non-zero) to have spmv_cuda_krylov_iterate return before it
 * queues its next iteration, as if max_iters were reached: a caller can then run long chunks and
 * still act as soon as something it waits for is ready (a selection of the next configuration),
 * instead of coming back every few milliseconds to look.  The caller resets it; NULL: none.  The
 * word must outlive the solver or the next call with NULL. */
void spmv_cuda_krylov_set_wake(spmv_cuda_krylov *k, const volatile int *wake);
void spmv_cuda_krylov_get_status(const spmv_cuda_krylov *k, spmv_cuda_krylov_status *st);
/* One product of A's plan from x into a scratch vector, synchronised: whether a plan works before
 * the solve switches to it.  The solve's state is not touched. */
int spmv_cuda_krylov_try(spmv_cuda_krylov *k, spmv_cuda_plan *A, spmv_err *err);
/* Free everything of k (NULL is fine), after its queued work. */
void spmv_cuda_krylov_free(spmv_cuda_krylov *k);

#ifdef __cplusplus
}
#endif

#endif /* SPMV_CUDA_H */
