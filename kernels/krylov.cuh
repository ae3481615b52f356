// kernels/krylov.cuh: internal to kernels/ — what the Krylov solvers share: the solver's state, the
// device reductions and element-wise launches, the host's helpers, and each method's entry points
// (kernels/krylov_cg.cu, krylov_bicgstab.cu, krylov_gmres.cu), driven by kernels/krylov.cu
// SPDX-License-Identifier: BSD-3-Clause
//
// The solver's vectors and scalars live on the device; the host only queues launches.  CG and
// BiCGSTAB keep every scalar of the recurrence (rho, alpha, omega, ...) in device memory, computed
// by the last block of the reduction that produces it (the threadfence reduction), and a `stop`
// word that the convergence test and the breakdown checks set there: every kernel after it returns
// at once, so the host may queue iterations ahead without reading anything.  It reads the few
// scalars of each launch (BATCH iterations in a graph) back into pinned memory asynchronously and
// waits only for those of a launch a few earlier, so the GPU never idles for the host's launch
// latency; an iteration queued past convergence does nothing but one product into scratch.  GMRES needs the Hessenberg column
// on the host for its Givens rotations (m + 2 scalars an inner iteration, one wait each); the
// restart's least squares is solved there too.  Reductions accumulate in double in a fixed order:
// the same launch gives the same bits.  Kernels of one value type are templates; the C face is
// type-free (elem_size 4 or 8).
#ifndef SPMV_KRYLOV_CUH
#define SPMV_KRYLOV_CUH

#include <cub/block/block_reduce.cuh>

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "dot.cuh"
#include "kern.h"
#include "spmv_cuda.h"

#define BS 256          /* threads per block of every vector kernel */
#define BLOCKS_MAX 1024 /* blocks of a reduction: its last block sums this many partials */
#define LAG 4           /* launches in flight before the host waits for the oldest one's scalars */
/* Iterations in one graph, whose scalars the host reads once: on the H200 a CG iteration of a
 * 1e4-entry matrix took 24 us at one iteration a graph, 18 us at four, 17 us at eight (4e6 rows:
 * 183, 176, 175 us); iterations queued past the stop cost their products only (every other kernel
 * returns at once), fewer than (LAG_BATCH + 1) * BATCH of them. */
#define BATCH 4
#define LAG_BATCH 2 /* LAG for graphs of BATCH iterations */

/* What the host reads back after each iteration (one copy into pinned memory). */
struct kview {
    double rr; /* residual norm squared: the recurrence's (CG, BiCGSTAB) */
    long long it;
    long long products; /* of A whose result the recurrence used (CG, BiCGSTAB; after start) */
    int stop;           /* SPMV_KRYLOV_* */
    int pad;
};

/* The scalars of the recurrence, on the device. */
struct kscal {
    kview v;
    double tol2, tiny; /* tol squared; BiCGSTAB's breakdown threshold (eps^2) */
    double rho, rho_prev, alpha, beta, omega;
    int first;      /* the next direction is the (preconditioned) residual itself */
    unsigned count; /* blocks of the running reduction that are done */
    double hn;      /* GMRES: norm of the new basis vector */
    int pending;    /* CG: x lacks the last step's alpha p (the next CgDir adds it, or cg_flush) */
};

enum { PRE_NONE = 0, PRE_JACOBI = 1, PRE_PLAN = 2, PRE_FN = 3 };

