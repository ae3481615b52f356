// csrc/registry.c: the registry of kernels, the single source of truth for configurations
// SPDX-License-Identifier: BSD-3-Clause
//
// The entries are csrc/kernels.def's lines; pyspmv.configs() expands each over its parameter grid.  A named
// parameter with an empty grid stays out of generated ids and takes param_default (HYB's ELL width:
// -1 = Bell-Garland), though an id may still set it ("cpu/hyb/k=4").  The GPU entries live here
// too, so that configurations can be listed, featurised and ranked on machines without a GPU.
#include "spmv_internal.h"

#include <string.h>

static const spmv_kernel_desc kernels[] = {
#define SPMV_CPU(name, CODE, variant, ...)                                                         \
    {.id = name,                                                                                   \
     .device = SPMV_DEV_CPU,                                                                       \
     .library = SPMV_LIB_PYSPMV,                                                                   \
     .format = SPMV_FMT_##CODE,                                                                    \
     .kernel = variant,                                                                            \
     __VA_ARGS__},
#define SPMV_OWN(sym, name, CODE, ...)                                                             \
    {.id = name,                                                                                   \
     .device = SPMV_DEV_CUDA,                                                                      \
     .library = SPMV_LIB_PYSPMV,                                                                   \
     .format = SPMV_FMT_##CODE,                                                                    \
     __VA_ARGS__},
#define SPMV_CUSPARSE(name, CODE, alg, ...)                                                        \
    {.id = name,                                                                                   \
     .device = SPMV_DEV_CUDA,                                                                      \
     .library = SPMV_LIB_CUSPARSE,                                                                 \
     .format = SPMV_FMT_##CODE,                                                                    \
     .kernel = alg,                                                                                \
     __VA_ARGS__},
#include "kernels.def"
};

int spmv_kernel_count(void) { return (int)(sizeof kernels / sizeof kernels[0]); }

const spmv_kernel_desc *spmv_kernel_get(int i) {
    return i >= 0 && i < spmv_kernel_count() ? &kernels[i] : NULL;
}

const spmv_kernel_desc *spmv_kernel_find(const char *id) {
    for (int i = 0; id != NULL && i < spmv_kernel_count(); i++)
        if (strcmp(kernels[i].id, id) == 0) return &kernels[i];
    return NULL;
}
