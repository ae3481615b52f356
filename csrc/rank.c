// csrc/rank.c: design rows, a model's inputs and output, evaluation by kind, cascades, spmv_rank()
// SPDX-License-Identifier: BSD-3-Clause
//
// The same source serves the library and every exported model header (pyspmv.export_c), so that a
// model gives the same numbers in Python, in the core and in a header.
#include "spmv_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int spmv_check_range(const int32_t *a, int64_t n, int64_t lo, int64_t hi, const char *what,
                     spmv_err *err) {
    if (n > 0 && a == NULL)
        return spmv_fail(err, SPMV_ESCHEMA, -1, -1, -1, "%s is NULL but should hold %lld entries",
                         what, (long long)n);
    for (int64_t i = 0; i < n; i++)
        if (a[i] < lo || a[i] >= hi)
            return spmv_fail(err, SPMV_ESCHEMA, i, a[i], hi, "%s[%lld] = %d is outside [%lld, %lld)",
                             what, (long long)i, (int)a[i], (long long)lo, (long long)hi);
    return SPMV_OK;
}

/* ---- design rows ---- */

int spmv_design_rows(const spmv_csr *A, const spmv_gpu_props *dev, const spmv_configs *C,
                     int value_bytes, double max_fill, double *rows, spmv_err *err) {
    if (A == NULL || dev == NULL || C == NULL || (C->n > 0 && rows == NULL))
        return spmv_fail(err, SPMV_EINVAL, -1, -1, -1, "design rows need a matrix, GPU properties, "
                         "configurations and an output array, not NULL");
    if (value_bytes != 4 && value_bytes != 8)
        return spmv_fail(err, SPMV_EINVAL, -1, value_bytes, 8,
                         "value_bytes must be 4 or 8. Got %d instead.", value_bytes);
    if (C->n < 0 || C->nextra < 0 ||
        (C->n > 0 && (C->format == NULL || C->param == NULL || C->unread == NULL || C->p == NULL ||
                      C->launches == NULL || (C->nextra > 0 && C->extra == NULL))))
        return spmv_fail(err, SPMV_EINVAL, -1, C->n, -1, "configurations: n = %d, nextra = %d, "
                         "and every array of n entries must be given", (int)C->n, (int)C->nextra);
    for (int32_t j = 0; j < C->n; j++)
        if (C->format[j] < 0 || C->format[j] >= SPMV_NFORMATS)
            return spmv_fail(err, SPMV_EINVAL, j, C->format[j], SPMV_NFORMATS,
                             "configuration %d has format code %d, not in [0, %d)", (int)j,
                             (int)C->format[j], SPMV_NFORMATS);
    double feat[SPMV_NFEATURES];
    int rc = spmv_features_compute(A, dev, feat, err);
    if (rc) return rc;
    int64_t stride = SPMV_NCOLS + C->nextra, nnz = A->indptr[A->nrows];
    for (int32_t j = 0; j < C->n; j++) {
        double *r = rows + j * stride;
        memcpy(r, feat, sizeof feat);
        for (int k = 0; k < SPMV_NPCOLS; k++) r[SPMV_COL_P_TPV + k] = C->p[(int64_t)j * SPMV_NPCOLS + k];
        r[SPMV_COL_VALUE_BYTES] = value_bytes;
        r[SPMV_COL_LAUNCHES] = C->launches[j];
        for (int32_t k = 0; k < C->nextra; k++) r[SPMV_NCOLS + k] = C->extra[(int64_t)j * C->nextra + k];
        int32_t same = 0;                /* an earlier configuration with the same format: reuse */
        while (same < j && !(C->format[same] == C->format[j] &&
                             C->param[2 * same] == C->param[2 * j] &&
                             C->param[2 * same + 1] == C->param[2 * j + 1] &&
                             C->unread[same] == C->unread[j]))
            same++;
        if (same < j) {
            r[SPMV_COL_BYTES_MOVED] = rows[same * stride + SPMV_COL_BYTES_MOVED];
            r[SPMV_COL_PADDING_RATIO] = rows[same * stride + SPMV_COL_PADDING_RATIO];
            continue;
        }
        spmv_fmt F;
        memset(&F, 0, sizeof F);
        F.format = C->format[j];
        F.param[0] = C->param[2 * j];
        F.param[1] = C->param[2 * j + 1];
        F.max_fill = max_fill;
        rc = spmv_fmt_size(A, &F, err);
        if (rc == SPMV_ENOTAPPLICABLE) {
            r[SPMV_COL_BYTES_MOVED] = r[SPMV_COL_PADDING_RATIO] = NAN;
            continue;
        }
        if (rc) return rc;
        int64_t idx = 0, slots = 0;
        for (int k = 0; k < SPMV_MAXIDX; k++)
            if (!((C->unread[j] >> k) & 1)) idx += 4 * F.nidx[k];
        for (int k = 0; k < SPMV_MAXVAL; k++) slots += F.nval[k];
        /* as pyspmv.config_features: integers first, one conversion to double */
        r[SPMV_COL_BYTES_MOVED] = (double)(idx + value_bytes * (slots + A->nrows + A->ncols));
        r[SPMV_COL_PADDING_RATIO] = nnz ? (double)slots / (double)nnz : 1.0;
    }
    return SPMV_OK;
}

