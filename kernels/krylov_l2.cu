// kernels/krylov_l2.cu: the solver's vectors in one allocation, those an iteration reads first, and
// the window of L2 over them that keeps them there between iterations
// SPDX-License-Identifier: BSD-3-Clause
//
// A CG iteration reads and writes its four vectors several times (the direction, the product's
// gather and its dot, the residual step) and streams the matrix once.  Where the vectors would fit
// in L2, the default replacement lets the matrix's stream evict them between two passes, and each
// pass goes to memory again (on the H200, whose set-aside is at most 37.5 MiB: CG's four float64
// vectors fit it whole up to 1.2e6 rows).  A persisting access-policy
// window over the vectors (the stream's, and every kernel node of the iteration's graph) lets only
// the matrix stream through: the window's lines are kept in the L2 set-aside, which the solver
// raises to what the window needs (the device's limit at most) and gives back when it is freed.
// Where the vectors are larger than the set-aside, no window: a partial one (a hit ratio below 1)
// slowed the whole iteration, up to 1.55x (l2_window).
// Nothing is computed differently: the same kernels read the same values.
#include "krylov.cuh"

/* The vectors of each method, those an iteration touches first (then the ones a preconditioner
 * adds, then the rest): the window covers a prefix of this order. */
static int vector_order(spmv_cuda_krylov *k, void ***out) {
    void **cg[] = {&k->p, &k->r, &k->q, &k->x, &k->z, &k->b, NULL};
    void **bicgstab[] = {&k->r,    &k->p,    &k->v, &k->t, &k->rhat, &k->x,
                         &k->phat, &k->shat, &k->z, &k->q, &k->b,    NULL};
    void **gmres[] = {&k->r, &k->u, &k->b, &k->x, &k->z, &k->q, NULL};
    void ***v = k->method == SPMV_KRYLOV_CG         ? cg
                : k->method == SPMV_KRYLOV_BICGSTAB ? bicgstab
                                                    : gmres;
    int c = 0;
    for (; v[c] != NULL; c++) out[c] = v[c];
    return c;
}

/* How many of vector_order's vectors an iteration reads: the window's.  GMRES: none (its basis of
 * restart + 1 vectors is what its iterations read, and is larger than the set-aside at any size
 * where memory matters). */
static int hot_vectors(const spmv_cuda_krylov *k) {
    int pre = k->pre != PRE_NONE;
    if (k->method == SPMV_KRYLOV_CG) return 4 + pre;
    if (k->method == SPMV_KRYLOV_BICGSTAB) return 6 + 2 * pre;
    return 0;
}

/* Bytes between two vectors of the slab: n values, rounded up to 512 bytes. */
static int64_t vector_stride(const spmv_cuda_krylov *k) { return (k->n * k->es + 511) / 512 * 512; }

int alloc_vectors(spmv_cuda_krylov *k, spmv_err *err) {
    void **order[16];
    int c = vector_order(k, order);
    int64_t stride = vector_stride(k);
    int rc = spmv_cuda_malloc(&k->slab, stride * c, "the solver's vectors", err);
    if (rc) return rc;
    for (int i = 0; i < c; i++) *order[i] = (char *)k->slab + stride * i;
    return SPMV_OK;
}

/* The window for this solve, or one of 0 bytes (none: off, GMRES, no set-aside on this GPU, or
 * vectors larger than the set-aside). The set-aside is raised to what it needs first; where that
 * fails, no window.
 *
 * No partial window (a hit ratio below 1: a share of the window's lines persists).  Measured on
 * the H200 (studies/2026-12-01-partial-l2-window, on a host that found the set-aside at 11.25 of
 * 37.5 MiB, as every host that recorded it has since 2026-11-30 20:06): CG's fixed iteration took 1.05-1.16x as
 * long with one at hit ratios 0.61-0.73 and 1.38-1.55x at 0.31-0.36 (Poisson 1400^2 to 2000^2,
 * 3-D 150^3); its vector kernels alone ran at half the memory bandwidth at 0.31 (85.6 against
 * 43.1 us for CG's direction update over 4e6 rows).  A whole window took 0.97-1.01x.  On the
 * hosts of 2026-11-30 before 20:06, whose default policy did not keep the vectors, a partial
 * window had gained CG 1.09-1.49x and lost BiCGSTAB 0.58-0.86x
 * (studies/2026-11-30-solver-vectors-in-l2). */
