// csrc/format.c: dispatch from a spmv_fmt to its format's operations (csrc/formats.def), the scaled
// product y = alpha A x + beta y, the padding guard, state checks
// SPDX-License-Identifier: BSD-3-Clause
#include "spmv_internal.h"

static const spmv_format_ops *const formats[SPMV_NFORMATS] = {
#define SPMV_FORMAT(CODE, name) &spmv_##name##_ops,
#include "formats.def"
#undef SPMV_FORMAT
};

static const char *const names[SPMV_NFORMATS] = {
#define SPMV_FORMAT(CODE, name) #name,
#include "formats.def"
#undef SPMV_FORMAT
};

const char *spmv_format_name(int f) { return f >= 0 && f < SPMV_NFORMATS ? names[f] : NULL; }

int32_t spmv_format_unread(int f) { return f >= 0 && f < SPMV_NFORMATS ? formats[f]->unread : 0; }

int spmv_format_finite_x(int f) { return f >= 0 && f < SPMV_NFORMATS ? formats[f]->finite_x : 0; }

static const spmv_format_ops *ops_of(const spmv_fmt *F, spmv_err *err) {
    if (F == NULL || F->format < 0 || F->format >= SPMV_NFORMATS) {
        spmv_fail(err, SPMV_EINVAL, -1, F ? F->format : -1, SPMV_NFORMATS,
                  "format code %d is not in [0, %d)", F ? F->format : -1, SPMV_NFORMATS);
        return NULL;
    }
    return formats[F->format];
}

/* The public conversions check A themselves (O(nnz), small beside the conversion): the core
 * refuses what it cannot read safely whoever calls it. */
static int csr_ok(const spmv_csr *A, spmv_err *err) {
    if (A == NULL || A->indptr == NULL || A->nrows < 1)
        return spmv_fail(err, SPMV_EINVAL, -1, A ? A->nrows : -1, 1,
                         "conversion needs a CSR matrix with nrows >= 1 and indptr, not NULL");
    return spmv_csr_check(A, (int64_t)A->nrows + 1, A->indptr[A->nrows], err);
}

int spmv_fmt_size(const spmv_csr *A, spmv_fmt *F, spmv_err *err) {
    const spmv_format_ops *op = ops_of(F, err);
    if (op == NULL) return SPMV_EINVAL;
    int rc = csr_ok(A, err);
    return rc ? rc : spmv_fmt_size_checked(A, F, err);
}
/* F's shape from A and every size zero: where both size queries start. */
static void size_reset(spmv_fmt *F, const spmv_csr *A) {
    F->nrows = A->nrows;
    F->ncols = A->ncols;
    F->nnz = A->indptr[A->nrows];
    for (int k = 0; k < SPMV_MAXIDX; k++) F->nidx[k] = 0, F->idx[k] = NULL;
    for (int k = 0; k < SPMV_MAXVAL; k++) F->nval[k] = 0, F->val[k] = NULL;
    for (int k = 0; k < 4; k++) F->scalar[k] = 0;
}

int spmv_fmt_size_checked(const spmv_csr *A, spmv_fmt *F, spmv_err *err) {
    const spmv_format_ops *op = ops_of(F, err);
    if (op == NULL) return SPMV_EINVAL;
    size_reset(F, A);
    return op->size(A, F, err);
}

int spmv_fmt_size_summary(spmv_summary *S, spmv_fmt *F, spmv_err *err) {
    const spmv_format_ops *op = ops_of(F, err);
    if (op == NULL) return SPMV_EINVAL;
    const spmv_csr *A = S->A;
    size_reset(F, A);
    return op->size_summary(S, F, err);
}

int spmv_fmt_need(spmv_summary *S, const spmv_fmt *F, spmv_err *err) {
    const spmv_format_ops *op = ops_of(F, err);
    if (op == NULL) return SPMV_EINVAL;
    void *res;
    int rc = op->pass != NULL ? spmv_pass_result(&S->pass, op->pass, &res, err) : SPMV_OK;
    return rc == SPMV_OK && op->need ? op->need(S, F, err) : rc;
}

int spmv_fmt_pattern(const spmv_fmt *F) {
    const spmv_format_ops *op = ops_of(F, NULL);
    return op == NULL || op->pass != NULL || op->pattern;
}

