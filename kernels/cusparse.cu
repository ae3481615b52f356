// kernels/cusparse.cu: cuSPARSE's generic SpMV (cusparseSpMV) on CSR, COO, SELL and BSR as uploaded
// SPDX-License-Identifier: BSD-3-Clause
//
// The formats and algorithms are csrc/kernels.def's SPMV_CUSPARSE lines, read here as the
// enumerators they name (`lines`), and by the registry as their names (Config.cusparse_format,
// .cusparse_alg); a line that pairs a format with another cuSPARSE format fails to compile.
//
// No kernel of ours: each matrix gets one spmv_cusparse holding a handle bound to the plan's
// stream, a const descriptor over the uploaded arrays (no copy, no conversion), dense-vector
// descriptors over the plan's x and y, and the external buffer, preprocessed once, so that a run
// is one cusparseSpMV call.  The layouts already agree with cuSPARSE's: CSR and COO as they are
// (COO sorted by row), SELL with sigma = 1 is its sliced ELL (slice offsets in slots, slot k of
// lane l at slice_ptr[s] + k*C + l, padding column -1), BSR is its BSR with row-major blocks.
//
// Two cases add work around that call, so that nothing is read or written out of bounds:
//  - nnz = 0: no descriptor at all (cuSPARSE's handling of empty arrays passed as NULL varies
//    between releases), and the run is one cudaMemsetAsync of y;
//  - BSR whose nrows or ncols is not a multiple of b: cuSPARSE's matrix is nbrows*b x nbcols*b and
//    it checks the vector lengths against that, so the product goes through padded copies of x
//    (zero past ncols, set once here) and y; each padded side adds one cudaMemcpyAsync per run.
// One cusparseSpMV is itself several launches, counted as CUDA-graph nodes on an H100 with
// cuSPARSE 12.6: 2 for CSR default/ALG1 and COO ALG1, 3 or 4 for CSR ALG2 and COO ALG2, 1 for
// SELL and BSR.  Determinism per cuSPARSE's documentation (non-transposed A): bit-wise for
// CSR_ALG2, COO_ALG2, SELL_ALG1 and BSR_ALG1; CSR_ALG1, COO_ALG1 and ALG_DEFAULT "may produce
// slightly different results during different runs", and on the H100 they did.
#include <cusparse.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "kern.h"

struct spmv_cusparse {
    cusparseHandle_t handle;
    cusparseConstSpMatDescr_t A;
    cusparseConstDnVecDescr_t vx;
    cusparseDnVecDescr_t vy;
    cudaDataType vt;
    cusparseSpMVAlg_t alg;
    union {
        float f;
        double d;
    } alpha, beta; /* in the value type; read on the host per call */
    void *buffer;
    size_t buffer_bytes;
    void *x, *y;       /* the plan's vectors */
    void *xpad, *ypad; /* BSR only, where ncols or nrows is not a multiple of b; else NULL */
    size_t x_bytes, y_bytes;
    cudaStream_t stream;
    int empty; /* nnz = 0: y = 0 without cuSPARSE */
};

/* What cuSPARSE declines to take (NOT_SUPPORTED while describing or sizing) is a configuration
 * that does not apply to this matrix, not a failure of the library. */
static int cusparse_status(cusparseStatus_t st, const char *call, int in_create, spmv_err *err) {
    int code =
        in_create && st == CUSPARSE_STATUS_NOT_SUPPORTED ? SPMV_ENOTAPPLICABLE : SPMV_ECUSPARSE;
    return spmv_cuda_fail(err, code, "%s: %s", call, cusparseGetErrorString(st));
}

#define CUSPARSE_TRY(what, call)                                                                   \
    do {                                                                                           \
        cusparseStatus_t st_ = (call);                                                             \
        if (st_ != CUSPARSE_STATUS_SUCCESS) {                                                      \
            rc = cusparse_status(st_, what, 1, err);                                               \
            goto done;                                                                             \
        }                                                                                          \
    } while (0)

#define CUDA_TRY(what, call)                                                                       \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            rc = spmv_cuda_status(e_, what, err);                                                  \
            goto done;                                                                             \
        }                                                                                          \
    } while (0)

