// csrc/check.c: the check at the door — a CSR pattern is valid before anything else reads it
// SPDX-License-Identifier: BSD-3-Clause
//
// spmv_csr_check is the core's first line (scipy's check_format, CSparse's CS_CSC): the conversions
// (csrc/format.c), CSR's state check (csrc/csr.c) and the glue call it; it calls nothing of theirs,
// so the files that use it depend on it and it on none of them.  The features and the one pass over
// indices (csrc/features.c, csrc/pass.c) check the same things fused into their own loops.
// spmv_csr_copy is the same check fused into the copy a caller keeps (Matrix() of scipy arrays):
// on many threads, and where anything fails, spmv_csr_check itself names it.  spmv_csr_check runs
// that threaded scan first on a large pattern (an upload's check of 1e7 entries took 5 ms on one
// thread of the dev VM) and its own loops only where the scan failed, to name the fault.
#include "spmv_internal.h"

#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static int scan(const spmv_csr *A, int64_t indices_len, int32_t *indptr_out, int32_t *indices_out,
                const void *values, int value_size, void *values_out, int out_size);

int spmv_csr_check(const spmv_csr *A, int64_t indptr_len, int64_t indices_len, spmv_err *err) {
    if (A == NULL || A->indptr == NULL || (A->indices == NULL && indices_len > 0))
        return spmv_fail(err, SPMV_EINVAL, -1, -1, -1, "CSR arrays must not be NULL");
    if (A->nrows < 1)
        return spmv_fail(err, SPMV_EINVAL, -1, A->nrows, 1,
                         "nrows is %d; an empty matrix (no rows) cannot be multiplied", A->nrows);
    if (A->ncols < 1)
        return spmv_fail(err, SPMV_EINVAL, -1, A->ncols, 1,
                         "ncols is %d; an empty matrix (no columns) cannot be multiplied",
                         A->ncols);
    if (indptr_len != (int64_t)A->nrows + 1)
        return spmv_fail(err, SPMV_EINVAL, -1, indptr_len, (int64_t)A->nrows + 1,
                         "indptr has length %lld; it must be nrows+1 = %lld", (long long)indptr_len,
                         (long long)A->nrows + 1);
    /* The whole of indptr first: a row's bounds are read as indices only once every bound is known
     * to lie within [0, indices_len], so a bad indptr can neither make this check read past
     * indices nor print what lies there. */
    if (A->indptr[0] != 0)
        return spmv_fail(err, SPMV_EINDEX, 0, A->indptr[0], 0, "indptr[0] is %d; it must be 0",
                         A->indptr[0]);
    if ((int64_t)A->indptr[A->nrows] != indices_len)
        return spmv_fail(err, SPMV_EINVAL, A->nrows, A->indptr[A->nrows], indices_len,
                         "indptr[nrows] = %d but indices has length %lld", A->indptr[A->nrows],
                         (long long)indices_len);
    if (indices_len + A->nrows > SPMV_OMP_MIN_WORK &&
        scan(A, indices_len, NULL, NULL, NULL, 0, NULL, 0) == 0)
        return SPMV_OK; /* every row passed on the core's threads; else the loops below name what */
    for (int32_t i = 0; i < A->nrows; i++)
        if (A->indptr[i + 1] < A->indptr[i])
            return spmv_fail(err, SPMV_EINDEX, (int64_t)i + 1, A->indptr[i + 1], A->indptr[i],
                             "indptr decreases at position %lld: %d after %d", (long long)i + 1,
                             A->indptr[i + 1], A->indptr[i]);
    return spmv_csr_check_rows(A, 0, A->nrows, err);
}

int spmv_csr_check_rows(const spmv_csr *A, int32_t r0, int32_t r1, spmv_err *err) {
    for (int32_t i = r0; i < r1; i++) {
        int32_t p0 = A->indptr[i], p1 = A->indptr[i + 1];
        for (int32_t p = p0; p < p1; p++) {
            int32_t j = A->indices[p];
            if (j < 0 || j >= A->ncols)
                return spmv_fail(err, SPMV_EINDEX, i, j, A->ncols,
                                 "column index %d in row %d is outside [0, ncols = %d)", j, i,
                                 A->ncols);
            if (p > p0 && j <= A->indices[p - 1])
                return spmv_fail(err, SPMV_EUNSORTED, i, j, A->indices[p - 1],
                                 "row %d has column %d after column %d: indices must be sorted "
                                 "and free of duplicates (canonicalise with sum_duplicates())",
                                 i, j, A->indices[p - 1]);
        }
    }
    return SPMV_OK;
}

