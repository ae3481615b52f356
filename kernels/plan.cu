// kernels/plan.cu: a configuration bound to a matrix on the device — upload, setup, checked and timed
// products
// SPDX-License-Identifier: BSD-3-Clause
//
// Creation does everything once (uploads, the kernel's workspace, cuSPARSE's handle and buffer, x
// and y), so that a timed product is its launches between two events and nothing else.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "kern.h"
#include "spmv_cuda.h"

/* A converted matrix on the device: its arrays, x and y.  Shared by the plans of every thread
 * mapping of one format (benchmarks upload once per format, not once per configuration). */
struct spmv_cuda_matrix {
    spmv_dfmt D;
    int elem_size;
    void *dev[SPMV_MAXIDX + SPMV_MAXVAL]; /* uploaded arrays */
    void *x, *y;
    int64_t bytes;
    double upload_ms;
};

/* Products of one timed batch: each between its own pair of events, all queued behind one gate. */
#define BATCH 32

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
};

/* The own kernel of each registry entry, in registry order (csrc/kernels.def: NULL for a CPU or
 * cuSPARSE line), indexed by a configuration's kernel: no lookup by id. */
static const spmv_cuda_kernel *const own[] = {
#define SPMV_CPU(id, CODE, variant, ...) NULL,
#define SPMV_OWN(sym, id, CODE, ...) &spmv_cu_##sym,
#define SPMV_CUSPARSE(id, CODE, alg, ...) NULL,
#include "kernels.def"
};

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int dev_alloc(int64_t *held, int64_t bytes, const char *what, void **out, spmv_err *err) {
    int rc = spmv_cuda_malloc(out, bytes, what, err);
    if (rc == SPMV_OK && bytes > 0) *held += bytes;
    return rc;
}

static int put(void *dst, const void *src, int64_t bytes, const char *what, spmv_err *err) {
    if (bytes <= 0) return SPMV_OK;
    return spmv_cuda_status(cudaMemcpy(dst, src, (size_t)bytes, cudaMemcpyHostToDevice), what, err);
}

static int upload(spmv_cuda_matrix *M, const spmv_fmt *F, spmv_err *err) {
    spmv_dfmt *D = &M->D;
    D->format = F->format;
    D->nrows = F->nrows;
    D->ncols = F->ncols;
    D->nnz = F->nnz;
    memcpy(D->param, F->param, sizeof D->param);
    memcpy(D->scalar, F->scalar, sizeof D->scalar);
    int rc = SPMV_OK;
    for (int k = 0; k < SPMV_MAXIDX && !rc; k++) {
        int64_t b = F->nidx[k] * (int64_t)sizeof(int32_t);
        D->nidx[k] = F->nidx[k];
        rc = dev_alloc(&M->bytes, b, "a matrix index array", &M->dev[k], err);
        if (!rc) rc = put(M->dev[k], F->idx[k], b, "upload of an index array", err);
        D->idx[k] = (const int32_t *)M->dev[k];
    }
    for (int k = 0; k < SPMV_MAXVAL && !rc; k++) {
        int64_t b = F->nval[k] * (int64_t)M->elem_size;
        D->nval[k] = F->nval[k];
        rc = dev_alloc(&M->bytes, b, "a matrix value array", &M->dev[SPMV_MAXIDX + k], err);
        if (!rc) rc = put(M->dev[SPMV_MAXIDX + k], F->val[k], b, "upload of a value array", err);
        D->val[k] = M->dev[SPMV_MAXIDX + k];
    }
    return rc;
}

int spmv_cuda_matrix_create(const spmv_fmt *F, int elem_size, spmv_cuda_matrix **out,
                            spmv_err *err) {
    *out = NULL;
    int n, rc = spmv_cuda_device_count(&n, err);
    if (rc) return rc;
    if (elem_size != 4 && elem_size != 8)
        return spmv_cuda_fail(err, SPMV_EINVAL, "elem_size %d is not 4 or 8", elem_size);
    rc = spmv_fmt_check(F, err); /* a state from Python: lengths, ranges, before any upload */
    if (rc) return rc;
    spmv_cuda_matrix *M = (spmv_cuda_matrix *)calloc(1, sizeof *M);
    if (M == NULL)
        return spmv_cuda_fail(err, SPMV_ENOMEM, "a device matrix (%zu bytes)", sizeof *M);
    M->elem_size = elem_size;
    double t0 = now_ms();
    rc = upload(M, F, err);
    if (!rc) rc = dev_alloc(&M->bytes, (int64_t)F->ncols * elem_size, "x", &M->x, err);
    if (!rc) rc = dev_alloc(&M->bytes, (int64_t)F->nrows * elem_size, "y", &M->y, err);
    M->upload_ms = now_ms() - t0;
    if (rc) {
        spmv_cuda_matrix_free(M);
        return rc;
    }
    *out = M;
    return SPMV_OK;
}

int64_t spmv_cuda_matrix_bytes(const spmv_cuda_matrix *M) { return M->bytes; }

double spmv_cuda_matrix_upload_ms(const spmv_cuda_matrix *M) { return M->upload_ms; }