int spmv_fmt_fill_f32(const spmv_csr *A, const float *values, spmv_fmt *F, spmv_err *err) {
    const spmv_format_ops *op = ops_of(F, err);
    int rc = op ? csr_ok(A, err) : SPMV_EINVAL;
    return rc ? rc : op->fill_f32(A, values, F, err);
}

int spmv_fmt_fill_f64(const spmv_csr *A, const double *values, spmv_fmt *F, spmv_err *err) {
    const spmv_format_ops *op = ops_of(F, err);
    int rc = op ? csr_ok(A, err) : SPMV_EINVAL;
    return rc ? rc : op->fill_f64(A, values, F, err);
}

int spmv_fmt_to_csr_f32(const spmv_fmt *F, int32_t *indptr, int32_t *indices, float *values,
                        spmv_err *err) {
    const spmv_format_ops *op = ops_of(F, err);
    return op ? op->to_csr_f32(F, indptr, indices, values, err) : SPMV_EINVAL;
}

int spmv_fmt_to_csr_f64(const spmv_fmt *F, int32_t *indptr, int32_t *indices, double *values,
                        spmv_err *err) {
    const spmv_format_ops *op = ops_of(F, err);
    return op ? op->to_csr_f64(F, indptr, indices, values, err) : SPMV_EINVAL;
}

/* How many CPU kernel variants a format has: those of its SPMV_CPU lines in csrc/kernels.def, which
 * are 0 .. n-1 (tools/structure.py checks), so that a new kernel touches its case and its line only. */
