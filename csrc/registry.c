// csrc/registry.c: the registry of kernels, the single source of truth for configurations
// SPDX-License-Identifier: BSD-3-Clause
//
// pyspmv.configs() expands each entry over its parameter grid; nothing else keeps a list.  A named
// parameter with an empty grid stays out of generated ids and takes param_default (HYB's ELL width:
// -1 = Bell-Garland), though an id may still set it ("cpu/hyb/k=4").  The GPU entries live here
// too, so that configurations can be listed, featurised and ranked on machines without a GPU.
#include "spmv_internal.h"

#include <string.h>

/* Thread mappings of the own CUDA kernels: block sizes and threads per row. */
#define BS                                                                                         \
    { 64, 128, 256, 512, 1024 }
#define TPV                                                                                        \
    { 2, 4, 8, 16, 32 }

#define CPU(name, fmt, variant)                                                                    \
    .id = name, .device = SPMV_DEV_CPU, .library = SPMV_LIB_PYSPMV, .format = fmt, .kernel = variant
#define OWN(name, fmt, variant)                                                                    \
    .id = name, .device = SPMV_DEV_CUDA, .library = SPMV_LIB_PYSPMV, .format = fmt,                \
    .kernel = variant
#define CUSPARSE(name, fmt, alg)                                                                   \
    .id = name, .device = SPMV_DEV_CUDA, .library = SPMV_LIB_CUSPARSE, .format = fmt, .kernel = alg
/* Only a block size, from BS, default 256. */
#define BLOCK_ONLY                                                                                 \
    .param_name = {NULL, NULL, NULL, "bs"}, .grid = {{0}, {0}, {0}, BS}, .ngrid = {0, 0, 0, 5},    \
    .param_default = {0, 0, 0, 256}

static const spmv_kernel_desc kernels[] = {
    /* ---- CPU (csrc/<format>.c) ---- */
    {CPU("cpu/csr/rows", SPMV_FMT_CSR, 0), .deterministic = 1},
    {CPU("cpu/csr/nnz", SPMV_FMT_CSR, 1), .deterministic = 1},
    {CPU("cpu/coo", SPMV_FMT_COO, 0), .deterministic = 1},
    {CPU("cpu/ell", SPMV_FMT_ELL, 0), .deterministic = 1},
    /* C at SIMD widths (4 doubles or 8 floats per AVX2 register, 8/16 with AVX-512) */
    {CPU("cpu/sell", SPMV_FMT_SELL, 0), .param_name = {"c", "sigma"},
     .grid = {{4, 8, 16}, {1, 64, 256}}, .ngrid = {3, 3}, .param_default = {8, 1},
     .deterministic = 1},
    {CPU("cpu/bro_ell", SPMV_FMT_BROELL, 0), .param_name = {"h", "bits"},
     .grid = {{32, 256}, {0, 32}}, .ngrid = {2, 2}, .param_default = {32, 0}, .deterministic = 1},
    {CPU("cpu/hyb", SPMV_FMT_HYB, 0), .param_name = {"k"}, .param_default = {-1},
     .deterministic = 1},
    {CPU("cpu/dia", SPMV_FMT_DIA, 0), .deterministic = 1},
    {CPU("cpu/jad", SPMV_FMT_JAD, 0), .deterministic = 1},
    {CPU("cpu/bsr", SPMV_FMT_BSR, 0), .param_name = {"b"}, .grid = {{2, 4, 8}}, .ngrid = {3},
     .param_default = {4}, .deterministic = 1},

    /* ---- own CUDA kernels (kernels/<format>.cu) ---- */
    {OWN("pyspmv/csr/scalar", SPMV_FMT_CSR, 0), BLOCK_ONLY, .launches = 1, .deterministic = 1},
    {OWN("pyspmv/csr/vector", SPMV_FMT_CSR, 1), .param_name = {NULL, NULL, "tpv", "bs"},
     .grid = {{0}, {0}, TPV, BS}, .ngrid = {0, 0, 5, 5}, .param_default = {0, 0, 8, 256},
     .launches = 1, .deterministic = 1},
    {OWN("pyspmv/csr/adaptive", SPMV_FMT_CSR, 2), BLOCK_ONLY, .launches = 1, .deterministic = 1},
    /* one launch: the last block to finish adds the carries between blocks, in a fixed order */
    {OWN("pyspmv/coo", SPMV_FMT_COO, 0), BLOCK_ONLY, .launches = 1, .deterministic = 1},
    {OWN("pyspmv/ell", SPMV_FMT_ELL, 0), BLOCK_ONLY, .launches = 1, .deterministic = 1},
    /* one thread per row of a slice; sigma a multiple of every C */
    {OWN("pyspmv/sell", SPMV_FMT_SELL, 0), .param_name = {"c", "sigma", NULL, "bs"},
     .grid = {{16, 32, 64}, {1, 256, 4096}, {0}, BS}, .ngrid = {3, 3, 0, 5},
     .param_default = {32, 1, 0, 256}, .launches = 1, .deterministic = 1},
    {OWN("pyspmv/bro_ell", SPMV_FMT_BROELL, 0), .param_name = {"h", "bits", NULL, "bs"},
     .grid = {{32, 128}, {0, 32}, {0}, BS}, .ngrid = {2, 2, 0, 5}, .param_default = {32, 0, 0, 256},
     .launches = 1, .deterministic = 1},
    {OWN("pyspmv/hyb", SPMV_FMT_HYB, 0), .param_name = {"k", NULL, NULL, "bs"},
     .grid = {{0}, {0}, {0}, BS}, .ngrid = {0, 0, 0, 5}, .param_default = {-1, 0, 0, 256},
     .launches = 2, .deterministic = 1},
    {OWN("pyspmv/dia", SPMV_FMT_DIA, 0), BLOCK_ONLY, .launches = 1, .deterministic = 1},
    {OWN("pyspmv/jad", SPMV_FMT_JAD, 0), BLOCK_ONLY, .launches = 1, .deterministic = 1},

    /* ---- cuSPARSE's generic API (kernels/cusparse.cu); kernel = algorithm ----
     * launches: kernels and memsets per cusparseSpMV, counted as CUDA-graph nodes on the H100
     * (cuSPARSE 12.6); determinism as cuSPARSE documents it, and as 20 repeated runs showed. */
    {CUSPARSE("cusparse/csr/default", SPMV_FMT_CSR, 0), .launches = 2, .deterministic = 0},
    {CUSPARSE("cusparse/csr/alg1", SPMV_FMT_CSR, 1), .launches = 2, .deterministic = 0},
    {CUSPARSE("cusparse/csr/alg2", SPMV_FMT_CSR, 2), .launches = 3, .deterministic = 1},
    {CUSPARSE("cusparse/coo/alg1", SPMV_FMT_COO, 1), .launches = 2, .deterministic = 0},
    {CUSPARSE("cusparse/coo/alg2", SPMV_FMT_COO, 2), .launches = 3, .deterministic = 1},
    /* cuSPARSE's sliced ELL has no row permutation: sigma stays 1 */
    {CUSPARSE("cusparse/sell/alg1", SPMV_FMT_SELL, 1), .param_name = {"c"}, .grid = {{8, 32}},
     .ngrid = {2}, .param_default = {32, 1}, .launches = 1, .deterministic = 1},
    {CUSPARSE("cusparse/bsr", SPMV_FMT_BSR, 0), .param_name = {"b"}, .grid = {{2, 4, 8}},
     .ngrid = {3}, .param_default = {4}, .launches = 1, .deterministic = 1},
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
