// csrc/bro_ell_impl.h: BRO-ELL fill, back-conversion and CPU kernel for one value type
// SPDX-License-Identifier: BSD-3-Clause
// Included by bro_ell.c with SPMV_REAL and SPMV_NAME defined; no include guard on purpose.

static int SPMV_NAME(bro_ell_fill)(const spmv_csr *A, const SPMV_REAL *values, spmv_fmt *F,
                                   spmv_err *err) {
    int32_t *wp = F->idx[0], *vp = F->idx[1], *info = F->idx[2], *words = F->idx[3];
    int32_t h = F->param[0], n = A->nrows;
    SPMV_REAL *v = (SPMV_REAL *)F->val[0];
    const int32_t *indptr = A->indptr, *indices = A->indices;
    int64_t nslices = F->scalar[0];
    wp[0] = vp[0] = 0;
    for (int64_t s = 0; s < nslices; s++) {
        int32_t w, b;
        int rc = bro_ell_slice(A, h, F->param[1], s, &w, &b, err);
        if (rc) return rc;
        info[2 * s] = w;
        info[2 * s + 1] = b;
        wp[s + 1] = (int32_t)(wp[s] + h * bro_ell_nwords(w, b)); /* <= words: guarded */
        vp[s + 1] = vp[s] + h * w;
    }
#pragma omp parallel for schedule(static) if (F->scalar[2] > SPMV_OMP_MIN_WORK)
    for (int64_t s = 0; s < nslices; s++) {
        int32_t w = info[2 * s], b = info[2 * s + 1], spw = 32 / b,
                nw = (int32_t)bro_ell_nwords(w, b);
        for (int32_t l = 0; l < h; l++) {
            int64_t i = s * h + l;
            int32_t p0 = 0, len = 0;
            if (i < n) p0 = indptr[i], len = indptr[i + 1] - p0;
            for (int32_t q = 0; q < nw; q++) {
                uint32_t word = 0;
                for (int32_t t = 0, j = q * spw; t < spw && j < len; t++, j++) {
                    uint32_t sym = (uint32_t)(indices[p0 + j] - (j > 0 ? indices[p0 + j - 1] : -1));
                    word |= sym << (t * b); /* t*b <= 32 - b: never a full-width shift */
                }
                words[wp[s] + (int64_t)q * h + l] = (int32_t)word;
            }
            for (int32_t j = 0; j < w; j++)
                v[vp[s] + (int64_t)j * h + l] = j < len ? values[p0 + j] : (SPMV_REAL)0;
        }
    }
    return SPMV_OK;
}

static int SPMV_NAME(bro_ell_to_csr)(const spmv_fmt *F, int32_t *indptr, int32_t *indices,
                                     SPMV_REAL *values, spmv_err *err) {
    (void)err;
    const int32_t *wp = F->idx[0], *vp = F->idx[1], *info = F->idx[2], *words = F->idx[3];
    const SPMV_REAL *v = (const SPMV_REAL *)F->val[0];
    int32_t n = F->nrows, h = F->param[0];
    indptr[0] = 0;
#pragma omp parallel for schedule(static) if (F->scalar[2] > SPMV_OMP_MIN_WORK)
    for (int32_t i = 0; i < n; i++) indptr[i + 1] = bro_ell_len(F, i);
    for (int32_t i = 0; i < n; i++) indptr[i + 1] += indptr[i];
#pragma omp parallel for schedule(static) if (F->scalar[2] > SPMV_OMP_MIN_WORK)
    for (int32_t i = 0; i < n; i++) {
        int32_t s = i / h, l = i % h, b = info[2 * s + 1], p0 = indptr[i];
        int32_t len = indptr[i + 1] - p0;
        int64_t col = -1;
        for (int32_t j = 0; j < len; j++) {
            col += bro_ell_sym(words, wp[s], h, l, j, b);
            indices[p0 + j] = (int32_t)col;
            values[p0 + j] = v[vp[s] + (int64_t)j * h + l];
        }
    }
    return SPMV_OK;
}

static int SPMV_NAME(bro_ell_mv)(const spmv_fmt *F, int kernel, const SPMV_REAL *x, SPMV_REAL *y,
                                 spmv_err *err) {
    (void)kernel;
    (void)err;
    const int32_t *wp = F->idx[0], *vp = F->idx[1], *info = F->idx[2], *words = F->idx[3];
    const SPMV_REAL *v = (const SPMV_REAL *)F->val[0];
    int32_t n = F->nrows, h = F->param[0];
#pragma omp parallel for schedule(static) if (F->scalar[2] > SPMV_OMP_MIN_WORK)
    for (int32_t i = 0; i < n; i++) {
        int32_t s = i / h, l = i % h, w = info[2 * s], b = info[2 * s + 1];
        int64_t col = -1;
        SPMV_REAL sum = 0;
        for (int32_t j = 0; j < w; j++) {
            uint32_t sym = bro_ell_sym(words, wp[s], h, l, j, b);
            if (sym == 0) break; /* padding only follows a row's entries */
            col += sym;
            sum += v[vp[s] + (int64_t)j * h + l] * x[col];
        }
        y[i] = sum;
    }
    return SPMV_OK;
}

#undef SPMV_REAL
#undef SPMV_NAME