struct spmv_cuda_krylov {
    int method, es, device;
    int sms; /* the device's multiprocessors: one wave of a reduction's blocks (wave_of) */
    int64_t n;
    int m; /* GMRES restart */
    double tol;
    cudaStream_t s;
    kscal *S;     /* device */
    double *part; /* device: reduction partials, BLOCKS_MAX * (m + 1) */
    void *b, *x, *r, *z, *p, *q, *rhat, *phat, *v, *shat, *t, *V, *u, *d, *hy;
    kview *ring;  /* pinned: LAG views */
    double *hcol; /* pinned: GMRES h, h2, hn (2 (m + 1) + 1), then y (m) in the value type */
    cudaEvent_t ev[LAG];
    int pre;
    spmv_cuda_plan *Mplan;
    spmv_cuda_precond_fn fn;
    void *fn_ctx;
    int64_t products, iterations, cycles;
    int64_t start_products; /* CG, BiCGSTAB: products of start; the device counts the others */
    int state;
    double residual, estimate;
    /* GMRES between inner iterations */
    int j;
    double beta_r, *g, *cs, *sn, *R; /* host: g[m + 1], cs[m], sn[m], R[m * m] column-major */
    int started;
    /* CG, BiCGSTAB: BATCH iterations captured as a CUDA graph for the plan `prepared`, launched
     * instead of their kernels one by one (a few microseconds of host time per iteration instead of
     * tens); made again when the plan changes.  graphs = 0: never (the caller's choice, or a capture
     * that failed: then the iterations are launched directly). */
    int graphs;
    cudaGraphExec_t graph;
    spmv_cuda_plan *prepared; /* the plan capture() last made ready (and the graph's, if any) */
    /* CG, BiCGSTAB: the blocks' partial sums of a product that makes a dot in its own pass (p . q,
     * rhat . v; kernels/dot.cuh), sized by capture() for the plan it makes ready; 0: none yet */
    double *dpart;
    int64_t dpart_len;
    const volatile int *wake; /* set by another thread: return before the next iteration */
    /* kernels/krylov_l2.cu: the vectors above (not V, d, hy) are slices of slab, those an iteration
     * reads first; l2 (on by default): a persisting L2 window over them, l2_window as last applied
     * (0 bytes: none); l2_raised: this solver raised the device's set-aside from l2_prev to l2_set */
    void *slab;
    int l2, l2_raised;
    cudaAccessPolicyWindow l2_window;
    size_t l2_prev, l2_set;
};

/* ---- reductions ---- */

/* The block's sums of acc[K] into part[k * gridDim.x + blockIdx.x]; the last block to finish sums
 * those partials in index order and calls e(S, tot) on one thread.  Returns nothing: e writes S. */
