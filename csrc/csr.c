// csrc/csr.c: CSR as a storage format (its state check, conversion, CPU kernels) and HYB's width rule
// SPDX-License-Identifier: BSD-3-Clause
//
// Layout (spmv_fmt with format SPMV_FMT_CSR): idx[0] = indptr[nrows+1], idx[1] = indices[nnz],
// val[0] = values[nnz]; no scalars.  param[0] is the order (the configuration's `order`): 0 the
// matrix's own; 1 a locality order (reverse Cuthill-McKee, csrc/order.c) of a square matrix, kept
// in idx[2] = perm[nrows] (new -> old): the arrays then hold B = P A P^T, row k of B being row
// perm[k] of A with every column j renumbered inv[j], each row's columns ascending.  A product
// gathers xp[k] = x[perm[k]], multiplies, and scatters y[perm[k]] = yp[k]; back-conversion
// undoes the order.  param[1] is vals, 0, 8 or 16: with 8 or 16 the values are a table
// (csrc/vtab.c, as JAD's), val[0] = the distinct values and idx[3] = each entry's index into them
// in CSR's order, so a float64 entry moves 5 or 6 bytes where it moved 12 (the graphs and LP
// matrices where CSR's load-balanced kernels win hold a few to a few hundred values).  Kernel
// variants: 0 = row-parallel (rows split evenly across threads), 1 = nnz-balanced (each thread gets
// a contiguous run of rows holding about nnz/threads entries, so a few long rows do not leave the
// other threads idle).
#include "spmv_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

int32_t spmv_hyb_width_hist(const int64_t *hist, int32_t maxlen, int32_t nrows) {
    int64_t third = ((int64_t)nrows + 2) / 3, target = third > 4096 ? third : 4096, atleast = 0;
    if (target > nrows) target = nrows;
    int32_t k = maxlen;
    for (; k > 0; k--) { /* atleast = rows with length >= k */
        atleast += hist[k];
        if (atleast >= target) break;
    }
    return k;
}

int spmv_hyb_width(const spmv_csr *A, int32_t *width, spmv_err *err) {
    int32_t maxlen = 0, n = A->nrows;
    for (int32_t i = 0; i < n; i++)
        if (A->indptr[i + 1] - A->indptr[i] > maxlen) maxlen = A->indptr[i + 1] - A->indptr[i];
    int64_t *hist = (int64_t *)spmv_calloc((int64_t)maxlen + 1, sizeof(int64_t), err);
    if (hist == NULL) return SPMV_ENOMEM;
    for (int32_t i = 0; i < n; i++) hist[A->indptr[i + 1] - A->indptr[i]]++;
    *width = spmv_hyb_width_hist(hist, maxlen, n);
    spmv_free(hist);
    return SPMV_OK;
}

static int csr_params(const spmv_fmt *F, spmv_err *err) {
    if (F->param[0] != 0 && F->param[0] != 1)
        return spmv_fail(err, SPMV_EINVAL, -1, F->param[0], 1,
                         "The 'order' parameter of csr must be 0 (the matrix's own) or 1 (reverse "
                         "Cuthill-McKee). Got %d instead.",
                         (int)F->param[0]);
    int64_t len, words;
    int rc = spmv_vtab_size("csr", F->param[1], 0, 0, &len, &words, err); /* vals' range */
    if (rc) return rc;
    if (F->param[0] == 1 && F->nrows != F->ncols)
        return spmv_fail(err, SPMV_ENOTAPPLICABLE, -1, F->ncols, F->nrows,
                         "csr with order=1 renumbers rows and columns alike: the matrix must be "
                         "square, and it is %d x %d",
                         (int)F->nrows, (int)F->ncols);
    return SPMV_OK;
}

static int csr_lengths(const spmv_csr *A, spmv_fmt *F, spmv_err *err) {
    F->nidx[0] = (int64_t)A->nrows + 1;
    F->nidx[1] = F->nnz;
    F->nidx[2] = F->param[0] == 1 ? A->nrows : 0;
    return spmv_vtab_size("csr", F->param[1], F->nnz, 0, &F->nval[0], &F->nidx[3], err);
}

static int csr_size(const spmv_csr *A, spmv_fmt *F, spmv_err *err) {
    int rc = csr_params(F, err);
    return rc ? rc : csr_lengths(A, F, err);
}

