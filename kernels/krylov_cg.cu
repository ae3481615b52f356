// kernels/krylov_cg.cu: conjugate gradients on the device — the start and one iteration
// SPDX-License-Identifier: BSD-3-Clause
//
// Every scalar of the recurrence stays on the device (kernels/krylov.cuh): rho, alpha and beta are
// set by the last block of the reduction that produces them, and the convergence test there sets
// the stop word, so that kernels/krylov.cu may queue iterations ahead (or launch one as a graph).
// x lags one step behind the recurrence: the direction update, which reads p anyway, adds the last
// step's alpha p to x before it overwrites p (one pass over p fewer an iteration than adding it in
// the residual step), and cg_flush adds the last one when the host is to see x.  The same
// operations on the same values: x is what it was, bit for bit.
#include "krylov.cuh"

/* ---- element-wise parts (functors: no extended lambdas in this build) ---- */

/* CG: x += alpha p where the last step's is pending, then p = z (first) or z + beta p.  One element
 * a turn (map): the two-phase pass of BiCGSTAB's steps made CG's iteration no faster at 4e6 rows
 * and 5 % slower at 1e6 on the H200. */
template <typename T> struct CgDir {
    const T *z;
    T *p, *x;
    __device__ void operator()(int64_t i, const kscal *S) const {
        T pi = p[i];
        if (S->pending) x[i] += (T)S->alpha * pi;
        p[i] = S->first ? z[i] : z[i] + (T)S->beta * pi;
    }
};

/* The pending x += alpha p, whatever the stop word says (the host is to read x). */
template <typename T>
__global__ void cg_flush_kernel(int64_t n, const kscal *S, const T *__restrict__ p,
                                T *__restrict__ x) {
    if (!S->pending) return;
    T a = (T)S->alpha;
    for (int64_t i = blockIdx.x * (int64_t)BS + threadIdx.x; i < n; i += (int64_t)gridDim.x * BS)
        x[i] += a * p[i];
}

/* CG's residual step: start: r = b - q (q = A x0, or b alone when q is NULL); else r -= alpha q
 * (x's share is pending: CgDir).  Then z = d .* r (d given), acc0 = r . z, acc1 = r . r (z is r
 * when d is NULL and not separate: acc0 = acc1). */
template <typename T> struct CgStep {
    const T *b, *q, *d;
    T *r, *z;
    int start;
    const kscal *S;
    int own_alpha; /* alpha, not S->alpha (cg_step_pq_kernel: this block made it) */
    double alpha;
    __device__ void operator()(int64_t i, double (&acc)[2]) const {
        T ri;
        if (start)
            ri = q ? b[i] - q[i] : b[i];
        else
            ri = r[i] - (T)(own_alpha ? alpha : S->alpha) * q[i];
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
            S->pending = 1;
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
        S->pending = 0;  /* this iteration's CgDir has added it */
        if (tot[0] == 0.0 || !isfinite(tot[0]))
            S->v.stop = SPMV_KRYLOV_BREAKDOWN;
        else
            S->alpha = S->rho / tot[0];
    }
};

/* CG's residual step after a product that made p . q as its blocks' partials (kernels/dot.cuh),
 * with CgAlpha's part in it: every block adds the np partials in the same order (the same bits,
 * the same alpha), and block 0 records what CgAlpha records, before its share of the reduction
 * (so before the last block's CgStepEnd).  Where p . q broke down every block knows it and returns
 * before the reduction.  One launch and one kernel's tail fewer an iteration than partials_end_kernel
 * then the step; each block reads the partials from L2, which is why it is taken for few of them
 * (FOLD_PARTIALS_MAX). */
#define FOLD_PARTIALS_MAX 4096
template <typename T>
__global__ void cg_step_pq_kernel(int64_t n, CgStep<T> f, CgStepEnd e, kscal *S, double *part,
                                  const double *pq_part, int64_t np) {
    if (S->v.stop) return;
    __shared__ double pq_s;
    double pq = spmv_sum_partials(pq_part, np);
    if (threadIdx.x == 0) pq_s = pq;
    __syncthreads();
    pq = pq_s;
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        const double tot[1] = {pq};
        CgAlpha{}(S, tot);
    }
    if (pq == 0.0 || !isfinite(pq)) return;
    f.own_alpha = 1;
    f.alpha = S->rho / pq; /* as CgAlpha: S->rho changes only in the last block's CgStepEnd */
    double acc[2] = {0, 0};
    for (int64_t i = blockIdx.x * (int64_t)BS + threadIdx.x; i < n; i += (int64_t)gridDim.x * BS)
        f(i, acc);
    block_finish<2>(acc, S, part, e);
}

