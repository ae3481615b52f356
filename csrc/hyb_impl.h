// csrc/hyb_impl.h: HYB fill, back-conversion and CPU kernel for one value type (see csrc/hyb.c)
// SPDX-License-Identifier: BSD-3-Clause
// Included by hyb.c with SPMV_REAL and SPMV_NAME defined; no include guard on purpose.

static int SPMV_NAME(hyb_fill)(const spmv_csr *A, const SPMV_REAL *values, spmv_fmt *F,
                               spmv_err *err) {
    (void)err;
    int32_t *ecol = F->idx[0], *crow = F->idx[1], *ccol = F->idx[2];
    SPMV_REAL *ev = (SPMV_REAL *)F->val[0], *cv = (SPMV_REAL *)F->val[1];
    int32_t n = A->nrows, w = (int32_t)F->scalar[0];
    const int32_t *indptr = A->indptr, *indices = A->indices;
    SPMV_NAME(spmv_ell_part_fill)(A, values, w, ecol, ev);
    int64_t q = 0; /* the COO part is O(coo_nnz): one serial pass */
    for (int32_t i = 0; i < n; i++)
        for (int64_t p = (int64_t)indptr[i] + w; p < indptr[i + 1]; p++, q++) {
            crow[q] = i;
            ccol[q] = indices[p];
            cv[q] = values[p];
        }
    return SPMV_OK;
}

static int SPMV_NAME(hyb_to_csr)(const spmv_fmt *F, int32_t *indptr, int32_t *indices,
                                 SPMV_REAL *values, spmv_err *err) {
    (void)err;
    const int32_t *ecol = F->idx[0], *crow = F->idx[1], *ccol = F->idx[2];
    const SPMV_REAL *ev = (const SPMV_REAL *)F->val[0], *cv = (const SPMV_REAL *)F->val[1];
    int32_t n = F->nrows, w = (int32_t)F->scalar[0];
    int64_t coo = F->scalar[1], q = 0;
    int32_t pos = 0;
    indptr[0] = 0;
    for (int32_t i = 0; i < n; i++) { /* a row's COO entries follow its ELL ones */
        for (int32_t k = 0; k < w; k++) {
            int64_t s = (int64_t)k * n + i;
            if (ecol[s] < 0) break;
            indices[pos] = ecol[s];
            values[pos++] = ev[s];
        }
        for (; q < coo && crow[q] == i; q++) {
            indices[pos] = ccol[q];
            values[pos++] = cv[q];
        }
        indptr[i + 1] = pos;
    }
    return SPMV_OK;
}

static int SPMV_NAME(hyb_mv)(const spmv_fmt *F, int kernel, const SPMV_REAL *x, SPMV_REAL *y,
                             spmv_err *err) {
    (void)kernel;
    (void)err;
    const int32_t *ecol = F->idx[0], *crow = F->idx[1], *ccol = F->idx[2];
    const SPMV_REAL *ev = (const SPMV_REAL *)F->val[0], *cv = (const SPMV_REAL *)F->val[1];
    int32_t n = F->nrows, w = (int32_t)F->scalar[0];
    int64_t coo = F->scalar[1];
#pragma omp parallel if (F->nidx[0] + coo > SPMV_OMP_MIN_WORK)
    {
        int t = 0, nt = 1;
#ifdef _OPENMP
        t = omp_get_thread_num();
        nt = omp_get_num_threads();
#endif
        SPMV_NAME(spmv_ell_part_rows)(n, w, ecol, ev, x, y); /* ends in a barrier */
        SPMV_NAME(spmv_coo_part_chunk)(crow, ccol, cv, coo, x, y, t, nt, 1);
    }
    return SPMV_OK;
}

#undef SPMV_REAL
#undef SPMV_NAME
