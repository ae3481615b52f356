// kernels/krylov.cu: CG, BiCGSTAB and restarted GMRES iterating on the device, products by a plan
// SPDX-License-Identifier: BSD-3-Clause
//
// The solver's vectors and scalars live on the device; the host only queues launches.  CG and
// BiCGSTAB keep every scalar of the recurrence (rho, alpha, omega, ...) in device memory, computed
// by the last block of the reduction that produces it (the threadfence reduction), and a `stop`
// word that the convergence test and the breakdown checks set there: every kernel after it returns
// at once, so the host may queue iterations ahead without reading anything.  It reads the few
// scalars of each iteration back into pinned memory asynchronously and waits only for the one of
// LAG iterations earlier, so the GPU never idles for the host's launch latency; an iteration queued
// past convergence does nothing but one product into scratch.  GMRES needs the Hessenberg column
// on the host for its Givens rotations (m + 2 scalars an inner iteration, one wait each); the
// restart's least squares is solved there too.  Reductions accumulate in double in a fixed order:
// the same launch gives the same bits.  Kernels of one value type are templates; the C face is
// type-free (elem_size 4 or 8).
#include <cub/block/block_reduce.cuh>

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "kern.h"
#include "spmv_cuda.h"

#define BS 256          /* threads per block of every vector kernel */
#define BLOCKS_MAX 1024 /* blocks of a reduction: its last block sums this many partials */
#define LAG 4 /* iterations in flight before the host waits for the oldest one's scalars */

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
};

enum { PRE_NONE = 0, PRE_JACOBI = 1, PRE_PLAN = 2, PRE_FN = 3 };

