// csrc/jad.c: JAD (jagged diagonals) — size query, conversion from CSR, back to CSR, CPU kernel
// SPDX-License-Identifier: BSD-3-Clause
//
// Layout (spmv_fmt with format SPMV_FMT_JAD): param[0] = vals, 0, 8 or 16.  Rows are permuted by length,
// descending and stably; jagged diagonal k holds entry k of every permuted row longer than k, which
// is a prefix of the permuted rows, so entry k of permuted row r is at jd_ptr[k] + r and no slot is
// padding (no fill guard needed: there are exactly nnz slots).
//   scalar[0] = njd, the longest row's length;
//   idx[0] = perm[nrows]: perm[r] = the original row at permuted position r;
//   idx[1] = jd_ptr[njd+1]: start of each jagged diagonal;
//   idx[2] = col[nnz], val[0] = values[nnz], diagonal after diagonal (vals = 0);
//   with vals = 8 or 16 the values are a table (csrc/vtab.c): val[0] = the distinct values,
//   idx[3] = each slot's index into them, vals bits a slot (a float64 entry moves 5 or 6 bytes
//   where it moved 12).
// Kernel variant 0: row-parallel over permuted rows; row r walks diagonals k while
// jd_ptr[k] + r < jd_ptr[k+1] and writes y[perm[r]] (0 for empty rows).
#include "spmv_internal.h"

static int32_t jad_maxlen(const spmv_csr *A) {
    int32_t m = 0;
    for (int32_t i = 0; i < A->nrows; i++)
        if (A->indptr[i + 1] - A->indptr[i] > m) m = A->indptr[i + 1] - A->indptr[i];
    return m;
}

/* The sizes for njd jagged diagonals, after the parameter's check. */
static int jad_sizes(spmv_fmt *F, int32_t njd, spmv_err *err) {
    F->scalar[0] = njd;
    F->nidx[0] = F->nrows;
    F->nidx[1] = (int64_t)njd + 1;
    F->nidx[2] = F->nnz;
    return spmv_vtab_size("jad", F->param[0], F->nnz, 0, &F->nval[0], &F->nidx[3], err);
}

static int jad_size(const spmv_csr *A, spmv_fmt *F, spmv_err *err) {
    return jad_sizes(F, jad_maxlen(A), err);
}

/* perm (a stable counting sort by descending length) and jd_ptr, into F's arrays. */
static int jad_perm(const spmv_csr *A, spmv_fmt *F, spmv_err *err) {
    int32_t n = A->nrows, njd = (int32_t)F->scalar[0], *perm = F->idx[0], *jd = F->idx[1];
    int32_t *first = (int32_t *)spmv_calloc((int64_t)njd + 1, sizeof(int32_t), err);
    if (first == NULL) return SPMV_ENOMEM;
    for (int32_t i = 0; i < n; i++) first[A->indptr[i + 1] - A->indptr[i]]++;
    /* rows longer than L come first: first[L] = their count = jagged diagonal L's length */
    int32_t longer = 0;
    for (int32_t L = njd; L >= 0; L--) {
        int32_t cnt = first[L];
        first[L] = longer;
        longer += cnt;
    }
    jd[0] = 0;
    for (int32_t k = 0; k < njd; k++) jd[k + 1] = jd[k] + first[k];
    for (int32_t i = 0; i < n; i++) perm[first[A->indptr[i + 1] - A->indptr[i]]++] = i;
    spmv_free(first);
    return SPMV_OK;
}

/* Entries of permuted row r: diagonals shrink, so it is in every diagonal until the first it is
 * past. */
static int32_t jad_len(const int32_t *jd, int32_t njd, int32_t r) {
    int32_t k = 0;
    while (k < njd && (int64_t)jd[k] + r < jd[k + 1]) k++;
    return k;
}

#define SPMV_REAL float
#define SPMV_NAME(x) x##_f32
#include "jad_impl.h"
#define SPMV_REAL double
#define SPMV_NAME(x) x##_f64
#include "jad_impl.h"

/* Jagged diagonals never grow (each is a prefix of the permuted rows), so row r's entries are the
 * diagonals k with jd_ptr[k] + r < jd_ptr[k+1], which the kernel and jad_len rely on. */
static int jad_check(const spmv_fmt *F, spmv_err *err) {
    static const char *const what[] = {"perm", "jd_ptr", "col", "value indices", "values", NULL};
    int32_t n = F->nrows, vals = F->param[0];
    int64_t nidx[SPMV_MAXIDX] = {n, 0, F->nnz, 0}, nval[SPMV_MAXVAL] = {0};
    int rc = spmv_vtab_size("jad", vals, F->nnz, 0, &nval[0], &nidx[3], err);
    if (rc == SPMV_OK) rc = spmv_fmt_scalar(F, 0, 0, F->nnz, "jagged diagonals", err);
    if (rc) return rc;
    int32_t njd = (int32_t)F->scalar[0];
    nidx[1] = (int64_t)njd + 1;
    rc = spmv_fmt_lengths(F, nidx, nval, what, err);
    if (rc == SPMV_OK && vals) rc = spmv_vtab_check(F->idx[3], F->nnz, vals, "jad", err);
    if (rc == SPMV_OK) rc = spmv_fmt_ptr(F, F->idx[1], njd, F->nnz, 1, "jd_ptr", err);
    if (rc == SPMV_OK) rc = spmv_fmt_perm(F, F->idx[0], n, "perm", err);
    const int32_t *perm = F->idx[0], *jd = F->idx[1], *col = F->idx[2];
    for (int32_t k = 0; rc == SPMV_OK && k < njd; k++) {
        int64_t len = (int64_t)jd[k + 1] - jd[k];
        if (len > n || (k > 0 && len > (int64_t)jd[k] - jd[k - 1]))
            return spmv_fail(err, SPMV_EINDEX, k, len, n,
                             "jad: jagged diagonal %d holds %lld entries; it must hold at most "
                             "nrows = %d and no more than the diagonal before it",
                             k, (long long)len, n);
    }
    for (int32_t r = 0; rc == SPMV_OK && r < n; r++) {
        int64_t prev = -1;
        for (int32_t k = 0; rc == SPMV_OK && k < njd && (int64_t)jd[k] + r < jd[k + 1]; k++)
            rc = spmv_fmt_col(F, perm[r], col[jd[k] + r], &prev, "col", err);
    }
    return rc;
}

static int jad_size_summary(spmv_summary *S, spmv_fmt *F, spmv_err *err) {
    return jad_sizes(F, S->lmax, err);
}

SPMV_API const spmv_format_ops spmv_jad_ops = {
    .size = jad_size,
    .fill_f32 = jad_fill_f32,
    .fill_f64 = jad_fill_f64,
    .to_csr_f32 = jad_to_csr_f32,
    .to_csr_f64 = jad_to_csr_f64,
    .mv_f32 = jad_mv_f32,
    .mv_f64 = jad_mv_f64,
    .check = jad_check,
    .size_summary = jad_size_summary,
    .vals_slot = 1,
};