/* ---- inputs and outputs ---- */

static double tf_apply(int tf, double x) {
    switch (tf) {
    case SPMV_TF_LOG1P: return log1p(x);
    case SPMV_TF_LOG: return log(x);
    case SPMV_TF_LOG10: return log10(x);
    case SPMV_TF_LOG2: return log2(x);
    case SPMV_TF_EXP: return exp(x);
    case SPMV_TF_EXPM1: return expm1(x);
    case SPMV_TF_POW10: return pow(10.0, x);
    case SPMV_TF_POW2: return exp2(x);
    default: return x;
    }
}

static void model_inputs(const spmv_model *M, const double *row, double *z) {
    for (int32_t k = 0; k < M->ninputs; k++) {
        double x = row[M->in_col[k]];
        if (isnan(x)) x = M->in_nan[k];
        if (x < M->in_lo[k]) x = M->in_lo[k];
        if (x > M->in_hi[k]) x = M->in_hi[k];
        z[k] = (tf_apply(M->in_tf[k], x) - M->in_shift[k]) * M->in_scale[k];
    }
}

static int32_t model_nout(const spmv_model *M) {
    return M->kind == SPMV_MODEL_TREES ? M->trees.nout : 1;
}

/* Workspace of one evaluation, sized by model_ws_size. */
typedef struct {
    double *z, *q, *raw;      /* [ninputs], [ninputs] (KNN query), [nout] */
    spmv_knn_cache knn;
    struct stage_ws *stage;   /* cascades: [nstages] */
} model_ws;

struct stage_ws {
    model_ws ws;
    double *last_z;           /* inputs of the last evaluation; the choice is reused when equal */
    int32_t choice, valid;
};

static int64_t model_ws_doubles(const spmv_model *M) {
    int64_t n = 3 * (int64_t)M->ninputs + model_nout(M);
    if (M->kind == SPMV_MODEL_CASCADE)
        for (int32_t s = 0; s < M->cascade.nstages; s++)
            n += model_ws_doubles(&M->cascade.sub[s]) + M->cascade.sub[s].ninputs;
    return n;
}

static int64_t model_ws_stages(const spmv_model *M) {
    int64_t n = 0;
    if (M->kind == SPMV_MODEL_CASCADE)
        for (int32_t s = 0; s < M->cascade.nstages; s++)
            n += 1 + model_ws_stages(&M->cascade.sub[s]);
    return n;
}