/* The layout of csrc/<format>.c that each cuSPARSE format reads as it is (the header comment). */
constexpr int layout_of(cusparseFormat_t f) {
    return f == CUSPARSE_FORMAT_CSR              ? SPMV_FMT_CSR
           : f == CUSPARSE_FORMAT_COO            ? SPMV_FMT_COO
           : f == CUSPARSE_FORMAT_SLICED_ELLPACK ? SPMV_FMT_SELL
           : f == CUSPARSE_FORMAT_BSR            ? SPMV_FMT_BSR
                                                 : -1;
}

/* cuSPARSE's format and algorithm of each cuSPARSE line of csrc/kernels.def, found by the
 * registry's (format, alg): the list the registry's cusparse_format and cusparse_alg strings are
 * made from, so that what Config says is what runs. */
struct cusparse_line {
    int format, alg; /* spmv_format, the registry's kernel number */
    cusparseFormat_t cformat;
    cusparseSpMVAlg_t calg;
};
static const cusparse_line lines[] = {
#define SPMV_CUSPARSE(id, CODE, alg, FORMAT, ALG, ...) {SPMV_FMT_##CODE, alg, FORMAT, ALG},
#include "kernels.def"
};
#define SPMV_CUSPARSE(id, CODE, alg, FORMAT, ALG, ...)                                             \
    static_assert(layout_of(FORMAT) == SPMV_FMT_##CODE,                                            \
                  "csrc/kernels.def: " id " pairs format " #CODE " with " #FORMAT);
#include "kernels.def"

/* The line of format fmt and algorithm alg, or NULL; *has_format: whether fmt has any. */
static const cusparse_line *find_line(int fmt, int alg, int *has_format) {
    *has_format = 0;
    for (const cusparse_line &l : lines) {
        if (l.format != fmt) continue;
        *has_format = 1;
        if (l.alg == alg) return &l;
    }
    return NULL;
}

/* The matrix descriptor over D's arrays (layouts: csrc/<format>.c).  Sets *xn and *yn, the vector
 * lengths cuSPARSE's matrix implies. */
static int describe(const spmv_dfmt *D, cusparseFormat_t format, spmv_cusparse *c, int64_t *xn,
                    int64_t *yn, spmv_err *err) {
    const cusparseIndexType_t i32 = CUSPARSE_INDEX_32I;
    const cusparseIndexBase_t base = CUSPARSE_INDEX_BASE_ZERO;
    int rc = SPMV_OK;
    *xn = D->ncols;
    *yn = D->nrows;
    switch (format) { /* D's layout is layout_of(format): find_line found it by D->format */
    case CUSPARSE_FORMAT_CSR:
        CUSPARSE_TRY("cusparseCreateConstCsr",
                     cusparseCreateConstCsr(&c->A, D->nrows, D->ncols, D->nnz, D->idx[0], D->idx[1],
                                            D->val[0], i32, i32, base, c->vt));
        break;
    case CUSPARSE_FORMAT_COO:
        CUSPARSE_TRY("cusparseCreateConstCoo",
                     cusparseCreateConstCoo(&c->A, D->nrows, D->ncols, D->nnz, D->idx[0], D->idx[1],
                                            D->val[0], i32, base, c->vt));
        break;
    case CUSPARSE_FORMAT_SLICED_ELLPACK: /* sigma = 1 checked by the caller; perm (idx[0]) is the
                                          * identity */
        CUSPARSE_TRY("cusparseCreateConstSlicedEll",
                     cusparseCreateConstSlicedEll(&c->A, D->nrows, D->ncols, D->nnz, D->scalar[1],
                                                  D->param[0], D->idx[1], D->idx[2], D->val[0], i32,
                                                  i32, base, c->vt));
        break;
    case CUSPARSE_FORMAT_BSR: {
        int64_t b = D->param[0];
        *xn = D->scalar[1] * b;
        *yn = D->scalar[0] * b;
        CUSPARSE_TRY("cusparseCreateConstBsr",
                     cusparseCreateConstBsr(&c->A, D->scalar[0], D->scalar[1], D->scalar[2], b, b,
                                            D->idx[0], D->idx[1], D->val[0], i32, i32, base, c->vt,
                                            CUSPARSE_ORDER_ROW));
        break;
    }
    default: /* no kernels.def line names another (layout_of) */
        return spmv_cuda_fail(err, SPMV_EINVAL, "cuSPARSE format %d has no descriptor here",
                              (int)format);
    }
done:
    return rc;
}

/* A vector of n_want entries for cuSPARSE's side of a BSR product, all zero to begin with: only
 * the plan's part is ever copied in, so the tail stays zero and meets only padding zeros. */
static int pad_vector(void **pad, int64_t n_want, size_t elem, const char *what, cudaStream_t s,
                      spmv_err *err) {
    int rc = spmv_cuda_malloc(pad, (int64_t)n_want * elem, what, err);
    if (rc != SPMV_OK) return rc;
    CUDA_TRY(what, cudaMemsetAsync(*pad, 0, (size_t)n_want * elem, s));
done:
    return rc;
}

extern "C" int spmv_cusparse_create(const spmv_dfmt *D, int alg, int elem_size, void *x, void *y,
                                    cudaStream_t s, spmv_cusparse **out, spmv_err *err) {
    int rc = SPMV_OK, has_format;
    int64_t xn, yn;
    spmv_cusparse *c;
    const cusparse_line *line = find_line(D->format, alg, &has_format);
    *out = NULL;
    if (elem_size != 4 && elem_size != 8)
        return spmv_cuda_fail(err, SPMV_EINVAL,
                              "elem_size must be 4 (float32) or 8 (float64), got %d", elem_size);
    if (!has_format)
        return spmv_cuda_fail(err, SPMV_ENOTAPPLICABLE,
                              "cuSPARSE's SpMV takes csr, coo, sell (sigma 1) and bsr, not %s",
                              spmv_format_name(D->format) ? spmv_format_name(D->format)
                                                          : "this format");
    if (line == NULL)
        return spmv_cuda_fail(err, SPMV_EINVAL, "no cuSPARSE SpMV algorithm %d for format %s", alg,
                              spmv_format_name(D->format) ? spmv_format_name(D->format) : "?");
    if (D->format == SPMV_FMT_SELL && D->param[1] != 1)
        return spmv_cuda_fail(
            err, SPMV_ENOTAPPLICABLE,
            "cuSPARSE's sliced ELL has no row permutation: sigma must be 1, got %d", D->param[1]);
    if (D->format == SPMV_FMT_CSR && D->param[1] != 0) /* val[0] is a table (csrc/csr.c) */
        return spmv_cuda_fail(err, SPMV_ENOTAPPLICABLE,
                              "cuSPARSE's CSR reads the values as they are; this one keeps them "
                              "as a table (vals=%d)",
                              D->param[1]);
    if (D->format == SPMV_FMT_BSR && D->param[0] < 2) /* cusparseSpMV: "operation not supported" */
        return spmv_cuda_fail(err, SPMV_ENOTAPPLICABLE,
                              "cuSPARSE's BSR SpMV needs blocks of 2 x 2 or more, got b = %d",
                              D->param[0]);
    if ((c = (spmv_cusparse *)calloc(1, sizeof *c)) == NULL) {
        rc = spmv_cuda_fail(err, SPMV_ENOMEM, "out of host memory for the cuSPARSE plan");
        if (err) err->value = (int64_t)sizeof *c;
        return rc;
    }
    c->vt = elem_size == 4 ? CUDA_R_32F : CUDA_R_64F;
    c->alg = line->calg;
    if (elem_size == 4) {
        c->alpha.f = 1.0f;
        c->beta.f = 0.0f;
    } else {
        c->alpha.d = 1.0;
        c->beta.d = 0.0;
    }
    c->x = x;
    c->y = y;
    c->x_bytes = (size_t)D->ncols * elem_size;
    c->y_bytes = (size_t)D->nrows * elem_size;
    c->stream = s;
    if (D->nnz == 0) {
        c->empty = 1;
        *out = c;
        return SPMV_OK;
    }

    CUSPARSE_TRY("cusparseCreate", cusparseCreate(&c->handle));
    CUSPARSE_TRY("cusparseSetStream", cusparseSetStream(c->handle, s));
    if ((rc = describe(D, line->cformat, c, &xn, &yn, err)) != SPMV_OK) goto done;
    if (xn != D->ncols &&
        (rc = pad_vector(&c->xpad, xn, elem_size, "x padded to BSR blocks", s, err)) != SPMV_OK)
        goto done;
    if (yn != D->nrows &&
        (rc = pad_vector(&c->ypad, yn, elem_size, "y padded to BSR blocks", s, err)) != SPMV_OK)
        goto done;
    CUSPARSE_TRY("cusparseCreateConstDnVec",
                 cusparseCreateConstDnVec(&c->vx, xn, c->xpad ? c->xpad : x, c->vt));
    CUSPARSE_TRY("cusparseCreateDnVec",
                 cusparseCreateDnVec(&c->vy, yn, c->ypad ? c->ypad : y, c->vt));
    CUSPARSE_TRY("cusparseSpMV_bufferSize",
                 cusparseSpMV_bufferSize(c->handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &c->alpha,
                                         c->A, c->vx, &c->beta, c->vy, c->vt, c->alg,
                                         &c->buffer_bytes));
    if (c->buffer_bytes > 0 && (rc = spmv_cuda_malloc(&c->buffer, (int64_t)(c->buffer_bytes),
                                                      "cuSPARSE's SpMV buffer", err)) != SPMV_OK)
        goto done;
    {
        /* Optional in cuSPARSE; a format it has no preprocessing for runs unprepared. */
        cusparseStatus_t st =
            cusparseSpMV_preprocess(c->handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &c->alpha, c->A,
                                    c->vx, &c->beta, c->vy, c->vt, c->alg, c->buffer);
        if (st != CUSPARSE_STATUS_SUCCESS && st != CUSPARSE_STATUS_NOT_SUPPORTED) {
            rc = cusparse_status(st, "cusparseSpMV_preprocess", 1, err);
            goto done;
        }
    }
    /* Some refusals come only from the product itself (BSR with b = 1 did, past bufferSize):
     * one product here turns them into SPMV_ENOTAPPLICABLE at setup instead of a failed run.
     * It reads whatever x holds and writes y, both the plan's. */
    CUSPARSE_TRY("cusparseSpMV (trial)",
                 cusparseSpMV(c->handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &c->alpha, c->A, c->vx,
                              &c->beta, c->vy, c->vt, c->alg, c->buffer));
done:
    if (rc != SPMV_OK) {
        spmv_cusparse_free(c);
        return rc;
    }
    *out = c;
    return SPMV_OK;
}

/* One product of what c holds (x, y, alpha, beta, stream as set), asynchronous. */
static int run_bound(spmv_cusparse *c, const void *x, void *y, int read_y, spmv_err *err) {
    int rc = SPMV_OK;
    cusparseStatus_t st;
    if (c->xpad)
        CUDA_TRY("cudaMemcpyAsync(x to its BSR padding)",
                 cudaMemcpyAsync(c->xpad, x, c->x_bytes, cudaMemcpyDeviceToDevice, c->stream));
    if (c->ypad && read_y)
        CUDA_TRY("cudaMemcpyAsync(y to its BSR padding)",
                 cudaMemcpyAsync(c->ypad, y, c->y_bytes, cudaMemcpyDeviceToDevice, c->stream));
    st = cusparseSpMV(c->handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &c->alpha, c->A, c->vx, &c->beta,
                      c->vy, c->vt, c->alg, c->buffer);
    if (st != CUSPARSE_STATUS_SUCCESS) return cusparse_status(st, "cusparseSpMV", 0, err);
    if (c->ypad)
        CUDA_TRY("cudaMemcpyAsync(y from its BSR padding)",
                 cudaMemcpyAsync(y, c->ypad, c->y_bytes, cudaMemcpyDeviceToDevice, c->stream));
done:
    return rc;
}

extern "C" int spmv_cusparse_run(spmv_cusparse *c, spmv_err *err) {
    int rc = SPMV_OK;
    if (c->empty) {
        CUDA_TRY("cudaMemsetAsync(y)", cudaMemsetAsync(c->y, 0, c->y_bytes, c->stream));
        return SPMV_OK;
    }
    return run_bound(c, c->x, c->y, 0, err);
done:
    return rc;
}

/* x's descriptor, made const (cuSPARSE then promises not to write x) by us, repointed by us: cuSPARSE
 * has no setter for a const descriptor. */
static cusparseDnVecDescr_t vx_mut(spmv_cusparse *c) { return (cusparseDnVecDescr_t)c->vx; }

static void set_scalars(spmv_cusparse *c, double alpha, double beta) {
    if (c->vt == CUDA_R_32F) {
        c->alpha.f = (float)alpha;
        c->beta.f = (float)beta;
    } else {
        c->alpha.d = alpha;
        c->beta.d = beta;
    }
}

extern "C" int spmv_cusparse_run_vec(spmv_cusparse *c, const void *x, void *y, double alpha,
                                     double beta, cudaStream_t s, spmv_err *err) {
    int rc = SPMV_OK, elem = c->vt == CUDA_R_32F ? 4 : 8;
    if (c->empty || alpha == 0.0) /* y = beta y, without cuSPARSE */
        return spmv_cuda_status(
            spmv_cuda_axpby(elem, (int64_t)(c->y_bytes / elem), 0.0, NULL, beta, y, s),
            "y = beta y", err);
    cudaStream_t s0 = c->stream;
    c->stream = s;
    CUSPARSE_TRY("cusparseSetStream", cusparseSetStream(c->handle, s));
    if (!c->xpad)
        CUSPARSE_TRY("cusparseDnVecSetValues(x)", cusparseDnVecSetValues(vx_mut(c), (void *)x));
    if (!c->ypad) CUSPARSE_TRY("cusparseDnVecSetValues", cusparseDnVecSetValues(c->vy, y));
    set_scalars(c, alpha, beta);
    rc = run_bound(c, x, y, beta != 0.0, err);
done:
    /* back to what create bound, for the plan's own runs (timing, host vectors) */
    set_scalars(c, 1.0, 0.0);
    c->stream = s0;
    if (c->handle) cusparseSetStream(c->handle, s0);
    if (c->vx && !c->xpad) cusparseDnVecSetValues(vx_mut(c), c->x);
    if (c->vy && !c->ypad) cusparseDnVecSetValues(c->vy, c->y);
    return rc;
}

extern "C" int64_t spmv_cusparse_buffer_bytes(const spmv_cusparse *c) {
    return c ? (int64_t)c->buffer_bytes : 0;
}

/* Releases whatever create made, in reverse order; safe on a partly built plan.  cudaFree waits
 * for the device, so runs still queued on the stream finish first. */
extern "C" void spmv_cusparse_free(spmv_cusparse *c) {
    if (c == NULL) return;
    if (c->vy) cusparseDestroyDnVec(c->vy);
    if (c->vx) cusparseDestroyDnVec(c->vx);
    if (c->A) cusparseDestroySpMat(c->A);
    if (c->handle) cusparseDestroy(c->handle);
    if (c->buffer) cudaFree(c->buffer);
    if (c->ypad) cudaFree(c->ypad);
    if (c->xpad) cudaFree(c->xpad);
    free(c);
}

extern "C" int spmv_cusparse_version(int *version, spmv_err *err) {
    int v[3] = {0, 0, 0};
    const libraryPropertyType what[3] = {MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL};
    for (int i = 0; i < 3; i++) {
        cusparseStatus_t st = cusparseGetProperty(what[i], &v[i]);
        if (st != CUSPARSE_STATUS_SUCCESS)
            return cusparse_status(st, "cusparseGetProperty", 0, err);
    }
    *version = v[0] * 1000 + v[1] * 100 + v[2];
    return SPMV_OK;
}
