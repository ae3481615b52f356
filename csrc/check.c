// csrc/check.c: the check at the door — a CSR pattern is valid before anything else reads it
// SPDX-License-Identifier: BSD-3-Clause
//
// spmv_csr_check is the core's first line (scipy's check_format, CSparse's CS_CSC): the conversions
// (csrc/format.c), CSR's state check (csrc/csr.c) and the glue call it; it calls nothing of theirs,
// so the files that use it depend on it and it on none of them.  The features and the one pass over
// indices (csrc/features.c, csrc/pass.c) check the same things fused into their own loops.
#include "spmv_internal.h"

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
    for (int32_t i = 0; i < A->nrows; i++)
        if (A->indptr[i + 1] < A->indptr[i])
            return spmv_fail(err, SPMV_EINDEX, (int64_t)i + 1, A->indptr[i + 1], A->indptr[i],
                             "indptr decreases at position %lld: %d after %d", (long long)i + 1,
                             A->indptr[i + 1], A->indptr[i]);
    for (int32_t i = 0; i < A->nrows; i++) {
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
