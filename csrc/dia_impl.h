// csrc/dia_impl.h: DIA fill, back-conversion and CPU kernel for one value type (see csrc/dia.c)
// SPDX-License-Identifier: BSD-3-Clause
// Included by dia.c with SPMV_REAL and SPMV_NAME defined; no include guard on purpose.

static int SPMV_NAME(dia_fill)(const spmv_csr *A, const SPMV_REAL *values, spmv_fmt *F,
                               spmv_err *err) {
    int32_t *slot = NULL, *bits = F->idx[1], n = A->nrows;
    SPMV_REAL *data = (SPMV_REAL *)F->val[0];
    int rc = dia_offsets(A, F, &slot, err);
    if (rc) goto done;
    if (F->nval[0] > 0) memset(data, 0, sizeof(SPMV_REAL) * (size_t)F->nval[0]);
    if (F->nidx[1] > 0) memset(bits, 0, sizeof(int32_t) * (size_t)F->nidx[1]);
    /* serial: neighbouring rows share presence-bit words */
    for (int32_t i = 0; i < n; i++)
        for (int32_t p = A->indptr[i]; p < A->indptr[i + 1]; p++) {
            int64_t s = (int64_t)slot[(int64_t)A->indices[p] - i + n - 1] * n + i;
            data[s] = values[p];
            spmv_bit_set(bits, s);
        }
done:
    spmv_free(slot);
    return rc;
}

static int SPMV_NAME(dia_to_csr)(const spmv_fmt *F, int32_t *indptr, int32_t *indices,
                                 SPMV_REAL *values, spmv_err *err) {
    (void)err;
    const int32_t *off = F->idx[0], *bits = F->idx[1];
    const SPMV_REAL *data = (const SPMV_REAL *)F->val[0];
    int32_t n = F->nrows, pos = 0;
    int64_t ndiag = F->scalar[0];
    indptr[0] = 0;
    for (int32_t i = 0; i < n; i++) { /* ascending offsets give ascending columns */
        for (int64_t d = 0; d < ndiag; d++) {
            int64_t s = d * n + i;
            if (!spmv_bit_get(bits, s)) continue;
            indices[pos] = i + off[d];
            values[pos++] = data[s];
        }
        indptr[i + 1] = pos;
    }
    return SPMV_OK;
}

static int SPMV_NAME(dia_mv)(const spmv_fmt *F, int kernel, const SPMV_REAL *x, SPMV_REAL *y,
                             spmv_err *err) {
    (void)kernel;
    (void)err;
    const int32_t *off = F->idx[0];
    const SPMV_REAL *data = (const SPMV_REAL *)F->val[0];
    int32_t n = F->nrows, ncols = F->ncols;
    int64_t ndiag = F->scalar[0];
    int32_t nblocks = (int32_t)(((int64_t)n + DIA_BLOCK - 1) / DIA_BLOCK);
#pragma omp parallel for schedule(static) if (F->nval[0] > DIA_OMP_MIN_WORK)
    for (int32_t b = 0; b < nblocks; b++) {
        int64_t i0 = (int64_t)b * DIA_BLOCK, i1 = i0 + DIA_BLOCK < n ? i0 + DIA_BLOCK : n;
        for (int64_t i = i0; i < i1; i++) y[i] = 0;
        for (int64_t d = 0; d < ndiag; d++) {
            int64_t o = off[d];
            int64_t lo = i0 > -o ? i0 : -o, hi = i1 < ncols - o ? i1 : ncols - o; /* x in range */
            const SPMV_REAL *dd = data + d * n;
            for (int64_t i = lo; i < hi; i++) y[i] += dd[i] * x[i + o];
        }
    }
    return SPMV_OK;
}

#undef SPMV_REAL
#undef SPMV_NAME
