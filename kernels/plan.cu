// kernels/plan.cu: a configuration bound to a matrix on the device (kernels/matrix.cu uploads it) —
// setup, checked and timed products
// SPDX-License-Identifier: BSD-3-Clause
//
// Creation does everything once (uploads, the kernel's workspace, cuSPARSE's handle and buffer, x
// and y), so that a timed product is its launches between two events and nothing else.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "kern.h"
#include "matrix.cuh"
#include "spmv_cuda.h"

/* Products of one timed batch: each between its own pair of events, all queued behind one gate. */
#define BATCH 32
#define OK_YS 4 /* y addresses a plan remembers as checked (below) */

struct spmv_cuda_plan {
    const spmv_kernel_desc *K;
    int kernel;                  /* K's registry index */
    const spmv_cuda_kernel *ops; /* own kernel, or NULL for cuSPARSE */
    spmv_cusparse *cs;
    spmv_cuda_matrix *M;
    int owns_matrix; /* made by spmv_cuda_plan_create, freed with the plan */
    spmv_launch L;
    void *aux;
    cudaStream_t s;
    cudaEvent_t ev[2 * BATCH];
    volatile int *gate; /* pinned host flags: [0] opens the gate, [1] says it timed out */
    int *gate_dev;      /* the same, as the device sees them */
    int64_t bytes;      /* the plan's own: workspace, cuSPARSE's buffer */
    double setup_ms;
    int device; /* the CUDA device its arrays live on */
    /* products on the caller's vectors (spmv_cuda_plan_mv_dev) */
    void *tmp; /* A x beside y where alpha and beta ask for it; made on first need */
    cudaEvent_t
        done; /* recorded after each such product, waited on by the next on another stream */
    cudaStream_t last; /* the stream of the last such product */
    int used;          /* done has been recorded */
    /* the last x and the last OK_YS y found to be memory of the plan's device: asking the runtime
     * again costs about a microsecond a pointer, per product; several y, since `y = op @ x` in a
     * loop takes its new results from two blocks of a pool in turn (the last y lives on meanwhile) */
    const void *ok_x;
    const void *ok_y[OK_YS];
    int ok_y_next; /* the slot of ok_y the next new y takes */
    /* a matrix in a locality order (CSR's order=1, csrc/csr.c): x gathered into xp, the kernel
     * writes yp, yp scattered into y, all three in every product and in its time */
    const int32_t *perm;
    void *xp, *yp;
};

/* The own kernel of each registry entry, in registry order (csrc/kernels.def: NULL for a CPU or
 * cuSPARSE line), indexed by a configuration's kernel: no lookup by id. */
static const spmv_cuda_kernel *const own[] = {
#define SPMV_CPU(id, CODE, variant, ...) NULL,
#define SPMV_OWN(sym, id, CODE, ...) &spmv_cu_##sym,
#define SPMV_CUSPARSE(id, CODE, alg, ...) NULL,
#include "kernels.def"
};

static int check_args(const spmv_fmt *F, const spmv_cuda_matrix *M, const spmv_kernel_desc *K,
                      const int32_t launch[2], spmv_err *err) {
    if (K == NULL || K->device != SPMV_DEV_CUDA)
        return spmv_cuda_fail(err, SPMV_EINVAL, "kernel %s is not a CUDA kernel",
                              K ? K->id : "(null)");
    if (F->format != K->format)
        return spmv_cuda_fail(err, SPMV_EINVAL, "kernel %s takes format %s, not %s", K->id,
                              spmv_format_name(K->format), spmv_format_name(F->format));
    const spmv_dfmt *D = &M->D;
    int same = D->format == F->format && D->nrows == F->nrows && D->ncols == F->ncols &&
               D->nnz == F->nnz && !memcmp(D->param, F->param, sizeof D->param) &&
               !memcmp(D->scalar, F->scalar, sizeof D->scalar) &&
               !memcmp(D->nidx, F->nidx, sizeof D->nidx) &&
               !memcmp(D->nval, F->nval, sizeof D->nval);
    if (!same)
        return spmv_cuda_fail(err, SPMV_EINVAL,
                              "kernel %s: the host matrix is not the one uploaded to the device",
                              K->id);
    int32_t bs = launch[1];
    if (K->library == SPMV_LIB_PYSPMV && (bs < 32 || bs > 1024 || bs % 32 != 0))
        return spmv_cuda_fail(err, SPMV_EINVAL,
                              "bs=%d: the block size must be a multiple of 32 in [32, 1024]", bs);
    return SPMV_OK;
}

