// csrc/model.c: the table of model kinds and their fields, inputs and output transforms, the check,
// the row loop
// SPDX-License-Identifier: BSD-3-Clause
//
// Everything a kind shares lives here; what a kind computes lives in csrc/model_<kind>.c behind
// its spmv_model_ops.  The same source serves the library and every exported model header.
#include "spmv_internal.h"

#include <math.h>
#include <string.h>

int spmv_check_range(const int32_t *a, int64_t n, int64_t lo, int64_t hi, const char *what,
                     spmv_err *err) {
    if (n > 0 && a == NULL)
        return spmv_fail(err, SPMV_ESCHEMA, -1, -1, -1, "%s is NULL but should hold %lld entries",
                         what, (long long)n);
    for (int64_t i = 0; i < n; i++)
        if (a[i] < lo || a[i] >= hi)
            return spmv_fail(err, SPMV_ESCHEMA, i, a[i], hi,
                             "%s[%lld] = %d is outside [%lld, %lld)", what, (long long)i, (int)a[i],
                             (long long)lo, (long long)hi);
    return SPMV_OK;
}

static const spmv_model_ops constant_ops = {0}; /* a cascade's one-class stage: never evaluated */

static const spmv_model_ops *const kinds[SPMV_MODEL_NKINDS] = {
    &constant_ops, /* SPMV_MODEL_CONSTANT */
#define SPMV_MODEL(CODE, name, ...) &spmv_##name##_ops,
#include "models.def"
#undef SPMV_MODEL
};

static const char *const kind_names[SPMV_MODEL_NKINDS] = {
    "constant",
#define SPMV_MODEL(CODE, name, ...) #name,
#include "models.def"
#undef SPMV_MODEL
};

const spmv_model_ops *spmv_model_ops_of(int kind) {
    return kind >= 0 && kind < SPMV_MODEL_NKINDS ? kinds[kind] : NULL;
}