template <int K, class E>
__device__ void block_finish(double (&acc)[K], kscal *S, double *part, E e) {
    typedef cub::BlockReduce<double, BS> BR;
    __shared__ typename BR::TempStorage tmp;
    __shared__ bool last;
    for (int k = 0; k < K; k++) {
        double s = BR(tmp).Sum(acc[k]);
        __syncthreads();
        if (threadIdx.x == 0) part[k * gridDim.x + blockIdx.x] = s;
    }
    if (threadIdx.x == 0) {
        __threadfence();
        unsigned done = atomicAdd(&S->count, 1u);
        last = done == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    double tot[K];
    for (int k = 0; k < K; k++) {
        double s = 0;
        for (unsigned i = threadIdx.x; i < gridDim.x; i += BS)
            s += __ldcg(&part[k * gridDim.x + i]);
        s = BR(tmp).Sum(s);
        __syncthreads();
        tot[k] = s;
    }
    if (threadIdx.x == 0) {
        S->count = 0;
        e(S, tot);
    }
}

/* f(i, acc) over i in [0, n) (it may write vectors too), then the reduction and e. */
template <int K, class F, class E>
__global__ void reduce_kernel(int64_t n, F f, E e, kscal *S, double *part) {
    if (S->v.stop) return;
    double acc[K];
    for (int k = 0; k < K; k++) acc[k] = 0;
    for (int64_t i = blockIdx.x * (int64_t)BS + threadIdx.x; i < n; i += (int64_t)gridDim.x * BS)
        f(i, acc);
    block_finish<K>(acc, S, part, e);
}

/* f(i) over i in [0, n), unless stopped. */
template <class F> __global__ void map_kernel(int64_t n, F f, const kscal *S) {
    if (S->v.stop) return;
    for (int64_t i = blockIdx.x * (int64_t)BS + threadIdx.x; i < n; i += (int64_t)gridDim.x * BS)
        f(i, S);
}

/* Two-phase element-wise passes, for steps that read four or five vectors (BiCGSTAB's): each thread
 * loads UNROLL elements (f.load into registers, a grid's stride apart) before it stores any
 * (f.store), where a loop of one element a turn, whose stores might alias its next loads, has one
 * element's loads in flight; and it reads the recurrence's scalars once (f.scalars).  A thread
 * visits its elements in the same order as reduce_kernel's, so a sum has the same bits.  On the
 * H200 (the same run, 600 iterations of Poisson 2000^2 and 1000^2) BiCGSTAB's iteration took 4-5 %
 * less with them (358.5 against 377.4 us on JAD at 2e7 entries); CG's, whose steps read two or
 * three vectors, none less at 2e7 and 5 % more at 5e6 (so CG's steps stay one element a turn). */
#define UNROLL 4

/* The two-phase loop over this thread's elements; f.store also gets acc (reduce2's sums), if any. */
template <class F, class... Acc>
__device__ __forceinline__ void two_phase(int64_t n, const F &f, const kscal *S, Acc &...acc) {
    const typename F::Sc sc = f.scalars(S);
    const int64_t stride = (int64_t)gridDim.x * BS;
    for (int64_t i0 = blockIdx.x * (int64_t)BS + threadIdx.x; i0 < n; i0 += UNROLL * stride) {
        typename F::Reg r[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; u++)
            if (i0 + u * stride < n) f.load(i0 + u * stride, r[u], sc);
#pragma unroll
        for (int u = 0; u < UNROLL; u++)
            if (i0 + u * stride < n) f.store(i0 + u * stride, r[u], sc, acc...);
    }
}

template <int K, class F, class E>
__global__ void reduce2_kernel(int64_t n, F f, E e, kscal *S, double *part) {
    if (S->v.stop) return;
    double acc[K];
    for (int k = 0; k < K; k++) acc[k] = 0;
    two_phase(n, f, S, acc);
    block_finish<K>(acc, S, part, e);
}

template <class F> __global__ void map2_kernel(int64_t n, F f, const kscal *S) {
    if (S->v.stop) return;
    two_phase(n, f, S);
}

static inline unsigned grid_of(int64_t n) {
    unsigned g = spmv_cuda_blocks(n, BS);
    return g > BLOCKS_MAX ? BLOCKS_MAX : g;
}

/* grid_of(n), but no more blocks of kern than run at once (one wave): a grid-stride kernel whose
 * registers let fewer blocks than BLOCKS_MAX reside ran a second, mostly idle wave (on the H200,
 * CG's residual step: 6 blocks of 256 an SM, 792 at once, 1,024 launched; 34 us for 96 MB). */
template <class Kern> static unsigned wave_of(const spmv_cuda_krylov *k, Kern kern) {
    unsigned g = grid_of(k->n);
    int per_sm = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, BS, 0) != cudaSuccess) {
        cudaGetLastError();
        return g;
    }
    int64_t fit = (int64_t)per_sm * k->sms;
    return fit > 0 && fit < g ? (unsigned)fit : g;
}

template <int K, class F, class E> static cudaError_t reduce(spmv_cuda_krylov *k, F f, E e) {
    reduce_kernel<K, F, E>
        <<<wave_of(k, reduce_kernel<K, F, E>), BS, 0, k->s>>>(k->n, f, e, k->S, k->part);
    return cudaGetLastError();
}

template <class F> static cudaError_t map(spmv_cuda_krylov *k, F f) {
    map_kernel<F><<<wave_of(k, map_kernel<F>), BS, 0, k->s>>>(k->n, f, k->S);
    return cudaGetLastError();
}

template <int K, class F, class E> static cudaError_t reduce2(spmv_cuda_krylov *k, F f, E e) {
    reduce2_kernel<K, F, E>
        <<<wave_of(k, reduce2_kernel<K, F, E>), BS, 0, k->s>>>(k->n, f, e, k->S, k->part);
    return cudaGetLastError();
}