/* The locality order of M, or NULL: CSR's layout with order=1 keeps it in idx[2] (csrc/csr.c). */
static const int32_t *order_of(const spmv_cuda_matrix *M) {
    const spmv_dfmt *D = &M->D;
    return D->format == SPMV_FMT_CSR && D->param[0] == 1 && D->nidx[2] == D->nrows ? D->idx[2]
                                                                                   : NULL;
}

/* The kernel's product of x into y on stream s, through the locality order where there is one. */
static cudaError_t run_on(spmv_cuda_plan *p, const void *x, void *y, double alpha, double beta,
                          cudaStream_t s) {
    const spmv_cuda_matrix *M = p->M;
    const int es = M->elem_size;
    const void *xin = x;
    void *yout = y;
    cudaError_t e = cudaSuccess;
    if (p->perm) {
        e = spmv_cuda_gather(es, M->D.ncols, p->perm, x, p->xp, s);
        xin = p->xp;
        yout = p->yp;
    }
    if (e == cudaSuccess)
        e = es == 4 ? p->ops->run_f32(&M->D, &p->L, p->aux, (const float *)xin, (float *)yout, s)
                    : p->ops->run_f64(&M->D, &p->L, p->aux, (const double *)xin, (double *)yout, s);
    if (e == cudaSuccess && p->perm)
        e = spmv_cuda_scatter(es, M->D.nrows, p->perm, alpha, p->yp, beta, y, s);
    return e;
}

static int setup_kernel(spmv_cuda_plan *p, const spmv_fmt *F, spmv_err *err) {
    spmv_cuda_matrix *M = p->M;
    if (p->K->library == SPMV_LIB_CUSPARSE)
        return spmv_cusparse_create(&M->D, p->K->kernel, M->elem_size, M->x, M->y, p->s, &p->cs,
                                    err);
    p->ops =
        p->kernel >= 0 && p->kernel < (int)(sizeof own / sizeof own[0]) ? own[p->kernel] : NULL;
    if (p->ops == NULL)
        return spmv_cuda_fail(err, SPMV_EINVAL, "no CUDA kernel %s in this build", p->K->id);
    int64_t aux = 0;
    int rc = p->ops->prepare ? p->ops->prepare(F, &p->L, &aux, err) : SPMV_OK;
    if (!rc) rc = dev_alloc(&p->bytes, aux, "the kernel's workspace", &p->aux, err);
    p->perm = order_of(M);
    if (!rc && p->perm)
        rc = dev_alloc(&p->bytes, (int64_t)M->D.ncols * M->elem_size, "x in the matrix's order",
                       &p->xp, err);
    if (!rc && p->perm)
        rc = dev_alloc(&p->bytes, (int64_t)M->D.nrows * M->elem_size, "y in the matrix's order",
                       &p->yp, err);
    if (!rc && p->ops->setup) rc = p->ops->setup(F, &M->D, &p->L, p->aux, p->s, err);
    return rc;
}

/* The timing events and the gate's flags, made on the first bench (plans that only multiply need
 * neither). */
static int bench_init(spmv_cuda_plan *p, spmv_err *err) {
    int rc = SPMV_OK;
    for (int k = 0; k < 2 * BATCH && !rc; k++)
        if (p->ev[k] == NULL)
            rc = spmv_cuda_status(cudaEventCreate(&p->ev[k]), "cudaEventCreate", err);
    if (rc || p->gate_dev != NULL) return rc;
    if (p->gate == NULL) {
        void *g = NULL;
        rc = spmv_cuda_status(cudaHostAlloc(&g, 2 * sizeof(int), cudaHostAllocMapped),
                              "cudaHostAlloc of the timing gate", err);
        if (rc) return rc;
        p->gate = (volatile int *)g;
        p->gate[0] = p->gate[1] = 0;
    }
    return spmv_cuda_status(cudaHostGetDevicePointer((void **)&p->gate_dev, (void *)p->gate, 0),
                            "cudaHostGetDevicePointer of the timing gate", err);
}

/* Whether the matrix's arrays, x and y fit the device's L2 together (spmv_launch's keep): SELL's
 * kernel then loads the matrix streams with default caching, so that the next product finds them in
 * the L2, where evict-first loads would let them go (kernels/kern.h's spmv_ld). */
static int fits_l2(const spmv_cuda_matrix *M, int device, int32_t *keep, spmv_err *err) {
    int l2 = 0;
    int rc = spmv_cuda_status(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device),
                              "cudaDeviceGetAttribute (the L2's size)", err);
    if (rc) return rc;
    const spmv_dfmt *D = &M->D;
    int64_t b = ((int64_t)D->nrows + D->ncols) * M->elem_size;
    for (int k = 0; k < SPMV_MAXIDX; k++) b += 4 * D->nidx[k];
    for (int k = 0; k < SPMV_MAXVAL; k++) b += (int64_t)M->elem_size * D->nval[k];
    *keep = b <= (int64_t)l2;
    return SPMV_OK;
}

