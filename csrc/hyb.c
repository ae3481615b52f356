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

#ifdef _OPENMP
#include <omp.h>
#endif

static int hyb_k(int32_t k, spmv_err *err) {
    if (k < -1)
        return spmv_fail(err, SPMV_EINVAL, -1, k, -1,
                         "The 'k' parameter of hyb must be -1 (Bell-Garland width) or an ELL "
                         "width in [0, %d]. Got %d instead.",
                         INT32_MAX, k);
    return SPMV_OK;
}

/* The size for ELL width k and coo entries in the COO part. */
static int hyb_size_k(const spmv_csr *A, spmv_fmt *F, int32_t k, int64_t coo, spmv_err *err) {
    char what[80];
    spmv_what(err, what, sizeof what, "HYB with ELL width %d and %lld COO entries", (int)k,
              (long long)coo);
    int rc = spmv_ell_part_size(A, F, k, coo, what, err);
    if (rc) return rc;
    F->scalar[1] = coo;
    F->nidx[1] = coo;
    F->nidx[2] = coo;
    F->nval[1] = coo;
    return SPMV_OK;
}

static int hyb_size(const spmv_csr *A, spmv_fmt *F, spmv_err *err) {
    int32_t k = F->param[0];
    int rc = hyb_k(k, err);
    if (rc) return rc;
    if (k == -1) {
        rc = spmv_hyb_width(A, &k, err);
        if (rc) return rc;
    }
    int64_t coo = 0;
    for (int32_t i = 0; i < A->nrows; i++) {
        int32_t len = A->indptr[i + 1] - A->indptr[i];
        if (len > k) coo += len - k;
    }
    return hyb_size_k(A, F, k, coo, err);
}

/* The width and the COO entries from the histogram of row lengths. */
static int hyb_size_summary(spmv_summary *S, spmv_fmt *F, spmv_err *err) {
    int32_t k = F->param[0];
    int rc = hyb_k(k, err);
    if (rc) return rc;
    if (k == -1) k = S->hyb_width;
    int64_t coo = 0;
    for (int64_t len = (int64_t)k + 1; len <= S->lmax; len++) coo += (len - k) * S->hist[len];
    return hyb_size_k(S->A, F, k, coo, err);
}

#define SPMV_REAL float
#define SPMV_NAME(x) x##_f32
#include "hyb_impl.h"
#define SPMV_REAL double
#define SPMV_NAME(x) x##_f64
#include "hyb_impl.h"

/* A row's COO entries follow a full ELL part and continue its columns, as hyb_fill leaves them. */
static int hyb_check(const spmv_fmt *F, spmv_err *err) {
    static const char *const what[] = {"ELL col", "COO row",    "COO col",
                                       NULL,      "ELL values", "COO values"};
    int rc = spmv_fmt_scalar(F, 0, 0, INT32_MAX, "ELL width", err);
    if (rc == SPMV_OK) rc = spmv_fmt_scalar(F, 1, 0, INT32_MAX, "COO entries", err);
    if (rc) return rc;
    int32_t n = F->nrows, w = (int32_t)F->scalar[0];
    int64_t slots = (int64_t)n * w, coo = F->scalar[1], q = 0, count = 0;
    int64_t nidx[SPMV_MAXIDX] = {slots, coo, coo}, nval[SPMV_MAXVAL] = {slots, coo};
    rc = spmv_fmt_lengths(F, nidx, nval, what, err);
    const int32_t *crow = F->idx[1], *ccol = F->idx[2];
    for (int32_t i = 0; rc == SPMV_OK && i < n; i++) {
        int64_t prev = -1;
        int32_t len = 0;
        rc = spmv_ell_part_row(F, i, w, F->idx[0], &prev, &len, err);
        count += len;
        for (; rc == SPMV_OK && q < coo && crow[q] == i; q++, count++)
            rc = len < w ? spmv_fail(err, SPMV_EINDEX, q, i, len,
                                     "hyb: COO entry %lld is in row %d, whose ELL part holds %d "
                                     "of %d entries: COO entries follow a full ELL part",
                                     (long long)q, i, len, w)
                         : spmv_fmt_col(F, i, ccol[q], &prev, "the COO col", err);
    }
    if (rc == SPMV_OK && q < coo)
        rc = spmv_fail(err, SPMV_EINDEX, q, crow[q], n,
                       "hyb: COO row[%lld] = %d is outside [0, nrows = %d) or below the row before "
                       "it (rows must not decrease)",
                       (long long)q, crow[q], n);
    return rc ? rc : spmv_fmt_count(F, count, err);
}

SPMV_API const spmv_format_ops spmv_hyb_ops = {
    .size = hyb_size,
    .fill_f32 = hyb_fill_f32,
    .fill_f64 = hyb_fill_f64,
    .to_csr_f32 = hyb_to_csr_f32,
    .to_csr_f64 = hyb_to_csr_f64,
    .mv_f32 = hyb_mv_f32,
    .mv_f64 = hyb_mv_f64,
    .check = hyb_check,
    .size_summary = hyb_size_summary,
};
