// kernels/matrix.cu: a converted matrix uploaded to the device, and freed
// SPDX-License-Identifier: BSD-3-Clause
#include <cstdlib>
#include <cstring>

#include "kern.h"
#include "matrix.cuh"

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

/* Arrays from cudaMalloc (uploads) go with cudaFree, which waits for the device.  Arrays from
 * device conversion's pool go back to the pool (cudaFreeAsync: the next conversion reuses them,
 * no driver call), after the same wait made explicit: cudaFree does not wait for pool memory, and
 * a product may still read them on any stream (a plan's, or the caller's through
 * spmv_cuda_plan_mv_dev). */
void spmv_cuda_matrix_free(spmv_cuda_matrix *M) {
    if (M == NULL) return;
    if (M->pooled) {
        cudaDeviceSynchronize();
        for (int k = 0; k < SPMV_MAXIDX + SPMV_MAXVAL; k++)
            if (M->dev[k]) cudaFreeAsync(M->dev[k], 0);
        if (M->x) cudaFreeAsync(M->x, 0);
        if (M->y) cudaFreeAsync(M->y, 0);
    } else {
        for (int k = 0; k < SPMV_MAXIDX + SPMV_MAXVAL && !M->borrowed; k++) cudaFree(M->dev[k]);
        cudaFree(M->x);
        cudaFree(M->y);
    }
    cudaGetLastError();
    free(M);
}