int spmv_cuda_plan_create_on(spmv_cuda_matrix *M, const spmv_fmt *F, const spmv_config *c,
                             spmv_cuda_plan **out, spmv_err *err) {
    *out = NULL;
    const spmv_kernel_desc *K = c != NULL ? spmv_kernel_get(c->kernel) : NULL;
    const int32_t launch[2] = {K ? c->param[SPMV_P_TPV] : 0, K ? c->param[SPMV_P_BLOCK] : 0};
    int rc = check_args(F, M, K, launch, err);
    if (rc) return rc;
    spmv_cuda_plan *p = (spmv_cuda_plan *)calloc(1, sizeof *p);
    if (p == NULL) return spmv_cuda_fail(err, SPMV_ENOMEM, "a plan (%zu bytes)", sizeof *p);
    p->K = K;
    p->kernel = c->kernel;
    p->M = M;
    p->L.tpv = launch[0];
    p->L.block = launch[1];
    double t0 = now_ms();
    rc = spmv_cuda_status(cudaGetDevice(&p->device), "cudaGetDevice", err);
    if (!rc) rc = fits_l2(M, p->device, &p->L.keep, err);
    if (!rc)
        rc = spmv_cuda_status(cudaStreamCreateWithFlags(&p->s, cudaStreamNonBlocking),
                              "cudaStreamCreate", err);
    if (!rc)
        rc = spmv_cuda_status(cudaEventCreateWithFlags(&p->done, cudaEventDisableTiming),
                              "cudaEventCreate", err);
    if (!rc) rc = setup_kernel(p, F, err);
    if (!rc) rc = spmv_cuda_status(cudaStreamSynchronize(p->s), "plan setup", err);
    if (!rc && p->cs) p->bytes += spmv_cusparse_buffer_bytes(p->cs);
    p->setup_ms = now_ms() - t0;
    if (rc) {
        spmv_cuda_plan_free(p);
        return rc;
    }
    *out = p;
    return SPMV_OK;
}

int spmv_cuda_plan_create(const spmv_fmt *F, const spmv_config *c, int elem_size,
                          spmv_cuda_plan **out, spmv_err *err) {
    spmv_cuda_matrix *M = NULL;
    *out = NULL;
    const spmv_kernel_desc *K = c != NULL ? spmv_kernel_get(c->kernel) : NULL;
    if (K == NULL || K->device != SPMV_DEV_CUDA) /* before any upload */
        return spmv_cuda_fail(err, SPMV_EINVAL, "kernel %s is not a CUDA kernel",
                              K ? K->id : "(null)");
    int rc = spmv_cuda_matrix_create(F, elem_size, &M, err);
    if (!rc) rc = spmv_cuda_plan_create_on(M, F, c, out, err);
    if (rc) {
        spmv_cuda_matrix_free(M);
        return rc;
    }
    (*out)->owns_matrix = 1;
    (*out)->setup_ms += M->upload_ms;
    return SPMV_OK;
}

/* Whether stream s lives as long as the plan: the legacy and per-thread default streams (handles 0,
 * 1, 2) and the plan's own.  A caller's stream may be destroyed right after its product. */
static int lasting(const spmv_cuda_plan *p, cudaStream_t s) {
    uintptr_t h = (uintptr_t)s;
    return h <= 2 || s == p->s;
}

/* Make stream s wait for the plan's last product when that one ran on another stream (the caller's,
 * or the plan's own), which may still use the workspace or tmp; then s is the last.  The end of a
 * lasting stream is marked here, at the switch, not after every product (an event record costs
 * about as much host time as a launch); a caller's stream, which may be gone by now, was marked
 * right after its product (mark_end). */
static int order_after_last(spmv_cuda_plan *p, cudaStream_t s, spmv_err *err) {
    int rc = SPMV_OK;
    if (p->used && p->last != s) {
        if (lasting(p, p->last))
            rc = spmv_cuda_status(cudaEventRecord(p->done, p->last), "cudaEventRecord", err);
        if (!rc)
            rc = spmv_cuda_status(cudaStreamWaitEvent(s, p->done, 0), "cudaStreamWaitEvent", err);
    }
    if (!rc) {
        p->last = s;
        p->used = 1;
    }
    return rc;
}