/* The head: what every kind reads (spmv_model's own members). */
#define SPMV_HEAD_INT(m, l, h)                                                                     \
    { .name = #m, .type = SPMV_FIELD_INT, .lo = l, .hi = h, .offset = offsetof(spmv_model, m) }
#define SPMV_HEAD_INPUTS(m, t)                                                                     \
    { .name = #m, .type = t, .len = {"ninputs"}, .offset = offsetof(spmv_model, m) }
static const spmv_model_field head_fields[] = {
    SPMV_HEAD_INT(ngroups, 1, INT32_MAX),
    SPMV_HEAD_INT(ncols, 1, INT32_MAX),
    SPMV_HEAD_INT(ninputs, 0, INT32_MAX),
    SPMV_HEAD_INT(out_tf, 0, SPMV_TF_SLOG1P),
    SPMV_HEAD_INT(out_col, -1, INT32_MAX),
    {.name = "out_lo",
     .type = SPMV_FIELD_REAL,
     .flags = SPMV_FIELD_NEG_INF,
     .offset = offsetof(spmv_model, out_lo)},
    {.name = "rank_bytes_pow",
     .type = SPMV_FIELD_REAL,
     .offset = offsetof(spmv_model, rank_bytes_pow)},
    SPMV_HEAD_INPUTS(in_col, SPMV_FIELD_I32),
    SPMV_HEAD_INPUTS(in_tf, SPMV_FIELD_I32),
    SPMV_HEAD_INPUTS(in_nan, SPMV_FIELD_F64),
    SPMV_HEAD_INPUTS(in_lo, SPMV_FIELD_F64),
    SPMV_HEAD_INPUTS(in_hi, SPMV_FIELD_F64),
    SPMV_HEAD_INPUTS(in_shift, SPMV_FIELD_F64),
    SPMV_HEAD_INPUTS(in_div, SPMV_FIELD_F64),
};
#undef SPMV_HEAD_INT
#undef SPMV_HEAD_INPUTS

const spmv_model_field *spmv_model_fields(int kind, int32_t *n, const char **name) {
    const spmv_model_field *f = NULL;
    const char *nm = NULL;
    *n = 0;
    if (kind == -1) {
        f = head_fields;
        *n = SPMV_NFIELDS(head_fields);
        nm = "head";
    } else if (kind >= 0 && kind < SPMV_MODEL_NKINDS) {
        f = kinds[kind]->fields;
        *n = kinds[kind]->nfields;
        nm = kind_names[kind];
    }
    if (name != NULL) *name = nm;
    return f;
}

/* Value of the INT field called `name` of the head or M's kind; 0 with *ok = 0 when neither has
 * it. */
static int64_t int_field(const spmv_model *M, const char *name, int *ok) {
    for (int pass = 0; pass < 2; pass++) {
        int32_t n;
        const spmv_model_field *f = spmv_model_fields(pass == 0 ? -1 : M->kind, &n, NULL);
        for (int32_t i = 0; i < n; i++)
            if (f[i].type == SPMV_FIELD_INT && strcmp(f[i].name, name) == 0)
                return *(const int32_t *)(const void *)((const char *)M + f[i].offset);
    }
    *ok = 0;
    return 0;
}

int64_t spmv_model_field_len(const spmv_model *M, const spmv_model_field *f) {
    if (f->type == SPMV_FIELD_INT || f->type == SPMV_FIELD_REAL) return 0;
    int ok = 1;
    int64_t len = 1;
    for (int k = 0; k < 2; k++)
        if (f->len[k] != NULL) len *= int_field(M, f->len[k], &ok) + f->plus[k];
    return ok ? len + f->add : -1;
}

/* Every field of one table against its description: INT ranges first (the lengths read them),
 * then reals and arrays. */
static int check_fields(const spmv_model *M, const spmv_model_field *f, int32_t n, spmv_err *err) {
    const char *base = (const char *)M;
    for (int32_t i = 0; i < n; i++) {
        if (f[i].type != SPMV_FIELD_INT) continue;
        int32_t v = *(const int32_t *)(const void *)(base + f[i].offset);
        if (v < f[i].lo || v > f[i].hi)
            return spmv_fail(err, SPMV_ESCHEMA, -1, v, f[i].hi,
                             "model %s = %d is outside [%lld, %lld]", f[i].name, (int)v,
                             (long long)f[i].lo, (long long)f[i].hi);
    }
    for (int32_t i = 0; i < n; i++) {
        const void *at = base + f[i].offset;
        if (f[i].type == SPMV_FIELD_REAL) {
            double v = *(const double *)at;
            if (!(isfinite(v) || (v == -HUGE_VAL && (f[i].flags & SPMV_FIELD_NEG_INF))))
                return spmv_fail(err, SPMV_ESCHEMA, -1, -1, -1, "model %s = %g is not finite",
                                 f[i].name, v);
            continue;
        }
        if (f[i].type == SPMV_FIELD_INT) continue;
        int64_t len = spmv_model_field_len(M, &f[i]);
        const void *a = *(const void *const *)at;
        if (len < 0)
            return spmv_fail(err, SPMV_ESCHEMA, -1, len, 0, "model %s: a length of %lld entries",
                             f[i].name, (long long)len);
        if (a == NULL && len > 0 && !(f[i].flags & SPMV_FIELD_OPTIONAL))
            return spmv_fail(err, SPMV_ESCHEMA, -1, -1, len,
                             "model %s is NULL but should hold %lld entries", f[i].name,
                             (long long)len);
        if (f[i].type != SPMV_FIELD_MODELS) continue;
        for (int64_t s = 0; s < len; s++) {
            int kind = ((const spmv_model *)a)[s].kind;
            if (kind < 0 || kind >= SPMV_MODEL_NKINDS || kind > 62 || !((f[i].hi >> kind) & 1))
                return spmv_fail(err, SPMV_ESCHEMA, s, kind, -1,
                                 "model %s[%lld] is of kind %d, which it cannot hold", f[i].name,
                                 (long long)s, kind);
        }
    }
    return SPMV_OK;
}

static double tf_apply(int tf, double x) {
    switch (tf) {
    case SPMV_TF_LOG1P:
        return log1p(x);
    case SPMV_TF_LOG:
        return log(x);
    case SPMV_TF_LOG10:
        return log10(x);
    case SPMV_TF_LOG2:
        return log2(x);
    case SPMV_TF_EXP:
        return exp(x);
    case SPMV_TF_EXPM1:
        return expm1(x);
    case SPMV_TF_POW10:
        return pow(10.0, x);
    case SPMV_TF_POW2:
        return exp2(x);
    case SPMV_TF_SLOG1P:
        return copysign(log1p(fabs(x)), x);
    default:
        return x;
    }
}

double spmv_model_input(const spmv_model *M, int32_t k, const double *row, double *memo) {
    int32_t ni = M->ninputs;
    double x = row[M->in_col[k]], z;
    if (isnan(x)) x = M->in_nan[k];
    if (x < M->in_lo[k]) x = M->in_lo[k];
    if (x > M->in_hi[k]) x = M->in_hi[k];
    if (memo != NULL && memcmp(&x, &memo[k], sizeof x) == 0) return memo[ni + k];
    z = (tf_apply(M->in_tf[k], x) - M->in_shift[k]) / M->in_div[k];
    if (memo != NULL) {
        memo[k] = x;
        memo[ni + k] = z;
    }
    return z;
}

void spmv_model_inputs(const spmv_model *M, const double *row, double *z, double *memo) {
    for (int32_t k = 0; k < M->ninputs; k++) z[k] = spmv_model_input(M, k, row, memo);
}

/* NaN bits match no clamped input that is not NaN itself, and a NaN input maps to the same z
 * every time. */
void spmv_model_memo_init(double *memo, int32_t ni) {
    for (int32_t k = 0; k < ni; k++) memo[k] = memo[ni + k] = NAN;
}

int32_t spmv_model_nout(const spmv_model *M) {
    const spmv_model_ops *op = spmv_model_ops_of(M->kind);
    return op != NULL && op->nout != NULL ? op->nout(M) : 1;
}

void spmv_tree_heights(const int32_t *feature, const int32_t *left, const int32_t *right,
                       int32_t nnodes, int32_t *h) {
    for (int32_t n = nnodes - 1; n >= 0; n--) {
        if (feature[n] < 0) {
            h[n] = 1;
            continue;
        }
        int32_t a = h[left[n]], b = h[right[n]];
        h[n] = 1 + (a > b ? a : b); /* at most nnodes - n: no overflow */
    }
}

/* The cost without the checks: spmv_model_check calls it once its structural part has passed. */
static int model_cost(const spmv_model *M, int64_t *steps, spmv_err *err) {
    const spmv_model_ops *op = kinds[M->kind];
    int64_t own = 0;
    int rc = op->cost != NULL ? op->cost(M, &own, err) : SPMV_OK;
    *steps = spmv_sat_add((int64_t)M->ninputs + 1, own); /* the inputs and the output transform */
    return rc;
}

int spmv_model_cost(const spmv_model *M, int64_t *steps, spmv_err *err) {
    *steps = 0;
    if (M == NULL || M->kind <= SPMV_MODEL_CONSTANT || M->kind >= SPMV_MODEL_NKINDS)
        return spmv_fail(err, SPMV_EINVAL, -1, M == NULL ? -1 : M->kind, SPMV_MODEL_NKINDS,
                         "the cost of a model needs a model of a known kind");
    return model_cost(M, steps, err);
}

int spmv_model_check(const spmv_model *M, spmv_err *err) {
    if (M == NULL) return spmv_fail(err, SPMV_EINVAL, -1, -1, -1, "model is NULL");
    if (M->kind <= SPMV_MODEL_CONSTANT || M->kind >= SPMV_MODEL_NKINDS)
        return spmv_fail(err, SPMV_ESCHEMA, -1, M->kind, SPMV_MODEL_NKINDS,
                         "model kind %d is not in [%d, %d]", M->kind, SPMV_MODEL_CONSTANT + 1,
                         SPMV_MODEL_NKINDS - 1);
    /* ncols: design rows (spmv_rank checks SPMV_NCOLS + nextra) or a caller's feature vector */
    int rc = check_fields(M, head_fields, SPMV_NFIELDS(head_fields), err);
    if (rc == 0) rc = check_fields(M, kinds[M->kind]->fields, kinds[M->kind]->nfields, err);
    if (rc == 0) rc = spmv_check_range(M->in_col, M->ninputs, 0, M->ncols, "in_col", err);
    if (rc == 0) rc = spmv_check_range(M->in_tf, M->ninputs, 0, SPMV_TF_SLOG1P + 1, "in_tf", err);
    if (rc == 0) rc = spmv_check_range(&M->out_col, 1, -1, M->ncols, "out_col", err);
    if (rc == 0 && !(M->rank_bytes_pow >= 0 && M->rank_bytes_pow <= 1))
        rc = spmv_fail(err, SPMV_ESCHEMA, -1, -1, -1, "model rank_bytes_pow = %g is outside [0, 1]",
                       M->rank_bytes_pow);
    const spmv_model_ops *op = kinds[M->kind];
    if (rc == 0 && op->check != NULL) rc = op->check(M, err);
    int64_t steps = 0;
    if (rc == 0) rc = model_cost(M, &steps, err);
    if (rc == 0 && steps > SPMV_MODEL_MAX_STEPS)
        rc = spmv_fail(err, SPMV_ESCHEMA, -1, steps, SPMV_MODEL_MAX_STEPS,
                       "predicting one row takes up to %lld steps (tree nodes, distances, ...), "
                       "past the limit of %lld (SPMV_MODEL_MAX_STEPS)",
                       (long long)steps, (long long)SPMV_MODEL_MAX_STEPS);
    return rc;
}

static double out_apply(const spmv_model *M, const spmv_model_ops *op, const double *raw,
                        const double *row) {
    double y = tf_apply(M->out_tf, raw[0]);
    if (y < M->out_lo) y = M->out_lo; /* NaN stays NaN */
    if (M->out_col >= 0) y *= row[M->out_col];
    return op->out != NULL ? op->out(M, raw, y) : y;
}

/* Inputs read only from the matrix's features and value size: the same in every row of one
 * matrix, so a ranking computes them once. */
static int matrix_inputs(const spmv_model *M) {
    for (int32_t k = 0; k < M->ninputs; k++)
        if (!(M->in_col[k] < SPMV_NFEATURES || M->in_col[k] == SPMV_COL_VALUE_BYTES)) return 0;
    return 1;
}

/* Row by row through op->eval into R[n*nout]. */
static int eval_rows(const spmv_model *M, const spmv_model_ops *op, const double *rows, int32_t n,
                     int32_t stride, const int32_t *group, int shared, spmv_poll *p, double *R,
                     spmv_err *err) {
    int32_t ni = M->ninputs, nout = spmv_model_nout(M);
    int64_t wsb = op->ws != NULL ? op->ws(M, NULL) : 0;
    double *z = (double *)spmv_malloc(4 * (int64_t)ni + (wsb + 7) / 8, sizeof(double), err);
    if (z == NULL) return SPMV_ENOMEM;
    double *zprev = z + ni, *memo = zprev + ni, *w = memo + 2 * ni;
    spmv_model_memo_init(memo, ni);
    if (op->ws != NULL) op->ws(M, w);
    int once = shared && matrix_inputs(M), have = 0;
    for (int32_t i = 0; i < n; i++) {
        const double *row = rows + (int64_t)i * stride;
        if (group[i] < 0) continue;
        int fresh = 1;
        if (once && have) {
            fresh = 0;
        } else {
            spmv_model_inputs(M, row, z, memo);
            fresh = !have || memcmp(z, zprev, (size_t)ni * sizeof *z) != 0;
            if (fresh) memcpy(zprev, z, (size_t)ni * sizeof *z);
        }
        have = 1;
        op->eval(M, group[i], row, z, fresh, w, p, R + (int64_t)i * nout);
        if (spmv_poll_step(p, (int64_t)ni + 1)) break;
    }
    spmv_free(z);
    return p->stopped ? SPMV_EINTR : SPMV_OK;
}

int spmv_model_predict_rows(const spmv_model *M, const double *rows, int32_t n, int32_t stride,
                            const int32_t *group, int shared, double *ms, double *raw,
                            const spmv_interrupt *intr, spmv_err *err) {
    if (M == NULL || n < 0 || (n > 0 && (rows == NULL || group == NULL || ms == NULL)))
        return spmv_fail(err, SPMV_EINVAL, -1, n, -1,
                         "predict needs a model, rows, groups and an "
                         "output array for n = %d rows",
                         (int)n);
    if (stride < M->ncols)
        return spmv_fail(err, SPMV_EINVAL, -1, stride, M->ncols,
                         "rows hold %d columns; the model reads %d", (int)stride, (int)M->ncols);
    for (int32_t i = 0; i < n; i++)
        if (group[i] < -1 || group[i] >= M->ngroups)
            return spmv_fail(err, SPMV_EINVAL, i, group[i], M->ngroups,
                             "group[%d] = %d is outside [-1, %d)", (int)i, (int)group[i],
                             (int)M->ngroups);
    const spmv_model_ops *op = spmv_model_ops_of(M->kind);
    if (op == NULL || op->eval == NULL) /* spmv_model_check refuses these first */
        return spmv_fail(err, SPMV_EINVAL, -1, M->kind, SPMV_MODEL_NKINDS,
                         "model kind %d cannot be evaluated", M->kind);
    int32_t nout = spmv_model_nout(M);
    double *R = raw != NULL ? raw : (double *)spmv_malloc((int64_t)n * nout, sizeof(double), err);
    if (R == NULL && n > 0) return SPMV_ENOMEM;
    spmv_poll p;
    spmv_poll_init(&p, intr);
    int rc = op->rows != NULL ? op->rows(M, rows, n, stride, group, shared, &p, R, err) : 1;
    if (rc == 1) rc = eval_rows(M, op, rows, n, stride, group, shared, &p, R, err);
    if (rc == SPMV_EINTR)
        rc = spmv_fail(err, SPMV_EINTR, -1, -1, -1, "model evaluation stopped by the caller");
    for (int32_t i = 0; rc == 0 && i < n; i++) {
        double *r = R + (int64_t)i * nout;
        if (group[i] < 0) {
            ms[i] = HUGE_VAL;
            for (int32_t o = 0; o < nout; o++) r[o] = NAN;
        } else {
            ms[i] = out_apply(M, op, r, rows + (int64_t)i * stride);
        }
    }
    if (R != raw) spmv_free(R);
    return rc;
}

int spmv_model_predict(const spmv_model *M, const double *rows, int32_t n, int32_t stride,
                       const int32_t *group, double *ms, double *raw, const spmv_interrupt *intr,
                       spmv_err *err) {
    return spmv_model_predict_rows(M, rows, n, stride, group, 0, ms, raw, intr, err);
}