/* Carve a workspace for M out of *d (doubles) and *st (stage records). */
static void model_ws_init(const spmv_model *M, model_ws *w, double **d, struct stage_ws **st) {
    w->z = *d;
    w->q = w->z + M->ninputs;
    w->knn.q = w->q + M->ninputs;
    w->raw = w->knn.q + M->ninputs;
    *d = w->raw + model_nout(M);
    w->knn.set = -1;
    w->knn.count = 0;
    w->stage = NULL;
    if (M->kind != SPMV_MODEL_CASCADE) return;
    w->stage = *st;
    *st += M->cascade.nstages;
    for (int32_t s = 0; s < M->cascade.nstages; s++) {
        w->stage[s].last_z = *d;
        *d += M->cascade.sub[s].ninputs;
        w->stage[s].valid = 0;
        model_ws_init(&M->cascade.sub[s], &w->stage[s].ws, d, st);
    }
}

static void model_raw(const spmv_model *M, int32_t g, const double *row, model_ws *w);

#define SPMV_CASCADE_MAXSTAGES 64

/* Stage s's class for this row: argmax over its outputs (first on ties), or output > 0. */
static int32_t stage_choice(const spmv_model *S, const double *row, struct stage_ws *sw) {
    model_inputs(S, row, sw->ws.z);
    if (sw->valid && memcmp(sw->last_z, sw->ws.z, (size_t)S->ninputs * sizeof(double)) == 0)
        return sw->choice;
    model_raw(S, 0, row, &sw->ws);
    int32_t nout = model_nout(S), best = 0;
    if (nout == 1) best = sw->ws.raw[0] > 0;
    for (int32_t o = 1; o < nout; o++)
        if (sw->ws.raw[o] > sw->ws.raw[best]) best = o;
    memcpy(sw->last_z, sw->ws.z, (size_t)S->ninputs * sizeof(double));
    sw->valid = 1;
    return sw->choice = best;
}

/* Raw output(s) of group g for one design row into w->raw; inputs are already in w->z except for
 * cascades, whose stages take their own. */
static void model_raw(const spmv_model *M, int32_t g, const double *row, model_ws *w) {
    switch (M->kind) {
    case SPMV_MODEL_LINEAR: spmv_linear_eval(M, g, w->z, w->raw); break;
    case SPMV_MODEL_TREES: spmv_trees_eval(M, g, w->z, w->raw); break;
    case SPMV_MODEL_KNN: spmv_knn_eval(M, g, w->z, &w->knn, w->q, w->raw); break;
    case SPMV_MODEL_SVM: spmv_svm_eval(M, g, w->z, w->raw); break;
    case SPMV_MODEL_FORMULA: spmv_formula_eval(M, g, w->z, w->raw); break;
    default: {                               /* SPMV_MODEL_CASCADE: parents come before children */
        const spmv_cascade *K = &M->cascade;
        int32_t off = 0, choice[SPMV_CASCADE_MAXSTAGES];
        for (int32_t s = 0; s < K->nstages; s++) {
            int32_t p = K->parent[s];
            choice[s] = -1;
            if (p >= 0 && choice[p] != K->when[s]) continue;
            choice[s] = stage_choice(&K->sub[s], row, &w->stage[s]);
            int32_t want = K->label[(int64_t)g * K->nstages + s];
            off += want >= 0 && want != choice[s];
        }
        w->raw[0] = off;
    }
    }
}

