// csrc/sell_impl.h: SELL-C-sigma fill, back-conversion and CPU kernel for one value type
// SPDX-License-Identifier: BSD-3-Clause
// Included by sell.c with SPMV_REAL and SPMV_NAME defined; no include guard on purpose.

static int SPMV_NAME(sell_fill)(const spmv_csr *A, const SPMV_REAL *values, spmv_fmt *F,
                                spmv_err *err) {
    int32_t *perm = F->idx[0], *sp = F->idx[1], *col = F->idx[2], c = F->param[0];
    SPMV_REAL *v = (SPMV_REAL *)F->val[0];
    int64_t nslices = F->scalar[0];
    int32_t n = A->nrows;
    const int32_t *indptr = A->indptr, *indices = A->indices;
    int rc = sell_perm(A, F->param[1], perm, err);
    if (rc) return rc;
    sp[0] = 0;
    for (int64_t s = 0; s < nslices; s++) sp[s + 1] = sp[s] + c * slice_width(A, perm, c, s);
#pragma omp parallel for schedule(static) if (F->scalar[1] > SPMV_OMP_MIN_WORK)
    for (int64_t s = 0; s < nslices; s++) {
        int32_t w = (sp[s + 1] - sp[s]) / c;
        for (int32_t l = 0; l < c; l++) {
            int64_t r = s * c + l;
            int32_t p0 = 0, len = 0;
            if (r < n) p0 = indptr[perm[r]], len = indptr[perm[r] + 1] - p0;
            for (int32_t k = 0; k < w; k++) {
                int64_t q = sp[s] + (int64_t)k * c + l;
                col[q] = k < len ? indices[p0 + k] : -1;
                v[q] = k < len ? values[p0 + k] : (SPMV_REAL)0;
            }
        }
    }
    return SPMV_OK;
}

static int SPMV_NAME(sell_to_csr)(const spmv_fmt *F, int32_t *indptr, int32_t *indices,
                                  SPMV_REAL *values, spmv_err *err) {
    (void)err;
    const int32_t *perm = F->idx[0], *sp = F->idx[1], *col = F->idx[2];
    const SPMV_REAL *v = (const SPMV_REAL *)F->val[0];
    int32_t n = F->nrows, c = F->param[0];
    indptr[0] = 0;
#pragma omp parallel for schedule(static) if (F->scalar[1] > SPMV_OMP_MIN_WORK)
    for (int32_t r = 0; r < n; r++) indptr[perm[r] + 1] = sell_len(F, r);
    for (int32_t i = 0; i < n; i++) indptr[i + 1] += indptr[i];
#pragma omp parallel for schedule(static) if (F->scalar[1] > SPMV_OMP_MIN_WORK)
    for (int32_t r = 0; r < n; r++) {
        int32_t i = perm[r], p0 = indptr[i], len = indptr[i + 1] - p0;
        int64_t base = sp[r / c] + r % c;
        for (int32_t k = 0; k < len; k++) {
            indices[p0 + k] = col[base + (int64_t)k * c];
            values[p0 + k] = v[base + (int64_t)k * c];
        }
    }
    return SPMV_OK;
}

static int SPMV_NAME(sell_mv)(const spmv_fmt *F, int kernel, const SPMV_REAL *x, SPMV_REAL *y,
                              spmv_err *err) {
    (void)kernel;
    (void)err;
    const int32_t *perm = F->idx[0], *sp = F->idx[1], *col = F->idx[2];
    const SPMV_REAL *v = (const SPMV_REAL *)F->val[0];
    int32_t n = F->nrows, c = F->param[0];
    int64_t nslices = F->scalar[0];
#pragma omp parallel for schedule(static) if (F->scalar[1] > SPMV_OMP_MIN_WORK)
    for (int64_t s = 0; s < nslices; s++) {
        int32_t w = (sp[s + 1] - sp[s]) / c;
        for (int32_t l = 0; l < c && s * c + l < n; l++) {
            SPMV_REAL sum = 0;
            for (int32_t k = 0; k < w; k++) {
                int64_t q = sp[s] + (int64_t)k * c + l;
                if (col[q] < 0) break; /* padding only follows a row's entries */
                sum += v[q] * x[col[q]];
            }
            y[perm[s * c + l]] = sum;
        }
    }
    return SPMV_OK;
}

#undef SPMV_REAL
#undef SPMV_NAME
