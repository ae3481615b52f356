// kernels/plan.cu: a configuration bound to a matrix on the device — upload, setup, checked and timed
// products
// SPDX-License-Identifier: BSD-3-Clause
//
// Creation does everything once (uploads, the kernel's workspace, cuSPARSE's handle and buffer, x
// and y), so that a timed product is its launches between two events and nothing else.
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "kern.h"
#include "spmv_cuda.h"

struct spmv_cuda_plan {
    const spmv_kernel_desc *K;
    const spmv_cuda_kernel *ops; /* own kernel, or NULL for cuSPARSE */
    spmv_cusparse *cs;
    spmv_dfmt D;
    spmv_launch L;
    int elem_size;
    void *dev[SPMV_MAXIDX + SPMV_MAXVAL]; /* uploaded arrays */
    void *aux, *x, *y;
    cudaStream_t s;
    cudaEvent_t e0, e1;
    long long spin_cycles; /* the queue-ahead wait before each timed product */
    int64_t bytes;
    double setup_ms;
};

static const spmv_cuda_kernel *const own[] = {
    &spmv_cu_csr_scalar, &spmv_cu_csr_vector, &spmv_cu_csr_adaptive, &spmv_cu_coo, &spmv_cu_ell,
    &spmv_cu_sell,       &spmv_cu_broell,     &spmv_cu_hyb,          &spmv_cu_dia, &spmv_cu_jad,
};

static const spmv_cuda_kernel *find_own(int format, int variant) {
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (own[i]->format == format && own[i]->variant == variant) return own[i];
    return NULL;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int dev_alloc(spmv_cuda_plan *p, int64_t bytes, const char *what, void **out,
                     spmv_err *err) {
    int rc = spmv_cuda_malloc(out, bytes, what, err);
    if (rc == SPMV_OK && bytes > 0) p->bytes += bytes;
    return rc;
}

static int upload(spmv_cuda_plan *p, const spmv_fmt *F, spmv_err *err) {
    spmv_dfmt *D = &p->D;
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
        rc = dev_alloc(p, b, "a matrix index array", &p->dev[k], err);
        if (!rc && b > 0)
            rc = spmv_cuda_status(
                cudaMemcpy(p->dev[k], F->idx[k], (size_t)b, cudaMemcpyHostToDevice),
                "upload of an index array", err);
        D->idx[k] = (const int32_t *)p->dev[k];
    }
    for (int k = 0; k < SPMV_MAXVAL && !rc; k++) {
        int64_t b = F->nval[k] * (int64_t)p->elem_size;
        D->nval[k] = F->nval[k];
        rc = dev_alloc(p, b, "a matrix value array", &p->dev[SPMV_MAXIDX + k], err);
        if (!rc && b > 0)
            rc = spmv_cuda_status(
                cudaMemcpy(p->dev[SPMV_MAXIDX + k], F->val[k], (size_t)b, cudaMemcpyHostToDevice),
                "upload of a value array", err);
        D->val[k] = p->dev[SPMV_MAXIDX + k];
    }
    return rc;
}

static int check_args(const spmv_fmt *F, const spmv_kernel_desc *K, const int32_t launch[2],
                      int elem_size, spmv_err *err) {
    if (K == NULL || K->device != SPMV_DEV_CUDA)
        return spmv_cuda_fail(err, SPMV_EINVAL, "kernel %s is not a CUDA kernel",
                              K ? K->id : "(null)");
    if (F->format != K->format)
        return spmv_cuda_fail(err, SPMV_EINVAL, "kernel %s takes format %s, not %s", K->id,
                              spmv_format_name(K->format), spmv_format_name(F->format));
    if (elem_size != 4 && elem_size != 8)
        return spmv_cuda_fail(err, SPMV_EINVAL, "elem_size %d is not 4 or 8", elem_size);
    int32_t bs = launch[1];
    if (K->library == SPMV_LIB_PYSPMV && (bs < 32 || bs > 1024 || bs % 32 != 0))
        return spmv_cuda_fail(err, SPMV_EINVAL,
                              "bs=%d: the block size must be a multiple of 32 in [32, 1024]", bs);
    return spmv_fmt_check(F, err); /* a state from Python: lengths, ranges, before any upload */
}

static int setup_kernel(spmv_cuda_plan *p, const spmv_fmt *F, spmv_err *err) {
    if (p->K->library == SPMV_LIB_CUSPARSE)
        return spmv_cusparse_create(&p->D, p->K->kernel, p->elem_size, p->x, p->y, p->s, &p->cs,
                                    err);
    p->ops = find_own(p->K->format, p->K->kernel);
    if (p->ops == NULL)
        return spmv_cuda_fail(err, SPMV_EINVAL, "no CUDA kernel %s (variant %d) in this build",
                              p->K->id, p->K->kernel);
    int64_t aux = 0;
    int rc = p->ops->prepare ? p->ops->prepare(F, &p->L, &aux, err) : SPMV_OK;
    if (!rc) rc = dev_alloc(p, aux, "the kernel's workspace", &p->aux, err);
    if (!rc && p->ops->setup) rc = p->ops->setup(F, &p->D, &p->L, p->aux, p->s, err);
    return rc;
}

