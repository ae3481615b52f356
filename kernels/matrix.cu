// kernels/matrix.cu: a converted matrix uploaded to the device, and freed
// SPDX-License-Identifier: BSD-3-Clause
#include <cstdlib>
#include <cstring>

#include "kern.h"
#include "matrix.cuh"

/* A host array of at least STAGE_MIN bytes goes to the device through two page-locked buffers of
 * STAGE_SLICE bytes: the core's threads copy one slice into a buffer while the link moves the other.
 * On the H200's host the driver's own staging of pageable memory moved 6.4 GB/s and page-locked
 * memory 55 GB/s, while page-locking the whole array first (cudaHostRegister) cost more than the
 * copy it sped up; one thread's memcpy alone does not keep up with the link. */
#define STAGE_MIN ((int64_t)32 << 20)
#define STAGE_SLICE ((int64_t)4 << 20)

/* The staging of one matrix's upload: one page-locked allocation for both slices, made at its first
 * large array, freed at its end.  Its cost is the pinning of its pages: on the H200's host a
 * cudaHostAlloc and cudaFreeHost of 1, 4, 8 and 16 MB took 1.2, 2.2, 4.3 and 9.3 ms. */
typedef struct {
    char *buf;            /* 2 * STAGE_SLICE bytes: slice k at buf + k * STAGE_SLICE */
    cudaEvent_t moved[2]; /* recorded after the copy out of slice k */
    int busy[2];
    int none; /* the staging could not be set up: the driver's own copies instead */
} stage;

static int stage_open(stage *S, spmv_err *err) {
    int rc = spmv_cuda_status(
        cudaHostAlloc((void **)&S->buf, (size_t)(2 * STAGE_SLICE), cudaHostAllocDefault),
        "a page-locked staging buffer", err);
    for (int k = 0; k < 2 && !rc; k++)
        rc = spmv_cuda_status(cudaEventCreateWithFlags(&S->moved[k], cudaEventDisableTiming),
                              "cudaEventCreate", err);
    return rc;
}

/* Waits for the copies still in flight out of S's buffers (their source and the buffers must outlive
 * them), after a failure too, and frees the buffers; rc where it is a failure, else the wait's status. */
static int stage_close(stage *S, int rc, spmv_err *err) {
    for (int k = 0; k < 2; k++) {
        if (S->busy[k]) {
            cudaError_t e = cudaEventSynchronize(S->moved[k]);
            if (!rc) rc = spmv_cuda_status(e, "an upload", err);
        }
        if (S->moved[k]) cudaEventDestroy(S->moved[k]);
    }
    if (S->buf) cudaFreeHost(S->buf);
    cudaGetLastError();
    return rc;
}

/* memcpy on the host's threads: one thread's copy does not keep up with the link. */
static void copy_threads(void *dst, const void *src, int64_t bytes) {
    const int64_t piece = (int64_t)1 << 18; /* 256 kB: every thread has pieces of a 4 MB slice */
    const int64_t n = (bytes + piece - 1) / piece;
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < n; k++) {
        int64_t o = k * piece, b = bytes - o < piece ? bytes - o : piece;
        memcpy((char *)dst + o, (const char *)src + o, (size_t)b);
    }
}

static int put(stage *S, void *dst, const void *src, int64_t bytes, const char *what,
               spmv_err *err) {
    if (bytes <= 0) return SPMV_OK;
    if (bytes >= STAGE_MIN && S->buf == NULL && !S->none && stage_open(S, NULL) != SPMV_OK) {
        S->none = 1; /* no page-locked memory to be had: slower, not wrong */
        cudaGetLastError();
    }
    if (bytes < STAGE_MIN || S->none)
        return spmv_cuda_status(cudaMemcpy(dst, src, (size_t)bytes, cudaMemcpyHostToDevice), what,
                                err);
    int rc = SPMV_OK;
    for (int64_t off = 0, k = 0; !rc && off < bytes; off += STAGE_SLICE, k ^= 1) {
        int64_t b = bytes - off < STAGE_SLICE ? bytes - off : STAGE_SLICE;
        if (S->busy[k]) rc = spmv_cuda_status(cudaEventSynchronize(S->moved[k]), what, err);
        if (rc) break;
        char *slice = S->buf + k * STAGE_SLICE;
        copy_threads(slice, (const char *)src + off, b);
        rc = spmv_cuda_status(
            cudaMemcpyAsync((char *)dst + off, slice, (size_t)b, cudaMemcpyHostToDevice, 0), what,
            err);
        if (!rc) rc = spmv_cuda_status(cudaEventRecord(S->moved[k], 0), what, err);
        S->busy[k] = !rc;
    }
    return rc;
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
    stage S = {};
    for (int k = 0; k < SPMV_MAXIDX && !rc; k++) {
        int64_t b = F->nidx[k] * (int64_t)sizeof(int32_t);
        D->nidx[k] = F->nidx[k];
        rc = dev_alloc(&M->bytes, b, "a matrix index array", &M->dev[k], err);
        if (!rc) rc = put(&S, M->dev[k], F->idx[k], b, "upload of an index array", err);
        D->idx[k] = (const int32_t *)M->dev[k];
    }
    for (int k = 0; k < SPMV_MAXVAL && !rc; k++) {
        int64_t b = F->nval[k] * (int64_t)M->elem_size;
        D->nval[k] = F->nval[k];
        rc = dev_alloc(&M->bytes, b, "a matrix value array", &M->dev[SPMV_MAXIDX + k], err);
        if (!rc)
            rc = put(&S, M->dev[SPMV_MAXIDX + k], F->val[k], b, "upload of a value array", err);
        D->val[k] = M->dev[SPMV_MAXIDX + k];
    }
    return stage_close(&S, rc, err);
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