template <class F> static cudaError_t map2(spmv_cuda_krylov *k, F f) {
    map2_kernel<F><<<wave_of(k, map2_kernel<F>), BS, 0, k->s>>>(k->n, f, k->S);
    return cudaGetLastError();
}

/* ---- element-wise parts shared by the methods (functors: no extended lambdas in this build) ---- */

/* acc0 += a . b (and acc1 += c . e when K = 2). */
template <typename T> struct Dot1 {
    const T *a, *b;
    __device__ void operator()(int64_t i, double (&acc)[1]) const { acc[0] += (double)a[i] * b[i]; }
};
template <typename T> struct Dot2 {
    const T *a, *b, *c, *e;
    __device__ void operator()(int64_t i, double (&acc)[2]) const {
        acc[0] += (double)a[i] * b[i];
        acc[1] += (double)c[i] * e[i];
    }
};
/* z = d .* v. */
template <typename T> struct Jacobi {
    const T *d, *v;
    T *z;
    __device__ void operator()(int64_t i, const kscal *) const { z[i] = d[i] * v[i]; }
};
/* S->hn = acc0. */
struct SqEnd {
    __device__ void operator()(kscal *S, const double *tot) const { S->hn = tot[0]; }
};

/* e(S, {sum}) on one thread, the sum of the n partials a product made of its dot in its own pass
 * (kernels/dot.cuh), unless stopped; one block of 1024 threads. */
template <class E>
__global__ void partials_end_kernel(kscal *S, const double *part, int64_t n, E e) {
    if (S->v.stop) return;
    const double tot[1] = {spmv_sum_partials(part, n)};
    if (threadIdx.x == 0) e(S, tot);
}

/* ---- host side ---- */

#define TRY(call)                                                                                  \
    do {                                                                                           \
        rc = (call);                                                                               \
        if (rc) goto done;                                                                         \
    } while (0)
#define CUDA(what, call) TRY(spmv_cuda_status((call), what, err))

static inline int product(spmv_cuda_krylov *k, spmv_cuda_plan *A, const void *x, void *y,
                          spmv_err *err) {
    k->products++;
    return spmv_cuda_plan_mv_dev(A, x, y, 1.0, 0.0, (void *)k->s, err);
}

/* The partial sums a fused product-and-dot of A leaves in dpart (kernels/dot.cuh), or 0 where A's
 * kernel makes none or they outgrow dpart: then the dot is a reduction after the product. */
static inline int64_t dot_partials(const spmv_cuda_krylov *k, spmv_cuda_plan *A) {
    int64_t blocks = spmv_cuda_plan_dot_blocks(A);
    return blocks > 0 && blocks <= k->dpart_len ? blocks : 0;
}

/* y = A x, and w . y's partials into dpart (w == x: x . y), on the solver's stream; only where
 * dot_partials(k, A) > 0. */
static inline int product_partials(spmv_cuda_krylov *k, spmv_cuda_plan *A, const void *x, void *y,
                                   const void *w, spmv_err *err) {
    k->products++;
    spmv_cuda_dot d = {k->dpart, w == x ? NULL : w};
    return spmv_cuda_plan_mv_dot_dev(A, x, y, d, (void *)k->s, err);
}

/* Drop the captured graph, whose kernel nodes carry the plan and the L2 window they were captured
 * with: the next iteration prepares and captures again. */
static inline void drop_graph(spmv_cuda_krylov *k) {
    if (k->graph == NULL) return;
    cudaStreamSynchronize(k->s);
    cudaGraphExecDestroy(k->graph);
    k->graph = NULL;
    k->prepared = NULL;
}

/* y = A x, then e(S, {w . y}): the dot made in the product's own pass where the plan offers it and
 * capture() sized its partials (one pass over w and y fewer, kernels/dot.cuh), else a reduction of
 * its own.  w: x or a vector other than y. */
