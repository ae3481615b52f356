// csrc/model_cascade.c: classifiers chained (Gao) — minus the probability of each configuration's path
// SPDX-License-Identifier: BSD-3-Clause
//
// Each stage is a tree classifier over matrix features; its class probabilities are kept for the
// last inputs, so that a ranking evaluates each stage once however many configurations share it.
#include "spmv_internal.h"

#include <math.h>
#include <string.h>

/* Workspace of one stage: its inputs (z, and zn to compare), memo, raw outputs, probabilities
 * [nout + 1] and its kind's own workspace. */
typedef struct {
    double *z, *zn, *memo, *raw, *proba;
    void *kw;
    int valid;
} stage_ws;

static int64_t stage_doubles(const spmv_model *S) {
    int32_t nout = spmv_model_nout(S);
    const spmv_model_ops *op = spmv_model_ops_of(S->kind);
    int64_t kw = op->ws != NULL ? (op->ws(S, NULL) + 7) / 8 : 0;
    return 4 * (int64_t)S->ninputs + 2 * (int64_t)nout + 1 + kw;
}

static int64_t cascade_ws(const spmv_model *M, void *w) {
    const spmv_cascade *K = &M->cascade;
    int64_t head = ((int64_t)K->nstages * (int64_t)sizeof(stage_ws) + 7) / 8, nd = head;
    for (int32_t s = 0; s < K->nstages; s++) nd += stage_doubles(&K->sub[s]);
    if (w == NULL) return 8 * nd;
    stage_ws *st = (stage_ws *)w;
    double *d = (double *)w + head;
    for (int32_t s = 0; s < K->nstages; s++) {
        const spmv_model *S = &K->sub[s];
        const spmv_model_ops *op = spmv_model_ops_of(S->kind);
        int32_t ni = S->ninputs, nout = spmv_model_nout(S);
        st[s].z = d;
        st[s].zn = d + ni;
        st[s].memo = st[s].zn + ni;
        st[s].raw = st[s].memo + 2 * ni;
        st[s].proba = st[s].raw + nout;
        st[s].kw = st[s].proba + nout + 1;
        st[s].valid = 0;
        spmv_model_memo_init(st[s].memo, ni);
        if (op->ws != NULL) op->ws(S, st[s].kw);
        d += stage_doubles(S);
    }
    return 8 * nd;
}

/* Class probabilities of stage S for this row (GradientBoostingClassifier.predict_proba: expit of
 * the logit for two classes, a softmax for more), recomputed only when its inputs change. */
static const double *stage_proba(const spmv_model *S, const double *row, stage_ws *w,
                                 spmv_poll *p) {
    if (S->kind == 0) {
        w->proba[0] = 1;
        return w->proba;
    }
    spmv_model_inputs(S, row, w->zn, w->memo);
    if (w->valid && memcmp(w->zn, w->z, (size_t)S->ninputs * sizeof(double)) == 0) return w->proba;
    memcpy(w->z, w->zn, (size_t)S->ninputs * sizeof(double));
    spmv_model_ops_of(S->kind)->eval(S, 0, row, w->z, 1, w->kw, p, w->raw);
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

static void cascade_eval(const spmv_model *M, int32_t g, const double *row, const double *z,
                         int fresh, void *w, spmv_poll *p, double *raw) {
    (void)z;
    (void)fresh;
    const spmv_cascade *K = &M->cascade;
    stage_ws *st = (stage_ws *)w;
    double prob = 1;
    for (int32_t l = 0; l < K->nlevels; l++) {
        int32_t s = K->node[(int64_t)g * K->nlevels + l], c = K->cls[(int64_t)g * K->nlevels + l];
        prob *= s < 0 || c < 0 ? 0.0 : stage_proba(&K->sub[s], row, &st[s], p)[c];
        if (spmv_poll_step(p, 1)) {
            for (int32_t t = 0; t < K->nstages; t++) st[t].valid = 0; /* a stage may be partial */
            return;
        }
    }
    raw[0] = -prob;
}

/* Every stage a row may evaluate (each at most once per input vector), plus the levels. */
static int cascade_cost(const spmv_model *M, int64_t *steps, spmv_err *err) {
    const spmv_cascade *K = &M->cascade;
    int64_t s = K->nlevels;
    for (int32_t t = 0; t < K->nstages; t++) {
        int64_t c = 0;
        if (K->sub[t].kind != SPMV_MODEL_CONSTANT) {
            int rc = spmv_model_cost(&K->sub[t], &c, err);
            if (rc) return rc;
            c = spmv_sat_add(c, spmv_model_nout(&K->sub[t]));
        }
        s = spmv_sat_add(s, c);
    }
    *steps = s;
    return SPMV_OK;
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

/* Stages: tree classifiers or one class (spmv_cascade); their number is the list's length. */
static const spmv_model_field cascade_fields[] = {
    SPMV_MODEL_FIELD(cascade, nstages, .type = SPMV_FIELD_INT, .flags = SPMV_FIELD_DERIVED, .lo = 1,
                     .hi = INT32_MAX),
    SPMV_KIND_INT(cascade, nlevels, 1, INT32_MAX),
    SPMV_MODEL_FIELD(cascade, sub, .type = SPMV_FIELD_MODELS,
                     .hi = (1 << SPMV_MODEL_CONSTANT) | (1 << SPMV_MODEL_TREES),
                     .len = {"cascade.nstages"}),
    SPMV_KIND_ARRAY(cascade, node, SPMV_FIELD_I32, "ngroups", "cascade.nlevels"),
    SPMV_KIND_ARRAY(cascade, cls, SPMV_FIELD_I32, "ngroups", "cascade.nlevels"),
};

static int cascade_check(const spmv_model *M, spmv_err *err) {
    const spmv_cascade *K = &M->cascade;
    int64_t np = (int64_t)M->ngroups * K->nlevels;
    int rc = spmv_check_range(K->node, np, -1, K->nstages, "cascade.node", err);
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

SPMV_API const spmv_model_ops spmv_cascade_ops = {
    .fields = cascade_fields,
    .nfields = SPMV_NFIELDS(cascade_fields),
    .check = cascade_check,
    .cost = cascade_cost,
    .ws = cascade_ws,
    .eval = cascade_eval,
};
