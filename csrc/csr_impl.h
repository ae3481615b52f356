// csrc/csr_impl.h: CSR fill, back-conversion and CPU kernels for one value type (see csrc/csr.c)
// SPDX-License-Identifier: BSD-3-Clause
// Included by csr.c with SPMV_REAL and SPMV_NAME defined; no include guard on purpose.

static int SPMV_NAME(csr_fill)(const spmv_csr *A, const SPMV_REAL *values, spmv_fmt *F,
                               spmv_err *err) {
    (void)err;
    memcpy(F->idx[0], A->indptr, sizeof(int32_t) * (size_t)F->nidx[0]);
    memcpy(F->idx[1], A->indices, sizeof(int32_t) * (size_t)F->nnz);
    memcpy(F->val[0], values, sizeof(SPMV_REAL) * (size_t)F->nnz);
    return SPMV_OK;
}

static int SPMV_NAME(csr_to_csr)(const spmv_fmt *F, int32_t *indptr, int32_t *indices,
                                 SPMV_REAL *values, spmv_err *err) {
    (void)err;
    memcpy(indptr, F->idx[0], sizeof(int32_t) * (size_t)F->nidx[0]);
    memcpy(indices, F->idx[1], sizeof(int32_t) * (size_t)F->nnz);
    memcpy(values, F->val[0], sizeof(SPMV_REAL) * (size_t)F->nnz);
    return SPMV_OK;
}

static void SPMV_NAME(csr_rows)(const int32_t *indptr, const int32_t *indices, const SPMV_REAL *v,
                                const SPMV_REAL *x, SPMV_REAL *y, int32_t r0, int32_t r1) {
    for (int32_t i = r0; i < r1; i++) {
        SPMV_REAL s = 0;
        for (int32_t p = indptr[i]; p < indptr[i + 1]; p++) s += v[p] * x[indices[p]];
        y[i] = s;
    }
}

static int SPMV_NAME(csr_mv)(const spmv_fmt *F, int kernel, const SPMV_REAL *x, SPMV_REAL *y,
                             spmv_err *err) {
    (void)err;
    const int32_t *indptr = F->idx[0], *indices = F->idx[1];
    const SPMV_REAL *v = (const SPMV_REAL *)F->val[0];
    int32_t n = F->nrows;
    if (kernel == 0) {
#pragma omp parallel for schedule(static) if (F->nnz > SPMV_OMP_MIN_WORK)
        for (int32_t i = 0; i < n; i++) SPMV_NAME(csr_rows)(indptr, indices, v, x, y, i, i + 1);
        return SPMV_OK;
    }
#pragma omp parallel if (F->nnz > SPMV_OMP_MIN_WORK)
    {
        int t = 0, nt = 1;
#ifdef _OPENMP
        t = omp_get_thread_num();
        nt = omp_get_num_threads();
#endif
        int32_t r0 = (int32_t)spmv_lower_bound(indptr, 0, n, F->nnz * t / nt);
        int32_t r1 =
            t + 1 == nt ? n : (int32_t)spmv_lower_bound(indptr, 0, n, F->nnz * (t + 1) / nt);
        SPMV_NAME(csr_rows)(indptr, indices, v, x, y, r0, r1);
    }
    return SPMV_OK;
}

int SPMV_NAME(spmv_finite_check)(const SPMV_REAL *v, int64_t n, spmv_err *err) {
    for (int64_t k = 0; k < n; k++)
        if (!isfinite(v[k]))
            return spmv_fail(err, SPMV_EINVAL, k, -1, -1, "entry %lld is %s", (long long)k,
                             isnan(v[k]) ? "nan" : "inf");
    return SPMV_OK;
}

#undef SPMV_REAL
#undef SPMV_NAME
