// kernels/krylov_bicgstab.cu: BiCGSTAB on the device — the start and one iteration
// SPDX-License-Identifier: BSD-3-Clause
//
// As CG (kernels/krylov_cg.cu): the scalars of the recurrence, and the breakdown and convergence
// tests, stay on the device; scipy's breakdown thresholds.  Right preconditioned, as scipy's.
#include "krylov.cuh"

/* ---- element-wise parts (functors: no extended lambdas in this build) ---- */

/* Where an iteration's rho = rhat . r is taken: in the pass that makes r (BiStart, BiX), whose end
 * (bi_rho_of) tests it against scipy's threshold and sets beta, as scipy's next iteration would do
 * first: one pass over rhat and r and one launch fewer an iteration.  So a breakdown of the next
 * rho stops the solve at the end of the iteration that made it, where scipy's loop would have
 * returned at the iteration limit instead (the same iterations either way).  rhat . v is made in
 * the product's pass where the plan offers it (product_dot, kernels/krylov.cuh). */

/* BiCGSTAB start: r = b - q (or b), rhat = r, acc0 = r . r (= rhat . r). */
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
/* rho = rhat . r for the next iteration, unless stopped: breakdown below scipy's threshold, else
 * beta (which the first iteration does not read). */
__device__ inline void bi_rho_of(kscal *S, double rho) {
    if (S->v.stop) return;
    if (fabs(rho) < S->tiny || !isfinite(rho)) {
        S->v.stop = SPMV_KRYLOV_BREAKDOWN;
        return;
    }
    S->beta = rho / S->rho * (S->alpha / S->omega);
    S->rho = rho;
}
struct BiStartEnd {
    __device__ void operator()(kscal *S, const double *tot) const {
        S->v.rr = tot[0];
        S->rho = S->alpha = S->omega = 1.0;
        S->first = 1;
        if (tot[0] <= S->tol2)
            S->v.stop = SPMV_KRYLOV_CONVERGED;
        else if (!isfinite(tot[0]))
            S->v.stop = SPMV_KRYLOV_BREAKDOWN;
        bi_rho_of(S, tot[0]);
    }
};
/* p = r (first) or r + beta (p - omega v); phat = d .* p where d is given.  Two-phase. */
template <typename T> struct BiDir {
    const T *r, *v, *d;
    T *p, *phat;
    struct Sc {
        T beta, omega;
        int first;
    };
    struct Reg {
        T r, v, p, d;
    };
    __device__ Sc scalars(const kscal *S) const { return Sc{(T)S->beta, (T)S->omega, S->first}; }
    __device__ void load(int64_t i, Reg &g, const Sc &s) const {
        g.r = r[i];
        if (!s.first) {
            g.v = v[i];
            g.p = p[i];
        }
        if (d) g.d = d[i];
    }
    __device__ void store(int64_t i, const Reg &g, const Sc &s) const {
        T pi = s.first ? g.r : g.r + s.beta * (g.p - s.omega * g.v);
        p[i] = pi;
        if (d) phat[i] = g.d * pi;
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
/* s = r - alpha v (in r), x += alpha phat, shat = d .* s where d is given; acc0 = s . s.
 * Two-phase. */
template <typename T> struct BiS {
    const T *v, *phat, *d;
    T *r, *x, *shat;
    struct Sc {
        T alpha;
    };
    struct Reg {
        T r, v, ph, x, d;
    };
    __device__ Sc scalars(const kscal *S) const { return Sc{(T)S->alpha}; }
    __device__ void load(int64_t i, Reg &g, const Sc &) const {
        g.r = r[i];
        g.v = v[i];
        g.ph = phat[i];
        g.x = x[i];
        if (d) g.d = d[i];
    }
    __device__ void store(int64_t i, const Reg &g, const Sc &s, double (&acc)[1]) const {
        T si = g.r - s.alpha * g.v;
        r[i] = si;
        x[i] = g.x + s.alpha * g.ph;
        if (d) shat[i] = g.d * si;
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
/* x += omega shat, r = s - omega t; acc0 = r . r, acc1 = rhat . r (the next rho).  Two-phase. */
template <typename T> struct BiX {
    const T *shat, *t, *rhat;
    T *x, *r;
    struct Sc {
        T omega;
    };
    struct Reg {
        T sh, t, x, r, rh;
    };
    __device__ Sc scalars(const kscal *S) const { return Sc{(T)S->omega}; }
    __device__ void load(int64_t i, Reg &g, const Sc &) const {
        g.sh = shat[i];
        g.t = t[i];
        g.x = x[i];
        g.r = r[i];
        g.rh = rhat[i];
    }
    __device__ void store(int64_t i, const Reg &g, const Sc &s, double (&acc)[2]) const {
        x[i] = g.x + s.omega * g.sh;
        T ri = g.r - s.omega * g.t;
        r[i] = ri;
        acc[0] += (double)ri * ri;
        acc[1] += (double)g.rh * ri;
    }
};
struct BiXEnd {
    __device__ void operator()(kscal *S, const double *tot) const {
        S->v.rr = tot[0];
        S->v.it++;
        S->first = 0;
        double w = S->omega;
        if (fabs(w) < S->tiny || !isfinite(w))
            S->v.stop = tot[0] <= S->tol2 ? SPMV_KRYLOV_CONVERGED : SPMV_KRYLOV_BREAKDOWN_OMEGA;
        else if (tot[0] <= S->tol2)
            S->v.stop = SPMV_KRYLOV_CONVERGED;
        else if (!isfinite(tot[0]))
            S->v.stop = SPMV_KRYLOV_BREAKDOWN;
        bi_rho_of(S, tot[1]);
    }
};

/* ---- host side ---- */

template <typename T>
int bi_start(spmv_cuda_krylov *k, spmv_cuda_plan *A, int x_zero, spmv_err *err) {
    int rc = SPMV_OK;
    if (!x_zero) TRY(product(k, A, k->x, k->q, err));
    CUDA("BiCGSTAB's start", (reduce<1>(k,
                                        BiStart<T>{(const T *)k->b, x_zero ? NULL : (const T *)k->q,
                                                   (T *)k->r, (T *)k->rhat},
                                        BiStartEnd{})));
done:
    return rc;
}

template <typename T> int bi_iteration(spmv_cuda_krylov *k, spmv_cuda_plan *A, spmv_err *err) {
    int rc = SPMV_OK, jac = k->pre == PRE_JACOBI, host = k->pre == PRE_FN || k->pre == PRE_PLAN;
    const T *d = jac ? (const T *)k->d : NULL;
    T *phat = k->pre == PRE_NONE ? (T *)k->p : (T *)k->phat;
    T *shat = k->pre == PRE_NONE ? (T *)k->r : (T *)k->shat;
    CUDA("BiCGSTAB's direction",
         map2(k, BiDir<T>{(const T *)k->r, (const T *)k->v, d, (T *)k->p, phat}));
    if (host) TRY(apply_pre<T>(k, k->p, phat, err));
    TRY((product_dot<T>(k, A, phat, k->v, k->rhat, BiAlpha{}, "BiCGSTAB's rhat . v", err)));
    CUDA("BiCGSTAB's s",
         (reduce2<1>(k, BiS<T>{(const T *)k->v, phat, d, (T *)k->r, (T *)k->x, shat}, BiSEnd{})));
    if (host) TRY(apply_pre<T>(k, k->r, shat, err));
    TRY(product(k, A, shat, k->t, err));
    CUDA("BiCGSTAB's omega",
         (reduce<2>(k, Dot2<T>{(const T *)k->t, (const T *)k->t, (const T *)k->t, (const T *)k->r},
                    BiOmega{})));
    CUDA("BiCGSTAB's update",
         (reduce2<2>(k, BiX<T>{shat, (const T *)k->t, (const T *)k->rhat, (T *)k->x, (T *)k->r},
                     BiXEnd{})));
done:
    return rc;
}

template int bi_start<float>(spmv_cuda_krylov *, spmv_cuda_plan *, int, spmv_err *);
template int bi_start<double>(spmv_cuda_krylov *, spmv_cuda_plan *, int, spmv_err *);
template int bi_iteration<float>(spmv_cuda_krylov *, spmv_cuda_plan *, spmv_err *);
template int bi_iteration<double>(spmv_cuda_krylov *, spmv_cuda_plan *, spmv_err *);
