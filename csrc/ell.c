// csrc/ell.c: ELL — size query, conversion from CSR, back to CSR, CPU kernel
// SPDX-License-Identifier: BSD-3-Clause
//
// Layout (spmv_fmt with format SPMV_FMT_ELL): scalar[0] = W, the longest row's length.
// idx[0] = col[nrows*W] and val[0] = values[nrows*W], column-major: slot k of row i lives at
// k*nrows + i (int64 arithmetic), so that consecutive GPU threads (rows) read consecutive words.
// A row's entries fill its first slots in CSR order; the rest is padding, column -1 and value 0.
// W = 0 (nnz = 0) gives empty arrays and y = 0.  No parameters.  Refused (SPMV_ENOTAPPLICABLE)
// when nrows*W passes max_fill * max(nnz, nrows): one long row pads every other row to its length.
// Kernel variant 0: row-parallel, each row stops at its first padding slot.
#include "spmv_internal.h"

/* Also HYB's ELL part: `extra` slots stored elsewhere (its COO part) count toward the guard. */
int spmv_ell_part_size(const spmv_csr *A, spmv_fmt *F, int32_t w, int64_t extra, const char *what,
                       spmv_err *err) {
    int64_t slots = (int64_t)A->nrows * w;
    int rc = spmv_fill_guard(F, slots + extra, what, err);
    if (rc) return rc;
    F->scalar[0] = w;
    F->nidx[0] = slots;
    F->nval[0] = slots;
    return SPMV_OK;
}

static int ell_size(const spmv_csr *A, spmv_fmt *F, spmv_err *err) {
    int32_t w = 0;
    for (int32_t i = 0; i < A->nrows; i++)
        if (A->indptr[i + 1] - A->indptr[i] > w) w = A->indptr[i + 1] - A->indptr[i];
    char what[48];
    spmv_what(err, what, sizeof what, "ELL width %d", (int)w);
    return spmv_ell_part_size(A, F, w, 0, what, err);
}

#define SPMV_REAL float
#define SPMV_NAME(x) x##_f32
#include "ell_impl.h"
#define SPMV_REAL double
#define SPMV_NAME(x) x##_f64
#include "ell_impl.h"

int spmv_ell_part_row(const spmv_fmt *F, int32_t i, int32_t w, const int32_t *col, int64_t *prev,
                      int32_t *len, spmv_err *err) {
    int32_t n = F->nrows, k = 0;
    for (; k < w && col[(int64_t)k * n + i] >= 0; k++) {
        int rc = spmv_fmt_col(F, i, col[(int64_t)k * n + i], prev, "the ELL col", err);
        if (rc) return rc;
    }
    *len = k;
    for (; k < w; k++)
        if (col[(int64_t)k * n + i] != -1)
            return spmv_fail(err, SPMV_EINDEX, i, col[(int64_t)k * n + i], -1,
                             "%s: the ELL col holds %d in slot %d of row %d, after the row's "
                             "entries: only padding (-1) may follow them",
                             spmv_format_name(F->format), col[(int64_t)k * n + i], k, i);
    return SPMV_OK;
}

static int ell_check(const spmv_fmt *F, spmv_err *err) {
    static const char *const what[] = {"col", NULL, NULL, NULL, "values", NULL};
    int rc = spmv_fmt_scalar(F, 0, 0, INT32_MAX, "width", err);
    if (rc) return rc;
    int64_t slots = (int64_t)F->nrows * F->scalar[0], count = 0;
    int64_t nidx[SPMV_MAXIDX] = {slots}, nval[SPMV_MAXVAL] = {slots};
    rc = spmv_fmt_lengths(F, nidx, nval, what, err);
    for (int32_t i = 0; rc == SPMV_OK && i < F->nrows; i++) {
        int64_t prev = -1;
        int32_t len = 0;
        rc = spmv_ell_part_row(F, i, (int32_t)F->scalar[0], F->idx[0], &prev, &len, err);
        count += len;
    }
    return rc ? rc : spmv_fmt_count(F, count, err);
}

static int ell_size_summary(spmv_summary *S, spmv_fmt *F, spmv_err *err) {
    char what[48];
    spmv_what(err, what, sizeof what, "ELL width %d", (int)S->lmax);
    return spmv_ell_part_size(S->A, F, S->lmax, 0, what, err);
}

SPMV_API const spmv_format_ops spmv_ell_ops = {
    .size = ell_size,
    .fill_f32 = ell_fill_f32,
    .fill_f64 = ell_fill_f64,
    .to_csr_f32 = ell_to_csr_f32,
    .to_csr_f64 = ell_to_csr_f64,
    .mv_f32 = ell_mv_f32,
    .mv_f64 = ell_mv_f64,
    .check = ell_check,
    .size_summary = ell_size_summary,
};
