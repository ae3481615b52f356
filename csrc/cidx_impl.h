// csrc/cidx_impl.h: CIDX fill, back-conversion and CPU kernel for one value type (see csrc/cidx.c)
// SPDX-License-Identifier: BSD-3-Clause
// Included by cidx.c with SPMV_REAL and SPMV_NAME defined; no include guard on purpose.

static int SPMV_NAME(cidx_fill)(const spmv_csr *A, const SPMV_REAL *values, spmv_fmt *F,
                                spmv_err *err) {
    (void)err;
    int32_t bits = F->param[0], ebits = cidx_ebits(bits), *base = F->idx[1], *off = F->idx[2],
            *hi = F->idx[3];
    int64_t nchunks = F->scalar[0], nnz = F->nnz, e = 0;
    uint32_t mask = (1u << bits) - 1u;
    memcpy(F->idx[0], A->indptr, sizeof(int32_t) * (size_t)F->nidx[0]);
    if (nnz > 0) memcpy(F->val[0], values, sizeof(SPMV_REAL) * (size_t)nnz);
    if (F->nidx[2] > 0) memset(off, 0, sizeof(int32_t) * (size_t)F->nidx[2]);
    if (F->nidx[3] > 0) memset(hi, 0, sizeof(int32_t) * (size_t)F->nidx[3]);
    for (int64_t c = 0; c < nchunks; c++) {
        int64_t p0 = c * CHUNK, p1 = p0 + CHUNK < nnz ? p0 + CHUNK : nnz;
        int32_t lo, top;
        cidx_extremes(A, c, &lo, &top);
        if ((top - lo) >> bits == 0) {
            base[c] = lo;
            for (int64_t p = p0; p < p1; p++)
                cidx_put(off, p, bits, (uint32_t)(A->indices[p] - lo));
            continue;
        }
        base[c] = (int32_t)(-1 - e);
        for (int64_t p = p0; p < p1; p++) {
            uint32_t col = (uint32_t)A->indices[p];
            cidx_put(off, p, bits, col & mask);
            cidx_put(hi, e * CHUNK + (p - p0), ebits, col >> bits);
        }
        e++;
    }
    return SPMV_OK;
}

static int SPMV_NAME(cidx_to_csr)(const spmv_fmt *F, int32_t *indptr, int32_t *indices,
                                  SPMV_REAL *values, spmv_err *err) {
    (void)err;
    const int32_t *base = F->idx[1], *off = F->idx[2], *hi = F->idx[3];
    int32_t bits = F->param[0];
    int64_t nnz = F->nnz;
    memcpy(indptr, F->idx[0], sizeof(int32_t) * (size_t)F->nidx[0]);
    if (nnz > 0) memcpy(values, F->val[0], sizeof(SPMV_REAL) * (size_t)nnz);
#pragma omp parallel for schedule(static) if (nnz > SPMV_OMP_MIN_WORK)
    for (int64_t p = 0; p < nnz; p++) indices[p] = (int32_t)cidx_col(base, off, hi, bits, p);
    return SPMV_OK;
}

/* Rows [r0, r1) with b-bit offsets; b a constant where inlined, so the field loads are plain. */
static inline void SPMV_NAME(cidx_rows)(const spmv_fmt *F, int32_t b, const SPMV_REAL *x,
                                        SPMV_REAL *y, int32_t r0, int32_t r1) {
    const int32_t *ip = F->idx[0], *base = F->idx[1], *off = F->idx[2], *hi = F->idx[3];
    const SPMV_REAL *v = (const SPMV_REAL *)F->val[0];
    for (int32_t i = r0; i < r1; i++) {
        SPMV_REAL s = 0;
        for (int64_t p = ip[i]; p < ip[i + 1]; p++) s += v[p] * x[cidx_col(base, off, hi, b, p)];
        y[i] = s;
    }
}

static int SPMV_NAME(cidx_mv)(const spmv_fmt *F, int kernel, const SPMV_REAL *x, SPMV_REAL *y,
                              spmv_err *err) {
    (void)kernel;
    (void)err;
    int32_t n = F->nrows;
    if (F->param[0] == 8) {
#pragma omp parallel for schedule(static) if (F->nnz > SPMV_OMP_MIN_WORK)
        for (int32_t i = 0; i < n; i++) SPMV_NAME(cidx_rows)(F, 8, x, y, i, i + 1);
    } else {
#pragma omp parallel for schedule(static) if (F->nnz > SPMV_OMP_MIN_WORK)
        for (int32_t i = 0; i < n; i++) SPMV_NAME(cidx_rows)(F, 16, x, y, i, i + 1);
    }
    return SPMV_OK;
}

#undef SPMV_REAL
#undef SPMV_NAME