/* ---- host side ---- */

template <typename T>
int cg_start(spmv_cuda_krylov *k, spmv_cuda_plan *A, int x_zero, spmv_err *err) {
    int rc = SPMV_OK, host = k->pre == PRE_FN || k->pre == PRE_PLAN;
    T *z = k->pre == PRE_NONE ? (T *)k->r : (T *)k->z;
    if (!x_zero) TRY(product(k, A, k->x, k->q, err));
    {
        CgStep<T> f{(const T *)k->b,
                    x_zero ? NULL : (const T *)k->q,
                    (const T *)(k->pre == PRE_JACOBI ? k->d : NULL),
                    (T *)k->r,
                    z,
                    1,
                    k->S,
                    0,
                    0.0};
        CUDA("CG's start", (reduce<2>(k, f, CgStepEnd{1, !host})));
    }
    if (host) {
        TRY(apply_pre<T>(k, k->r, k->z, err));
        CUDA("CG's r . z", (reduce<1>(k, Dot1<T>{(const T *)k->r, (const T *)k->z}, CgRho{})));
    }
done:
    return rc;
}

template <typename T> int cg_iteration(spmv_cuda_krylov *k, spmv_cuda_plan *A, spmv_err *err) {
    int rc = SPMV_OK, host = k->pre == PRE_FN || k->pre == PRE_PLAN;
    T *z = k->pre == PRE_NONE ? (T *)k->r : (T *)k->z;
    CgStep<T> f{(const T *)k->b,
                (const T *)k->q,
                (const T *)(k->pre == PRE_JACOBI ? k->d : NULL),
                (T *)k->r,
                z,
                0,
                k->S,
                0,
                0.0};
    int64_t np = dot_partials(k, A);
    CUDA("CG's direction", map(k, CgDir<T>{z, (T *)k->p, (T *)k->x}));
    if (np > 0 && np <= FOLD_PARTIALS_MAX) {
        TRY(product_partials(k, A, k->p, k->q, k->p, err));
        cg_step_pq_kernel<T><<<wave_of(k, cg_step_pq_kernel<T>), BS, 0, k->s>>>(
            k->n, f, CgStepEnd{0, !host}, k->S, k->part, k->dpart, np);
        CUDA("CG's update", cudaGetLastError());
    } else {
        TRY((product_dot<T>(k, A, k->p, k->q, k->p, CgAlpha{}, "CG's p . q", err)));
        CUDA("CG's update", (reduce<2>(k, f, CgStepEnd{0, !host})));
    }
    if (host) {
        TRY(apply_pre<T>(k, k->r, k->z, err));
        CUDA("CG's r . z", (reduce<1>(k, Dot1<T>{(const T *)k->r, (const T *)k->z}, CgRho{})));
    }
done:
    return rc;
}

template <typename T> int cg_flush(spmv_cuda_krylov *k, spmv_err *err) {
    int rc = SPMV_OK;
    cg_flush_kernel<T><<<grid_of(k->n), BS, 0, k->s>>>(k->n, k->S, (const T *)k->p, (T *)k->x);
    CUDA("CG's last step of x", cudaGetLastError());
    CUDA("CG's last step of x", cudaMemsetAsync(&k->S->pending, 0, sizeof(int), k->s));
done:
    return rc;
}

template int cg_start<float>(spmv_cuda_krylov *, spmv_cuda_plan *, int, spmv_err *);
template int cg_start<double>(spmv_cuda_krylov *, spmv_cuda_plan *, int, spmv_err *);
template int cg_iteration<float>(spmv_cuda_krylov *, spmv_cuda_plan *, spmv_err *);
template int cg_iteration<double>(spmv_cuda_krylov *, spmv_cuda_plan *, spmv_err *);
template int cg_flush<float>(spmv_cuda_krylov *, spmv_err *);
template int cg_flush<double>(spmv_cuda_krylov *, spmv_err *);
