// csrc/format.c: dispatch from a spmv_fmt to its format's operations, and the shared padding guard
// SPDX-License-Identifier: BSD-3-Clause
#include "spmv_internal.h"

static const spmv_format_ops *const formats[SPMV_NFORMATS] = {
    [SPMV_FMT_CSR] = &spmv_csr_ops,   [SPMV_FMT_COO] = &spmv_coo_ops,
    [SPMV_FMT_ELL] = &spmv_ell_ops,   [SPMV_FMT_SELL] = &spmv_sell_ops,
    [SPMV_FMT_BROELL] = &spmv_broell_ops, [SPMV_FMT_HYB] = &spmv_hyb_ops,
    [SPMV_FMT_DIA] = &spmv_dia_ops,   [SPMV_FMT_JAD] = &spmv_jad_ops,
    [SPMV_FMT_BSR] = &spmv_bsr_ops,
};

static const char *const names[SPMV_NFORMATS] = {
    "csr", "coo", "ell", "sell", "bro_ell", "hyb", "dia", "jad", "bsr",
};

const char *spmv_format_name(int f) { return f >= 0 && f < SPMV_NFORMATS ? names[f] : NULL; }

static const spmv_format_ops *ops_of(const spmv_fmt *F, spmv_err *err) {
    if (F == NULL || F->format < 0 || F->format >= SPMV_NFORMATS) {
        spmv_fail(err, SPMV_EINVAL, -1, F ? F->format : -1, SPMV_NFORMATS,
                  "format code %d is not in [0, %d)", F ? F->format : -1, SPMV_NFORMATS);
        return NULL;
    }
    return formats[F->format];
}

int spmv_fmt_size(const spmv_csr *A, spmv_fmt *F, spmv_err *err) {
    const spmv_format_ops *op = ops_of(F, err);
    if (op == NULL) return SPMV_EINVAL;
    F->nrows = A->nrows;
    F->ncols = A->ncols;
    F->nnz = A->indptr[A->nrows];
    for (int k = 0; k < SPMV_MAXIDX; k++) F->nidx[k] = 0, F->idx[k] = NULL;
    for (int k = 0; k < SPMV_MAXVAL; k++) F->nval[k] = 0, F->val[k] = NULL;
    for (int k = 0; k < 4; k++) F->scalar[k] = 0;
    return op->size(A, F, err);
}

int spmv_fmt_fill_f32(const spmv_csr *A, const float *values, spmv_fmt *F, spmv_err *err) {
    const spmv_format_ops *op = ops_of(F, err);
    return op ? op->fill_f32(A, values, F, err) : SPMV_EINVAL;
}

int spmv_fmt_fill_f64(const spmv_csr *A, const double *values, spmv_fmt *F, spmv_err *err) {
    const spmv_format_ops *op = ops_of(F, err);
    return op ? op->fill_f64(A, values, F, err) : SPMV_EINVAL;
}

int spmv_fmt_to_csr_f32(const spmv_fmt *F, int32_t *indptr, int32_t *indices, float *values,
                        spmv_err *err) {
    const spmv_format_ops *op = ops_of(F, err);
    return op ? op->to_csr_f32(F, indptr, indices, values, err) : SPMV_EINVAL;
}

int spmv_fmt_to_csr_f64(const spmv_fmt *F, int32_t *indptr, int32_t *indices, double *values,
                        spmv_err *err) {
    const spmv_format_ops *op = ops_of(F, err);
    return op ? op->to_csr_f64(F, indptr, indices, values, err) : SPMV_EINVAL;
}

static int kernel_ok(const spmv_format_ops *op, const spmv_fmt *F, int kernel, spmv_err *err) {
    if (kernel < 0 || kernel >= op->nkernels)
        return spmv_fail(err, SPMV_EINVAL, -1, kernel, op->nkernels,
                         "kernel variant %d of format %s is not in [0, %d)", kernel,
                         names[F->format], op->nkernels);
    return SPMV_OK;
}

int spmv_fmt_mv_f32(const spmv_fmt *F, int kernel, const float *x, float *y, spmv_err *err) {
    const spmv_format_ops *op = ops_of(F, err);
    if (op == NULL) return SPMV_EINVAL;
    int rc = kernel_ok(op, F, kernel, err);
    return rc ? rc : op->mv_f32(F, kernel, x, y, err);
}

int spmv_fmt_mv_f64(const spmv_fmt *F, int kernel, const double *x, double *y, spmv_err *err) {
    const spmv_format_ops *op = ops_of(F, err);
    if (op == NULL) return SPMV_EINVAL;
    int rc = kernel_ok(op, F, kernel, err);
    return rc ? rc : op->mv_f64(F, kernel, x, y, err);
}

int64_t spmv_fmt_bytes(const spmv_fmt *F, int elem_size) {
    int64_t b = 0;
    for (int k = 0; k < SPMV_MAXIDX; k++) b += F->nidx[k] * (int64_t)sizeof(int32_t);
    for (int k = 0; k < SPMV_MAXVAL; k++) b += F->nval[k] * (int64_t)elem_size;
    return b;
}

int spmv_fill_guard(const spmv_fmt *F, int64_t slots, const char *what, spmv_err *err) {
    double fill = F->max_fill > 0 ? F->max_fill : SPMV_DEFAULT_MAX_FILL;
    int64_t base = F->nnz > F->nrows ? F->nnz : F->nrows;
    if (slots > INT32_MAX)
        return spmv_fail(err, SPMV_ENOTAPPLICABLE, -1, slots, INT32_MAX,
                         "%s needs %lld stored slots, past the int32 limit %d", what,
                         (long long)slots, INT32_MAX);
    if ((double)slots > fill * (double)base)
        return spmv_fail(err, SPMV_ENOTAPPLICABLE, -1, slots, (int64_t)(fill * (double)base),
                         "%s pads to %lld stored slots, %.1fx max(nnz, nrows) = %lld, past "
                         "max_fill=%g",
                         what, (long long)slots, (double)slots / (double)base, (long long)base,
                         fill);
    return SPMV_OK;
}
