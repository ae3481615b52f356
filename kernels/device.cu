// kernels/device.cu: the GPU itself — is there one, what is it, how fast does it copy
// SPDX-License-Identifier: BSD-3-Clause
#include <cusparse.h>

#include <cstdarg>
#include <cstdio>

#include "kern.h"
#include "spmv_cuda.h"

int spmv_cuda_fail(spmv_err *err, int code, const char *fmt, ...) {
    if (err != NULL) {
        err->code = code;
        err->where = err->value = err->limit = -1;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

int spmv_cuda_status(cudaError_t e, const char *what, spmv_err *err) {
    if (e == cudaSuccess) return SPMV_OK;
    cudaGetLastError(); /* clear a sticky-free error so that later calls are not blamed for it */
    int code = e == cudaErrorMemoryAllocation ? SPMV_ENOMEM : SPMV_ECUDA;
    return spmv_cuda_fail(err, code, "%s: %s", what, cudaGetErrorString(e));
}

int spmv_cuda_malloc(void **out, int64_t bytes, const char *what, spmv_err *err) {
    *out = NULL;
    if (bytes <= 0) return SPMV_OK;
    cudaError_t e = cudaMalloc(out, (size_t)bytes);
    if (e != cudaErrorMemoryAllocation) return spmv_cuda_status(e, what, err);
    cudaGetLastError();
    *out = NULL;
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    spmv_cuda_fail(err, SPMV_ENOMEM,
                   "GPU out of memory: %s needs %lld bytes, %lld of %lld bytes free", what,
                   (long long)bytes, (long long)free_b, (long long)total_b);
    if (err) err->value = bytes, err->limit = (int64_t)free_b;
    return SPMV_ENOMEM;
}

int spmv_cuda_device_count(int *count, spmv_err *err) {
    *count = 0;
    cudaError_t e = cudaGetDeviceCount(count);
    if (e != cudaSuccess) {
        cudaGetLastError();
        *count = 0;
        return spmv_cuda_fail(err, SPMV_ENODEVICE, "no usable CUDA device: %s (%s)",
                              cudaGetErrorString(e), cudaGetErrorName(e));
    }
    if (*count == 0)
        return spmv_cuda_fail(err, SPMV_ENODEVICE,
                              "no CUDA device visible (check CUDA_VISIBLE_DEVICES and the driver)");
    return SPMV_OK;
}

static int attr(cudaDeviceAttr a) {
    int v = 0;
    if (cudaDeviceGetAttribute(&v, a, 0) != cudaSuccess) {
        cudaGetLastError();
        v = 0;
    }
    return v;
}

int spmv_cuda_get_info(spmv_cuda_info *info, spmv_err *err) {
    int n, rc = spmv_cuda_device_count(&n, err);
    if (rc) return rc;
    cudaDeviceProp prop;
    rc = spmv_cuda_status(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties", err);
    if (rc) return rc;
    snprintf(info->name, sizeof info->name, "%s", prop.name);
    info->cc_major = prop.major;
    info->cc_minor = prop.minor;
    info->sm_count = prop.multiProcessorCount;
    info->max_threads_per_sm = prop.maxThreadsPerMultiProcessor;
    info->max_threads_per_block = prop.maxThreadsPerBlock;
    info->warp_size = prop.warpSize;
    info->clock_khz = attr(cudaDevAttrClockRate);
    info->mem_clock_khz = attr(cudaDevAttrMemoryClockRate);
    info->mem_bus_bits = attr(cudaDevAttrGlobalMemoryBusWidth);
    info->l2_bytes = prop.l2CacheSize;
    info->l2_persist_max = attr(cudaDevAttrMaxPersistingL2CacheSize);
    size_t limit = 0;
    if (cudaDeviceGetLimit(&limit, cudaLimitPersistingL2CacheSize) != cudaSuccess) {
        cudaGetLastError();
        limit = 0;
    }
    info->l2_persist_limit = (int64_t)limit;
    info->global_mem_bytes = (int64_t)prop.totalGlobalMem;
    rc = spmv_cuda_status(cudaDriverGetVersion(&info->driver_version), "cudaDriverGetVersion", err);
    if (rc == SPMV_OK)
        rc = spmv_cuda_status(cudaRuntimeGetVersion(&info->runtime_version),
                              "cudaRuntimeGetVersion", err);
    if (rc == SPMV_OK) rc = spmv_cusparse_version(&info->cusparse_version, err);
    return rc;
}

typedef struct {
    void *dst;
    const void *src;
    size_t bytes;
    cudaEvent_t e0, e1;
} copy_work;

static int copy_once(void *ctx, double *ms, spmv_err *err) {
    copy_work *w = (copy_work *)ctx;
    cudaEventRecord(w->e0);
    cudaMemcpyAsync(w->dst, w->src, w->bytes, cudaMemcpyDeviceToDevice);
    cudaEventRecord(w->e1);
    int rc = spmv_cuda_status(cudaEventSynchronize(w->e1), "device-to-device copy", err);
    float t = 0;
    if (!rc)
        rc = spmv_cuda_status(cudaEventElapsedTime(&t, w->e0, w->e1), "cudaEventElapsedTime", err);
    *ms = t;
    return rc;
}

/* Median of `repeats` event-timed copies: a bandwidth reference in the same run as the kernels. */
int spmv_cuda_copy_bandwidth(int64_t bytes, int repeats, double *gbps, spmv_err *err) {
    int n, rc = spmv_cuda_device_count(&n, err);
    if (rc) return rc;
    if (bytes < 1)
        return spmv_cuda_fail(err, SPMV_EINVAL, "bytes (%lld) must be >= 1", (long long)bytes);
    void *a = NULL, *b = NULL;
    copy_work w = {NULL, NULL, (size_t)bytes, NULL, NULL};
    rc = spmv_cuda_malloc(&a, bytes, "the copy's source", err);
    if (!rc) rc = spmv_cuda_malloc(&b, bytes, "the copy's target", err);
    if (!rc) rc = spmv_cuda_status(cudaMemset(a, 1, w.bytes), "cudaMemset", err);
    if (!rc) rc = spmv_cuda_status(cudaEventCreate(&w.e0), "cudaEventCreate", err);
    if (!rc) rc = spmv_cuda_status(cudaEventCreate(&w.e1), "cudaEventCreate", err);
    spmv_timing t;
    w.dst = b;
    w.src = a;
    if (!rc) rc = spmv_time(copy_once, &w, 3, repeats, 0.0, &t, err);
    if (!rc) *gbps = 2.0 * (double)bytes / (t.median_ms * 1e6);
    if (w.e0) cudaEventDestroy(w.e0);
    if (w.e1) cudaEventDestroy(w.e1);
    cudaFree(a);
    cudaFree(b);
    return rc;
}

int spmv_cuda_host_pin(void *ptr, int64_t bytes, spmv_err *err) {
    if (ptr == NULL || bytes < 1)
        return spmv_cuda_fail(err, SPMV_EINVAL, "a buffer to pin needs an address and bytes >= 1");
    int n, rc = spmv_cuda_device_count(&n, err);
    return rc ? rc
              : spmv_cuda_status(cudaHostRegister(ptr, (size_t)bytes, cudaHostRegisterDefault),
                                 "cudaHostRegister", err);
}

int spmv_cuda_host_unpin(void *ptr, spmv_err *err) {
    if (ptr == NULL) return spmv_cuda_fail(err, SPMV_EINVAL, "a buffer to unpin needs an address");
    return spmv_cuda_status(cudaHostUnregister(ptr), "cudaHostUnregister", err);
}
