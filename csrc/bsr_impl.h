// csrc/bsr_impl.h: BSR fill, back-conversion and CPU kernel for one value type (see csrc/bsr.c)
// SPDX-License-Identifier: BSD-3-Clause
// Included by bsr.c with SPMV_REAL and SPMV_NAME defined; no include guard on purpose.

/* Serial: neighbouring blocks, even of different block rows, share presence-bit words. */
static int SPMV_NAME(bsr_fill)(const spmv_csr *A, const SPMV_REAL *values, spmv_fmt *F,
                               spmv_err *err) {
    (void)err;
    int32_t *bp = F->idx[0], *bcol = F->idx[1], *bits = F->idx[2], b = F->param[0];
    int32_t cur[BSR_MAX_B], bc;
    SPMV_REAL *v = (SPMV_REAL *)F->val[0];
    const int32_t *indptr = A->indptr, *indices = A->indices;
    int64_t nbrows = F->scalar[0], bb = (int64_t)b * b, blk = 0;
    for (int64_t k = 0; k < F->nidx[2]; k++) bits[k] = 0;
    bp[0] = 0;
    for (int64_t br = 0; br < nbrows; br++) {
        int32_t r0 = (int32_t)(br * b), rows = bsr_rows(A->nrows, b, br);
        for (int32_t r = 0; r < rows; r++) cur[r] = indptr[r0 + r];
        while ((bc = bsr_next(A, r0, rows, b, cur)) >= 0) {
            bcol[blk] = bc;
            for (int64_t q = 0; q < bb; q++) v[blk * bb + q] = 0;
            for (int32_t r = 0; r < rows; r++)
                for (; cur[r] < indptr[r0 + r + 1] && indices[cur[r]] / b == bc; cur[r]++) {
                    int64_t q = blk * bb + (int64_t)r * b + (indices[cur[r]] - bc * b);
                    spmv_bit_set(bits, q);
                    v[q] = values[cur[r]];
                }
            blk++;
        }
        bp[br + 1] = (int32_t)blk;
    }
    return SPMV_OK;
}

static int SPMV_NAME(bsr_to_csr)(const spmv_fmt *F, int32_t *indptr, int32_t *indices,
                                 SPMV_REAL *values, spmv_err *err) {
    (void)err;
    const int32_t *bp = F->idx[0], *bcol = F->idx[1], *bits = F->idx[2];
    const SPMV_REAL *v = (const SPMV_REAL *)F->val[0];
    int32_t n = F->nrows, b = F->param[0];
    int64_t nbrows = F->scalar[0];
    indptr[0] = 0;
#pragma omp parallel for schedule(static) if (F->nval[0] > SPMV_OMP_MIN_WORK)
    for (int64_t br = 0; br < nbrows; br++)
        for (int32_t r = 0; r < bsr_rows(n, b, br); r++) indptr[br * b + r + 1] = bsr_len(F, br, r);
    for (int32_t i = 0; i < n; i++) indptr[i + 1] += indptr[i];
#pragma omp parallel for schedule(static) if (F->nval[0] > SPMV_OMP_MIN_WORK)
    for (int64_t br = 0; br < nbrows; br++)
        for (int32_t r = 0; r < bsr_rows(n, b, br); r++) {
            int32_t p = indptr[br * b + r];
            for (int64_t blk = bp[br]; blk < bp[br + 1]; blk++)
                for (int32_t c = 0; c < b; c++) {
                    int64_t q = (blk * b + r) * b + c;
                    if (!spmv_bit_get(bits, q)) continue;
                    indices[p] = bcol[blk] * b + c;
                    values[p++] = v[q];
                }
        }
    return SPMV_OK;
}

static int SPMV_NAME(bsr_mv)(const spmv_fmt *F, int kernel, const SPMV_REAL *x, SPMV_REAL *y,
                             spmv_err *err) {
    (void)kernel;
    (void)err;
    const int32_t *bp = F->idx[0], *bcol = F->idx[1];
    const SPMV_REAL *v = (const SPMV_REAL *)F->val[0];
    int32_t n = F->nrows, ncols = F->ncols, b = F->param[0];
    int64_t nbrows = F->scalar[0];
#pragma omp parallel for schedule(static) if (F->nval[0] > SPMV_OMP_MIN_WORK)
    for (int64_t br = 0; br < nbrows; br++)
        for (int32_t r = 0; r < bsr_rows(n, b, br); r++) {
            SPMV_REAL sum = 0;
            for (int64_t blk = bp[br]; blk < bp[br + 1]; blk++) {
                int64_t c0 = (int64_t)bcol[blk] * b;
                int32_t cn = ncols - c0 < b ? (int32_t)(ncols - c0) : b;
                const SPMV_REAL *vr = v + (blk * b + r) * b;
                for (int32_t c = 0; c < cn; c++) sum += vr[c] * x[c0 + c];
            }
            y[br * b + r] = sum;
        }
    return SPMV_OK;
}

#undef SPMV_REAL
#undef SPMV_NAME