struct spmv_cuda_krylov {
    int method, es, device;
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
    /* CG, BiCGSTAB: one iteration captured as a CUDA graph for the plan `prepared`, launched
     * instead of its kernels one by one (a few microseconds of host time per iteration instead of
     * tens); made again when the plan changes.  graphs = 0: never (the caller's choice, or a capture
     * that failed: then the iterations are launched directly). */
    int graphs;
    cudaGraphExec_t graph;
    spmv_cuda_plan *prepared; /* the plan capture() last made ready (and the graph's, if any) */
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

static unsigned grid_of(int64_t n) {
    unsigned g = spmv_cuda_blocks(n, BS);
    return g > BLOCKS_MAX ? BLOCKS_MAX : g;
}

template <int K, class F, class E> static cudaError_t reduce(spmv_cuda_krylov *k, F f, E e) {
    reduce_kernel<K><<<grid_of(k->n), BS, 0, k->s>>>(k->n, f, e, k->S, k->part);
    return cudaGetLastError();
}

template <class F> static cudaError_t map(spmv_cuda_krylov *k, F f) {
    map_kernel<<<grid_of(k->n), BS, 0, k->s>>>(k->n, f, k->S);
    return cudaGetLastError();
}

/* ---- element-wise parts (functors: no extended lambdas in this build) ---- */

/* CG: p = z (first) or z + beta p. */
template <typename T> struct CgDir {
    const T *z;
    T *p;
    __device__ void operator()(int64_t i, const kscal *S) const {
        p[i] = S->first ? z[i] : z[i] + (T)S->beta * p[i];
    }
};

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

/* CG's residual step: start: r = b - q (q = A x0, or b alone when q is NULL); else x += alpha p,
 * r -= alpha q.  Then z = d .* r (d given), acc0 = r . z, acc1 = r . r (z is r when d is NULL
 * and not separate: acc0 = acc1). */
template <typename T> struct CgStep {
    const T *b, *p, *q, *d;
    T *x, *r, *z;
    int start;
    const kscal *S;
    __device__ void operator()(int64_t i, double (&acc)[2]) const {
        T ri;
        if (start) {
            ri = q ? b[i] - q[i] : b[i];
        } else {
            T a = (T)S->alpha;
            x[i] += a * p[i];
            ri = r[i] - a * q[i];
        }
        r[i] = ri;
        T zi = d ? d[i] * ri : ri;
        if (z != r && d) z[i] = zi;
        acc[0] += (double)ri * zi;
        acc[1] += (double)ri * ri;
    }
};

/* After CgStep: the iteration is done; test for convergence.  rz_known: acc0 is r . z (no host
 * preconditioner pending). */
struct CgStepEnd {
    int start, rz_known;
    __device__ void operator()(kscal *S, const double *tot) const {
        if (!start) {
            S->v.it++;
            S->first = 0;
        }
        S->v.rr = tot[1];
        if (rz_known) {
            S->rho_prev = S->rho;
            S->rho = tot[0];
            S->beta = S->rho / S->rho_prev;
        }
        if (tot[1] <= S->tol2)
            S->v.stop = SPMV_KRYLOV_CONVERGED;
        else if (!isfinite(tot[1]))
            S->v.stop = SPMV_KRYLOV_BREAKDOWN;
    }
};

/* r . z after a host preconditioner. */
struct CgRho {
    __device__ void operator()(kscal *S, const double *tot) const {
        S->rho_prev = S->rho;
        S->rho = tot[0];
        S->beta = S->rho / S->rho_prev;
    }
};

/* p . q: breakdown where it vanished or is not finite; else alpha. */
struct CgAlpha {
    __device__ void operator()(kscal *S, const double *tot) const {
        S->v.products++; /* counted here, not when queued: one queued past the stop is not */
        if (tot[0] == 0.0 || !isfinite(tot[0]))
            S->v.stop = SPMV_KRYLOV_BREAKDOWN;
        else
            S->alpha = S->rho / tot[0];
    }
};

/* BiCGSTAB start: r = b - q (or b), rhat = r, acc0 = r . r. */
template <typename T> struct BiStart {
    const T *b, *q;
    T *r, *rhat;
    __device__ void operator()(int64_t i, double (&acc)[1]) const {
        T ri = q ? b[i] - q[i] : b[i];
        r[i] = ri;
        rhat[i] = ri;
        acc[0] += (double)ri * ri;
    }
};
struct BiStartEnd {
    __device__ void operator()(kscal *S, const double *tot) const {
        S->v.rr = tot[0];
        S->rho_prev = S->alpha = S->omega = 1.0;
        S->first = 1;
        if (tot[0] <= S->tol2)
            S->v.stop = SPMV_KRYLOV_CONVERGED;
        else if (!isfinite(tot[0]))
            S->v.stop = SPMV_KRYLOV_BREAKDOWN;
    }
};
/* rho = rhat . r (scipy's thresholds) and the direction's beta. */
struct BiRho {
    __device__ void operator()(kscal *S, const double *tot) const {
        double rho = tot[0];
        if (fabs(rho) < S->tiny || !isfinite(rho)) {
            S->v.stop = SPMV_KRYLOV_BREAKDOWN;
            return;
        }
        S->rho = rho;
        S->beta = rho / S->rho_prev * (S->alpha / S->omega);
    }
};
/* p = r (first) or r + beta (p - omega v); phat = d .* p where d is given. */
template <typename T> struct BiDir {
    const T *r, *v, *d;
    T *p, *phat;
    __device__ void operator()(int64_t i, const kscal *S) const {
        T pi = S->first ? r[i] : r[i] + (T)S->beta * (p[i] - (T)S->omega * v[i]);
        p[i] = pi;
        if (d) phat[i] = d[i] * pi;
    }
};
/* rhat . v: alpha. */
struct BiAlpha {
    __device__ void operator()(kscal *S, const double *tot) const {
        S->v.products++;
        if (tot[0] == 0.0 || !isfinite(tot[0]))
            S->v.stop = SPMV_KRYLOV_BREAKDOWN;
        else
            S->alpha = S->rho / tot[0];
    }
};
/* s = r - alpha v (in r), x += alpha phat, shat = d .* s where d is given; acc0 = s . s. */
template <typename T> struct BiS {
    const T *v, *phat, *d;
    T *r, *x, *shat;
    const kscal *S;
    __device__ void operator()(int64_t i, double (&acc)[1]) const {
        T a = (T)S->alpha;
        T si = r[i] - a * v[i];
        r[i] = si;
        x[i] += a * phat[i];
        if (d) shat[i] = d[i] * si;
        acc[0] += (double)si * si;
    }
};
struct BiSEnd {
    __device__ void operator()(kscal *S, const double *tot) const {
        S->v.rr = tot[0];
        if (tot[0] <= S->tol2) { /* converged half way: x already holds x + alpha phat */
            S->v.it++;
            S->v.stop = SPMV_KRYLOV_CONVERGED;
        }
    }
};
/* t . t and t . s: omega. */
struct BiOmega {
    __device__ void operator()(kscal *S, const double *tot) const {
        S->v.products++;
        S->omega = tot[0] > 0 ? tot[1] / tot[0] : 0.0;
    }
};
/* x += omega shat, r = s - omega t; acc0 = r . r. */
template <typename T> struct BiX {
    const T *shat, *t;
    T *x, *r;
    const kscal *S;
    __device__ void operator()(int64_t i, double (&acc)[1]) const {
        T w = (T)S->omega;
        x[i] += w * shat[i];
        T ri = r[i] - w * t[i];
        r[i] = ri;
        acc[0] += (double)ri * ri;
    }
};
struct BiXEnd {
    __device__ void operator()(kscal *S, const double *tot) const {
        S->v.rr = tot[0];
        S->v.it++;
        S->rho_prev = S->rho;
        S->first = 0;
        double w = S->omega;
        if (fabs(w) < S->tiny || !isfinite(w))
            S->v.stop = tot[0] <= S->tol2 ? SPMV_KRYLOV_CONVERGED : SPMV_KRYLOV_BREAKDOWN_OMEGA;
        else if (tot[0] <= S->tol2)
            S->v.stop = SPMV_KRYLOV_CONVERGED;
        else if (!isfinite(tot[0]))
            S->v.stop = SPMV_KRYLOV_BREAKDOWN;
    }
};

/* ---- GMRES ---- */

/* partial[c * gridDim.x + block] = V[:, c] . w over the block's rows, for c < gridDim.y. */
template <typename T> __global__ void mdot_kernel(int64_t n, const T *V, const T *w, double *part) {
    typedef cub::BlockReduce<double, BS> BR;
    __shared__ typename BR::TempStorage tmp;
    const T *col = V + (int64_t)blockIdx.y * n;
    double acc = 0;
    for (int64_t i = blockIdx.x * (int64_t)BS + threadIdx.x; i < n; i += (int64_t)gridDim.x * BS)
        acc += (double)col[i] * w[i];
    acc = BR(tmp).Sum(acc);
    if (threadIdx.x == 0) part[blockIdx.y * gridDim.x + blockIdx.x] = acc;
}

/* h[c] = sum of the nb partials of column c (block c), in order. */
__global__ void mdot_sum_kernel(const double *part, unsigned nb, double *h) {
    typedef cub::BlockReduce<double, BS> BR;
    __shared__ typename BR::TempStorage tmp;
    double s = 0;
    for (unsigned i = threadIdx.x; i < nb; i += BS) s += part[blockIdx.x * nb + i];
    s = BR(tmp).Sum(s);
    if (threadIdx.x == 0) h[blockIdx.x] = s;
}

/* w -= V[:, :ncol] h; with norm, acc0 = w . w and the last block sets S->hn. */
template <typename T> struct GsUpdate {
    const T *V;
    const double *h;
    T *w;
    int ncol;
    int64_t n;
    __device__ void operator()(int64_t i, double (&acc)[1]) const {
        double s = 0;
        for (int c = 0; c < ncol; c++) s += (double)V[c * n + i] * h[c];
        T wi = w[i] - (T)s;
        w[i] = wi;
        acc[0] += (double)wi * wi;
    }
};
struct HnEnd {
    __device__ void operator()(kscal *S, const double *tot) const { S->hn = sqrt(tot[0]); }
};
/* w /= hn where hn > 0. */
template <typename T> struct Unit {
    T *w;
    __device__ void operator()(int64_t i, const kscal *S) const {
        if (S->hn > 0) w[i] = (T)(w[i] / S->hn);
    }
};
/* V[:, 0] = r / beta (host scalar). */
template <typename T> struct Scale {
    const T *r;
    T *w;
    double a;
    __device__ void operator()(int64_t i, const kscal *) const { w[i] = (T)(a * r[i]); }
};
/* z = d .* v. */
template <typename T> struct Jacobi {
    const T *d, *v;
    T *z;
    __device__ void operator()(int64_t i, const kscal *) const { z[i] = d[i] * v[i]; }
};
/* u = V[:, :k] y, then x += d .* u (d given), x += u (no preconditioner) or u kept (a product or
 * the host applies M to it). */
template <typename T> struct Combine {
    const T *V, *y, *d;
    T *u, *x;
    int k, into_x;
    int64_t n;
    __device__ void operator()(int64_t i, const kscal *) const {
        T s = 0;
        for (int c = 0; c < k; c++) s += V[c * n + i] * y[c];
        if (!into_x)
            u[i] = s;
        else
            x[i] += d ? d[i] * s : s;
    }
};
/* x += u. */
template <typename T> struct Add {
    const T *u;
    T *x;
    __device__ void operator()(int64_t i, const kscal *) const { x[i] += u[i]; }
};
/* r = b - q; acc0 = r . r; the last block writes it to S->hn (the restart's beta squared). */
template <typename T> struct Resid {
    const T *b, *q;
    T *r;
    __device__ void operator()(int64_t i, double (&acc)[1]) const {
        T ri = b[i] - q[i];
        r[i] = ri;
        acc[0] += (double)ri * ri;
    }
};
struct SqEnd {
    __device__ void operator()(kscal *S, const double *tot) const { S->hn = tot[0]; }
};

/* ---- host side ---- */

#define TRY(call)                                                                                  \
    do {                                                                                           \
        rc = (call);                                                                               \
        if (rc) goto done;                                                                         \
    } while (0)
#define CUDA(what, call) TRY(spmv_cuda_status((call), what, err))

static int product(spmv_cuda_krylov *k, spmv_cuda_plan *A, const void *x, void *y, spmv_err *err) {
    k->products++;
    return spmv_cuda_plan_mv_dev(A, x, y, 1.0, 0.0, (void *)k->s, err);
}

/* The view of the device scalars now (synchronous). */
static int view_now(spmv_cuda_krylov *k, kview *out, spmv_err *err) {
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

template <typename T>
static int cg_start(spmv_cuda_krylov *k, spmv_cuda_plan *A, int x_zero, spmv_err *err) {
    int rc = SPMV_OK, host = k->pre == PRE_FN || k->pre == PRE_PLAN;
    T *z = k->pre == PRE_NONE ? (T *)k->r : (T *)k->z;
    if (!x_zero) TRY(product(k, A, k->x, k->q, err));
    {
        CgStep<T> f{(const T *)k->b,
                    NULL,
                    x_zero ? NULL : (const T *)k->q,
                    (const T *)(k->pre == PRE_JACOBI ? k->d : NULL),
                    (T *)k->x,
                    (T *)k->r,
                    z,
                    1,
                    k->S};
        CUDA("CG's start", (reduce<2>(k, f, CgStepEnd{1, !host})));
    }
    if (host) {
        TRY(apply_pre<T>(k, k->r, k->z, err));
        CUDA("CG's r . z", (reduce<1>(k, Dot1<T>{(const T *)k->r, (const T *)k->z}, CgRho{})));
    }
done:
    return rc;
}

template <typename T>
static int cg_iteration(spmv_cuda_krylov *k, spmv_cuda_plan *A, spmv_err *err) {
    int rc = SPMV_OK, host = k->pre == PRE_FN || k->pre == PRE_PLAN;
    T *z = k->pre == PRE_NONE ? (T *)k->r : (T *)k->z;
    CUDA("CG's direction", map(k, CgDir<T>{z, (T *)k->p}));
    TRY(product(k, A, k->p, k->q, err));
    CUDA("CG's p . q", (reduce<1>(k, Dot1<T>{(const T *)k->p, (const T *)k->q}, CgAlpha{})));
    {
        CgStep<T> f{(const T *)k->b,
                    (const T *)k->p,
                    (const T *)k->q,
                    (const T *)(k->pre == PRE_JACOBI ? k->d : NULL),
                    (T *)k->x,
                    (T *)k->r,
                    z,
                    0,
                    k->S};
        CUDA("CG's update", (reduce<2>(k, f, CgStepEnd{0, !host})));
    }
    if (host) {
        TRY(apply_pre<T>(k, k->r, k->z, err));
        CUDA("CG's r . z", (reduce<1>(k, Dot1<T>{(const T *)k->r, (const T *)k->z}, CgRho{})));
    }
done:
    return rc;
}

template <typename T>
static int bi_start(spmv_cuda_krylov *k, spmv_cuda_plan *A, int x_zero, spmv_err *err) {
    int rc = SPMV_OK;
    if (!x_zero) TRY(product(k, A, k->x, k->q, err));
    CUDA("BiCGSTAB's start", (reduce<1>(k,
                                        BiStart<T>{(const T *)k->b, x_zero ? NULL : (const T *)k->q,
                                                   (T *)k->r, (T *)k->rhat},
                                        BiStartEnd{})));
done:
    return rc;
}

template <typename T>
static int bi_iteration(spmv_cuda_krylov *k, spmv_cuda_plan *A, spmv_err *err) {
    int rc = SPMV_OK, jac = k->pre == PRE_JACOBI, host = k->pre == PRE_FN || k->pre == PRE_PLAN;
    const T *d = jac ? (const T *)k->d : NULL;
    T *phat = k->pre == PRE_NONE ? (T *)k->p : (T *)k->phat;
    T *shat = k->pre == PRE_NONE ? (T *)k->r : (T *)k->shat;
    CUDA("BiCGSTAB's rhat . r",
         (reduce<1>(k, Dot1<T>{(const T *)k->rhat, (const T *)k->r}, BiRho{})));
    CUDA("BiCGSTAB's direction",
         map(k, BiDir<T>{(const T *)k->r, (const T *)k->v, d, (T *)k->p, phat}));
    if (host) TRY(apply_pre<T>(k, k->p, phat, err));
    TRY(product(k, A, phat, k->v, err));
    CUDA("BiCGSTAB's rhat . v",
         (reduce<1>(k, Dot1<T>{(const T *)k->rhat, (const T *)k->v}, BiAlpha{})));
    CUDA("BiCGSTAB's s",
         (reduce<1>(k, BiS<T>{(const T *)k->v, phat, d, (T *)k->r, (T *)k->x, shat, k->S},
                    BiSEnd{})));
    if (host) TRY(apply_pre<T>(k, k->r, shat, err));
    TRY(product(k, A, shat, k->t, err));
    CUDA("BiCGSTAB's omega",
         (reduce<2>(k, Dot2<T>{(const T *)k->t, (const T *)k->t, (const T *)k->t, (const T *)k->r},
                    BiOmega{})));
    CUDA("BiCGSTAB's update",
         (reduce<1>(k, BiX<T>{shat, (const T *)k->t, (T *)k->x, (T *)k->r, k->S}, BiXEnd{})));
done:
    return rc;
}

/* ---- GMRES: the host's part ---- */

static int gm_read(spmv_cuda_krylov *k, const double *dev, double *host, int count, spmv_err *err) {
    int rc = spmv_cuda_status(
        cudaMemcpyAsync(host, dev, count * sizeof(double), cudaMemcpyDeviceToHost, k->s),
        "reading GMRES's scalars", err);
    if (!rc) rc = spmv_cuda_status(cudaStreamSynchronize(k->s), "GMRES's iteration", err);
    return rc;
}

/* r = b - A x and beta = |r| (the restart's true residual). */
template <typename T>
static int gm_residual(spmv_cuda_krylov *k, spmv_cuda_plan *A, spmv_err *err) {
    int rc = SPMV_OK;
    double b2 = 0;
    TRY(product(k, A, k->x, k->q, err));
    CUDA("GMRES's residual",
         (reduce<1>(k, Resid<T>{(const T *)k->b, (const T *)k->q, (T *)k->r}, SqEnd{})));
    TRY(gm_read(k, &k->S->hn, &b2, 1, err));
    k->beta_r = sqrt(b2);
    k->residual = k->beta_r;
done:
    return rc;
}

/* The end of a cycle of kc inner iterations: solve R y = g, x += M V y, the true residual. */
template <typename T>
static int gm_restart(spmv_cuda_krylov *k, spmv_cuda_plan *A, int kc, spmv_err *err) {
    int rc = SPMV_OK, m = k->m;
    if (kc > 0) {
        double *yy = k->hcol + 2 * (m + 1) + 1; /* y in double, then in T after it (pinned) */
        for (int i = kc - 1; i >= 0; i--) {
            double s = k->g[i];
            for (int c = i + 1; c < kc; c++) s -= k->R[c * m + i] * yy[c];
            yy[i] = s / k->R[i * m + i];
        }
        T *yt = (T *)(yy + m); /* pinned, after the doubles */
        for (int i = 0; i < kc; i++) yt[i] = (T)yy[i];
        CUDA("uploading GMRES's y",
             cudaMemcpyAsync(k->hy, yt, kc * sizeof(T), cudaMemcpyHostToDevice, k->s));
        int into_x = k->pre == PRE_NONE || k->pre == PRE_JACOBI;
        Combine<T> f{(const T *)k->V,
                     (const T *)k->hy,
                     (const T *)(k->pre == PRE_JACOBI ? k->d : NULL),
                     (T *)k->u,
                     (T *)k->x,
                     kc,
                     into_x,
                     k->n};
        CUDA("GMRES's update", map(k, f));
        if (!into_x) {
            TRY(apply_pre<T>(k, k->u, k->z, err));
            CUDA("GMRES's update", map(k, Add<T>{(const T *)k->z, (T *)k->x}));
        }
        /* the pinned y must not change before the upload ran: gm_residual waits for it */
    }
    TRY(gm_residual<T>(k, A, err));
    k->cycles++;
    k->j = 0;
done:
    return rc;
}

/* One inner iteration, and the restart where the cycle ends after it (k->state says why). */
template <typename T> static int gm_inner(spmv_cuda_krylov *k, spmv_cuda_plan *A, spmv_err *err) {
    int rc = SPMV_OK, m = k->m, j = k->j, ncol = j + 1;
    int64_t n = k->n;
    T *V = (T *)k->V, *vj = V + (int64_t)j * n, *w = V + (int64_t)(j + 1) * n;
    double *h = k->part + BLOCKS_MAX * (m + 1); /* device: h, h2, then partials before */
    unsigned nb = grid_of(n);
    if (nb > BLOCKS_MAX / 4) nb = BLOCKS_MAX / 4;
    double *hc = k->hcol, hn, d, resid;
    const void *z = vj;
    int stop = 0, kc = -1;
    if (j == 0) {
        /* a cycle starts (the caller checked convergence and the cycle limit): V[:, 0] = r / beta */
        CUDA("GMRES's first basis vector", map(k, Scale<T>{(const T *)k->r, V, 1.0 / k->beta_r}));
        k->g[0] = k->beta_r;
        for (int i = 1; i <= m; i++) k->g[i] = 0;
    }
    if (k->pre != PRE_NONE) {
        TRY(apply_pre<T>(k, vj, k->z, err));
        z = k->z;
    }
    TRY(product(k, A, z, w, err));
    for (int pass = 0; pass < 2; pass++) {
        mdot_kernel<T><<<dim3(nb, ncol), BS, 0, k->s>>>(n, V, w, k->part);
        CUDA("GMRES's Gram-Schmidt", cudaGetLastError());
        mdot_sum_kernel<<<ncol, BS, 0, k->s>>>(k->part, nb, h + pass * (m + 1));
        CUDA("GMRES's Gram-Schmidt", cudaGetLastError());
        GsUpdate<T> f{V, h + pass * (m + 1), w, ncol, n};
        CUDA("GMRES's Gram-Schmidt", (reduce<1>(k, f, HnEnd{})));
    }
    CUDA("GMRES's new basis vector", map(k, Unit<T>{w}));
    CUDA("reading GMRES's column",
         cudaMemcpyAsync(hc, h, 2 * (m + 1) * sizeof(double), cudaMemcpyDeviceToHost, k->s));
    CUDA("reading GMRES's column", cudaMemcpyAsync(hc + 2 * (m + 1), &k->S->hn, sizeof(double),
                                                   cudaMemcpyDeviceToHost, k->s));
    CUDA("GMRES's iteration", cudaStreamSynchronize(k->s));
    hn = hc[2 * (m + 1)];
    {
        double *col = k->R + (int64_t)j * m; /* column j of R, rows 0..j */
        double top[2];
        for (int i = 0; i <= j; i++) col[i] = hc[i] + hc[m + 1 + i];
        for (int i = 0; i < j; i++) {
            top[0] = col[i];
            top[1] = col[i + 1];
            col[i] = k->cs[i] * top[0] + k->sn[i] * top[1];
            col[i + 1] = -k->sn[i] * top[0] + k->cs[i] * top[1];
        }
        d = hypot(col[j], hn);
        k->iterations++;
        if (d == 0.0 || !isfinite(d)) {
            stop = 1;
            kc = j;
        } else {
            k->cs[j] = col[j] / d;
            k->sn[j] = hn / d;
            col[j] = d;
            k->g[j + 1] = -k->sn[j] * k->g[j];
            k->g[j] = k->cs[j] * k->g[j];
            resid = fabs(k->g[j + 1]);
            k->estimate = resid;
            if (resid <= k->tol || hn == 0.0 || j + 1 == m) kc = j + 1;
        }
    }
    if (kc < 0) {
        k->j++;
        return SPMV_OK;
    }
    TRY(gm_restart<T>(k, A, kc, err));
    if (k->beta_r <= k->tol)
        k->state = SPMV_KRYLOV_CONVERGED;
    else if (stop)
        k->state = SPMV_KRYLOV_BREAKDOWN;
done:
    return rc;
}

/* ---- the C face ---- */

extern "C" int spmv_cuda_krylov_create(int method, int64_t n, int elem_size, int restart,
                                       spmv_cuda_krylov **out, spmv_err *err) {
    *out = NULL;
    int count, rc = spmv_cuda_device_count(&count, err);
    if (rc) return rc;
    if (method < SPMV_KRYLOV_CG || method > SPMV_KRYLOV_GMRES)
        return spmv_cuda_fail(err, SPMV_EINVAL, "method %d is not CG, BiCGSTAB or GMRES", method);
    if (elem_size != 4 && elem_size != 8)
        return spmv_cuda_fail(err, SPMV_EINVAL, "elem_size %d is not 4 or 8", elem_size);
    if (n < 1 || n > INT32_MAX)
        return spmv_cuda_fail(err, SPMV_EINVAL, "n = %lld is not in [1, 2^31 - 1]", (long long)n);
    if (method == SPMV_KRYLOV_GMRES && (restart < 1 || restart > 1024))
        return spmv_cuda_fail(err, SPMV_EINVAL, "restart = %d is not in [1, 1024]", restart);
    spmv_cuda_krylov *k = (spmv_cuda_krylov *)calloc(1, sizeof *k);
    if (k == NULL) return spmv_cuda_fail(err, SPMV_ENOMEM, "a solver (%zu bytes)", sizeof *k);
    k->method = method;
    k->n = n;
    k->es = elem_size;
    k->m = method == SPMV_KRYLOV_GMRES ? restart : 1;
    k->graphs = 1;
    const int64_t vb = n * elem_size, m = k->m;
    void **vecs[] = {&k->b, &k->x, &k->r, &k->z, &k->q};
    for (size_t i = 0; i < sizeof vecs / sizeof vecs[0]; i++)
        TRY(spmv_cuda_malloc(vecs[i], vb, "a solver vector", err));
    if (method == SPMV_KRYLOV_CG) TRY(spmv_cuda_malloc(&k->p, vb, "a solver vector", err));
    if (method == SPMV_KRYLOV_BICGSTAB) {
        void **bi[] = {&k->p, &k->rhat, &k->phat, &k->v, &k->shat, &k->t};
        for (size_t i = 0; i < sizeof bi / sizeof bi[0]; i++)
            TRY(spmv_cuda_malloc(bi[i], vb, "a solver vector", err));
    }
    if (method == SPMV_KRYLOV_GMRES) {
        TRY(spmv_cuda_malloc(&k->V, vb * (m + 1), "GMRES's basis", err));
        TRY(spmv_cuda_malloc(&k->u, vb, "a solver vector", err));
        TRY(spmv_cuda_malloc(&k->hy, m * elem_size, "GMRES's y", err));
        k->g = (double *)calloc((size_t)(3 * m + 1 + m * m), sizeof(double));
        if (k->g == NULL) {
            rc = spmv_cuda_fail(err, SPMV_ENOMEM, "GMRES's Hessenberg matrix (%lld doubles)",
                                (long long)(3 * m + 1 + m * m));
            goto done;
        }
        k->cs = k->g + m + 1;
        k->sn = k->cs + m;
        k->R = k->sn + m;
    }
    TRY(spmv_cuda_malloc((void **)&k->S, sizeof(kscal), "the solver's scalars", err));
    /* partials of a reduction (2 values), of GMRES's m + 1 dot products, then h and h2 */
    TRY(spmv_cuda_malloc((void **)&k->part, (BLOCKS_MAX * (m + 1) + 2 * (m + 1)) * sizeof(double),
                         "the reductions' partials", err));
    CUDA("cudaGetDevice", cudaGetDevice(&k->device));
    CUDA("cudaStreamCreate", cudaStreamCreateWithFlags(&k->s, cudaStreamNonBlocking));
    CUDA("cudaHostAlloc", cudaHostAlloc((void **)&k->ring, LAG * sizeof(kview), 0));
    /* h, h2, hn, y in double, y in the value type */
    CUDA("cudaHostAlloc",
         cudaHostAlloc((void **)&k->hcol, (2 * (m + 1) + 1 + 2 * m) * sizeof(double), 0));
    for (int i = 0; i < LAG; i++)
        CUDA("cudaEventCreate", cudaEventCreateWithFlags(&k->ev[i], cudaEventDisableTiming));
    CUDA("clearing the solver's scalars", cudaMemsetAsync(k->S, 0, sizeof(kscal), k->s));
    CUDA("creating the solver", cudaStreamSynchronize(k->s));
done:
    if (rc) {
        spmv_cuda_krylov_free(k);
        return rc;
    }
    *out = k;
    return SPMV_OK;
}

extern "C" void spmv_cuda_krylov_free(spmv_cuda_krylov *k) {
    if (k == NULL) return;
    if (k->s) cudaStreamSynchronize(k->s);
    if (k->graph) cudaGraphExecDestroy(k->graph);
    void *vecs[] = {k->b,    k->x, k->r, k->z, k->q, k->p,  k->rhat, k->phat, k->v,
                    k->shat, k->t, k->V, k->u, k->d, k->hy, k->S,    k->part};
    for (size_t i = 0; i < sizeof vecs / sizeof vecs[0]; i++) cudaFree(vecs[i]);
    for (int i = 0; i < LAG; i++)
        if (k->ev[i]) cudaEventDestroy(k->ev[i]);
    if (k->ring) cudaFreeHost(k->ring);
    if (k->hcol) cudaFreeHost(k->hcol);
    if (k->s) cudaStreamDestroy(k->s);
    cudaGetLastError();
    free(k->g);
    free(k);
}

extern "C" int spmv_cuda_krylov_vector(spmv_cuda_krylov *k, int which, const void *src, void *dst,
                                       void *stream, spmv_err *err) {
    void *dev = which == SPMV_KRYLOV_B ? k->b : which == SPMV_KRYLOV_X ? k->x : NULL;
    if (dev == NULL || (src == NULL) == (dst == NULL))
        return spmv_cuda_fail(err, SPMV_EINVAL,
                              "which = %d is not b or x, or not exactly one of src and dst given",
                              which);
    if (dst != NULL && which != SPMV_KRYLOV_X)
        return spmv_cuda_fail(err, SPMV_EINVAL, "only x is read back");
    int rc = SPMV_OK;
    /* the caller's stream first: its vectors are ready, or ours are before it reads them */
    if (stream != NULL) CUDA("the caller's stream", cudaStreamSynchronize((cudaStream_t)stream));
    CUDA("copying a solver vector",
         cudaMemcpyAsync(dst ? dst : dev, dst ? dev : src, (size_t)(k->n * k->es),
                         cudaMemcpyDefault, k->s));
    CUDA("copying a solver vector", cudaStreamSynchronize(k->s));
done:
    return rc;
}

extern "C" int spmv_cuda_krylov_norm_b(spmv_cuda_krylov *k, double *out, spmv_err *err) {
    int rc = SPMV_OK;
    double b2 = 0;
    kscal s0;
    memset(&s0, 0, sizeof s0); /* no stop word set: the reduction runs */
    CUDA("the norm of b", cudaMemcpyAsync(k->S, &s0, sizeof s0, cudaMemcpyHostToDevice, k->s));
    if (k->es == 4)
        CUDA("the norm of b",
             (reduce<1>(k, Dot1<float>{(const float *)k->b, (const float *)k->b}, SqEnd{})));
    else
        CUDA("the norm of b",
             (reduce<1>(k, Dot1<double>{(const double *)k->b, (const double *)k->b}, SqEnd{})));
    TRY(gm_read(k, &k->S->hn, &b2, 1, err));
    *out = sqrt(b2);
done:
    return rc;
}

extern "C" int spmv_cuda_krylov_copy(spmv_cuda_krylov *k, void *dst, const void *src,
                                     spmv_err *err) {
    int rc = SPMV_OK;
    if (dst == NULL || src == NULL) return spmv_cuda_fail(err, SPMV_EINVAL, "a NULL vector");
    CUDA("copying a solver vector",
         cudaMemcpyAsync(dst, src, (size_t)(k->n * k->es), cudaMemcpyDefault, k->s));
    CUDA("copying a solver vector", cudaStreamSynchronize(k->s));
done:
    return rc;
}

extern "C" int spmv_cuda_krylov_set_precond(spmv_cuda_krylov *k, const void *inv_diag,
                                            spmv_cuda_plan *M, spmv_cuda_precond_fn fn, void *ctx,
                                            spmv_err *err) {
    int rc = SPMV_OK, given = (inv_diag != NULL) + (M != NULL) + (fn != NULL);
    if (given > 1) return spmv_cuda_fail(err, SPMV_EINVAL, "more than one preconditioner given");
    k->pre = inv_diag ? PRE_JACOBI : M ? PRE_PLAN : fn ? PRE_FN : PRE_NONE;
    k->Mplan = M;
    k->fn = fn;
    k->fn_ctx = ctx;
    if (inv_diag != NULL) {
        if (k->d == NULL) TRY(spmv_cuda_malloc(&k->d, k->n * k->es, "the inverse diagonal", err));
        CUDA("uploading the inverse diagonal",
             cudaMemcpyAsync(k->d, inv_diag, (size_t)(k->n * k->es), cudaMemcpyDefault, k->s));
        CUDA("uploading the inverse diagonal", cudaStreamSynchronize(k->s));
    }
done:
    return rc;
}

static int check_plan(const spmv_cuda_krylov *k, spmv_cuda_plan *A, spmv_err *err) {
    if (A == NULL) return spmv_cuda_fail(err, SPMV_EINVAL, "no plan for the product");
    if (spmv_cuda_plan_device(A) != k->device)
        return spmv_cuda_fail(err, SPMV_EINVAL,
                              "the plan's matrix is on CUDA device %d, the solver on device %d",
                              spmv_cuda_plan_device(A), k->device);
    return SPMV_OK;
}

extern "C" int spmv_cuda_krylov_start(spmv_cuda_krylov *k, spmv_cuda_plan *A, double tol,
                                      int x_zero, spmv_err *err) {
    int rc = check_plan(k, A, err);
    if (rc) return rc;
    kscal s0;
    memset(&s0, 0, sizeof s0);
    s0.tol2 = tol * tol;
    s0.first = 1;
    double eps = k->es == 4 ? 1.1920928955078125e-07 : 2.220446049250313e-16;
    s0.tiny = eps * eps;
    k->tol = tol;
    k->products = k->iterations = k->cycles = 0;
    k->state = SPMV_KRYLOV_RUNNING;
    k->j = 0;
    k->estimate = NAN;
    /* on the solver's stream (cudaMemcpy's legacy stream does not order a non-blocking one) */
    CUDA("setting the solver's scalars",
         cudaMemcpyAsync(k->S, &s0, sizeof s0, cudaMemcpyHostToDevice, k->s));
    CUDA("setting the solver's scalars", cudaStreamSynchronize(k->s));
    if (k->method == SPMV_KRYLOV_GMRES) {
        if (x_zero) {
            CUDA("GMRES's start", cudaMemcpyAsync(k->r, k->b, (size_t)(k->n * k->es),
                                                  cudaMemcpyDeviceToDevice, k->s));
            double b2 = 0;
            if (k->es == 4)
                TRY(spmv_cuda_status(
                    (reduce<1>(k, Dot1<float>{(const float *)k->b, (const float *)k->b}, SqEnd{})),
                    "GMRES's start", err));
            else
                TRY(spmv_cuda_status(
                    (reduce<1>(k, Dot1<double>{(const double *)k->b, (const double *)k->b},
                               SqEnd{})),
                    "GMRES's start", err));
            TRY(gm_read(k, &k->S->hn, &b2, 1, err));
            k->beta_r = sqrt(b2);
            k->residual = k->beta_r;
        } else {
            TRY(k->es == 4 ? gm_residual<float>(k, A, err) : gm_residual<double>(k, A, err));
        }
        if (k->beta_r <= tol)
            k->state = SPMV_KRYLOV_CONVERGED;
        else if (!isfinite(k->beta_r))
            k->state = SPMV_KRYLOV_BREAKDOWN;
    } else {
        if (k->method == SPMV_KRYLOV_CG)
            TRY(k->es == 4 ? cg_start<float>(k, A, x_zero, err)
                           : cg_start<double>(k, A, x_zero, err));
        else
            TRY(k->es == 4 ? bi_start<float>(k, A, x_zero, err)
                           : bi_start<double>(k, A, x_zero, err));
        kview v;
        TRY(view_now(k, &v, err));
        k->state = v.stop;
        k->residual = sqrt(v.rr);
        k->start_products = k->products;
    }
    k->started = 1;
done:
    return rc;
}

/* One CG or BiCGSTAB iteration, launched kernel by kernel. */
static int iteration(spmv_cuda_krylov *k, spmv_cuda_plan *A, spmv_err *err) {
    if (k->method == SPMV_KRYLOV_CG)
        return k->es == 4 ? cg_iteration<float>(k, A, err) : cg_iteration<double>(k, A, err);
    return k->es == 4 ? bi_iteration<float>(k, A, err) : bi_iteration<double>(k, A, err);
}

/* Make A ready for the iterations (once per plan, until spmv_cuda_krylov_set_graphs drops it): a
 * trial product of A (and of M's plan) on this stream, whose failure is returned; the plan makes what
 * it makes on first use (its event) there, outside any capture.  Then, for CG and BiCGSTAB, one
 * iteration captured as a graph, or graphs given up for this solve where the capture fails (a library
 * call that cannot be captured, say): the iterations are then launched directly, with the same
 * result.  A preconditioner function runs on the host mid-iteration: never captured. */
static int capture(spmv_cuda_krylov *k, spmv_cuda_plan *A, spmv_err *err) {
    if (k->prepared == A) return SPMV_OK;
    if (k->graph != NULL) cudaGraphExecDestroy(k->graph);
    k->graph = NULL;
    k->prepared = NULL;
    int rc = spmv_cuda_krylov_try(k, A, err);
    if (!rc && k->pre == PRE_PLAN) rc = spmv_cuda_krylov_try(k, k->Mplan, err);
    if (rc) return rc;
    k->prepared = A;
    if (!k->graphs || k->pre == PRE_FN || k->method == SPMV_KRYLOV_GMRES) return SPMV_OK;
    int64_t products = k->products;
    spmv_err scratch;
    memset(&scratch, 0, sizeof scratch);
    cudaGraph_t g = NULL;
    cudaError_t e = cudaStreamBeginCapture(k->s, cudaStreamCaptureModeRelaxed);
    if (e == cudaSuccess) {
        int irc = iteration(k, A, &scratch);
        e = cudaStreamEndCapture(k->s, &g);
        if (irc != SPMV_OK && e == cudaSuccess) e = cudaErrorStreamCaptureInvalidated;
    }
    if (e == cudaSuccess) e = cudaGraphInstantiate(&k->graph, g, 0);
    if (g != NULL) cudaGraphDestroy(g);
    k->products = products;
    if (e != cudaSuccess) {
        cudaGetLastError();
        k->graph = NULL;
        k->graphs = 0;
    }
    return SPMV_OK;
}

extern "C" int spmv_cuda_krylov_prepare(spmv_cuda_krylov *k, spmv_cuda_plan *A, spmv_err *err) {
    int rc = check_plan(k, A, err);
    return rc ? rc : capture(k, A, err);
}

extern "C" int spmv_cuda_krylov_set_graphs(spmv_cuda_krylov *k, int on) {
    int was = k->graphs;
    k->graphs = on != 0;
    if (k->graph != NULL) {
        cudaStreamSynchronize(k->s);
        cudaGraphExecDestroy(k->graph);
        k->graph = NULL;
    }
    k->prepared = NULL;
    return was;
}

extern "C" int spmv_cuda_krylov_iterate(spmv_cuda_krylov *k, spmv_cuda_plan *A, int64_t max_iters,
                                        int64_t max_cycles, spmv_cuda_krylov_status *st,
                                        spmv_err *err) {
    int rc = check_plan(k, A, err);
    if (!rc && !k->started) rc = spmv_cuda_fail(err, SPMV_EINVAL, "iterate before start");
    if (rc) return rc;
    if (k->method == SPMV_KRYLOV_GMRES) {
        TRY(capture(k, A, err));
        for (int64_t q = 0; q < max_iters && k->state == SPMV_KRYLOV_RUNNING; q++) {
            if (k->j == 0 && k->cycles >= max_cycles) break;
            TRY(k->es == 4 ? gm_inner<float>(k, A, err) : gm_inner<double>(k, A, err));
        }
    } else if (k->state == SPMV_KRYLOV_RUNNING) {
        /* LAG iterations in flight: before queueing iteration q, wait for q - LAG's scalars */
        int lag = k->pre == PRE_FN ? 1 : LAG;
        int64_t q = 0;
        TRY(capture(k, A, err));
        for (; q < max_iters; q++) {
            int slot = (int)(q % lag);
            if (q >= lag) {
                CUDA("the solver's iteration", cudaEventSynchronize(k->ev[slot]));
                if (k->ring[slot].stop) break;
            }
            if (k->graph != NULL)
                CUDA("an iteration's graph", cudaGraphLaunch(k->graph, k->s));
            else
                TRY(iteration(k, A, err));
            CUDA("reading the solver's scalars",
                 cudaMemcpyAsync(&k->ring[slot], &k->S->v, sizeof(kview), cudaMemcpyDeviceToHost,
                                 k->s));
            CUDA("cudaEventRecord", cudaEventRecord(k->ev[slot], k->s));
        }
        kview v;
        TRY(view_now(k, &v, err));
        k->state = v.stop;
        k->iterations = v.it;
        k->products = k->start_products + v.products;
        k->residual = sqrt(v.rr);
    }
done:
    if (rc) cudaStreamSynchronize(k->s); /* nothing of ours left running on the caller's failure */
    spmv_cuda_krylov_get_status(k, st);
    return rc;
}

extern "C" void spmv_cuda_krylov_get_status(const spmv_cuda_krylov *k,
                                            spmv_cuda_krylov_status *st) {
    if (st == NULL) return;
    st->iterations = k->iterations;
    st->products = k->products;
    st->cycles = k->cycles;
    st->state = k->state;
    st->residual = k->residual;
    st->estimate = k->estimate;
}

extern "C" int spmv_cuda_krylov_try(spmv_cuda_krylov *k, spmv_cuda_plan *A, spmv_err *err) {
    int rc = check_plan(k, A, err);
    if (rc) return rc;
    /* into a vector the recurrence rewrites before it reads it again */
    void *scratch = k->method == SPMV_KRYLOV_CG         ? k->q
                    : k->method == SPMV_KRYLOV_BICGSTAB ? k->t
                                                        : k->u;
    rc = spmv_cuda_plan_mv_dev(A, k->x, scratch, 1.0, 0.0, (void *)k->s, err);
    int sync = spmv_cuda_status(cudaStreamSynchronize(k->s), "a trial product", err);
    return rc ? rc : sync;
}
