// kernels/nocuda.c: spmv_cuda.h for builds without CUDA kernels — every call says why there is no GPU
// SPDX-License-Identifier: BSD-3-Clause
#include "spmv_cuda.h"

#include "spmv_config.h"

#include <stdio.h>

int spmv_cuda_device_count(int *count, spmv_err *err) {
    *count = 0;
    if (err != NULL) {
        err->code = SPMV_ENODEVICE;
        err->where = err->value = err->limit = -1;
        snprintf(err->msg, sizeof err->msg, "%s",
                 SPMV_HAVE_NVCC ? "this pyspmv build has no CUDA kernels yet (they arrive per format "
                                  "in kernels/); GPU configurations cannot run"
                                : "pyspmv was built without CUDA: nvcc not found or -Dcuda=disabled");
    }
    return SPMV_ENODEVICE;
}
