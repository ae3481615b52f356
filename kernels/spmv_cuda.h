// kernels/spmv_cuda.h: the C-callable face of pyspmv's CUDA side — device, plans, timed products
// SPDX-License-Identifier: BSD-3-Clause
//
// A plan is one configuration (registry kernel + thread mapping) bound to one converted matrix on
// the device: its arrays uploaded, the kernel's workspace or cuSPARSE's handle, descriptors and
// buffer made, x and y allocated.  Everything a product needs is made at creation, so that a timed
// run is the launches alone.  Device 0 of the visible devices (CUDA_VISIBLE_DEVICES picks others).
#ifndef SPMV_CUDA_H
#define SPMV_CUDA_H

#include "spmv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Number of usable CUDA devices in *count.  Returns 0, or SPMV_ENODEVICE with the reason in
 * err->msg (no driver, no device, driver older than the runtime). */
int spmv_cuda_device_count(int *count, spmv_err *err);

/* What a table of GPU timings must record about the device and the software. */
typedef struct {
    char name[256];
    int cc_major, cc_minor;
    int sm_count, max_threads_per_sm, max_threads_per_block, warp_size;
    int clock_khz, mem_clock_khz, mem_bus_bits; /* as the runtime reports them (0 if it cannot) */
    int64_t l2_bytes, global_mem_bytes;
    int driver_version, runtime_version, cusparse_version; /* major*1000 + minor*10 (CUDA's way) */
} spmv_cuda_info;

int spmv_cuda_get_info(spmv_cuda_info *info, spmv_err *err);

/* Device-to-device copy bandwidth in GB/s, counting bytes read plus bytes written, over a buffer of
 * `bytes` (median of `repeats` timed copies after a warm-up).  The reference every kernel's
 * effective bandwidth is compared with, measured in the same run. */
int spmv_cuda_copy_bandwidth(int64_t bytes, int repeats, double *gbps, spmv_err *err);

typedef struct spmv_cuda_plan spmv_cuda_plan;

/* Make a plan for kernel K with thread mapping launch[2] = {tpv, block} over F (host arrays, filled
 * for K's format with elem_size 4 or 8).  Returns 0 and *out (the caller's, for spmv_cuda_plan_free),
 * SPMV_ENODEVICE, SPMV_ENOMEM (device memory: err->value = bytes asked for, err->limit = bytes free),
 * SPMV_ENOTAPPLICABLE, SPMV_EINVAL, SPMV_ECUDA or SPMV_ECUSPARSE.  Synchronous. */
int spmv_cuda_plan_create(const spmv_fmt *F, const spmv_kernel_desc *K, const int32_t launch[2],
                          int elem_size, spmv_cuda_plan **out, spmv_err *err);

/* y[nrows] = A x[ncols] (host arrays of the plan's type): x uploaded, y on the device poisoned with
 * NaN so that entries a kernel fails to write show, one product, y downloaded.  Synchronous. */
int spmv_cuda_plan_mv(spmv_cuda_plan *p, const void *x, void *y, spmv_err *err);

/* Upload x once, then time products with spmv_time(): `warmup` untimed, then up to `repeats` each
 * between two CUDA events recorded around the launches alone, within budget_s seconds of timed
 * runs.  Before each, a 50-microsecond wait kernel holds the stream while the host queues the
 * events and the launches behind it, so the events measure the GPU's time for the product, not
 * the host's launch latency.  y[nrows] (host, may be NULL) receives the last product. */
int spmv_cuda_plan_bench(spmv_cuda_plan *p, const void *x, void *y, int warmup, int repeats,
                         double budget_s, spmv_timing *out, spmv_err *err);

/* Device bytes the plan holds: matrix arrays, workspace or cuSPARSE buffer, x and y. */
int64_t spmv_cuda_plan_bytes(const spmv_cuda_plan *p);

/* Milliseconds plan_create spent uploading the matrix and setting up the kernel or cuSPARSE. */
double spmv_cuda_plan_setup_ms(const spmv_cuda_plan *p);

/* Free everything of p (NULL is fine). */
void spmv_cuda_plan_free(spmv_cuda_plan *p);

#ifdef __cplusplus
}
#endif

#endif /* SPMV_CUDA_H */
