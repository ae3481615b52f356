// csrc/csr_impl.h: CSR fill, back-conversion and CPU kernels for one value type (see csrc/csr.c)
// SPDX-License-Identifier: BSD-3-Clause
// Included by csr.c with SPMV_REAL and SPMV_NAME defined; no include guard on purpose.

/* (optr, ocol, oval) = the rows of (ptr, col, val) in the order `rows`, columns renamed `cols`
 * (permuted_rows, csr.c), values moved with their entries. */
static int SPMV_NAME(csr_permute)(int32_t n, int64_t nnz, const int32_t *ptr, const int32_t *col,
                                  const SPMV_REAL *val, const int32_t *rows, const int32_t *cols,
                                  int32_t *optr, int32_t *ocol, SPMV_REAL *oval, spmv_err *err) {
    int64_t *place = (int64_t *)spmv_malloc(nnz + 1, sizeof(int64_t), err);
    if (place == NULL) return SPMV_ENOMEM;
    int rc = permuted_rows(n, ptr, col, rows, cols, optr, ocol, place, err);
    for (int64_t q = 0; rc == SPMV_OK && q < nnz; q++) oval[q] = val[place[q]];
    spmv_free(place);
    return rc;
}

static int SPMV_NAME(csr_fill)(const spmv_csr *A, const SPMV_REAL *values, spmv_fmt *F,
                               spmv_err *err) {
    int32_t vals = F->param[1];
    /* with a table, the values in storage order go to a scratch array first (csrc/vtab.c) */
    SPMV_REAL *v =
        vals ? (SPMV_REAL *)spmv_malloc(F->nnz, sizeof(SPMV_REAL), err) : (SPMV_REAL *)F->val[0];
    if (v == NULL && F->nnz > 0) return SPMV_ENOMEM;
    int rc = SPMV_OK;
    if (F->param[0] == 1) { /* B = P A P^T: rows in perm's order, columns renamed inv */
        rc = spmv_order_rcm(A, F->idx[2], err);
        int32_t *inv = rc ? NULL : inverse(F->idx[2], A->nrows, err);
        if (!rc && inv == NULL) rc = SPMV_ENOMEM;
        if (!rc)
            rc = SPMV_NAME(csr_permute)(A->nrows, F->nnz, A->indptr, A->indices, values, F->idx[2],
                                        inv, F->idx[0], F->idx[1], v, err);
        spmv_free(inv);
    } else {
        memcpy(F->idx[0], A->indptr, sizeof(int32_t) * (size_t)F->nidx[0]);
        if (F->nnz > 0) { /* v may be NULL then */
            memcpy(F->idx[1], A->indices, sizeof(int32_t) * (size_t)F->nnz);
            memcpy(v, values, sizeof(SPMV_REAL) * (size_t)F->nnz);
        }
    }
    if (vals) {
        if (!rc)
            rc = spmv_vtab_fill(v, (int)sizeof(SPMV_REAL), F->nnz, vals, F->val[0], F->idx[3],
                                "csr", err);
        spmv_free(v);
    }
    return rc;
}

/* The stored values in storage order: val[0] itself, or (a table) decoded into a fresh array the
 * caller spmv_frees; NULL where it cannot be allocated. */
static SPMV_REAL *SPMV_NAME(csr_values)(const spmv_fmt *F, spmv_err *err) {
    const SPMV_REAL *tab = (const SPMV_REAL *)F->val[0];
    if (!F->param[1]) return (SPMV_REAL *)tab;
    SPMV_REAL *v = (SPMV_REAL *)spmv_malloc(F->nnz, sizeof(SPMV_REAL), err);
    if (v != NULL)
        for (int64_t q = 0; q < F->nnz; q++) v[q] = tab[spmv_vtab_get(F->idx[3], q, F->param[1])];
    return v;
}

static int SPMV_NAME(csr_to_csr)(const spmv_fmt *F, int32_t *indptr, int32_t *indices,
                                 SPMV_REAL *values, spmv_err *err) {
    SPMV_REAL *v = SPMV_NAME(csr_values)(F, err);
    if (v == NULL && F->nnz > 0) return SPMV_ENOMEM;
    int rc = SPMV_OK;
    if (F->param[0] ==
        1) { /* A = P^T B P: row i of A is row inv[i] of B, column k renamed perm[k] */
        int32_t *inv = inverse(F->idx[2], F->nrows, err);
        rc = inv == NULL ? SPMV_ENOMEM
                         : SPMV_NAME(csr_permute)(F->nrows, F->nnz, F->idx[0], F->idx[1], v, inv,
                                                  F->idx[2], indptr, indices, values, err);
        spmv_free(inv);
    } else {
        memcpy(indptr, F->idx[0], sizeof(int32_t) * (size_t)F->nidx[0]);
        if (F->nnz > 0) { /* v may be NULL then */
            memcpy(indices, F->idx[1], sizeof(int32_t) * (size_t)F->nnz);
            memcpy(values, v, sizeof(SPMV_REAL) * (size_t)F->nnz);
        }
    }
    if (F->param[1]) spmv_free(v);
    return rc;
}

