// kernels/krylov.cu: CG, BiCGSTAB and restarted GMRES iterating on the device, products by a plan —
// the C face and the iteration driver (queueing, graphs, the host's waits)
// SPDX-License-Identifier: BSD-3-Clause
//
// The methods' steps are in kernels/krylov_cg.cu, krylov_bicgstab.cu and krylov_gmres.cu; what they
// share (the solver's state, reductions, the host's helpers, and how it all works) in krylov.cuh.
#include "krylov.cuh"

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
    k->l2 = 1;
    const int64_t m = k->m;
    TRY(alloc_vectors(k, err));
    if (method == SPMV_KRYLOV_GMRES) {
        const int64_t vb = n * elem_size;
        TRY(spmv_cuda_malloc(&k->V, vb * (m + 1), "GMRES's basis", err));
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
    CUDA("cudaDeviceGetAttribute",
         cudaDeviceGetAttribute(&k->sms, cudaDevAttrMultiProcessorCount, k->device));
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
    l2_release(k);
    void *vecs[] = {k->slab, k->V, k->d, k->hy, k->S, k->part, k->dpart};
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
    if (M != NULL) spmv_cuda_plan_set_keep(M, 0); /* as take_plan's */
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

/* A plan the solver is to run, checked, its matrix streams set to pass through the L2 (before any
 * capture): an iteration reads its vectors several times each and the matrix once, so the vectors
 * are what the L2 should hold.  On the H200, fixed CG iterations took 1.03-1.11 times as long with
 * the matrix kept (SELL, csr/adaptive and JAD made to keep it) where the matrix and the vectors
 * passed 40 MiB, 0.95-1.04 below; BiCGSTAB's 1.01-1.09 (studies/2026-12-01-matrix-stream-caching). */
static int take_plan(const spmv_cuda_krylov *k, spmv_cuda_plan *A, spmv_err *err) {
    if (A == NULL) return spmv_cuda_fail(err, SPMV_EINVAL, "no plan for the product");
    if (spmv_cuda_plan_device(A) != k->device)
        return spmv_cuda_fail(err, SPMV_EINVAL,
                              "the plan's matrix is on CUDA device %d, the solver on device %d",
                              spmv_cuda_plan_device(A), k->device);
    spmv_cuda_plan_set_keep(A, 0);
    return SPMV_OK;
}

extern "C" int spmv_cuda_krylov_start(spmv_cuda_krylov *k, spmv_cuda_plan *A, double tol,
                                      int x_zero, spmv_err *err) {
    int rc = take_plan(k, A, err);
    if (rc) return rc;
    kscal s0;
    memset(&s0, 0, sizeof s0);
    s0.tol2 = tol * tol;
    s0.first = 1;
    double eps = k->es == 4 ? 1.1920928955078125e-07 : 2.220446049250313e-16;
    s0.tiny = eps * eps;
    k->tol = tol;
    l2_apply(k); /* before the start's kernels and any capture: the preconditioner is set */
    k->products = k->iterations = k->cycles = 0;
    k->state = SPMV_KRYLOV_RUNNING;
    k->j = 0;
    k->estimate = NAN;
    /* on the solver's stream (cudaMemcpy's legacy stream does not order a non-blocking one) */
    CUDA("setting the solver's scalars",
         cudaMemcpyAsync(k->S, &s0, sizeof s0, cudaMemcpyHostToDevice, k->s));
    /* a zero start is made here rather than loaded: uploading 4e6 zeros and checking them on the
     * host took 10 ms of a solve's set-up on the H200's host */
    if (x_zero) CUDA("setting x to zero", cudaMemsetAsync(k->x, 0, (size_t)(k->n * k->es), k->s));
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
    int64_t blocks = k->method != SPMV_KRYLOV_GMRES ? spmv_cuda_plan_dot_blocks(A) : 0;
    if (!rc && blocks > k->dpart_len) { /* before any capture: no allocation inside one */
        cudaFree(k->dpart);
        k->dpart = NULL;
        k->dpart_len = 0;
        rc = spmv_cuda_malloc((void **)&k->dpart, blocks * (int64_t)sizeof(double),
                              "the partial sums of a product's dot", err);
        if (!rc) k->dpart_len = blocks;
    }
    if (rc) return rc;
    k->prepared = A;
    if (!k->graphs || k->pre == PRE_FN || k->method == SPMV_KRYLOV_GMRES) return SPMV_OK;
    int64_t products = k->products;
    spmv_err scratch;
    memset(&scratch, 0, sizeof scratch);
    cudaGraph_t g = NULL;
    cudaError_t e = cudaStreamBeginCapture(k->s, cudaStreamCaptureModeRelaxed);
    if (e == cudaSuccess) {
        int irc = SPMV_OK;
        for (int u = 0; u < BATCH && irc == SPMV_OK; u++) irc = iteration(k, A, &scratch);
        e = cudaStreamEndCapture(k->s, &g);
        if (irc != SPMV_OK && e == cudaSuccess) e = cudaErrorStreamCaptureInvalidated;
    }
    if (e == cudaSuccess) l2_graph(k, g);
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
    int rc = take_plan(k, A, err);
    return rc ? rc : capture(k, A, err);
}

extern "C" int spmv_cuda_krylov_set_graphs(spmv_cuda_krylov *k, int on) {
    int was = k->graphs;
    k->graphs = on != 0;
    drop_graph(k);
    k->prepared = NULL; /* with graphs off, or none captured: A is prepared again all the same */
    return was;
}

extern "C" int spmv_cuda_krylov_set_l2(spmv_cuda_krylov *k, int on) {
    int was = k->l2;
    k->l2 = on != 0;
    l2_apply(k); /* drops a graph captured with another window */
    return was;
}

extern "C" void spmv_cuda_krylov_set_wake(spmv_cuda_krylov *k, const volatile int *wake) {
    k->wake = wake;
}

/* Whether the caller's wake word asks iterate to return now. */
static inline int woken(const spmv_cuda_krylov *k) { return k->wake != NULL && *k->wake != 0; }

extern "C" int spmv_cuda_krylov_iterate(spmv_cuda_krylov *k, spmv_cuda_plan *A, int64_t max_iters,
                                        int64_t max_cycles, spmv_cuda_krylov_status *st,
                                        spmv_err *err) {
    int rc = take_plan(k, A, err);
    if (!rc && !k->started) rc = spmv_cuda_fail(err, SPMV_EINVAL, "iterate before start");
    if (rc) return rc;
    if (k->method == SPMV_KRYLOV_GMRES) {
        TRY(capture(k, A, err));
        for (int64_t q = 0; q < max_iters && k->state == SPMV_KRYLOV_RUNNING; q++) {
            if ((k->j == 0 && k->cycles >= max_cycles) || woken(k)) break;
            TRY(k->es == 4 ? gm_inner<float>(k, A, err) : gm_inner<double>(k, A, err));
        }
    } else if (k->state == SPMV_KRYLOV_RUNNING) {
        /* lag launches in flight (LAG_BATCH graphs of BATCH iterations, or LAG single iterations:
         * the last few of a chunk, or no graph): before queueing launch l, wait for the scalars of
         * launch l - lag */
        TRY(capture(k, A, err));
        int lag = k->pre == PRE_FN ? 1 : k->graph != NULL ? LAG_BATCH : LAG;
        for (int64_t q = 0, l = 0; q < max_iters; l++) {
            int slot = (int)(l % lag);
            if (l >= lag) {
                CUDA("the solver's iteration", cudaEventSynchronize(k->ev[slot]));
                if (k->ring[slot].stop) break;
            }
            if (woken(k)) break;
            if (k->graph != NULL && max_iters - q >= BATCH) {
                CUDA("an iteration's graph", cudaGraphLaunch(k->graph, k->s));
                q += BATCH;
            } else {
                TRY(iteration(k, A, err));
                q++;
            }
            CUDA("reading the solver's scalars",
                 cudaMemcpyAsync(&k->ring[slot], &k->S->v, sizeof(kview), cudaMemcpyDeviceToHost,
                                 k->s));
            CUDA("cudaEventRecord", cudaEventRecord(k->ev[slot], k->s));
        }
        if (k->method == SPMV_KRYLOV_CG) /* x as the host may read it */
            TRY(k->es == 4 ? cg_flush<float>(k, err) : cg_flush<double>(k, err));
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
    int rc = take_plan(k, A, err);
    if (rc) return rc;
    /* into a vector the recurrence rewrites before it reads it again */
    void *scratch = k->method == SPMV_KRYLOV_CG         ? k->q
                    : k->method == SPMV_KRYLOV_BICGSTAB ? k->t
                                                        : k->u;
    rc = spmv_cuda_plan_mv_dev(A, k->x, scratch, 1.0, 0.0, (void *)k->s, err);
    int sync = spmv_cuda_status(cudaStreamSynchronize(k->s), "a trial product", err);
    return rc ? rc : sync;
}