/* After a product on s: mark its end now where s may not outlive the plan.  Not while s is being
 * captured into a CUDA graph (kernels/krylov.cu captures its iterations on its own stream): the
 * graph's launches are ordered by that stream, and a record there would become a node of it. */
static int mark_end(spmv_cuda_plan *p, cudaStream_t s, spmv_err *err) {
    if (lasting(p, s)) return SPMV_OK;
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    int rc = spmv_cuda_status(cudaStreamIsCapturing(s, &cs), "cudaStreamIsCapturing", err);
    if (rc || cs != cudaStreamCaptureStatusNone) return rc;
    return spmv_cuda_status(cudaEventRecord(p->done, s), "cudaEventRecord", err);
}

/* One product on the plan's stream, asynchronous. */
static int launch(spmv_cuda_plan *p, spmv_err *err) {
    if (p->cs) return spmv_cusparse_run(p->cs, err);
    return spmv_cuda_status(run_on(p, p->M->x, p->M->y, 1.0, 0.0, p->s), p->K->id, err);
}

static int put_x(spmv_cuda_plan *p, const void *x, spmv_err *err) {
    size_t b = (size_t)p->M->D.ncols * (size_t)p->M->elem_size;
    return spmv_cuda_status(cudaMemcpyAsync(p->M->x, x, b, cudaMemcpyHostToDevice, p->s),
                            "upload of x", err);
}

/* x made on the device, for a timing that needs no particular x: no host copy, no upload. */
static int make_x(spmv_cuda_plan *p, spmv_err *err) {
    return spmv_cuda_status(spmv_cuda_fill(p->M->elem_size, p->M->D.ncols, p->M->x, p->s),
                            "x made on the device", err);
}

static int get_y(spmv_cuda_plan *p, void *y, spmv_err *err) {
    size_t b = (size_t)p->M->D.nrows * (size_t)p->M->elem_size;
    int rc = spmv_cuda_status(cudaMemcpyAsync(y, p->M->y, b, cudaMemcpyDeviceToHost, p->s),
                              "download of y", err);
    return rc ? rc : spmv_cuda_status(cudaStreamSynchronize(p->s), p->K->id, err);
}

int spmv_cuda_plan_mv(spmv_cuda_plan *p, const void *x, void *y, spmv_err *err) {
    int rc = order_after_last(p, p->s, err);
    if (!rc) rc = put_x(p, x, err);
    /* all bits set is a NaN in float and double: an entry the kernel never writes cannot pass */
    if (!rc)
        rc = spmv_cuda_status(
            cudaMemsetAsync(p->M->y, 0xFF, (size_t)p->M->D.nrows * p->M->elem_size, p->s),
            "poisoning y", err);
    if (!rc) rc = launch(p, err);
    return rc ? rc : get_y(p, y, err);
}

/* The GPU's global nanosecond timer: a wait bounded in time with no clock rate asked of the host
 * (cudaDevAttrClockRate took 0.63 ms a query on the H200's host, driver 580, most of a short
 * timing's cost). */
static __device__ unsigned long long gpu_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* Holds the stream until the host has queued a whole batch behind it (open[0] set), so that the
 * events time the GPU's work alone and not the host's launch latency (several microseconds, as
 * much as a small product itself takes).  Gives up after max_ns nanoseconds and says so in
 * open[1]: the batch is then timed again. */
__global__ void gate_wait(volatile int *open, unsigned long long max_ns) {
    unsigned long long t0 = gpu_ns();
    while (open[0] == 0)
        if (gpu_ns() - t0 > max_ns) {
            open[1] = 1;
            return;
        }
}

/* 200 ms: far longer than queueing a batch, short enough that a host descheduled meanwhile costs
 * one batch again, not a hang. */
#define GATE_MAX_NS 200000000ULL

/* Queue n runs of `run` products each behind a closed gate, each run between events ev[2k] and
 * ev[2k+1], open the gate, wait for the last, and read the n times per product into t[n]. */
static int timed_batch(spmv_cuda_plan *p, int n, int run, double *t, int *late, spmv_err *err) {
    p->gate[0] = p->gate[1] = 0;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    gate_wait<<<1, 1, 0, p->s>>>((volatile int *)p->gate_dev, GATE_MAX_NS);
    int rc = spmv_cuda_status(cudaGetLastError(), "the timing gate", err);
    for (int k = 0; k < n && !rc; k++) {
        rc = spmv_cuda_status(cudaEventRecord(p->ev[2 * k], p->s), "cudaEventRecord", err);
        for (int r = 0; r < run && !rc; r++) rc = launch(p, err);
        if (!rc)
            rc = spmv_cuda_status(cudaEventRecord(p->ev[2 * k + 1], p->s), "cudaEventRecord", err);
    }
    std::atomic_thread_fence(std::memory_order_seq_cst);
    p->gate[0] = 1; /* opened even after a failed launch, so that the stream drains */
    int sync = spmv_cuda_status(cudaStreamSynchronize(p->s), p->K->id, err);
    if (!rc) rc = sync;
    for (int k = 0; k < n && !rc; k++) {
        float ms = 0;
        rc = spmv_cuda_status(cudaEventElapsedTime(&ms, p->ev[2 * k], p->ev[2 * k + 1]),
                              "cudaEventElapsedTime", err);
        t[k] = ms / run;
    }
    *late = p->gate[1];
    return rc;
}