void spmv_cuda_matrix_free(spmv_cuda_matrix *M) {
    if (M == NULL) return;
    for (int k = 0; k < SPMV_MAXIDX + SPMV_MAXVAL; k++) cudaFree(M->dev[k]);
    cudaFree(M->x);
    cudaFree(M->y);
    cudaGetLastError();
    free(M);
}

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
    rc = spmv_cuda_status(cudaStreamCreateWithFlags(&p->s, cudaStreamNonBlocking),
                          "cudaStreamCreate", err);
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

/* One product on the plan's stream, asynchronous. */
static int launch(spmv_cuda_plan *p, spmv_err *err) {
    if (p->cs) return spmv_cusparse_run(p->cs, err);
    const spmv_cuda_matrix *M = p->M;
    cudaError_t e =
        M->elem_size == 4
            ? p->ops->run_f32(&M->D, &p->L, p->aux, (const float *)M->x, (float *)M->y, p->s)
            : p->ops->run_f64(&M->D, &p->L, p->aux, (const double *)M->x, (double *)M->y, p->s);
    return spmv_cuda_status(e, p->K->id, err);
}

static int put_x(spmv_cuda_plan *p, const void *x, spmv_err *err) {
    size_t b = (size_t)p->M->D.ncols * (size_t)p->M->elem_size;
    return spmv_cuda_status(cudaMemcpyAsync(p->M->x, x, b, cudaMemcpyHostToDevice, p->s),
                            "upload of x", err);
}

static int get_y(spmv_cuda_plan *p, void *y, spmv_err *err) {
    size_t b = (size_t)p->M->D.nrows * (size_t)p->M->elem_size;
    int rc = spmv_cuda_status(cudaMemcpyAsync(y, p->M->y, b, cudaMemcpyDeviceToHost, p->s),
                              "download of y", err);
    return rc ? rc : spmv_cuda_status(cudaStreamSynchronize(p->s), p->K->id, err);
}

int spmv_cuda_plan_mv(spmv_cuda_plan *p, const void *x, void *y, spmv_err *err) {
    int rc = put_x(p, x, err);
    /* all bits set is a NaN in float and double: an entry the kernel never writes cannot pass */
    if (!rc)
        rc = spmv_cuda_status(
            cudaMemsetAsync(p->M->y, 0xFF, (size_t)p->M->D.nrows * p->M->elem_size, p->s),
            "poisoning y", err);
    if (!rc) rc = launch(p, err);
    return rc ? rc : get_y(p, y, err);
}

/* Holds the stream until the host has queued a whole batch behind it (open[0] set), so that the
 * events time the GPU's work alone and not the host's launch latency (several microseconds, as
 * much as a small product itself takes).  Gives up after max_cycles and says so in open[1]: the
 * batch is then timed again. */
__global__ void gate_wait(volatile int *open, long long max_cycles) {
    long long t0 = clock64();
    while (open[0] == 0)
        if (clock64() - t0 > max_cycles) {
            open[1] = 1;
            return;
        }
}

/* Queue n products behind a closed gate, each between events ev[2k] and ev[2k+1], open the gate,
 * wait for the last, and read the n times into t[n]. */
static int timed_batch(spmv_cuda_plan *p, int n, long long max_cycles, double *t, int *late,
                       spmv_err *err) {
    p->gate[0] = p->gate[1] = 0;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    gate_wait<<<1, 1, 0, p->s>>>((volatile int *)p->gate_dev, max_cycles);
    int rc = spmv_cuda_status(cudaGetLastError(), "the timing gate", err);
    for (int k = 0; k < n && !rc; k++) {
        rc = spmv_cuda_status(cudaEventRecord(p->ev[2 * k], p->s), "cudaEventRecord", err);
        if (!rc) rc = launch(p, err);
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
        t[k] = ms;
    }
    *late = p->gate[1];
    return rc;
}

int spmv_cuda_plan_bench(spmv_cuda_plan *p, const void *x, void *y, int warmup, int repeats,
                         double budget_s, spmv_timing *out, spmv_err *err) {
    if (repeats < 1 || warmup < 0)
        return spmv_cuda_fail(err, SPMV_EINVAL, "repeats (%d) must be >= 1 and warmup (%d) >= 0",
                              repeats, warmup);
    int clock_khz = 0, rc = bench_init(p, err);
    if (!rc) rc = put_x(p, x, err);
    if (!rc)
        rc = spmv_cuda_status(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0),
                              "cudaDeviceGetAttribute(clock rate)", err);
    /* 200 ms: far longer than queueing a batch, short enough that a host descheduled meanwhile
     * costs one batch again, not a hang */
    long long max_cycles = 200LL * clock_khz;
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
        rc = timed_batch(p, want, max_cycles, t + n, &late, err);
        if (!rc && late && retries++ < 3) continue; /* the gate gave up: time the batch again */
        for (int k = 0; !rc && k < want; k++) spent += t[n + k];
        if (!rc) n += want;
    }
    if (!rc) spmv_timing_summary(t, n, out);
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
    if (p->s) cudaStreamDestroy(p->s);
    if (p->owns_matrix) spmv_cuda_matrix_free(p->M);
    cudaGetLastError();
    free(p);
}