static int cpu_variants(int format) {
    int n = 0;
#define SPMV_CPU(id, CODE, variant, ...)                                                           \
    if (format == SPMV_FMT_##CODE && (variant) + 1 > n) n = (variant) + 1;
#include "kernels.def"
    return n;
}

static int kernel_ok(const spmv_fmt *F, int kernel, spmv_err *err) {
    const int n = cpu_variants(F->format);
    if (kernel < 0 || kernel >= n)
        return spmv_fail(err, SPMV_EINVAL, -1, kernel, n,
                         "kernel variant %d of format %s is not in [0, %d)", kernel,
                         names[F->format], n);
    return SPMV_OK;
}

int spmv_fmt_mv_f32(const spmv_fmt *F, int kernel, const float *x, float *y, spmv_err *err) {
    const spmv_format_ops *op = ops_of(F, err);
    if (op == NULL) return SPMV_EINVAL;
    int rc = kernel_ok(F, kernel, err);
    return rc ? rc : op->mv_f32(F, kernel, x, y, err);
}

int spmv_fmt_mv_f64(const spmv_fmt *F, int kernel, const double *x, double *y, spmv_err *err) {
    const spmv_format_ops *op = ops_of(F, err);
    if (op == NULL) return SPMV_EINVAL;
    int rc = kernel_ok(F, kernel, err);
    return rc ? rc : op->mv_f64(F, kernel, x, y, err);
}

#define SPMV_REAL float
#define SPMV_NAME(x) x##_f32
#define SPMV_MV mv_f32
#include "scaled_impl.h"
#define SPMV_REAL double
#define SPMV_NAME(x) x##_f64
#define SPMV_MV mv_f64
#include "scaled_impl.h"

int64_t spmv_fmt_bytes(const spmv_fmt *F, int elem_size) {
    int64_t b = 0;
    for (int k = 0; k < SPMV_MAXIDX; k++) b += F->nidx[k] * (int64_t)sizeof(int32_t);
    for (int k = 0; k < SPMV_MAXVAL; k++) b += F->nval[k] * (int64_t)elem_size;
    return b;
}

int spmv_fill_guard(const spmv_fmt *F, int64_t slots, const char *what, spmv_err *err) {
    double fill = F->max_fill > 0 ? F->max_fill : SPMV_DEFAULT_MAX_FILL;
    int64_t base = F->nnz > F->nrows ? F->nnz : F->nrows;
    if (slots > INT32_MAX)
        return spmv_fail(err, SPMV_ENOTAPPLICABLE, -1, slots, INT32_MAX,
                         "%s needs %lld stored slots, past the int32 limit %d", what,
                         (long long)slots, INT32_MAX);
    if ((double)slots > fill * (double)base)
        return spmv_fail(err, SPMV_ENOTAPPLICABLE, -1, slots, (int64_t)(fill * (double)base),
                         "%s pads to %lld stored slots, %.1fx max(nnz, nrows) = %lld, past "
                         "max_fill=%g",
                         what, (long long)slots, (double)slots / (double)base, (long long)base,
                         fill);
    return SPMV_OK;
}

/* ---- structural checks of a filled spmv_fmt (spmv_fmt_check and each format's check op) ---- */

int spmv_fmt_check(const spmv_fmt *F, spmv_err *err) {
    const spmv_format_ops *op = ops_of(F, err);
    if (op == NULL) return SPMV_EINVAL;
    const char *fn = names[F->format];
    if (F->nrows < 1 || F->ncols < 1)
        return spmv_fail(err, SPMV_EINVAL, -1, F->nrows < 1 ? F->nrows : F->ncols, 1,
                         "%s: shape %d x %d; nrows and ncols must be >= 1", fn, F->nrows, F->ncols);
    if (F->nnz < 0 || F->nnz > INT32_MAX)
        return spmv_fail(err, SPMV_EINVAL, -1, F->nnz, INT32_MAX,
                         "%s: nnz = %lld is outside [0, %d]", fn, (long long)F->nnz, INT32_MAX);
    return op->check(F, err);
}

/* Padding slots are the value slots no stored entry maps to; to_csr reads exactly the stored
 * entries' slots.  So every padding slot holds zero iff F's value arrays hold as many non-zero
 * slots as to_csr's values hold non-zeros: one rule for every format, with no format's layout
 * written twice.  (-0.0 counts as zero: a kernel adding -0.0 * x changes nothing; NaN as non-zero.) */
#define FMT_CHECK_VALUES(SUFFIX, REAL)                                                             \
    int spmv_fmt_check_values_##SUFFIX(const spmv_fmt *F, spmv_err *err) {                         \
        const spmv_format_ops *op = ops_of(F, err);                                                \
        if (op == NULL) return SPMV_EINVAL;                                                        \
        if (op->vals_slot && F->param[op->vals_slot - 1]) /* a table: no slot is padding */        \
            return SPMV_OK;                                                                        \
        int64_t slots = 0, entries = 0;                                                            \
        for (int k = 0; k < SPMV_MAXVAL; k++)                                                      \
            for (int64_t q = 0; q < F->nval[k]; q++) slots += ((const REAL *)F->val[k])[q] != 0;   \
        int32_t *ip = (int32_t *)spmv_malloc((int64_t)F->nrows + 1, sizeof(int32_t), err);         \
        int32_t *ix = (int32_t *)spmv_malloc(F->nnz, sizeof(int32_t), err);                        \
        REAL *v = (REAL *)spmv_malloc(F->nnz, sizeof(REAL), err);                                  \
        int rc = ip && ix && v ? op->to_csr_##SUFFIX(F, ip, ix, v, err) : SPMV_ENOMEM;             \
        for (int64_t q = 0; rc == SPMV_OK && q < F->nnz; q++) entries += v[q] != 0;                \
        spmv_free(ip);                                                                             \
        spmv_free(ix);                                                                             \
        spmv_free(v);                                                                              \
        if (rc == SPMV_OK && slots != entries)                                                     \
            rc = spmv_fail(err, SPMV_EINVAL, -1, slots - entries, 0,                               \
                           "%s: %lld padding slots hold non-zero values; padding must hold 0 "     \
                           "(kernels that multiply padding would add them to y)",                  \
                           names[F->format], (long long)(slots - entries));                        \
        return rc;                                                                                 \
    }
FMT_CHECK_VALUES(f32, float)
FMT_CHECK_VALUES(f64, double)
#undef FMT_CHECK_VALUES

int spmv_fmt_scalar(const spmv_fmt *F, int k, int64_t lo, int64_t hi, const char *what,
                    spmv_err *err) {
    if (F->scalar[k] < lo || F->scalar[k] > hi)
        return spmv_fail(err, SPMV_EINVAL, k, F->scalar[k], hi,
                         "%s: scalar[%d] (%s) = %lld is outside [%lld, %lld]", names[F->format], k,
                         what, (long long)F->scalar[k], (long long)lo, (long long)hi);
    return SPMV_OK;
}

