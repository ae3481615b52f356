// kernels/matrix.cu: a converted matrix uploaded to the device (through pinned staging buffers when
// large), and freed
// SPDX-License-Identifier: BSD-3-Clause
#include <cstdlib>
#include <cstring>

#include "kern.h"
#include "matrix.cuh"

/* An upload of at least STAGE_MIN bytes goes through two pinned buffers of STAGE_CHUNK bytes in
 * turn: the host copies one chunk in while the DMA engine sends the other, where cudaMemcpy from
 * pageable memory stages through the driver's own buffer one chunk at a time, waiting for each
 * (measured on the H200's host: 2.8 GB/s for a 2e7-entry CSR).  Smaller uploads keep cudaMemcpy:
 * the pinned buffers cost more than they save there. */
#define STAGE_MIN ((int64_t)16 << 20)
#define STAGE_CHUNK ((int64_t)8 << 20)

typedef struct {
    char *buf[2]; /* pinned, STAGE_CHUNK bytes each; NULL: no staging, plain cudaMemcpy */
    cudaEvent_t ev[2];
    cudaStream_t s;
    int slot;
} stager;

/* Staging for an upload of `bytes` in all (none below STAGE_MIN, or where pinned memory is short:
 * the upload then goes by cudaMemcpy, as before). */
static void stage_open(stager *g, int64_t bytes) {
    memset(g, 0, sizeof *g);
    if (bytes < STAGE_MIN) return;
    int ok = cudaHostAlloc((void **)&g->buf[0], 2 * STAGE_CHUNK, cudaHostAllocDefault) ==
                 cudaSuccess &&
             cudaStreamCreateWithFlags(&g->s, cudaStreamNonBlocking) == cudaSuccess &&
             cudaEventCreateWithFlags(&g->ev[0], cudaEventDisableTiming) == cudaSuccess &&
             cudaEventCreateWithFlags(&g->ev[1], cudaEventDisableTiming) == cudaSuccess;
    if (ok) {
        g->buf[1] = g->buf[0] + STAGE_CHUNK;
        return;
    }
    cudaGetLastError();
    if (g->ev[1]) cudaEventDestroy(g->ev[1]);
    if (g->ev[0]) cudaEventDestroy(g->ev[0]);
    if (g->s) cudaStreamDestroy(g->s);
    if (g->buf[0]) cudaFreeHost(g->buf[0]);
    memset(g, 0, sizeof *g);
}

/* Wait for the staged copies, then free the staging; the first failure of the copies is returned. */
static int stage_close(stager *g, int rc, spmv_err *err) {
    if (g->buf[0] == NULL) return rc;
    int sync = spmv_cuda_status(cudaStreamSynchronize(g->s), "an upload", rc ? NULL : err);
    cudaEventDestroy(g->ev[0]);
    cudaEventDestroy(g->ev[1]);
    cudaStreamDestroy(g->s);
    cudaFreeHost(g->buf[0]);
    return rc ? rc : sync;
}

static int put(stager *g, void *dst, const void *src, int64_t bytes, const char *what,
               spmv_err *err) {
    if (bytes <= 0) return SPMV_OK;
    if (g->buf[0] == NULL)
        return spmv_cuda_status(cudaMemcpy(dst, src, (size_t)bytes, cudaMemcpyHostToDevice), what,
                                err);
    for (int64_t off = 0; off < bytes; off += STAGE_CHUNK) {
        size_t n = (size_t)(bytes - off < STAGE_CHUNK ? bytes - off : STAGE_CHUNK);
        char *b = g->buf[g->slot];
        /* the buffer's last copy has left it (the event of a fresh stager counts as done) */
        int rc = spmv_cuda_status(cudaEventSynchronize(g->ev[g->slot]), what, err);
        if (rc) return rc;
        memcpy(b, (const char *)src + off, n);
        rc = spmv_cuda_status(
            cudaMemcpyAsync((char *)dst + off, b, n, cudaMemcpyHostToDevice, g->s), what, err);
        if (!rc) rc = spmv_cuda_status(cudaEventRecord(g->ev[g->slot], g->s), what, err);
        if (rc) return rc;
        g->slot ^= 1;
    }
    return SPMV_OK;
}

/* dst[k] = src[k] for n host arrays of bytes[k] each (0: none) into device memory, synchronously:
 * through the staging buffers where they add up to STAGE_MIN or more, else by cudaMemcpy. */
static int put_arrays(int n, void *const *dst, const void *const *src, const int64_t *bytes,
                      spmv_err *err) {
    int64_t total = 0;
    for (int k = 0; k < n; k++) total += bytes[k] > 0 ? bytes[k] : 0;
    stager g;
    stage_open(&g, total);
    int rc = SPMV_OK;
    for (int k = 0; k < n && !rc; k++) rc = put(&g, dst[k], src[k], bytes[k], "an upload", err);
    return stage_close(&g, rc, err);
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
    const void *src[SPMV_MAXIDX + SPMV_MAXVAL];
    int64_t bytes[SPMV_MAXIDX + SPMV_MAXVAL];
    for (int k = 0; k < SPMV_MAXIDX && !rc; k++) {
        bytes[k] = F->nidx[k] * (int64_t)sizeof(int32_t);
        src[k] = F->idx[k];
        D->nidx[k] = F->nidx[k];
        rc = dev_alloc(&M->bytes, bytes[k], "a matrix index array", &M->dev[k], err);
        D->idx[k] = (const int32_t *)M->dev[k];
    }
    for (int k = 0; k < SPMV_MAXVAL && !rc; k++) {
        bytes[SPMV_MAXIDX + k] = F->nval[k] * (int64_t)M->elem_size;
        src[SPMV_MAXIDX + k] = F->val[k];
        D->nval[k] = F->nval[k];
        rc = dev_alloc(&M->bytes, bytes[SPMV_MAXIDX + k], "a matrix value array",
                       &M->dev[SPMV_MAXIDX + k], err);
        D->val[k] = M->dev[SPMV_MAXIDX + k];
    }
    return rc ? rc : put_arrays(SPMV_MAXIDX + SPMV_MAXVAL, M->dev, src, bytes, err);
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

