// csrc/model_svm.c: RBF support vector machines (Li & Suda) — SVR, and SVC's decision function
// SPDX-License-Identifier: BSD-3-Clause
//
// decision = sum_i dual_i * exp(-gamma |z - sv_i|^2) + intercept, with scikit-learn's public
// dual_coef_ and intercept_ (for a binary SVC already signed so that > 0 means classes_[1]).
#include "spmv_internal.h"

#include <math.h>

void spmv_svm_eval(const spmv_model *M, int32_t g, const double *z, double *raw) {
    const spmv_svm *S = &M->svm;
    int32_t d = M->ninputs;
    double y = 0;
    for (int32_t i = S->sv_ptr[g]; i < S->sv_ptr[g + 1]; i++) {
        const double *v = S->sv + (int64_t)i * d;
        double d2 = 0;
        for (int32_t k = 0; k < d; k++) {
            double e = z[k] - v[k];
            d2 += e * e;
        }
        y += S->dual[i] * exp(-S->gamma[g] * d2);
    }
    raw[0] = y + S->intercept[g];
}

int spmv_svm_check(const spmv_model *M, spmv_err *err) {
    const spmv_svm *S = &M->svm;
    if (S->sv_ptr == NULL || S->gamma == NULL || S->intercept == NULL ||
        (S->nsv > 0 && (S->dual == NULL || (S->sv == NULL && M->ninputs > 0))))
        return spmv_fail(err, SPMV_ESCHEMA, -1, -1, -1,
                         "an SVM model needs sv_ptr[ngroups+1], sv[nsv*ninputs], dual[nsv], "
                         "gamma and intercept[ngroups]");
    int rc = spmv_check_range(S->sv_ptr, (int64_t)M->ngroups + 1, 0, (int64_t)S->nsv + 1,
                              "svm.sv_ptr", err);
    for (int32_t g = 0; rc == 0 && g < M->ngroups; g++)
        if (S->sv_ptr[g + 1] < S->sv_ptr[g])
            rc = spmv_fail(err, SPMV_ESCHEMA, g, S->sv_ptr[g + 1], S->sv_ptr[g],
                           "svm.sv_ptr decreases at group %d", (int)g);
    return rc;
}