int spmv_fmt_lengths(const spmv_fmt *F, const int64_t *nidx, const int64_t *nval,
                     const char *const *what, spmv_err *err) {
    for (int k = 0; k < SPMV_MAXIDX + SPMV_MAXVAL; k++) {
        int isval = k >= SPMV_MAXIDX, j = isval ? k - SPMV_MAXIDX : k;
        int64_t have = isval ? F->nval[j] : F->nidx[j], want = isval ? nval[j] : nidx[j];
        const void *a = isval ? F->val[j] : (const void *)F->idx[j];
        if (want > INT32_MAX) /* every stored array is indexed with int32 on the GPU */
            return spmv_fail(err, SPMV_EINVAL, k, want, INT32_MAX,
                             "%s: %s would need %lld entries, past the int32 limit %d",
                             names[F->format], what[k] ? what[k] : "an array", (long long)want,
                             INT32_MAX);
        if (have != want || (want > 0 && a == NULL))
            return spmv_fail(err, SPMV_EINVAL, k, have, want,
                             "%s: %s[%d] (%s) has %lld entries; it must have %lld",
                             names[F->format], isval ? "val" : "idx", j,
                             what[k] ? what[k] : "unused", (long long)have, (long long)want);
    }
    return SPMV_OK;
}

int spmv_fmt_ptr(const spmv_fmt *F, const int32_t *p, int64_t n, int64_t last, int64_t step,
                 const char *what, spmv_err *err) {
    if (p[0] != 0)
        return spmv_fail(err, SPMV_EINDEX, 0, p[0], 0, "%s: %s[0] = %d; it must be 0",
                         names[F->format], what, p[0]);
    for (int64_t i = 0; i < n; i++) {
        int64_t d = (int64_t)p[i + 1] - p[i];
        if (d < 0 || d % step != 0)
            return spmv_fail(err, SPMV_EINDEX, i + 1, p[i + 1], p[i],
                             "%s: %s[%lld] = %d after %d; it must not decrease%s", names[F->format],
                             what, (long long)i + 1, p[i + 1], p[i],
                             step > 1 ? " and must step by multiples of the slice height" : "");
    }
    if (p[n] != last)
        return spmv_fail(err, SPMV_EINDEX, n, p[n], last, "%s: %s[%lld] = %d; it must be %lld",
                         names[F->format], what, (long long)n, p[n], (long long)last);
    return SPMV_OK;
}

int spmv_fmt_perm(const spmv_fmt *F, const int32_t *perm, int32_t n, const char *what,
                  spmv_err *err) {
    int32_t *seen = (int32_t *)spmv_calloc(spmv_bitwords(n), sizeof(int32_t), err);
    if (seen == NULL) return SPMV_ENOMEM;
    int rc = SPMV_OK;
    for (int32_t r = 0; r < n && rc == SPMV_OK; r++) {
        if (perm[r] < 0 || perm[r] >= n)
            rc = spmv_fail(err, SPMV_EINDEX, r, perm[r], n, "%s: %s[%d] = %d is outside [0, %d)",
                           names[F->format], what, r, perm[r], n);
        else if (spmv_bit_get(seen, perm[r]))
            rc = spmv_fail(err, SPMV_EINDEX, r, perm[r], n,
                           "%s: %s[%d] = %d repeats a row: it must be a permutation of [0, %d)",
                           names[F->format], what, r, perm[r], n);
        else
            spmv_bit_set(seen, perm[r]);
    }
    spmv_free(seen);
    return rc;
}

int spmv_fmt_col(const spmv_fmt *F, int64_t row, int64_t col, int64_t *prev, const char *what,
                 spmv_err *err) {
    if (col < 0 || col >= F->ncols)
        return spmv_fail(err, SPMV_EINDEX, row, col, F->ncols,
                         "%s: %s holds column %lld in row %lld, outside [0, ncols = %d)",
                         names[F->format], what, (long long)col, (long long)row, F->ncols);
    if (col <= *prev)
        return spmv_fail(err, SPMV_EUNSORTED, row, col, *prev,
                         "%s: %s holds column %lld after column %lld in row %lld; a row's "
                         "columns must increase",
                         names[F->format], what, (long long)col, (long long)*prev, (long long)row);
    *prev = col;
    return SPMV_OK;
}

int spmv_fmt_count(const spmv_fmt *F, int64_t count, spmv_err *err) {
    if (count != F->nnz)
        return spmv_fail(err, SPMV_EINVAL, -1, count, F->nnz,
                         "%s: the arrays store %lld entries but nnz is %lld", names[F->format],
                         (long long)count, (long long)F->nnz);
    return SPMV_OK;
}
