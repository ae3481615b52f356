// csrc/jad_impl.h: JAD fill, back-conversion and CPU kernel for one value type (see csrc/jad.c)
// SPDX-License-Identifier: BSD-3-Clause
// Included by jad.c with SPMV_REAL and SPMV_NAME defined; no include guard on purpose.

/* Slot q's value: stored, or from the table (csrc/vtab.c). */
static inline SPMV_REAL SPMV_NAME(jad_value)(const spmv_fmt *F, int64_t q) {
    const SPMV_REAL *v = (const SPMV_REAL *)F->val[0];
    return F->param[0] ? v[spmv_vtab_get(F->idx[3], q, F->param[0])] : v[q];
}

static int SPMV_NAME(jad_fill)(const spmv_csr *A, const SPMV_REAL *values, spmv_fmt *F,
                               spmv_err *err) {
    int rc = jad_perm(A, F, err);
    if (rc) return rc;
    const int32_t *perm = F->idx[0], *jd = F->idx[1], *indptr = A->indptr, *indices = A->indices;
    int32_t *col = F->idx[2], n = A->nrows, vals = F->param[0];
    /* with a table, the values in storage order go to a scratch array first */
    SPMV_REAL *v =
        vals ? (SPMV_REAL *)spmv_malloc(F->nnz, sizeof(SPMV_REAL), err) : (SPMV_REAL *)F->val[0];
    if (v == NULL && F->nnz > 0) return SPMV_ENOMEM;
#pragma omp parallel for schedule(static) if (F->nnz > SPMV_OMP_MIN_WORK)
    for (int32_t r = 0; r < n; r++) {
        int32_t p0 = indptr[perm[r]], len = indptr[perm[r] + 1] - p0;
        for (int32_t k = 0; k < len; k++) {
            col[jd[k] + r] = indices[p0 + k];
            v[jd[k] + r] = values[p0 + k];
        }
    }
    if (vals) {
        rc = spmv_vtab_fill(v, (int)sizeof(SPMV_REAL), F->nnz, vals, F->val[0], F->idx[3], "jad",
                            err);
        spmv_free(v);
    }
    return rc;
}

static int SPMV_NAME(jad_to_csr)(const spmv_fmt *F, int32_t *indptr, int32_t *indices,
                                 SPMV_REAL *values, spmv_err *err) {
    (void)err;
    const int32_t *perm = F->idx[0], *jd = F->idx[1], *col = F->idx[2];
    int32_t n = F->nrows, njd = (int32_t)F->scalar[0];
    indptr[0] = 0;
#pragma omp parallel for schedule(static) if (F->nnz > SPMV_OMP_MIN_WORK)
    for (int32_t r = 0; r < n; r++) indptr[perm[r] + 1] = jad_len(jd, njd, r);
    for (int32_t i = 0; i < n; i++) indptr[i + 1] += indptr[i];
#pragma omp parallel for schedule(static) if (F->nnz > SPMV_OMP_MIN_WORK)
    for (int32_t r = 0; r < n; r++) {
        int32_t p0 = indptr[perm[r]], len = indptr[perm[r] + 1] - p0;
        for (int32_t k = 0; k < len; k++) {
            indices[p0 + k] = col[jd[k] + r];
            values[p0 + k] = SPMV_NAME(jad_value)(F, (int64_t)jd[k] + r);
        }
    }
    return SPMV_OK;
}

static int SPMV_NAME(jad_mv)(const spmv_fmt *F, int kernel, const SPMV_REAL *x, SPMV_REAL *y,
                             spmv_err *err) {
    (void)kernel;
    (void)err;
    const int32_t *perm = F->idx[0], *jd = F->idx[1], *col = F->idx[2];
    int32_t n = F->nrows, njd = (int32_t)F->scalar[0];
#pragma omp parallel for schedule(static) if (F->nnz > SPMV_OMP_MIN_WORK)
    for (int32_t r = 0; r < n; r++) {
        SPMV_REAL sum = 0;
        for (int32_t k = 0; k < njd && (int64_t)jd[k] + r < jd[k + 1]; k++)
            sum += SPMV_NAME(jad_value)(F, (int64_t)jd[k] + r) * x[col[jd[k] + r]];
        y[perm[r]] = sum;
    }
    return SPMV_OK;
}

#undef SPMV_REAL
#undef SPMV_NAME