static cudaAccessPolicyWindow l2_window(spmv_cuda_krylov *k) {
    cudaAccessPolicyWindow w;
    memset(&w, 0, sizeof w);
    int hot = hot_vectors(k), max_win = 0, max_set = 0;
    if (!k->l2 || hot == 0) return w;
    if (cudaDeviceGetAttribute(&max_win, cudaDevAttrMaxAccessPolicyWindowSize, k->device) ||
        cudaDeviceGetAttribute(&max_set, cudaDevAttrMaxPersistingL2CacheSize, k->device) ||
        max_win <= 0 || max_set <= 0) {
        cudaGetLastError();
        return w;
    }
    int64_t bytes = vector_stride(k) * hot;
    if (bytes > max_set || bytes > max_win) return w; /* a partial window: see above */
    size_t want = (size_t)bytes, now = 0;
    if (cudaDeviceGetLimit(&now, cudaLimitPersistingL2CacheSize) != cudaSuccess) {
        cudaGetLastError();
        return w;
    }
    if (now < want) {
        if (cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, want) != cudaSuccess) {
            cudaGetLastError();
            return w;
        }
        if (!k->l2_raised) k->l2_prev = now;
        /* what the device made of it (it may round it): what l2_release expects to find */
        if (cudaDeviceGetLimit(&now, cudaLimitPersistingL2CacheSize) != cudaSuccess) {
            cudaGetLastError();
            now = want;
        }
        k->l2_raised = 1;
        k->l2_set = now;
    }
    w.base_ptr = k->slab;
    w.num_bytes = (size_t)bytes;
    w.hitRatio = now >= (size_t)bytes ? 1.0f : (float)((double)now / (double)bytes);
    w.hitProp = cudaAccessPropertyPersisting;
    w.missProp = cudaAccessPropertyStreaming;
    return w;
}

static int same_window(const cudaAccessPolicyWindow *a, const cudaAccessPolicyWindow *b) {
    return a->base_ptr == b->base_ptr && a->num_bytes == b->num_bytes &&
           a->hitRatio == b->hitRatio && a->hitProp == b->hitProp && a->missProp == b->missProp;
}

/* A window is an optimisation: where the device refuses it (an older GPU, a partitioned one), the
 * solve runs without, as it does on a device with no set-aside; and no call is made at all while
 * no window was ever wanted (GMRES, off). */
void l2_apply(spmv_cuda_krylov *k) {
    cudaStreamAttrValue v;
    memset(&v, 0, sizeof v);
    v.accessPolicyWindow = l2_window(k);
    if (same_window(&v.accessPolicyWindow, &k->l2_window)) return;
    drop_graph(k); /* its kernel nodes carry the window they were captured with */
    if (cudaStreamSetAttribute(k->s, cudaStreamAttributeAccessPolicyWindow, &v) != cudaSuccess) {
        memset(&v, 0, sizeof v);
        cudaStreamSetAttribute(k->s, cudaStreamAttributeAccessPolicyWindow, &v);
        cudaGetLastError();
    }
    k->l2_window = v.accessPolicyWindow;
}

void l2_graph(const spmv_cuda_krylov *k, cudaGraph_t g) {
    size_t count = 0;
    if (k->l2_window.num_bytes == 0 || cudaGraphGetNodes(g, NULL, &count) != cudaSuccess ||
        count == 0) {
        cudaGetLastError();
        return;
    }
    cudaGraphNode_t *nodes = (cudaGraphNode_t *)calloc(count, sizeof *nodes);
    if (nodes == NULL) return;
    cudaError_t e = cudaGraphGetNodes(g, nodes, &count);
    cudaKernelNodeAttrValue v;
    memset(&v, 0, sizeof v);
    v.accessPolicyWindow = k->l2_window;
    for (size_t i = 0; i < count && e == cudaSuccess; i++) {
        cudaGraphNodeType t;
        e = cudaGraphNodeGetType(nodes[i], &t);
        if (e == cudaSuccess && t == cudaGraphNodeTypeKernel)
            e = cudaGraphKernelNodeSetAttribute(nodes[i], cudaKernelNodeAttributeAccessPolicyWindow,
                                                &v);
    }
    free(nodes);
    cudaGetLastError(); /* a node left without: the stream's window, which the capture copied */
}

void l2_release(spmv_cuda_krylov *k) {
    if (!k->l2_raised) return;
    size_t now = 0;
    /* lines of this solver's window become normal ones; the set-aside goes back to what it was,
     * unless someone changed it since */
    cudaCtxResetPersistingL2Cache();
    if (cudaDeviceGetLimit(&now, cudaLimitPersistingL2CacheSize) == cudaSuccess && now == k->l2_set)
        cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, k->l2_prev);
    cudaGetLastError();
    k->l2_raised = 0;
}