int spmv_model_check(const spmv_model *M, spmv_err *err) {
    if (M == NULL) return spmv_fail(err, SPMV_EINVAL, -1, -1, -1, "model is NULL");
    if (M->kind < SPMV_MODEL_LINEAR || M->kind > SPMV_MODEL_CASCADE)
        return spmv_fail(err, SPMV_ESCHEMA, -1, M->kind, SPMV_MODEL_CASCADE + 1,
                         "model kind %d is not in [%d, %d]", M->kind, SPMV_MODEL_LINEAR,
                         SPMV_MODEL_CASCADE);
    if (M->ngroups < 1 || M->ninputs < 0 || M->ncols < SPMV_NCOLS)
        return spmv_fail(err, SPMV_ESCHEMA, -1, M->ngroups, 1, "model: ngroups = %d (>= 1), "
                         "ninputs = %d (>= 0), ncols = %d (>= %d)", (int)M->ngroups,
                         (int)M->ninputs, (int)M->ncols, SPMV_NCOLS);
    if (M->ninputs > 0 && (M->in_nan == NULL || M->in_lo == NULL || M->in_hi == NULL ||
                           M->in_shift == NULL || M->in_scale == NULL))
        return spmv_fail(err, SPMV_ESCHEMA, -1, -1, -1, "model inputs need in_col, in_tf, in_nan, "
                         "in_lo, in_hi, in_shift and in_scale");
    int rc = spmv_check_range(M->in_col, M->ninputs, 0, M->ncols, "in_col", err);
    if (rc == 0) rc = spmv_check_range(M->in_tf, M->ninputs, 0, SPMV_TF_POW2 + 1, "in_tf", err);
    if (rc == 0) rc = spmv_check_range(&M->out_tf, 1, 0, SPMV_TF_POW2 + 1, "out_tf", err);
    if (rc == 0) rc = spmv_check_range(&M->out_col, 1, -1, M->ncols, "out_col", err);
    if (rc) return rc;
    switch (M->kind) {
    case SPMV_MODEL_LINEAR: return spmv_linear_check(M, err);
    case SPMV_MODEL_TREES: return spmv_trees_check(M, err);
    case SPMV_MODEL_KNN: return spmv_knn_check(M, err);
    case SPMV_MODEL_SVM: return spmv_svm_check(M, err);
    case SPMV_MODEL_FORMULA: return spmv_formula_check(M, err);
    default: break;
    }
    const spmv_cascade *K = &M->cascade;
    if (K->nstages < 1 || K->nstages > SPMV_CASCADE_MAXSTAGES || K->sub == NULL ||
        K->parent == NULL || K->when == NULL || K->label == NULL)
        return spmv_fail(err, SPMV_ESCHEMA, -1, K->nstages, SPMV_CASCADE_MAXSTAGES,
                         "a cascade needs 1 to %d stages with sub, parent, when and "
                         "label[ngroups*nstages]", SPMV_CASCADE_MAXSTAGES);
    for (int32_t s = 0; rc == 0 && s < K->nstages; s++) {
        if (K->parent[s] < -1 || K->parent[s] >= s)
            return spmv_fail(err, SPMV_ESCHEMA, s, K->parent[s], s,
                             "cascade stage %d has parent %d; parents come first", (int)s,
                             (int)K->parent[s]);
        if (K->sub[s].kind == SPMV_MODEL_CASCADE || K->sub[s].ncols > M->ncols)
            return spmv_fail(err, SPMV_ESCHEMA, s, K->sub[s].ncols, M->ncols,
                             "cascade stage %d must be a classifier reading at most the cascade's "
                             "%d columns", (int)s, (int)M->ncols);
        rc = spmv_model_check(&K->sub[s], err);
    }
    return rc;
}

static double out_apply(const spmv_model *M, double raw, const double *row) {
    double y = tf_apply(M->out_tf, raw);
    return M->out_col >= 0 ? y * row[M->out_col] : y;
}