int spmv_cuda_plan_bench(spmv_cuda_plan *p, const void *x, void *y, int warmup, int repeats,
                         double budget_s, spmv_timing *out, spmv_err *err) {
    return spmv_cuda_plan_bench_runs(p, x, y, warmup, repeats, 1, budget_s, out, err);
}

int spmv_cuda_plan_bench_runs(spmv_cuda_plan *p, const void *x, void *y, int warmup, int repeats,
                              int run, double budget_s, spmv_timing *out, spmv_err *err) {
    if (repeats < 1 || warmup < 0)
        return spmv_cuda_fail(err, SPMV_EINVAL, "repeats (%d) must be >= 1 and warmup (%d) >= 0",
                              repeats, warmup);
    if (run < 1 || run > SPMV_CUDA_MAX_RUN)
        return spmv_cuda_fail(err, SPMV_EINVAL,
                              "The products a timed run queues back to back must be in [1, %d]. "
                              "Got %d instead.",
                              SPMV_CUDA_MAX_RUN, run);
    int rc = bench_init(p, err);
    if (!rc) rc = order_after_last(p, p->s, err);
    if (!rc) rc = x != NULL ? put_x(p, x, err) : make_x(p, err);
    /* the first warm-up timed (events around its launches) to bound the others by the budget */
    int more = 0;
    if (warmup > 0 && !rc) {
        float first = 0;
        rc = spmv_cuda_status(cudaEventRecord(p->ev[0], p->s), "cudaEventRecord", err);
        if (!rc) rc = launch(p, err);
        if (!rc) rc = spmv_cuda_status(cudaEventRecord(p->ev[1], p->s), "cudaEventRecord", err);
        if (!rc) rc = spmv_cuda_status(cudaEventSynchronize(p->ev[1]), p->K->id, err);
        if (!rc)
            rc = spmv_cuda_status(cudaEventElapsedTime(&first, p->ev[0], p->ev[1]),
                                  "cudaEventElapsedTime", err);
        if (!rc) more = spmv_warmup_more(warmup, first, budget_s);
    }
    for (int k = 0; k < more && !rc; k++) rc = launch(p, err);
    if (!rc) rc = spmv_cuda_status(cudaStreamSynchronize(p->s), p->K->id, err);
    double *t = (double *)malloc((size_t)repeats * sizeof(double));
    if (!rc && t == NULL)
        rc = spmv_cuda_fail(err, SPMV_ENOMEM, "%d timings (%zu bytes)", repeats,
                            (size_t)repeats * sizeof(double));
    int64_t n = 0;
    double spent = 0, budget_ms = budget_s * 1e3;
    int retries = 0;
    while (!rc && n < repeats && (n == 0 || budget_s <= 0 || spent < budget_ms)) {
        /* the first batch is one product; later ones as many as the budget seems to allow */
        int want = n == 0 ? 1 : BATCH;
        if (n > 0 && budget_s > 0) {
            double each = spent / (double)n, left = (budget_ms - spent) / each;
            if (left < want) want = left < 1 ? 1 : (int)left;
        }
        if (want > repeats - n) want = (int)(repeats - n);
        int late = 0;
        rc = timed_batch(p, want, run, t + n, &late, err);
        if (!rc && late && retries++ < 3) continue; /* the gate gave up: time the batch again */
        for (int k = 0; !rc && k < want; k++) spent += t[n + k] * run;
        if (!rc) n += want;
    }
    if (!rc) rc = spmv_timing_summary(t, n, out, err);
    free(t);
    if (!rc && y != NULL) rc = get_y(p, y, err);
    return rc;
}

int64_t spmv_cuda_plan_bytes(const spmv_cuda_plan *p) {
    return p->bytes + (p->owns_matrix ? p->M->bytes : 0);
}

double spmv_cuda_plan_setup_ms(const spmv_cuda_plan *p) { return p->setup_ms; }

