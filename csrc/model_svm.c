// csrc/model_svm.c: RBF support vector machines (Li & Suda) — SVR, and SVC's decision function
// SPDX-License-Identifier: BSD-3-Clause
#include "spmv_internal.h"

#include <math.h>

static double svm_decision(const spmv_model *M, int32_t s, const double *z, spmv_poll *p) {
    const spmv_svm *S = &M->svm;
    int32_t d = M->ninputs;
    double y = 0;
    for (int32_t i = S->sv_ptr[s]; i < S->sv_ptr[s + 1]; i++) {
        int64_t v = (int64_t)i * d; /* an index: sv may be NULL when d is 0 */
        double d2 = 0;
        for (int32_t k = 0; k < d; k++) {
            double e = z[k] - S->sv[v + k];
            d2 += e * e;
        }
        y += S->dual[i] * exp(-S->gamma[s] * d2);
        if (spmv_poll_step(p, (int64_t)d + 1)) break;
    }
    return y + S->intercept[s];
}

static void svm_eval(const spmv_model *M, int32_t g, const double *row, const double *z, int fresh,
                     void *w, spmv_poll *p, double *raw) {
    (void)row;
    (void)fresh;
    (void)w;
    raw[0] = svm_decision(M, g, z, p);
    if (M->svm.classify) raw[1] = svm_decision(M, M->ngroups + g, z, p);
}

/* Support vectors of a group's set (and its classifier's) times (inputs + 1): the costliest
 * group's. */
static int svm_cost(const spmv_model *M, int64_t *steps, spmv_err *err) {
    (void)err;
    const spmv_svm *S = &M->svm;
    int64_t most = 0;
    for (int32_t g = 0; g < M->ngroups; g++) {
        int64_t n = S->sv_ptr[g + 1] - S->sv_ptr[g];
        if (S->classify)
            n += S->sv_ptr[(int64_t)M->ngroups + g + 1] - S->sv_ptr[(int64_t)M->ngroups + g];
        int64_t s = spmv_sat_mul(n, (int64_t)M->ninputs + 1);
        if (s > most) most = s;
    }
    *steps = most;
    return SPMV_OK;
}

/* Sets: ngroups * (1 + classify). */
static const spmv_model_field svm_fields[] = {
    SPMV_KIND_INT(svm, nsv, 0, INT32_MAX),
    SPMV_KIND_INT(svm, classify, 0, 1),
    SPMV_KIND_REAL(svm, penalty),
    SPMV_MODEL_FIELD(svm, sv_ptr, .type = SPMV_FIELD_I32, .len = {"ngroups", "svm.classify"},
                     .plus = {0, 1}, .add = 1),
    SPMV_KIND_ARRAY(svm, sv, SPMV_FIELD_F64, "svm.nsv", "ninputs"),
    SPMV_KIND_ARRAY(svm, dual, SPMV_FIELD_F64, "svm.nsv"),
    SPMV_MODEL_FIELD(svm, gamma, .type = SPMV_FIELD_F64, .len = {"ngroups", "svm.classify"},
                     .plus = {0, 1}),
    SPMV_MODEL_FIELD(svm, intercept, .type = SPMV_FIELD_F64, .len = {"ngroups", "svm.classify"},
                     .plus = {0, 1}),
};

static int svm_check(const spmv_model *M, spmv_err *err) {
    const spmv_svm *S = &M->svm;
    int64_t nsets = (int64_t)M->ngroups * (1 + S->classify);
    int rc = spmv_check_range(S->sv_ptr, nsets + 1, 0, (int64_t)S->nsv + 1, "svm.sv_ptr", err);
    for (int64_t s = 0; rc == 0 && s < nsets; s++)
        if (S->sv_ptr[s + 1] < S->sv_ptr[s])
            rc = spmv_fail(err, SPMV_ESCHEMA, s, S->sv_ptr[s + 1], S->sv_ptr[s],
                           "svm.sv_ptr decreases at set %lld", (long long)s);
    return rc;
}

static int32_t svm_nout(const spmv_model *M) { return M->svm.classify ? 2 : 1; }

/* A classifying SVM's "bad" configurations: the time times the penalty. */
static double svm_out(const spmv_model *M, const double *raw, double y) {
    return M->svm.classify && !(raw[1] > 0) ? y * M->svm.penalty : y;
}

SPMV_API const spmv_model_ops spmv_svm_ops = {
    .fields = svm_fields,
    .nfields = SPMV_NFIELDS(svm_fields),
    .check = svm_check,
    .cost = svm_cost,
    .nout = svm_nout,
    .eval = svm_eval,
    .out = svm_out,
};