/* Rows [r0, r1); vix: the value indices of a table of `vals` bits (v the table), or NULL. */
static void SPMV_NAME(csr_rows)(const int32_t *indptr, const int32_t *indices, const SPMV_REAL *v,
                                const int32_t *vix, int32_t vals, const SPMV_REAL *x, SPMV_REAL *y,
                                int32_t r0, int32_t r1) {
    for (int32_t i = r0; i < r1; i++) {
        SPMV_REAL s = 0;
        if (vix == NULL)
            for (int32_t p = indptr[i]; p < indptr[i + 1]; p++) s += v[p] * x[indices[p]];
        else
            for (int32_t p = indptr[i]; p < indptr[i + 1]; p++)
                s += v[spmv_vtab_get(vix, p, vals)] * x[indices[p]];
        y[i] = s;
    }
}

static int SPMV_NAME(csr_mv)(const spmv_fmt *F, int kernel, const SPMV_REAL *x, SPMV_REAL *y,
                             spmv_err *err);

/* With a locality order: xp = x in the new order, yp = B xp, y = yp in the old order.  The two
 * vectors are allocated per product: the CPU runs order=1 only when asked by hand (no CPU grid
 * holds it), for the products that check a GPU's. */
static int SPMV_NAME(csr_mv_ordered)(const spmv_fmt *F, int kernel, const SPMV_REAL *x,
                                     SPMV_REAL *y, spmv_err *err) {
    int32_t n = F->nrows;
    const int32_t *perm = F->idx[2];
    SPMV_REAL *xp = (SPMV_REAL *)spmv_malloc(2 * (int64_t)n + 1, sizeof(SPMV_REAL), err);
    if (xp == NULL) return SPMV_ENOMEM;
    SPMV_REAL *yp = xp + n;
    for (int32_t k = 0; k < n; k++) xp[k] = x[perm[k]];
    spmv_fmt G = *F;
    G.param[0] = 0;
    G.nidx[2] = 0;
    G.idx[2] = NULL;
    int rc = SPMV_NAME(csr_mv)(&G, kernel, xp, yp, err);
    for (int32_t k = 0; rc == SPMV_OK && k < n; k++) y[perm[k]] = yp[k];
    spmv_free(xp);
    return rc;
}

static int SPMV_NAME(csr_mv)(const spmv_fmt *F, int kernel, const SPMV_REAL *x, SPMV_REAL *y,
                             spmv_err *err) {
    if (F->param[0] == 1) return SPMV_NAME(csr_mv_ordered)(F, kernel, x, y, err);
    const int32_t *indptr = F->idx[0], *indices = F->idx[1];
    const int32_t *vix = F->param[1] ? F->idx[3] : NULL, vals = F->param[1];
    const SPMV_REAL *v = (const SPMV_REAL *)F->val[0];
    int32_t n = F->nrows;
    if (kernel == 0) {
#pragma omp parallel for schedule(static) if (F->nnz > SPMV_OMP_MIN_WORK)
        for (int32_t i = 0; i < n; i++)
            SPMV_NAME(csr_rows)(indptr, indices, v, vix, vals, x, y, i, i + 1);
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
        SPMV_NAME(csr_rows)(indptr, indices, v, vix, vals, x, y, r0, r1);
    }
    return SPMV_OK;
}

int SPMV_NAME(spmv_finite_check)(const SPMV_REAL *v, int64_t n, spmv_err *err) {
    /* A scan on the core's threads with no early exit (it vectorises: a solve checks 2e7 values before it
     * starts), then, only where it saw one, the first non-finite entry in order, which the message names. */
    int bad = 0;
#ifdef _OPENMP /* nt only there: a build without OpenMP (an exported header under nvcc) warns of it */
    int nt = n > SPMV_OMP_MIN_WORK ? omp_get_max_threads() : 1;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(| : bad)
#endif
    for (int64_t k = 0; k < n; k++) bad |= !isfinite(v[k]);
    for (int64_t k = 0; bad && k < n; k++)
        if (!isfinite(v[k]))
            return spmv_fail(err, SPMV_EINVAL, k, -1, -1, "entry %lld is %s", (long long)k,
                             isnan(v[k]) ? "nan" : "inf");
    return SPMV_OK;
}

#undef SPMV_REAL
#undef SPMV_NAME