void spmv_cuda_plan_free(spmv_cuda_plan *p) {
    if (p == NULL) return;
    if (p->s) cudaStreamSynchronize(p->s);
    spmv_cusparse_free(p->cs);
    cudaFree(p->aux);
    for (int k = 0; k < 2 * BATCH; k++)
        if (p->ev[k]) cudaEventDestroy(p->ev[k]);
    if (p->gate) cudaFreeHost((void *)p->gate);
    if (p->done) cudaEventDestroy(p->done);
    cudaFree(p->tmp);
    cudaFree(p->xp);
    cudaFree(p->yp);
    if (p->s) cudaStreamDestroy(p->s);
    if (p->owns_matrix) spmv_cuda_matrix_free(p->M);
    cudaGetLastError();
    free(p);
}

/* ---- Products on the caller's device vectors ---- */

int spmv_cuda_plan_device(const spmv_cuda_plan *p) { return p->device; }

void spmv_cuda_plan_set_keep(spmv_cuda_plan *p, int keep) { p->L.keep = keep != 0; }

int spmv_cuda_plan_keep(const spmv_cuda_plan *p) { return p->L.keep; }

/* SPMV_OK when v (`name`, n bytes) is memory of the plan's device; else SPMV_EINVAL saying what it
 * is.  cudaPointerGetAttributes knows every allocation of the runtime and driver (cudaMalloc,
 * managed, CuPy's and PyTorch's pools alike). */
static int device_vector(const spmv_cuda_plan *p, const void *v, const char *name, spmv_err *err) {
    cudaPointerAttributes a;
    cudaError_t e = cudaPointerGetAttributes(&a, v);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return spmv_cuda_fail(err, SPMV_EINVAL, "%s (%p) is not memory the CUDA runtime knows: %s",
                              name, v, cudaGetErrorString(e));
    }
    if (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged)
        return spmv_cuda_fail(err, SPMV_EINVAL,
                              "%s (%p) is host memory, not device memory: pass a device array",
                              name, v);
    if (a.device != p->device)
        return spmv_cuda_fail(err, SPMV_EINVAL,
                              "%s is on CUDA device %d; the operator's matrix is on device %d",
                              name, a.device, p->device);
    return SPMV_OK;
}

/* The checks of a product on the caller's device vectors x and y (x unread where alpha is 0), and
 * its order after this plan's last product on another stream. */
static int dev_args(spmv_cuda_plan *p, const void *x, void *y, double alpha, cudaStream_t s,
                    spmv_err *err) {
    const spmv_cuda_matrix *M = p->M;
    const int64_t es = M->elem_size, xb = (int64_t)M->D.ncols * es, yb = (int64_t)M->D.nrows * es;
    if ((yb > 0 && y == NULL) || (xb > 0 && x == NULL && alpha != 0.0))
        return spmv_cuda_fail(err, SPMV_EINVAL, "x or y is a NULL pointer");
    const char *xs = (const char *)x, *ys = (const char *)y;
    if (xb > 0 && yb > 0 && alpha != 0.0 && xs < ys + yb && ys < xs + xb)
        return spmv_cuda_fail(err, SPMV_EINVAL,
                              "x and y overlap: the product would read what it writes");
    int known = 0;
    for (int k = 0; k < OK_YS; k++) known |= p->ok_y[k] == y;
    int rc = yb > 0 && !known ? device_vector(p, y, "y", err) : SPMV_OK;
    if (!rc && yb > 0 && !known) {
        p->ok_y[p->ok_y_next] = y;
        p->ok_y_next = (p->ok_y_next + 1) % OK_YS;
    }
    if (!rc && xb > 0 && alpha != 0.0 && x != p->ok_x) {
        rc = device_vector(p, x, "x", err);
        if (!rc) p->ok_x = x;
    }
    return rc ? rc : order_after_last(p, s, err);
}

int64_t spmv_cuda_plan_dot_blocks(const spmv_cuda_plan *p) {
    const spmv_cuda_matrix *M = p->M;
    if (p->cs != NULL || p->perm != NULL || p->ops == NULL || p->ops->run_dot_f64 == NULL ||
        M->D.nrows != M->D.ncols || M->D.nrows < 1)
        return 0;
    return p->ops->dot_blocks(&M->D, &p->L);
}

