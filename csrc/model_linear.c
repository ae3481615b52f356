// csrc/model_linear.c: linear models (Lehnert) — per group, intercept + coefficients . inputs
// SPDX-License-Identifier: BSD-3-Clause
//
// Per-format feature selection is a zero coefficient; log-transformed features and runtime are the
// model's input and output transforms (csrc/rank.c).
#include "spmv_internal.h"

void spmv_linear_eval(const spmv_model *M, int32_t g, const double *z, double *raw) {
    int64_t w = (int64_t)g * M->ninputs; /* an index, not coef + w: coef may be NULL when empty */
    double y = 0;
    for (int32_t k = 0; k < M->ninputs; k++) y += M->coef[w + k] * z[k];
    raw[0] = y + M->intercept[g];
}

int spmv_linear_check(const spmv_model *M, spmv_err *err) {
    if ((M->coef == NULL && M->ninputs > 0) || M->intercept == NULL)
        return spmv_fail(err, SPMV_ESCHEMA, -1, -1, -1,
                         "a linear model needs coef[ngroups*ninputs] and intercept[ngroups]");
    return SPMV_OK;
}
