// csrc/scaled_impl.h: y = alpha A x + beta y over a format's CPU kernel, for one value type (see
// csrc/format.c)
// SPDX-License-Identifier: BSD-3-Clause
// Included by format.c with SPMV_REAL, SPMV_NAME and SPMV_MV (the ops' mv_f32 or mv_f64) defined; no
// include guard on purpose.

int SPMV_NAME(spmv_fmt_mv_scaled)(const spmv_fmt *F, int kernel, SPMV_REAL alpha,
                                  const SPMV_REAL *x, SPMV_REAL beta, SPMV_REAL *y, SPMV_REAL *work,
                                  spmv_err *err) {
    const spmv_format_ops *op = ops_of(F, err);
    if (op == NULL) return SPMV_EINVAL;
    int rc = kernel_ok(F, kernel, err);
    if (rc) return rc;
    const int32_t n = F->nrows;
    if (alpha == 0) { /* BLAS: A x is not computed; y is not read when beta == 0 */
#pragma omp parallel for schedule(static) if (n > SPMV_OMP_MIN_WORK)
        for (int32_t i = 0; i < n; i++) y[i] = beta == 0 ? (SPMV_REAL)0 : beta * y[i];
        return SPMV_OK;
    }
    if (beta == 0) {
        rc = op->SPMV_MV(F, kernel, x, y, err);
        if (rc || alpha == 1) return rc;
#pragma omp parallel for schedule(static) if (n > SPMV_OMP_MIN_WORK)
        for (int32_t i = 0; i < n; i++) y[i] *= alpha;
        return SPMV_OK;
    }
    if (work == NULL)
        return spmv_fail(
            err, SPMV_EINVAL, -1, 0, n,
            "beta != 0 needs work[nrows] beside y: the kernels overwrite what they write");
    rc = op->SPMV_MV(F, kernel, x, work, err);
    if (rc) return rc;
#pragma omp parallel for schedule(static) if (n > SPMV_OMP_MIN_WORK)
    for (int32_t i = 0; i < n; i++) y[i] = alpha * work[i] + beta * y[i];
    return SPMV_OK;
}

#undef SPMV_REAL
#undef SPMV_NAME
#undef SPMV_MV
