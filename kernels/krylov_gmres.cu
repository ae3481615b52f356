// kernels/krylov_gmres.cu: restarted GMRES on the device — an inner iteration, the restart, the
// true residual
// SPDX-License-Identifier: BSD-3-Clause
//
// The basis and the products stay on the device; each inner iteration reads its Hessenberg column
// back (m + 2 scalars, one wait) for the Givens rotations on the host, and the restart's least
// squares is solved there too.  Classical Gram-Schmidt, twice.
#include "krylov.cuh"

/* ---- element-wise parts and kernels (functors: no extended lambdas in this build) ---- */

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

/* ---- host side ---- */

/* r = b - A x and beta = |r| (the restart's true residual). */
template <typename T> int gm_residual(spmv_cuda_krylov *k, spmv_cuda_plan *A, spmv_err *err) {
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
template <typename T> int gm_inner(spmv_cuda_krylov *k, spmv_cuda_plan *A, spmv_err *err) {
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

template int gm_residual<float>(spmv_cuda_krylov *, spmv_cuda_plan *, spmv_err *);
template int gm_residual<double>(spmv_cuda_krylov *, spmv_cuda_plan *, spmv_err *);
template int gm_inner<float>(spmv_cuda_krylov *, spmv_cuda_plan *, spmv_err *);
template int gm_inner<double>(spmv_cuda_krylov *, spmv_cuda_plan *, spmv_err *);