static int cmp_key(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* inv[perm[k]] = k into inv[n] (a fresh allocation, the caller's to spmv_free), or NULL. */
static int32_t *inverse(const int32_t *perm, int32_t n, spmv_err *err) {
    int32_t *inv = (int32_t *)spmv_malloc((int64_t)n + 1, sizeof(int32_t), err);
    if (inv != NULL)
        for (int32_t k = 0; k < n; k++) inv[perm[k]] = k;
    return inv;
}

/* Row k of the result is row rows[k] of (ptr, col), each column j renamed cols[j], the row's
 * entries then sorted by column: key[] orders a row's entries as (new column, place). */
static int permuted_rows(int32_t n, const int32_t *ptr, const int32_t *col, const int32_t *rows,
                         const int32_t *cols, int32_t *optr, int32_t *ocol, int64_t *place,
                         spmv_err *err) {
    int32_t maxlen = 0;
    for (int32_t i = 0; i < n; i++)
        if (ptr[i + 1] - ptr[i] > maxlen) maxlen = ptr[i + 1] - ptr[i];
    int64_t *key = (int64_t *)spmv_malloc((int64_t)maxlen + 1, sizeof(int64_t), err);
    if (key == NULL) return SPMV_ENOMEM;
    optr[0] = 0;
    for (int32_t k = 0; k < n; k++) {
        int32_t r = rows[k], p0 = ptr[r], len = ptr[r + 1] - p0;
        for (int32_t q = 0; q < len; q++) key[q] = (int64_t)cols[col[p0 + q]] << 32 | q;
        qsort(key, (size_t)len, sizeof(int64_t), cmp_key);
        for (int32_t q = 0; q < len; q++) {
            ocol[optr[k] + q] = (int32_t)(key[q] >> 32);
            place[optr[k] + q] = p0 + (key[q] & 0xffffffff);
        }
        optr[k + 1] = optr[k] + len;
    }
    spmv_free(key);
    return SPMV_OK;
}

#define SPMV_REAL float
#define SPMV_NAME(x) x##_f32
#include "csr_impl.h"
#define SPMV_REAL double
#define SPMV_NAME(x) x##_f64
#include "csr_impl.h"

static int csr_check_fmt(const spmv_fmt *F, spmv_err *err) {
    static const char *const what[] = {"indptr",        "indices", "perm",
                                       "value indices", "values",  NULL};
    int rc = csr_params(F, err);
    int64_t nidx[SPMV_MAXIDX] = {(int64_t)F->nrows + 1, F->nnz, F->param[0] == 1 ? F->nrows : 0},
            nval[SPMV_MAXVAL] = {0};
    if (!rc) rc = spmv_vtab_size("csr", F->param[1], F->nnz, 0, &nval[0], &nidx[3], err);
    if (!rc) rc = spmv_fmt_lengths(F, nidx, nval, what, err);
    if (!rc && F->param[1]) rc = spmv_vtab_check(F->idx[3], F->nnz, F->param[1], "csr", err);
    if (!rc && F->param[0] == 1) rc = spmv_fmt_perm(F, F->idx[2], F->nrows, "perm", err);
    spmv_csr A = {F->nrows, F->ncols, F->idx[0], F->idx[1]};
    return rc ? rc : spmv_csr_check(&A, nidx[0], F->nnz, err);
}

/* Nothing beyond the shape: the size query itself, whether the order applies asked of the matrix
 * itself (where the rows are estimated, S->A is a sample of its rows, never square). */
static int csr_size_summary(spmv_summary *S, spmv_fmt *F, spmv_err *err) {
    spmv_fmt whole = *F;
    if (S->whole != NULL) whole.nrows = S->whole->nrows;
    int rc = csr_params(&whole, err);
    return rc ? rc : csr_lengths(S->A, F, err);
}

SPMV_API const spmv_format_ops spmv_csr_ops = {
    .size = csr_size,
    .fill_f32 = csr_fill_f32,
    .fill_f64 = csr_fill_f64,
    .to_csr_f32 = csr_to_csr_f32,
    .to_csr_f64 = csr_to_csr_f64,
    .mv_f32 = csr_mv_f32,
    .mv_f64 = csr_mv_f64,
    .check = csr_check_fmt,
    .size_summary = csr_size_summary,
    .vals_slot = 2,
};