int spmv_cuda_plan_mv_dot_dev(spmv_cuda_plan *p, const void *x, void *y, spmv_cuda_dot d,
                              void *stream, spmv_err *err) {
    if (spmv_cuda_plan_dot_blocks(p) == 0)
        return spmv_cuda_fail(err, SPMV_ENOTAPPLICABLE, "%s makes no dot product in its pass",
                              p->K->id);
    cudaStream_t s = (cudaStream_t)stream;
    int rc = dev_args(p, x, y, 1.0, s, err);
    if (rc) return rc;
    const spmv_cuda_matrix *M = p->M;
    cudaError_t e =
        M->elem_size == 4
            ? p->ops->run_dot_f32(&M->D, &p->L, p->aux, (const float *)x, (float *)y, d, s)
            : p->ops->run_dot_f64(&M->D, &p->L, p->aux, (const double *)x, (double *)y, d, s);
    rc = spmv_cuda_status(e, p->K->id, err);
    return rc ? rc : mark_end(p, s, err);
}

int spmv_cuda_plan_mv_dev(spmv_cuda_plan *p, const void *x, void *y, double alpha, double beta,
                          void *stream, spmv_err *err) {
    const spmv_cuda_matrix *M = p->M;
    const int64_t es = M->elem_size, yb = (int64_t)M->D.nrows * es;
    cudaStream_t s = (cudaStream_t)stream;
    int rc = dev_args(p, x, y, alpha, s, err);
    if (rc) return rc;
    if (p->cs != NULL) {
        rc = spmv_cusparse_run_vec(p->cs, x, y, alpha, beta, s, err);
    } else if (alpha == 0.0) {
        rc = spmv_cuda_status(spmv_cuda_axpby((int)es, M->D.nrows, 0.0, NULL, beta, y, s),
                              "y = beta y", err);
    } else if (p->perm) { /* the scatter applies alpha and beta */
        rc = spmv_cuda_status(run_on(p, x, y, alpha, beta, s), p->K->id, err);
    } else {
        int direct = alpha == 1.0 && beta == 0.0;
        void *t = y;
        if (!direct) {
            if (p->tmp == NULL && yb > 0)
                rc = dev_alloc(&p->bytes, yb, "A x beside y (alpha, beta)", &p->tmp, err);
            t = p->tmp;
        }
        cudaError_t e = cudaSuccess;
        if (!rc)
            e = es == 4 ? p->ops->run_f32(&M->D, &p->L, p->aux, (const float *)x, (float *)t, s)
                        : p->ops->run_f64(&M->D, &p->L, p->aux, (const double *)x, (double *)t, s);
        if (!rc) rc = spmv_cuda_status(e, p->K->id, err);
        if (!rc && !direct)
            rc = spmv_cuda_status(spmv_cuda_axpby((int)es, M->D.nrows, alpha, t, beta, y, s),
                                  "y = alpha A x + beta y", err);
    }
    return rc ? rc : mark_end(p, s, err);
}

/* ---- Matrices that already live on the device ---- */

int spmv_cuda_matrix_wrap_csr(int32_t nrows, int32_t ncols, int64_t nnz, const int32_t *row_ptr,
                              const int32_t *col, const void *val, int elem_size,
                              spmv_cuda_matrix **out, spmv_err *err) {
    *out = NULL;
    int n, rc = spmv_cuda_device_count(&n, err);
    if (rc) return rc;
    if (elem_size != 4 && elem_size != 8)
        return spmv_cuda_fail(err, SPMV_EINVAL, "elem_size %d is not 4 or 8", elem_size);
    if (nrows < 0 || ncols < 0 || nnz < 0 || nnz > INT32_MAX)
        return spmv_cuda_fail(err, SPMV_EINVAL,
                              "a CSR of %d x %d with %lld entries: sizes must be >= 0 and nnz "
                              "at most 2^31 - 1 (int32 indices)",
                              (int)nrows, (int)ncols, (long long)nnz);
    if (row_ptr == NULL || (nnz > 0 && (col == NULL || val == NULL)))
        return spmv_cuda_fail(err, SPMV_EINVAL, "a CSR array on the device is a NULL pointer");
    rc = spmv_cuda_csr_check(nrows, ncols, nnz, row_ptr, col, err);
    if (rc) return rc;
    spmv_cuda_matrix *M = (spmv_cuda_matrix *)calloc(1, sizeof *M);
    if (M == NULL)
        return spmv_cuda_fail(err, SPMV_ENOMEM, "a device matrix (%zu bytes)", sizeof *M);
    M->elem_size = elem_size;
    M->borrowed = 1;
    spmv_dfmt *D = &M->D;
    D->format = SPMV_FMT_CSR;
    D->nrows = nrows;
    D->ncols = ncols;
    D->nnz = nnz;
    D->nidx[0] = (int64_t)nrows + 1;
    D->nidx[1] = nnz;
    D->nval[0] = nnz;
    D->idx[0] = row_ptr;
    D->idx[1] = nnz > 0 ? col : NULL;
    D->val[0] = nnz > 0 ? val : NULL;
    M->dev[0] = (void *)row_ptr;
    M->dev[1] = (void *)D->idx[1];
    M->dev[SPMV_MAXIDX] = (void *)D->val[0];
    rc = dev_alloc(&M->bytes, (int64_t)ncols * elem_size, "x", &M->x, err);
    if (!rc) rc = dev_alloc(&M->bytes, (int64_t)nrows * elem_size, "y", &M->y, err);
    if (rc) {
        spmv_cuda_matrix_free(M);
        return rc;
    }
    *out = M;
    return SPMV_OK;
}