template <typename T, class E>
static int product_dot(spmv_cuda_krylov *k, spmv_cuda_plan *A, const void *x, void *y,
                       const void *w, E e, const char *what, spmv_err *err) {
    int rc = SPMV_OK;
    int64_t blocks = dot_partials(k, A);
    if (blocks > 0) {
        TRY(product_partials(k, A, x, y, w, err));
        partials_end_kernel<<<1, 1024, 0, k->s>>>(k->S, k->dpart, blocks, e);
        CUDA(what, cudaGetLastError());
    } else {
        TRY(product(k, A, x, y, err));
        CUDA(what, (reduce<1>(k, Dot1<T>{(const T *)w, (const T *)y}, e)));
    }
done:
    return rc;
}

/* The view of the device scalars now (synchronous). */
static inline int view_now(spmv_cuda_krylov *k, kview *out, spmv_err *err) {
    int rc = spmv_cuda_status(
        cudaMemcpyAsync(&k->ring[0], &k->S->v, sizeof(kview), cudaMemcpyDeviceToHost, k->s),
        "reading the solver's scalars", err);
    if (!rc) rc = spmv_cuda_status(cudaStreamSynchronize(k->s), "the solver's iteration", err);
    if (!rc) *out = k->ring[0];
    return rc;
}

/* out = M in: Jacobi, a product, or the caller's function (after the stream drained; not when the
 * solve has stopped meanwhile).  For PRE_NONE the caller uses `in` itself. */
template <typename T>
static int apply_pre(spmv_cuda_krylov *k, const void *in, void *out, spmv_err *err) {
    int rc = SPMV_OK;
    if (k->pre == PRE_JACOBI) {
        rc = spmv_cuda_status(map(k, Jacobi<T>{(const T *)k->d, (const T *)in, (T *)out}),
                              "the Jacobi preconditioner", err);
    } else if (k->pre == PRE_PLAN) {
        k->products--; /* a product of M, not of A */
        rc = product(k, k->Mplan, in, out, err);
    } else if (k->pre == PRE_FN) {
        kview v;
        rc = view_now(k, &v, err);
        if (!rc && !v.stop) rc = k->fn(k->fn_ctx, in, out, err);
    }
    return rc;
}

static inline int gm_read(spmv_cuda_krylov *k, const double *dev, double *host, int count,
                          spmv_err *err) {
    int rc = spmv_cuda_status(
        cudaMemcpyAsync(host, dev, count * sizeof(double), cudaMemcpyDeviceToHost, k->s),
        "reading GMRES's scalars", err);
    if (!rc) rc = spmv_cuda_status(cudaStreamSynchronize(k->s), "GMRES's iteration", err);
    return rc;
}

/* ---- each method's steps (one iteration, or the start), in value type T (float, double) ---- */

/* kernels/krylov_l2.cu: the vectors' slab (create), the window applied to the stream for this solve
 * (start, set_l2), to the kernel nodes of a captured graph, and the set-aside given back (free) */
int alloc_vectors(spmv_cuda_krylov *k, spmv_err *err);
void l2_apply(spmv_cuda_krylov *k);
void l2_graph(const spmv_cuda_krylov *k, cudaGraph_t g);
void l2_release(spmv_cuda_krylov *k);

/* kernels/krylov_cg.cu */
template <typename T>
int cg_start(spmv_cuda_krylov *k, spmv_cuda_plan *A, int x_zero, spmv_err *err);
template <typename T> int cg_iteration(spmv_cuda_krylov *k, spmv_cuda_plan *A, spmv_err *err);
template <typename T> int cg_flush(spmv_cuda_krylov *k, spmv_err *err);
/* kernels/krylov_bicgstab.cu */
template <typename T>
int bi_start(spmv_cuda_krylov *k, spmv_cuda_plan *A, int x_zero, spmv_err *err);
template <typename T> int bi_iteration(spmv_cuda_krylov *k, spmv_cuda_plan *A, spmv_err *err);
/* kernels/krylov_gmres.cu */
template <typename T> int gm_residual(spmv_cuda_krylov *k, spmv_cuda_plan *A, spmv_err *err);
template <typename T> int gm_inner(spmv_cuda_krylov *k, spmv_cuda_plan *A, spmv_err *err);

#endif /* SPMV_KRYLOV_CUH */