/* Values [p0, p1) of in (in_size bytes each) into out (out_size bytes each). */
static void copy_values(const void *in, int in_size, void *out, int out_size, int64_t p0,
                        int64_t p1) {
    if (in_size == out_size) {
        memcpy((char *)out + p0 * out_size, (const char *)in + p0 * in_size,
               (size_t)(p1 - p0) * (size_t)out_size);
    } else if (in_size == 8) { /* the casts: the exported headers compile this file as C++ too */
        const double *v = (const double *)in;
        float *w = (float *)out;
        for (int64_t p = p0; p < p1; p++) w[p] = (float)v[p];
    } else {
        const float *v = (const float *)in;
        double *w = (double *)out;
        for (int64_t p = p0; p < p1; p++) w[p] = v[p];
    }
}

/* Rows [r0, r1) of A (whose indptr is valid) copied (indices_out NULL: only read); 0 where every
 * index is in range and the rows are strictly increasing, else 1. */
static int copy_rows(const spmv_csr *A, int32_t r0, int32_t r1, int32_t *indices_out) {
    int bad = 0;
    for (int32_t i = r0; i < r1; i++) {
        int32_t p0 = A->indptr[i], p1 = A->indptr[i + 1], last = -1;
        for (int32_t p = p0; p < p1; p++) {
            int32_t j = A->indices[p];
            bad |= (j <= last) | (j >= A->ncols);
            last = j;
            if (indices_out) indices_out[p] = j;
        }
    }
    return bad;
}

/* The check of every row of A (indptr's ends already checked: indptr[0] = 0, indptr[nrows] =
 * indices_len) on the core's threads, fused with the copy into the outputs where they are not NULL;
 * 0 where A passes, else 1 (spmv_csr_check then names the fault). */
static int scan(const spmv_csr *A, int64_t indices_len, int32_t *indptr_out, int32_t *indices_out,
                const void *values, int value_size, void *values_out, int out_size) {
    /* indptr first, whole: rows are read by their bounds only once every bound is known good */
    int bad = 0, nt = 1;
    int32_t n = A->nrows;
#ifdef _OPENMP
    if (indices_len + n > SPMV_OMP_MIN_WORK) nt = omp_get_max_threads();
#endif
#pragma omp parallel for num_threads(nt) schedule(static, 1) reduction(| : bad)
    for (int t = 0; t < nt; t++) {
        int32_t i0 = (int32_t)((int64_t)n * t / nt), i1 = (int32_t)((int64_t)n * (t + 1) / nt);
        for (int32_t i = i0; i < i1; i++) {
            if (indptr_out) indptr_out[i + 1] = A->indptr[i + 1];
            bad |= A->indptr[i + 1] < A->indptr[i];
        }
    }
    if (indptr_out) indptr_out[0] = 0;
    if (bad) return 1;
        /* rows in pieces of about equal entries, so a few long rows do not hold one thread */
#pragma omp parallel for num_threads(nt) schedule(static, 1) reduction(| : bad)
    for (int t = 0; t < nt; t++) {
        int64_t e0 = indices_len * t / nt, e1 = indices_len * (t + 1) / nt;
        int32_t r0 = (int32_t)spmv_lower_bound(A->indptr, 0, (int64_t)n + 1, e0);
        int32_t r1 = t == nt - 1 ? n : (int32_t)spmv_lower_bound(A->indptr, 0, (int64_t)n + 1, e1);
        bad |= copy_rows(A, r0, r1, indices_out);
        if (values_out)
            copy_values(values, value_size, values_out, out_size, A->indptr[r0], A->indptr[r1]);
    }
    return bad;
}

int spmv_csr_copy(const spmv_csr *A, int64_t indptr_len, int64_t indices_len, const void *values,
                  int value_size, int32_t *indptr_out, int32_t *indices_out, void *values_out,
                  int out_size, spmv_err *err) {
    if ((value_size != 4 && value_size != 8) || (out_size != 4 && out_size != 8))
        return spmv_fail(err, SPMV_EINVAL, -1, value_size, out_size,
                         "value sizes %d and %d bytes: each must be 4 or 8", value_size, out_size);
    /* a pattern the check passes would otherwise return 0 with nothing copied, or write through
     * NULL */
    if (indptr_out == NULL ||
        (indices_len > 0 && (values == NULL || indices_out == NULL || values_out == NULL)))
        return spmv_fail(err, SPMV_EINVAL, -1, -1, -1,
                         "a CSR copy needs the values and every output array, not NULL");
    if (A == NULL || A->indptr == NULL || A->nrows < 1 || A->ncols < 1 ||
        indptr_len != (int64_t)A->nrows + 1 || A->indptr[0] != 0 ||
        (int64_t)A->indptr[A->nrows] != indices_len)
        return spmv_csr_check(A, indptr_len, indices_len, err); /* names what is wrong */
    int bad =
        scan(A, indices_len, indptr_out, indices_out, values, value_size, values_out, out_size);
    return bad ? spmv_csr_check(A, indptr_len, indices_len, err) : SPMV_OK;
}