int spmv_model_predict(const spmv_model *M, const double *rows, int32_t n, int32_t stride,
                       const int32_t *group, double *ms, double *raw, spmv_err *err) {
    if (M == NULL || n < 0 || (n > 0 && (rows == NULL || group == NULL || ms == NULL)))
        return spmv_fail(err, SPMV_EINVAL, -1, n, -1, "predict needs a model, rows, groups and an "
                         "output array for n = %d rows", (int)n);
    if (stride < M->ncols)
        return spmv_fail(err, SPMV_EINVAL, -1, stride, M->ncols,
                         "rows hold %d columns; the model reads %d", (int)stride, (int)M->ncols);
    int rc = SPMV_OK;
    int32_t nout = model_nout(M);
    int64_t nst = model_ws_stages(M);
    double *d = spmv_malloc(model_ws_doubles(M), sizeof(double), err), *dp = d;
    struct stage_ws *st = d == NULL ? NULL : spmv_malloc(nst, sizeof *st, err), *sp = st;
    if (st == NULL) {
        rc = SPMV_ENOMEM;
        goto done;
    }
    model_ws w;
    model_ws_init(M, &w, &dp, &sp);
    for (int32_t i = 0; i < n; i++) {
        const double *row = rows + (int64_t)i * stride;
        int32_t g = group[i];
        if (g < -1 || g >= M->ngroups) {
            rc = spmv_fail(err, SPMV_EINVAL, i, g, M->ngroups,
                           "group[%d] = %d is outside [-1, %d)", (int)i, (int)g, (int)M->ngroups);
            goto done;
        }
        if (g < 0) {
            ms[i] = HUGE_VAL;
            for (int32_t o = 0; raw != NULL && o < nout; o++) raw[(int64_t)i * nout + o] = NAN;
            continue;
        }
        model_inputs(M, row, w.z);
        model_raw(M, g, row, &w);
        ms[i] = out_apply(M, w.raw[0], row);
        if (raw != NULL) memcpy(raw + (int64_t)i * nout, w.raw, (size_t)nout * sizeof(double));
    }
done:
    spmv_free(st);
    spmv_free(d);
    return rc;
}

/* ---- ranking ---- */

typedef struct {
    double ms;
    int32_t i;
} ranked;

static int ranked_cmp(const void *a, const void *b) {
    const ranked *x = a, *y = b;
    int xn = isnan(x->ms), yn = isnan(y->ms);
    if (xn != yn) return xn - yn;                      /* NaN last */
    if (!xn && x->ms != y->ms) return x->ms < y->ms ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

int spmv_rank(const spmv_csr *A, const spmv_gpu_props *dev, const spmv_configs *C,
              const spmv_model *M, int value_bytes, const double *add_ms, int32_t *order,
              double *ms, spmv_err *err) {
    if (C == NULL || M == NULL || (C->n > 0 && (order == NULL || ms == NULL || C->group == NULL)))
        return spmv_fail(err, SPMV_EINVAL, -1, -1, -1, "rank needs configurations (with groups), a "
                         "model, order and ms arrays, not NULL");
    if (M->ncols != SPMV_NCOLS + C->nextra)
        return spmv_fail(err, SPMV_EINVAL, -1, M->ncols, SPMV_NCOLS + C->nextra,
                         "the model reads %d columns, the configurations give %d", (int)M->ncols,
                         (int)(SPMV_NCOLS + C->nextra));
    int rc;
    int32_t n = C->n;
    double *rows = spmv_malloc((int64_t)n * M->ncols, sizeof(double), err);
    ranked *r = rows == NULL ? NULL : spmv_malloc(n, sizeof(ranked), err);
    if (r == NULL) {
        rc = SPMV_ENOMEM;
        goto done;
    }
    rc = spmv_design_rows(A, dev, C, value_bytes, 0, rows, err);
    if (rc == 0) rc = spmv_model_predict(M, rows, n, M->ncols, C->group, ms, NULL, err);
    if (rc) goto done;
    for (int32_t j = 0; j < n; j++) {
        if (isnan(rows[(int64_t)j * M->ncols + SPMV_COL_BYTES_MOVED])) ms[j] = HUGE_VAL;
        else if (add_ms != NULL) ms[j] += add_ms[j];
        r[j].ms = ms[j];
        r[j].i = j;
    }
    qsort(r, (size_t)n, sizeof *r, ranked_cmp);
    for (int32_t j = 0; j < n; j++) order[j] = r[j].i;
done:
    spmv_free(r);
    spmv_free(rows);
    return rc;
}
