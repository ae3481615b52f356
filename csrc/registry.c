// csrc/registry.c: the registry of kernels, the single source of truth for configurations
// SPDX-License-Identifier: BSD-3-Clause
//
// pyspmv.configs() expands each entry over its parameter grid; nothing else keeps a list.  A named
// parameter with an empty grid stays out of generated ids and takes param_default (HYB's ELL width:
// -1 = Bell-Garland), though an id may still set it ("cpu/hyb/k=4").
#include "spmv_internal.h"

#include <string.h>

#define NOPARAM {NULL, NULL}, {{0}, {0}}, {0, 0}, {0, 0}

static const spmv_kernel_desc kernels[] = {
    {"cpu/csr/rows", SPMV_DEV_CPU, SPMV_FMT_CSR, 0, NOPARAM, 1},
    {"cpu/csr/nnz", SPMV_DEV_CPU, SPMV_FMT_CSR, 1, NOPARAM, 1},
    {"cpu/coo", SPMV_DEV_CPU, SPMV_FMT_COO, 0, NOPARAM, 1},
    {"cpu/ell", SPMV_DEV_CPU, SPMV_FMT_ELL, 0, NOPARAM, 1},
    /* C at SIMD widths (4 doubles or 8 floats per AVX2 register, 8/16 with AVX-512) */
    {"cpu/sell", SPMV_DEV_CPU, SPMV_FMT_SELL, 0, {"c", "sigma"},
     {{4, 8, 16}, {1, 64, 256}}, {3, 3}, {8, 1}, 1},
    {"cpu/bro_ell", SPMV_DEV_CPU, SPMV_FMT_BROELL, 0, {"h", "bits"},
     {{32, 256}, {0, 32}}, {2, 2}, {32, 0}, 1},
    {"cpu/hyb", SPMV_DEV_CPU, SPMV_FMT_HYB, 0, {"k", NULL}, {{0}, {0}}, {0, 0}, {-1, 0}, 1},
    {"cpu/dia", SPMV_DEV_CPU, SPMV_FMT_DIA, 0, NOPARAM, 1},
    {"cpu/jad", SPMV_DEV_CPU, SPMV_FMT_JAD, 0, NOPARAM, 1},
    {"cpu/bsr", SPMV_DEV_CPU, SPMV_FMT_BSR, 0, {"b", NULL}, {{2, 4, 8}, {0}}, {3, 0}, {4, 0}, 1},
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