void spmv_cuda_matrix_header(const spmv_cuda_matrix *M, spmv_fmt *F) {
    memset(F, 0, sizeof *F);
    F->format = M->D.format;
    F->nrows = M->D.nrows;
    F->ncols = M->D.ncols;
    F->nnz = M->D.nnz;
    memcpy(F->param, M->D.param, sizeof F->param);
    memcpy(F->scalar, M->D.scalar, sizeof F->scalar);
    memcpy(F->nidx, M->D.nidx, sizeof F->nidx);
    memcpy(F->nval, M->D.nval, sizeof F->nval);
}

int spmv_cuda_plan_create_dev(spmv_cuda_matrix *M, const spmv_config *c, spmv_cuda_plan **out,
                              spmv_err *err) {
    spmv_fmt F;
    spmv_cuda_matrix_header(M, &F);
    *out = NULL;
    const spmv_kernel_desc *K = c != NULL ? spmv_kernel_get(c->kernel) : NULL;
    /* a kernel whose setup plans from the row pointers on the host (csr/adaptive's work items,
     * kernels/csr.cu): nrows + 1 int32 copied down once here */
    int32_t *ptr = NULL;
    int rc = SPMV_OK;
    if (K != NULL && K->library == SPMV_LIB_PYSPMV && F.format == SPMV_FMT_CSR && c->kernel >= 0 &&
        c->kernel < (int)(sizeof own / sizeof own[0]) && own[c->kernel] &&
        own[c->kernel]->host_rows) {
        size_t b = (size_t)(F.nrows + 1) * sizeof(int32_t);
        ptr = (int32_t *)malloc(b);
        if (ptr == NULL) return spmv_cuda_fail(err, SPMV_ENOMEM, "row pointers (%zu bytes)", b);
        rc = spmv_cuda_status(cudaMemcpy(ptr, M->D.idx[0], b, cudaMemcpyDeviceToHost),
                              "download of the row pointers", err);
        F.idx[0] = ptr;
    }
    if (!rc) rc = spmv_cuda_plan_create_on(M, &F, c, out, err);
    free(ptr);
    return rc;
}

/* ---- Device conversions (kernels/convert.cu reads and makes matrices through these) ---- */

#include "convert.cuh"

const spmv_dfmt *spmv_cuda_matrix_dfmt(const spmv_cuda_matrix *M, int *elem_size) {
    *elem_size = M->elem_size;
    return &M->D;
}

int spmv_cuda_matrix_adopt(const spmv_dfmt *D, void *const *dev, void *x, void *y, int elem_size,
                           spmv_cuda_matrix **out, spmv_err *err) {
    *out = NULL;
    spmv_cuda_matrix *M = (spmv_cuda_matrix *)calloc(1, sizeof *M);
    if (M == NULL) { /* the conversion waited for its stream: nothing uses them */
        for (int k = 0; k < SPMV_MAXIDX + SPMV_MAXVAL; k++)
            if (dev[k]) cudaFreeAsync(dev[k], 0);
        if (x) cudaFreeAsync(x, 0);
        if (y) cudaFreeAsync(y, 0);
        cudaGetLastError();
        return spmv_cuda_fail(err, SPMV_ENOMEM, "a device matrix (%zu bytes)", sizeof *M);
    }
    M->D = *D;
    M->elem_size = elem_size;
    M->pooled = 1;
    for (int k = 0; k < SPMV_MAXIDX + SPMV_MAXVAL; k++) M->dev[k] = dev[k];
    for (int k = 0; k < SPMV_MAXIDX; k++) M->bytes += D->nidx[k] * (int64_t)sizeof(int32_t);
    for (int k = 0; k < SPMV_MAXVAL; k++) M->bytes += D->nval[k] * (int64_t)elem_size;
    M->x = x;
    M->y = y;
    M->bytes += ((int64_t)D->ncols + D->nrows) * elem_size;
    *out = M;
    return SPMV_OK;
}
