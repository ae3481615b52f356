// csrc/ell_impl.h: ELL fill, back-conversion and CPU kernel for one value type (see csrc/ell.c)
// SPDX-License-Identifier: BSD-3-Clause
// Included by ell.c with SPMV_REAL and SPMV_NAME defined; no include guard on purpose.

void SPMV_NAME(spmv_ell_part_fill)(const spmv_csr *A, const SPMV_REAL *values, int32_t w,
                                   int32_t *col, SPMV_REAL *v) {
    int32_t n = A->nrows;
    const int32_t *indptr = A->indptr, *indices = A->indices;
#pragma omp parallel for schedule(static) if ((int64_t)n * w > SPMV_OMP_MIN_WORK)
    for (int32_t i = 0; i < n; i++) {
        int32_t p0 = indptr[i], len = indptr[i + 1] - p0;
        for (int32_t k = 0; k < w; k++) {
            int64_t s = (int64_t)k * n + i;
            col[s] = k < len ? indices[p0 + k] : -1;
            v[s] = k < len ? values[p0 + k] : (SPMV_REAL)0;
        }
    }
}

void SPMV_NAME(spmv_ell_part_rows)(int32_t n, int32_t w, const int32_t *col, const SPMV_REAL *v,
                                   const SPMV_REAL *x, SPMV_REAL *y) {
#pragma omp for schedule(static)
    for (int32_t i = 0; i < n; i++) {
        SPMV_REAL s = 0;
        for (int32_t k = 0; k < w; k++) {
            int64_t q = (int64_t)k * n + i;
            if (col[q] < 0) break; /* padding only follows a row's entries */
            s += v[q] * x[col[q]];
        }
        y[i] = s;
    }
}

static int SPMV_NAME(ell_fill)(const spmv_csr *A, const SPMV_REAL *values, spmv_fmt *F,
                               spmv_err *err) {
    (void)err;
    SPMV_NAME(spmv_ell_part_fill)
    (A, values, (int32_t)F->scalar[0], F->idx[0], (SPMV_REAL *)F->val[0]);
    return SPMV_OK;
}

static int SPMV_NAME(ell_to_csr)(const spmv_fmt *F, int32_t *indptr, int32_t *indices,
                                 SPMV_REAL *values, spmv_err *err) {
    (void)err;
    const int32_t *col = F->idx[0];
    const SPMV_REAL *v = (const SPMV_REAL *)F->val[0];
    int32_t n = F->nrows, w = (int32_t)F->scalar[0];
    indptr[0] = 0;
#pragma omp parallel for schedule(static) if (F->nidx[0] > SPMV_OMP_MIN_WORK)
    for (int32_t i = 0; i < n; i++) {
        int32_t k = 0;
        while (k < w && col[(int64_t)k * n + i] >= 0) k++;
        indptr[i + 1] = k;
    }
    for (int32_t i = 0; i < n; i++) indptr[i + 1] += indptr[i];
#pragma omp parallel for schedule(static) if (F->nidx[0] > SPMV_OMP_MIN_WORK)
    for (int32_t i = 0; i < n; i++) {
        int32_t p0 = indptr[i], len = indptr[i + 1] - p0;
        for (int32_t k = 0; k < len; k++) {
            indices[p0 + k] = col[(int64_t)k * n + i];
            values[p0 + k] = v[(int64_t)k * n + i];
        }
    }
    return SPMV_OK;
}

static int SPMV_NAME(ell_mv)(const spmv_fmt *F, int kernel, const SPMV_REAL *x, SPMV_REAL *y,
                             spmv_err *err) {
    (void)kernel;
    (void)err;
#pragma omp parallel if (F->nidx[0] > SPMV_OMP_MIN_WORK)
    SPMV_NAME(spmv_ell_part_rows)
    (F->nrows, (int32_t)F->scalar[0], F->idx[0], (const SPMV_REAL *)F->val[0], x, y);
    return SPMV_OK;
}

#undef SPMV_REAL
#undef SPMV_NAME
