// csrc/coo_impl.h: COO fill, back-conversion and CPU kernel for one value type (see csrc/coo.c)
// SPDX-License-Identifier: BSD-3-Clause
// Included by coo.c with SPMV_REAL and SPMV_NAME defined; no include guard on purpose.

static int SPMV_NAME(coo_fill)(const spmv_csr *A, const SPMV_REAL *values, spmv_fmt *F,
                               spmv_err *err) {
    (void)err;
    int32_t *row = F->idx[0];
    const int32_t *indptr = A->indptr;
#pragma omp parallel for schedule(static) if (F->nnz > SPMV_OMP_MIN_WORK)
    for (int32_t i = 0; i < A->nrows; i++)
        for (int32_t p = indptr[i]; p < indptr[i + 1]; p++) row[p] = i;
    if (F->nnz > 0) {
        memcpy(F->idx[1], A->indices, sizeof(int32_t) * (size_t)F->nnz);
        memcpy(F->val[0], values, sizeof(SPMV_REAL) * (size_t)F->nnz);
    }
    return SPMV_OK;
}

static int SPMV_NAME(coo_to_csr)(const spmv_fmt *F, int32_t *indptr, int32_t *indices,
                                 SPMV_REAL *values, spmv_err *err) {
    (void)err;
    const int32_t *row = F->idx[0];
    memset(indptr, 0, sizeof(int32_t) * ((size_t)F->nrows + 1));
    for (int64_t p = 0; p < F->nnz; p++) indptr[row[p] + 1]++;
    for (int32_t i = 0; i < F->nrows; i++) indptr[i + 1] += indptr[i];
    if (F->nnz > 0) { /* entries are already in CSR order */
        memcpy(indices, F->idx[1], sizeof(int32_t) * (size_t)F->nnz);
        memcpy(values, F->val[0], sizeof(SPMV_REAL) * (size_t)F->nnz);
    }
    return SPMV_OK;
}

void SPMV_NAME(spmv_coo_part_chunk)(const int32_t *row, const int32_t *col, const SPMV_REAL *v,
                                    int64_t nnz, const SPMV_REAL *x, SPMV_REAL *y, int t, int nt,
                                    int add) {
    int64_t p = spmv_coo_chunk(row, nnz, t, nt), p1 = spmv_coo_chunk(row, nnz, t + 1, nt);
    while (p < p1) {
        int32_t r = row[p];
        SPMV_REAL s = 0;
        for (; p < p1 && row[p] == r; p++) s += v[p] * x[col[p]];
        y[r] = add ? y[r] + s : s;
    }
}

static int SPMV_NAME(coo_mv)(const spmv_fmt *F, int kernel, const SPMV_REAL *x, SPMV_REAL *y,
                             spmv_err *err) {
    (void)kernel;
    (void)err;
    int64_t nnz = F->nnz;
    int32_t n = F->nrows;
#pragma omp parallel if (nnz > SPMV_OMP_MIN_WORK)
    {
        int t = 0, nt = 1;
#ifdef _OPENMP
        t = omp_get_thread_num();
        nt = omp_get_num_threads();
#endif
#pragma omp for schedule(static)
        for (int32_t i = 0; i < n; i++) y[i] = 0; /* implicit barrier: rows without entries */
        SPMV_NAME(spmv_coo_part_chunk)
        (F->idx[0], F->idx[1], (const SPMV_REAL *)F->val[0], nnz, x, y, t, nt, 0);
    }
    return SPMV_OK;
}

#undef SPMV_REAL
#undef SPMV_NAME
