// kernels/spmv_cuda.h: the C-callable face of pyspmv's CUDA side
// SPDX-License-Identifier: BSD-3-Clause
#ifndef SPMV_CUDA_H
#define SPMV_CUDA_H

#include "spmv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Number of usable CUDA devices in *count.  Returns 0, or SPMV_ENODEVICE with the reason in err->msg
 * (built without CUDA kernels, no driver, no device). */
int spmv_cuda_device_count(int *count, spmv_err *err);

#ifdef __cplusplus
}
#endif

#endif /* SPMV_CUDA_H */
