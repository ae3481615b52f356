// csrc/hyb.c: HYB (ELL + COO) — size query, conversion from CSR, back to CSR, CPU kernel
// SPDX-License-Identifier: BSD-3-Clause
//
// Layout (spmv_fmt with format SPMV_FMT_HYB): param[0] = K, the ELL width, or -1 for Bell and
// Garland's rule (spmv_hyb_width).  scalar[0] = K used, scalar[1] = coo_nnz.  Each row's first
// min(len, K) entries go to the ELL part, the rest to the COO part:
//   idx[0] = ELL col[nrows*K], val[0] = ELL values[nrows*K], column-major as in csrc/ell.c
//            (slot k of row i at k*nrows + i; padding column -1, value 0);
//   idx[1] = COO row[coo_nnz], idx[2] = COO col[coo_nnz], val[1] = COO values[coo_nnz], in CSR's
//            row-major order.
// K larger than the longest row is allowed; the padding guard (nrows*K + coo_nnz slots) decides.
// Kernel variant 0: the ELL part row-parallel writing y, then the COO part added by threads that
// each own a contiguous run of entries moved to row boundaries, as csrc/coo.c does.
#include "spmv_internal.h"

#include <stdio.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static int hyb_size(const spmv_csr *A, spmv_fmt *F, spmv_err *err) {
    int32_t k = F->param[0];
    if (k < -1)
        return spmv_fail(err, SPMV_EINVAL, -1, k, -1,
                         "The 'k' parameter of hyb must be -1 (Bell-Garland width) or an ELL "
                         "width in [0, %d]. Got %d instead.", INT32_MAX, k);
    if (k == -1) {
        int rc = spmv_hyb_width(A, &k, err);
        if (rc) return rc;
    }
    int64_t coo = 0;
    for (int32_t i = 0; i < A->nrows; i++) {
        int32_t len = A->indptr[i + 1] - A->indptr[i];
        if (len > k) coo += len - k;
    }
    char what[80];
    snprintf(what, sizeof what, "HYB with ELL width %d and %lld COO entries", (int)k,
             (long long)coo);
    int rc = spmv_ell_part_size(A, F, k, coo, what, err);
    if (rc) return rc;
    F->scalar[1] = coo;
    F->nidx[1] = coo;
    F->nidx[2] = coo;
    F->nval[1] = coo;
    return SPMV_OK;
}

#define SPMV_REAL float
#define SPMV_NAME(x) x##_f32
#include "hyb_impl.h"
#define SPMV_REAL double
#define SPMV_NAME(x) x##_f64
#include "hyb_impl.h"

SPMV_API const spmv_format_ops spmv_hyb_ops = {
    hyb_size, hyb_fill_f32, hyb_fill_f64, hyb_to_csr_f32, hyb_to_csr_f64, hyb_mv_f32, hyb_mv_f64, 1,
};
