// csrc/model_formula.c: closed-form models (Guo & Wang, Wang, Gu & Li) as gated products of inputs
// SPDX-License-Identifier: BSD-3-Clause
//
// A term is coef * z[a] * z[b], counted where lo < z[gate] <= hi.  Two linear segments split at a
// threshold are four terms gated on the two sides; ELL's f(w) * strips + g(w) is a product term per
// coefficient of f; HYB is its ELL terms plus its COO terms.
#include "spmv_internal.h"

void spmv_formula_eval(const spmv_model *M, int32_t g, const double *z, double *raw) {
    const spmv_formula *F = &M->formula;
    double y = 0;
    for (int32_t t = F->term_ptr[g]; t < F->term_ptr[g + 1]; t++) {
        if (F->gate[t] >= 0) {
            double v = z[F->gate[t]];
            if (!(v > F->lo[t] && v <= F->hi[t])) continue;
        }
        double p = F->coef[t];
        if (F->a[t] >= 0) p *= z[F->a[t]];
        if (F->b[t] >= 0) p *= z[F->b[t]];
        y += p;
    }
    raw[0] = y;
}

int spmv_formula_check(const spmv_model *M, spmv_err *err) {
    const spmv_formula *F = &M->formula;
    if (F->term_ptr == NULL || (F->nterms > 0 && (F->a == NULL || F->b == NULL || F->gate == NULL ||
                                                  F->coef == NULL || F->lo == NULL || F->hi == NULL)))
        return spmv_fail(err, SPMV_ESCHEMA, -1, -1, -1,
                         "a formula model needs term_ptr[ngroups+1] and a, b, gate, coef, lo, hi "
                         "[nterms]");
    int rc = spmv_check_range(F->term_ptr, (int64_t)M->ngroups + 1, 0, (int64_t)F->nterms + 1,
                              "formula.term_ptr", err);
    for (int32_t g = 0; rc == 0 && g < M->ngroups; g++)
        if (F->term_ptr[g + 1] < F->term_ptr[g])
            rc = spmv_fail(err, SPMV_ESCHEMA, g, F->term_ptr[g + 1], F->term_ptr[g],
                           "formula.term_ptr decreases at group %d", (int)g);
    if (rc == 0) rc = spmv_check_range(F->a, F->nterms, -1, M->ninputs, "formula.a", err);
    if (rc == 0) rc = spmv_check_range(F->b, F->nterms, -1, M->ninputs, "formula.b", err);
    if (rc == 0) rc = spmv_check_range(F->gate, F->nterms, -1, M->ninputs, "formula.gate", err);
    return rc;
}