int spmv_cuda_plan_create(const spmv_fmt *F, const spmv_kernel_desc *K, const int32_t launch[2],
                          int elem_size, spmv_cuda_plan **out, spmv_err *err) {
    *out = NULL;
    int n, rc = spmv_cuda_device_count(&n, err);
    if (rc) return rc;
    rc = check_args(F, K, launch, elem_size, err);
    if (rc) return rc;
    spmv_cuda_plan *p = (spmv_cuda_plan *)calloc(1, sizeof *p);
    if (p == NULL) return spmv_cuda_fail(err, SPMV_ENOMEM, "a plan (%zu bytes)", sizeof *p);
    p->K = K;
    p->L.tpv = launch[0];
    p->L.block = launch[1];
    p->elem_size = elem_size;
    double t0 = now_ms();
    rc = spmv_cuda_status(cudaStreamCreateWithFlags(&p->s, cudaStreamNonBlocking),
                          "cudaStreamCreate", err);
    if (!rc) rc = spmv_cuda_status(cudaEventCreate(&p->e0), "cudaEventCreate", err);
    if (!rc) rc = spmv_cuda_status(cudaEventCreate(&p->e1), "cudaEventCreate", err);
    if (!rc) rc = upload(p, F, err);
    if (!rc) rc = dev_alloc(p, (int64_t)F->ncols * elem_size, "x", &p->x, err);
    if (!rc) rc = dev_alloc(p, (int64_t)F->nrows * elem_size, "y", &p->y, err);
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

/* One product on the plan's stream, asynchronous. */
static int launch(spmv_cuda_plan *p, spmv_err *err) {
    if (p->cs) return spmv_cusparse_run(p->cs, err);
    cudaError_t e =
        p->elem_size == 4
            ? p->ops->run_f32(&p->D, &p->L, p->aux, (const float *)p->x, (float *)p->y, p->s)
            : p->ops->run_f64(&p->D, &p->L, p->aux, (const double *)p->x, (double *)p->y, p->s);
    return spmv_cuda_status(e, p->K->id, err);
}

static int put_x(spmv_cuda_plan *p, const void *x, spmv_err *err) {
    size_t b = (size_t)p->D.ncols * (size_t)p->elem_size;
    return spmv_cuda_status(cudaMemcpyAsync(p->x, x, b, cudaMemcpyHostToDevice, p->s),
                            "upload of x", err);
}

static int get_y(spmv_cuda_plan *p, void *y, spmv_err *err) {
    size_t b = (size_t)p->D.nrows * (size_t)p->elem_size;
    int rc = spmv_cuda_status(cudaMemcpyAsync(y, p->y, b, cudaMemcpyDeviceToHost, p->s),
                              "download of y", err);
    return rc ? rc : spmv_cuda_status(cudaStreamSynchronize(p->s), p->K->id, err);
}

int spmv_cuda_plan_mv(spmv_cuda_plan *p, const void *x, void *y, spmv_err *err) {
    int rc = put_x(p, x, err);
    /* all bits set is a NaN in float and double: an entry the kernel never writes cannot pass */
    if (!rc)
        rc = spmv_cuda_status(cudaMemsetAsync(p->y, 0xFF, (size_t)p->D.nrows * p->elem_size, p->s),
                              "poisoning y", err);
    if (!rc) rc = launch(p, err);
    return rc ? rc : get_y(p, y, err);
}

/* Keeps the stream busy while the host queues the first event, the product and the second event
 * behind it, so that the events time the GPU's work alone and not the host's launch latency
 * (several microseconds, as much as a small product itself takes). */
__global__ void spin(long long cycles) {
    long long t0 = clock64();
    while (clock64() - t0 < cycles) {
    }
}

static int timed_product(void *ctx, double *ms, spmv_err *err) {
    spmv_cuda_plan *p = (spmv_cuda_plan *)ctx;
    spin<<<1, 1, 0, p->s>>>(p->spin_cycles);
    int rc = spmv_cuda_status(cudaGetLastError(), "the queue-ahead wait", err);
    if (!rc) rc = spmv_cuda_status(cudaEventRecord(p->e0, p->s), "cudaEventRecord", err);
    if (!rc) rc = launch(p, err);
    if (!rc) rc = spmv_cuda_status(cudaEventRecord(p->e1, p->s), "cudaEventRecord", err);
    if (!rc) rc = spmv_cuda_status(cudaEventSynchronize(p->e1), p->K->id, err);
    float t = 0;
    if (!rc)
        rc = spmv_cuda_status(cudaEventElapsedTime(&t, p->e0, p->e1), "cudaEventElapsedTime", err);
    *ms = t;
    return rc;
}

int spmv_cuda_plan_bench(spmv_cuda_plan *p, const void *x, void *y, int warmup, int repeats,
                         double budget_s, spmv_timing *out, spmv_err *err) {
    int clock_khz = 0, rc = put_x(p, x, err);
    if (!rc)
        rc = spmv_cuda_status(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0),
                              "cudaDeviceGetAttribute(clock rate)", err);
    p->spin_cycles = 50LL * clock_khz / 1000; /* 50 us: longer than queueing any product */
    if (!rc) rc = spmv_time(timed_product, p, warmup, repeats, budget_s, out, err);
    if (!rc && y != NULL) rc = get_y(p, y, err);
    return rc;
}

int64_t spmv_cuda_plan_bytes(const spmv_cuda_plan *p) { return p->bytes; }

double spmv_cuda_plan_setup_ms(const spmv_cuda_plan *p) { return p->setup_ms; }

void spmv_cuda_plan_free(spmv_cuda_plan *p) {
    if (p == NULL) return;
    if (p->s) cudaStreamSynchronize(p->s);
    spmv_cusparse_free(p->cs);
    for (int k = 0; k < SPMV_MAXIDX + SPMV_MAXVAL; k++) cudaFree(p->dev[k]);
    cudaFree(p->aux);
    cudaFree(p->x);
    cudaFree(p->y);
    if (p->e0) cudaEventDestroy(p->e0);
    if (p->e1) cudaEventDestroy(p->e1);
    if (p->s) cudaStreamDestroy(p->s);
    cudaGetLastError();
    free(p);
}
