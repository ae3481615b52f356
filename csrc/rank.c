// csrc/rank.c: a model's inputs and output, evaluation by kind, cascades, spmv_rank()
// SPDX-License-Identifier: BSD-3-Clause
//
// The same source serves the library and every exported model header (pyspmv.export_c), so that a
// model gives the same numbers in Python, in the core and in a header.
#include "spmv_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- inputs and outputs ---- */

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
    default:
        return x;
    }
}

/* Input k of one row.  memo (NULL: none) holds each input's last value x and result z:
 * consecutive rows of one matrix share its features, so a log per feature per configuration
 * would otherwise dominate a linear model's cost. */
static double model_input(const spmv_model *M, int32_t k, const double *row, double *memo) {
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

/* Every input of one row into z[ninputs]. */
static void model_inputs(const spmv_model *M, const double *row, double *z, double *memo) {
    for (int32_t k = 0; k < M->ninputs; k++) z[k] = model_input(M, k, row, memo);
}

/* An empty memo: NaN bits match no clamped input that is not NaN itself, and a NaN input maps
 * to the same z every time. */
static void memo_init(double *memo, int32_t ni) {
    for (int32_t k = 0; k < ni; k++) memo[k] = memo[ni + k] = NAN;
}

int32_t spmv_model_nout(const spmv_model *M) {
    if (M->kind == SPMV_MODEL_TREES) return M->trees.nout;
    return M->kind == SPMV_MODEL_SVM && M->svm.classify ? 2 : 1;
}

/* Workspace of one model's evaluation.  A cascade's stages each have their own, and keep their
 * class probabilities for the last inputs: the stages read matrix features only, so a ranking
 * evaluates each once. */
typedef struct model_ws {
    double *z, *raw; /* [ninputs + derived], [nout] */
    double *memo;    /* [2*ninputs], model_inputs' */
    spmv_knn_cache knn;
    struct model_ws *stage; /* cascades: [nstages] */
    double *proba;          /* as a stage: its class probabilities [nout + 1] for the inputs in z */
    int valid;
} model_ws;

static int32_t model_nz(const spmv_model *M) {
    return M->ninputs + (M->kind == SPMV_MODEL_FORMULA ? M->formula.nderived : 0);
}

/* Doubles, neighbour records and stage records M's workspace takes (added to the counts). */
static void model_ws_count(const spmv_model *M, int64_t *nd, int64_t *nnb, int64_t *nst) {
    *nd += model_nz(M) + spmv_model_nout(M) + 4 * (int64_t)M->ninputs + spmv_model_nout(M) + 1;
    if (M->kind == SPMV_MODEL_KNN) *nnb += spmv_knn_maxset(M);
    if (M->kind != SPMV_MODEL_CASCADE) return;
    *nst += M->cascade.nstages;
    for (int32_t s = 0; s < M->cascade.nstages; s++)
        model_ws_count(&M->cascade.sub[s], nd, nnb, nst);
}

static void model_ws_init(const spmv_model *M, model_ws *w, double **d, spmv_knn_nb **nb,
                          model_ws **st) {
    int32_t nout = spmv_model_nout(M);
    w->z = *d;
    w->raw = w->z + model_nz(M);
    w->knn.q = w->raw + nout;
    w->knn.qn = w->knn.q + M->ninputs;
    w->proba = w->knn.qn + M->ninputs;
    w->memo = w->proba + nout + 1;
    memo_init(w->memo, M->ninputs);
    *d = w->memo + 2 * M->ninputs;
    w->knn.set = -1;
    w->knn.nb = *nb;
    if (M->kind == SPMV_MODEL_KNN) *nb += spmv_knn_maxset(M);
    w->valid = 0;
    w->stage = NULL;
    if (M->kind != SPMV_MODEL_CASCADE) return;
    w->stage = *st;
    *st += M->cascade.nstages;
    for (int32_t s = 0; s < M->cascade.nstages; s++)
        model_ws_init(&M->cascade.sub[s], &w->stage[s], d, nb, st);
}

static void model_raw(const spmv_model *M, int32_t g, const double *row, model_ws *w);

/* Class probabilities of a cascade stage for this row (GradientBoostingClassifier.predict_proba:
 * expit of the logit for two classes, a softmax for more), recomputed only when its inputs change.
 */
static const double *stage_proba(const spmv_model *S, const double *row, model_ws *w) {
    if (S->kind == 0) {
        w->proba[0] = 1;
        return w->proba;
    }
    double *zn = w->knn.qn; /* new inputs, compared with the last */
    model_inputs(S, row, zn, w->memo);
    if (w->valid && memcmp(zn, w->z, (size_t)S->ninputs * sizeof(double)) == 0) return w->proba;
    memcpy(w->z, zn, (size_t)S->ninputs * sizeof(double));
    model_raw(S, 0, row, w);
    int32_t nout = spmv_model_nout(S);
    if (nout == 1) {
        w->proba[1] = 1 / (1 + exp(-w->raw[0]));
        w->proba[0] = 1 - w->proba[1];
    } else {
        double mx = w->raw[0], sum = 0;
        for (int32_t o = 1; o < nout; o++) mx = w->raw[o] > mx ? w->raw[o] : mx;
        for (int32_t o = 0; o < nout; o++) sum += (w->proba[o] = exp(w->raw[o] - mx));
        for (int32_t o = 0; o < nout; o++) w->proba[o] /= sum;
    }
    w->valid = 1;
    return w->proba;
}

/* Raw output(s) of group g for one design row into w->raw; the inputs are already in w->z. */
static void model_raw(const spmv_model *M, int32_t g, const double *row, model_ws *w) {
    switch (M->kind) {
    case SPMV_MODEL_LINEAR:
        spmv_linear_eval(M, g, w->z, w->raw);
        break;
    case SPMV_MODEL_TREES:
        spmv_trees_eval(M, g, w->z, w->raw);
        break;
    case SPMV_MODEL_KNN:
        spmv_knn_eval(M, g, w->z, &w->knn, w->raw);
        break;
    case SPMV_MODEL_SVM:
        spmv_svm_eval(M, g, w->z, w->raw);
        break;
    case SPMV_MODEL_FORMULA:
        spmv_formula_eval(M, g, w->z, w->raw);
        break;
    default: { /* SPMV_MODEL_CASCADE */
        const spmv_cascade *K = &M->cascade;
        double p = 1;
        for (int32_t l = 0; l < K->nlevels; l++) {
            int32_t s = K->node[(int64_t)g * K->nlevels + l],
                    c = K->cls[(int64_t)g * K->nlevels + l];
            p *= s < 0 || c < 0 ? 0.0 : stage_proba(&K->sub[s], row, &w->stage[s])[c];
        }
        w->raw[0] = -p;
    }
    }
}

static int check_stage(const spmv_model *M, int32_t s, spmv_err *err) {
    const spmv_model *S = &M->cascade.sub[s];
    if (S->kind == 0) /* never evaluated, but its ninputs sizes its workspace */
        return S->ninputs < 0 ? spmv_fail(err, SPMV_ESCHEMA, s, S->ninputs, 0,
                                          "cascade stage %d: ninputs = %d must be >= 0", (int)s,
                                          (int)S->ninputs)
                              : SPMV_OK;
    if (S->kind != SPMV_MODEL_TREES || S->ngroups != 1 || S->ncols > M->ncols)
        return spmv_fail(err, SPMV_ESCHEMA, s, S->kind, SPMV_MODEL_TREES,
                         "cascade stage %d must be a tree classifier of one group reading at most "
                         "the cascade's %d columns, or kind 0",
                         (int)s, (int)M->ncols);
    return spmv_model_check(S, err);
}

int spmv_model_check(const spmv_model *M, spmv_err *err) {
    if (M == NULL) return spmv_fail(err, SPMV_EINVAL, -1, -1, -1, "model is NULL");
    if (M->kind < SPMV_MODEL_LINEAR || M->kind > SPMV_MODEL_CASCADE)
        return spmv_fail(err, SPMV_ESCHEMA, -1, M->kind, SPMV_MODEL_CASCADE + 1,
                         "model kind %d is not in [%d, %d]", M->kind, SPMV_MODEL_LINEAR,
                         SPMV_MODEL_CASCADE);
    if (M->ngroups < 1 || M->ninputs < 0 || M->ncols < SPMV_NCOLS)
        return spmv_fail(err, SPMV_ESCHEMA, -1, M->ngroups, 1,
                         "model: ngroups = %d (>= 1), "
                         "ninputs = %d (>= 0), ncols = %d (>= %d)",
                         (int)M->ngroups, (int)M->ninputs, (int)M->ncols, SPMV_NCOLS);
    if (M->ninputs > 0 && (M->in_nan == NULL || M->in_lo == NULL || M->in_hi == NULL ||
                           M->in_shift == NULL || M->in_div == NULL))
        return spmv_fail(err, SPMV_ESCHEMA, -1, -1, -1,
                         "model inputs need in_col, in_tf, in_nan, "
                         "in_lo, in_hi, in_shift and in_div");
    int rc = spmv_check_range(M->in_col, M->ninputs, 0, M->ncols, "in_col", err);
    if (rc == 0) rc = spmv_check_range(M->in_tf, M->ninputs, 0, SPMV_TF_POW2 + 1, "in_tf", err);
    if (rc == 0) rc = spmv_check_range(&M->out_tf, 1, 0, SPMV_TF_POW2 + 1, "out_tf", err);
    if (rc == 0) rc = spmv_check_range(&M->out_col, 1, -1, M->ncols, "out_col", err);
    if (rc) return rc;
    switch (M->kind) {
    case SPMV_MODEL_LINEAR:
        return spmv_linear_check(M, err);
    case SPMV_MODEL_TREES:
        return spmv_trees_check(M, err);
    case SPMV_MODEL_KNN:
        return spmv_knn_check(M, err);
    case SPMV_MODEL_SVM:
        return spmv_svm_check(M, err);
    case SPMV_MODEL_FORMULA:
        return spmv_formula_check(M, err);
    default:
        break;
    }
    const spmv_cascade *K = &M->cascade;
    if (K->nstages < 1 || K->nlevels < 1 || K->sub == NULL || K->node == NULL || K->cls == NULL)
        return spmv_fail(err, SPMV_ESCHEMA, -1, K->nstages, 1,
                         "a cascade needs stages (sub[nstages]) and node, cls[ngroups*nlevels]");
    int64_t np = (int64_t)M->ngroups * K->nlevels;
    rc = spmv_check_range(K->node, np, -1, K->nstages, "cascade.node", err);
    for (int32_t s = 0; rc == 0 && s < K->nstages; s++) rc = check_stage(M, s, err);
    for (int64_t i = 0; rc == 0 && i < np; i++) {
        int32_t s = K->node[i];
        int32_t ncls = s < 0 ? 1 : K->sub[s].kind == 0 ? 1 : spmv_model_nout(&K->sub[s]);
        ncls += ncls == 1 && s >= 0 && K->sub[s].kind != 0; /* one logit, two classes */
        if (K->cls[i] < -1 || K->cls[i] >= ncls)
            rc = spmv_fail(err, SPMV_ESCHEMA, i, K->cls[i], ncls,
                           "cascade.cls[%lld] = %d is outside [-1, %d)", (long long)i,
                           (int)K->cls[i], (int)ncls);
    }
    return rc;
}

static double out_apply(const spmv_model *M, const double *raw, const double *row) {
    double y = tf_apply(M->out_tf, raw[0]);
    if (y < M->out_lo) y = M->out_lo; /* NaN stays NaN */
    if (M->out_col >= 0) y *= row[M->out_col];
    if (M->kind == SPMV_MODEL_SVM && M->svm.classify && !(raw[1] > 0)) y *= M->svm.penalty;
    return y;
}

/* Tree ensembles over all rows at once (spmv_trees_eval_rows): inputs of every row first, the
 * inputs every row shares marked, rows sorted by group (counting sort), then each group's rows
 * through its trees together. */
static int predict_trees(const spmv_model *M, const double *rows, int32_t n, int32_t stride,
                         const int32_t *group, double *ms, double *raw, spmv_err *err) {
    int32_t nout = M->trees.nout, ng = M->ngroups, ni = M->ninputs;
    double *Z = spmv_malloc(((int64_t)n + 2) * ni + (int64_t)n * nout, sizeof(double), err);
    int32_t *idx = Z == NULL ? NULL : spmv_malloc((int64_t)n + ng + 1, sizeof(int32_t), err);
    uint8_t *uniform = idx == NULL ? NULL : spmv_malloc(ni, 1, err);
    if (uniform == NULL) {
        spmv_free(idx);
        spmv_free(Z);
        return SPMV_ENOMEM;
    }
    double *R = Z + (int64_t)n * ni, *memo = R + (int64_t)n * nout;
    int32_t *ptr = idx + n, first = -1; /* ptr[g+1]: rows of groups <= g */
    memo_init(memo, ni);
    for (int32_t g = 0; g <= ng; g++) ptr[g] = 0;
    for (int32_t k = 0; k < ni; k++) uniform[k] = 1;
    for (int32_t i = 0; i < n; i++) {
        if (group[i] < 0) continue;
        double *z = Z + (int64_t)i * ni;
        ptr[group[i] + 1]++;
        model_inputs(M, rows + (int64_t)i * stride, z, memo);
        if (M->trees.cast_f32) /* as DecisionTreeRegressor reads X */
            for (int32_t k = 0; k < ni; k++) z[k] = (double)(float)z[k];
        if (first < 0) first = i;
        for (int32_t k = 0; k < ni; k++)
            uniform[k] &= memcmp(&z[k], &Z[(int64_t)first * ni + k], sizeof(double)) == 0;
    }
    for (int32_t g = 0; g < ng; g++) ptr[g + 1] += ptr[g];
    for (int32_t i = 0; i < n; i++)
        if (group[i] >= 0) idx[ptr[group[i]]++] = i;
    for (int32_t g = ng; g > 0; g--) ptr[g] = ptr[g - 1]; /* back to starts */
    ptr[0] = 0;
    for (int32_t g = 0; g < ng; g++)
        if (ptr[g + 1] > ptr[g])
            spmv_trees_eval_rows(M, g, idx + ptr[g], ptr[g + 1] - ptr[g], Z, uniform, R);
    for (int32_t i = 0; i < n; i++) {
        const double *r = R + (int64_t)i * nout;
        ms[i] = group[i] < 0 ? HUGE_VAL : out_apply(M, r, rows + (int64_t)i * stride);
        for (int32_t o = 0; raw != NULL && o < nout; o++)
            raw[(int64_t)i * nout + o] = group[i] < 0 ? NAN : r[o];
    }
    spmv_free(uniform);
    spmv_free(idx);
    spmv_free(Z);
    return SPMV_OK;
}

/* A linear model over the rows of one matrix (spmv_rank): the inputs from the matrix's features
 * and value size are the same in every row, so their part of each group's sum is computed once per
 * group, and a row pays only for its configuration's own inputs. */
static int predict_linear_shared(const spmv_model *M, const double *rows, int32_t n, int32_t stride,
                                 const int32_t *group, double *ms, spmv_err *err) {
    int32_t ni = M->ninputs, ng = M->ngroups, nv = 0, first = -1;
    double *z = spmv_malloc(3 * (int64_t)ni + 2 * (int64_t)ng, sizeof(double), err);
    int32_t *var = z == NULL ? NULL : spmv_malloc(ni, sizeof(int32_t), err);
    if (var == NULL) {
        spmv_free(z);
        return SPMV_ENOMEM;
    }
    double *memo = z + ni, *part = memo + 2 * ni, *have = part + ng;
    memo_init(memo, ni);
    for (int32_t g = 0; g < ng; g++) have[g] = 0;
    for (int32_t k = 0; k < ni; k++)
        if (!(M->in_col[k] < SPMV_NFEATURES || M->in_col[k] == SPMV_COL_VALUE_BYTES)) var[nv++] = k;
    for (int32_t i = 0; i < n; i++) {
        const double *row = rows + (int64_t)i * stride;
        int32_t g = group[i];
        if (g < 0) {
            ms[i] = HUGE_VAL;
            continue;
        }
        const double *w =
            ni > 0 ? M->coef + (int64_t)g * ni : M->coef; /* coef may be NULL when ni is 0 */
        if (first < 0) {
            first = i;
            model_inputs(M, row, z, memo);
        }
        if (!have[g]) {
            double s = 0;
            for (int32_t k = 0, v = 0; k < ni; k++) {
                if (v < nv && var[v] == k) {
                    v++;
                    continue;
                }
                s += w[k] * z[k];
            }
            part[g] = s;
            have[g] = 1;
        }
        double y = part[g], raw;
        for (int32_t v = 0; v < nv; v++) y += w[var[v]] * model_input(M, var[v], row, memo);
        raw = y + M->intercept[g];
        ms[i] = out_apply(M, &raw, row);
    }
    spmv_free(var);
    spmv_free(z);
    return SPMV_OK;
}

int spmv_model_predict(const spmv_model *M, const double *rows, int32_t n, int32_t stride,
                       const int32_t *group, double *ms, double *raw, spmv_err *err) {
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
    if (M->kind == SPMV_MODEL_TREES) return predict_trees(M, rows, n, stride, group, ms, raw, err);
    int rc = SPMV_OK;
    int32_t nout = spmv_model_nout(M);
    int64_t nd = 0, nnb = 0, nst = 0;
    model_ws_count(M, &nd, &nnb, &nst);
    double *d = spmv_malloc(nd, sizeof(double), err), *dp = d;
    spmv_knn_nb *nb = d == NULL ? NULL : spmv_malloc(nnb, sizeof *nb, err), *nbp = nb;
    model_ws *st = nb == NULL ? NULL : spmv_malloc(nst, sizeof *st, err), *sp = st;
    if (st == NULL) {
        rc = SPMV_ENOMEM;
        goto done;
    }
    model_ws w;
    model_ws_init(M, &w, &dp, &nbp, &sp);
    for (int32_t i = 0; i < n; i++) {
        const double *row = rows + (int64_t)i * stride;
        int32_t g = group[i];
        if (g < 0) {
            ms[i] = HUGE_VAL;
            for (int32_t o = 0; raw != NULL && o < nout; o++) raw[(int64_t)i * nout + o] = NAN;
            continue;
        }
        model_inputs(M, row, w.z, w.memo);
        model_raw(M, g, row, &w);
        ms[i] = out_apply(M, w.raw, row);
        if (raw != NULL) memcpy(raw + (int64_t)i * nout, w.raw, (size_t)nout * sizeof(double));
    }
done:
    spmv_free(st);
    spmv_free(nb);
    spmv_free(d);
    return rc;
}

/* ---- ranking ---- */

typedef struct {
    double ms;
    int32_t i;
} ranked;

static inline int ranked_cmp(const ranked *x, const ranked *y) {
    int xn = isnan(x->ms), yn = isnan(y->ms);
    if (xn != yn) return xn - yn; /* NaN last */
    if (!xn && x->ms != y->ms) return x->ms < y->ms ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* Bottom-up merge sort of a[n] by ranked_cmp's order (tmp[n] workspace); returns the sorted copy.
 * qsort's calls through a comparator cost more than the model on a hundred configurations. */
static const ranked *ranked_sort(ranked *a, ranked *tmp, int32_t n) {
    for (int32_t w = 1; w < n; w *= 2) {
        for (int32_t lo = 0; lo < n; lo += 2 * w) {
            int32_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int32_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) tmp[k++] = ranked_cmp(&a[j], &a[i]) < 0 ? a[j++] : a[i++];
            while (i < mid) tmp[k++] = a[i++];
            while (j < hi) tmp[k++] = a[j++];
        }
        ranked *t = a;
        a = tmp;
        tmp = t;
    }
    return a;
}

static int rank_check(const spmv_configs *C, const spmv_model *M, int32_t *order, double *ms,
                      spmv_err *err) {
    if (C == NULL || M == NULL || (C->n > 0 && (order == NULL || ms == NULL || C->group == NULL)))
        return spmv_fail(err, SPMV_EINVAL, -1, -1, -1,
                         "rank needs configurations (with groups), a model, order and ms arrays, "
                         "not NULL");
    if (M->ncols != SPMV_NCOLS + C->nextra)
        return spmv_fail(err, SPMV_EINVAL, -1, M->ncols, SPMV_NCOLS + C->nextra,
                         "the model reads %d columns, the configurations give %d", (int)M->ncols,
                         (int)(SPMV_NCOLS + C->nextra));
    for (int32_t j = 0; j < C->n; j++)
        if (C->group[j] < -1 || C->group[j] >= M->ngroups)
            return spmv_fail(err, SPMV_EINVAL, j, C->group[j], M->ngroups,
                             "configuration %d has group %d, outside [-1, %d)", (int)j,
                             (int)C->group[j], (int)M->ngroups);
    return SPMV_OK;
}

int spmv_rank_rows(const spmv_configs *C, const spmv_model *M, const double *rows,
                   const double *add_ms, int32_t *order, double *ms, spmv_err *err) {
    int rc = rank_check(C, M, order, ms, err);
    if (rc) return rc;
    int32_t n = C->n;
    ranked *r = spmv_malloc(2 * (int64_t)n, sizeof(ranked), err);
    if (r == NULL) return SPMV_ENOMEM;
    if (M->kind == SPMV_MODEL_LINEAR) /* one matrix: its features are shared */
        rc = predict_linear_shared(M, rows, n, M->ncols, C->group, ms, err);
    else
        rc = spmv_model_predict(M, rows, n, M->ncols, C->group, ms, NULL, err);
    if (rc) goto done;
    for (int32_t j = 0; j < n; j++) {
        if (isnan(rows[(int64_t)j * M->ncols + SPMV_COL_BYTES_MOVED]))
            ms[j] = HUGE_VAL;
        else if (add_ms != NULL)
            ms[j] += add_ms[j];
        r[j].ms = ms[j];
        r[j].i = j;
    }
    const ranked *s = ranked_sort(r, r + n, n);
    for (int32_t j = 0; j < n; j++) order[j] = s[j].i;
done:
    spmv_free(r);
    return rc;
}

int spmv_rank(const spmv_csr *A, const spmv_gpu_props *dev, const spmv_configs *C,
              const spmv_model *M, int value_bytes, const double *add_ms, int32_t *order,
              double *ms, spmv_err *err) {
    int rc = rank_check(C, M, order, ms, err);
    if (rc) return rc;
    double *rows = spmv_malloc((int64_t)C->n * M->ncols, sizeof(double), err);
    if (rows == NULL) return SPMV_ENOMEM;
    rc = spmv_design_rows(A, dev, C, value_bytes, 0, rows, err);
    if (rc == 0) rc = spmv_rank_rows(C, M, rows, add_ms, order, ms, err);
    spmv_free(rows);
    return rc;
}
