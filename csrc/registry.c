// csrc/registry.c: the registry of kernels, the single source of truth for configurations
// SPDX-License-Identifier: BSD-3-Clause
//
// The entries are csrc/kernels.def's lines; csrc/config.c expands each over its parameter grid.  A named
// parameter with an empty grid stays out of generated ids and takes param_default (HYB's ELL width:
// -1 = Bell-Garland), though an id may still set it ("cpu/hyb/k=4").  The GPU entries live here
// too, so that configurations can be listed, featurised and ranked on machines without a GPU.
#include "spmv_internal.h"

#include <string.h>

static const spmv_kernel_desc kernels[] = {
/* One entry shape; the three line kinds of kernels.def differ only in device, library and kernel,
 * and a cuSPARSE line names cuSPARSE's format and algorithm (kept as strings: no cusparse.h here). */
#define SPMV_ENTRY(name, dev, lib, CODE, kern, cformat, calg, ...)                                 \
    {.id = name,                                                                                   \
     .device = dev,                                                                                \
     .library = lib,                                                                               \
     .format = SPMV_FMT_##CODE,                                                                    \
     .kernel = kern,                                                                               \
     __VA_ARGS__,                                                                                  \
     .cusparse_format = cformat,                                                                   \
     .cusparse_alg = calg},
/* Designators in the struct's order (C++ compilers of the exported headers require it). */
#define SPMV_CPU(name, CODE, variant, ...)                                                         \
    SPMV_ENTRY(name, SPMV_DEV_CPU, SPMV_LIB_PYSPMV, CODE, variant, NULL, NULL, __VA_ARGS__)
#define SPMV_OWN(sym, name, CODE, ...) /* found by registry index: no kernel number */             \
    SPMV_ENTRY(name, SPMV_DEV_CUDA, SPMV_LIB_PYSPMV, CODE, 0, NULL, NULL, __VA_ARGS__)
#define SPMV_CUSPARSE(name, CODE, alg, FORMAT, ALG, ...)                                           \
    SPMV_ENTRY(name, SPMV_DEV_CUDA, SPMV_LIB_CUSPARSE, CODE, alg, #FORMAT, #ALG, __VA_ARGS__)
#include "kernels.def"
#undef SPMV_ENTRY
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
