// csrc/model_formula.c: closed-form models (Guo & Wang, Wang, Gu & Li) as gated products of inputs
// SPDX-License-Identifier: BSD-3-Clause
//
// Derived inputs give the strips (ceil(rows / threads of the whole GPU), at least 1) and HYB's COO
// part; a term is coef * z[a] * z[b], counted where lo < z[gate] <= hi.  Two linear segments split
// at a threshold are terms gated on the two sides; ELL's f(w) + (s - 1) g(w) is a product term per
// coefficient; HYB is its ELL terms plus its COO term.
#include "spmv_internal.h"

#include <math.h>

static double factor(const double *z, int32_t i) { return i >= 0 ? z[i] : 1.0; }

/* Workspace: z[ninputs + nderived], the inputs then the derived inputs. */
static int64_t formula_ws(const spmv_model *M, void *w) {
    (void)w;
    return 8 * ((int64_t)M->ninputs + M->formula.nderived);
}

static void formula_eval(const spmv_model *M, int32_t g, const double *row, const double *zin,
                         int fresh, void *w, spmv_poll *p, double *raw) {
    (void)row;
    (void)fresh;
    const spmv_formula *F = &M->formula;
    double *z = (double *)w;
    for (int32_t k = 0; k < M->ninputs; k++) z[k] = zin[k];
    for (int32_t q = 0; q < F->nderived; q++) {
        double v = factor(z, F->da[q]) * factor(z, F->db[q]);
        if (F->dc[q] >= 0) v = v - factor(z, F->dc[q]) * factor(z, F->dd[q]);
        v = v < F->dlo[q] ? F->dlo[q] : v;
        v = v / F->ddiv[q];
        if (F->dceil[q]) v = ceil(v);
        v = v < F->dlo2[q] ? F->dlo2[q] : v;
        z[M->ninputs + q] = v + F->dadd[q];
    }
    double y = 0;
    for (int32_t t = F->term_ptr[g]; t < F->term_ptr[g + 1]; t++) {
        if (F->gate[t] >= 0) {
            double v = z[F->gate[t]];
            if (!(v > F->lo[t] && v <= F->hi[t])) continue;
        }
        y += F->coef[t] * (factor(z, F->a[t]) * factor(z, F->b[t]));
    }
    raw[0] = y;
    spmv_poll_step(p, (int64_t)M->ninputs + F->nderived + (F->term_ptr[g + 1] - F->term_ptr[g]));
}

/* The inputs copied, every derived input, and the costliest group's terms. */
static int formula_cost(const spmv_model *M, int64_t *steps, spmv_err *err) {
    (void)err;
    const spmv_formula *F = &M->formula;
    int64_t most = 0;
    for (int32_t g = 0; g < M->ngroups; g++)
        if (F->term_ptr[g + 1] - F->term_ptr[g] > most) most = F->term_ptr[g + 1] - F->term_ptr[g];
    *steps = (int64_t)M->ninputs + F->nderived + most;
    return SPMV_OK;
}

#define SPMV_DERIVED(m, t) SPMV_KIND_ARRAY(formula, m, t, "formula.nderived")
#define SPMV_TERMS(m, t) SPMV_KIND_ARRAY(formula, m, t, "formula.nterms")
static const spmv_model_field formula_fields[] = {
    SPMV_KIND_INT(formula, nderived, 0, INT32_MAX),
    SPMV_KIND_INT(formula, nterms, 0, INT32_MAX),
    SPMV_DERIVED(da, SPMV_FIELD_I32),
    SPMV_DERIVED(db, SPMV_FIELD_I32),
    SPMV_DERIVED(dc, SPMV_FIELD_I32),
    SPMV_DERIVED(dd, SPMV_FIELD_I32),
    SPMV_DERIVED(dceil, SPMV_FIELD_I32),
    SPMV_DERIVED(dlo, SPMV_FIELD_F64),
    SPMV_DERIVED(ddiv, SPMV_FIELD_F64),
    SPMV_DERIVED(dlo2, SPMV_FIELD_F64),
    SPMV_DERIVED(dadd, SPMV_FIELD_F64),
    SPMV_MODEL_FIELD(formula, term_ptr, .type = SPMV_FIELD_I32, .len = {"ngroups"}, .add = 1),
    SPMV_TERMS(a, SPMV_FIELD_I32),
    SPMV_TERMS(b, SPMV_FIELD_I32),
    SPMV_TERMS(gate, SPMV_FIELD_I32),
    SPMV_TERMS(coef, SPMV_FIELD_F64),
    SPMV_TERMS(lo, SPMV_FIELD_F64),
    SPMV_TERMS(hi, SPMV_FIELD_F64),
};
#undef SPMV_DERIVED
#undef SPMV_TERMS

static int formula_check(const spmv_model *M, spmv_err *err) {
    const spmv_formula *F = &M->formula;
    int64_t nz = (int64_t)M->ninputs + F->nderived;
    if (nz > INT32_MAX) /* z[] is sized and indexed with int32 */
        return spmv_fail(err, SPMV_ESCHEMA, -1, nz, INT32_MAX,
                         "formula: ninputs + nderived = %lld is past the int32 limit %d",
                         (long long)nz, INT32_MAX);
    int rc = spmv_check_range(F->term_ptr, (int64_t)M->ngroups + 1, 0, (int64_t)F->nterms + 1,
                              "formula.term_ptr", err);
    for (int32_t g = 0; rc == 0 && g < M->ngroups; g++)
        if (F->term_ptr[g + 1] < F->term_ptr[g])
            rc = spmv_fail(err, SPMV_ESCHEMA, g, F->term_ptr[g + 1], F->term_ptr[g],
                           "formula.term_ptr decreases at group %d", (int)g);
    /* a derived input reads the inputs and the derived inputs before it */
    for (int32_t q = 0; rc == 0 && q < F->nderived; q++) {
        int32_t idx[4] = {F->da[q], F->db[q], F->dc[q], F->dd[q]};
        rc = spmv_check_range(idx, 4, -1, M->ninputs + q, "formula derived input", err);
    }
    if (rc == 0) rc = spmv_check_range(F->dceil, F->nderived, 0, 2, "formula.dceil", err);
    if (rc == 0) rc = spmv_check_range(F->a, F->nterms, -1, nz, "formula.a", err);
    if (rc == 0) rc = spmv_check_range(F->b, F->nterms, -1, nz, "formula.b", err);
    if (rc == 0) rc = spmv_check_range(F->gate, F->nterms, -1, nz, "formula.gate", err);
    return rc;
}

SPMV_API const spmv_model_ops spmv_formula_ops = {
    .fields = formula_fields,
    .nfields = SPMV_NFIELDS(formula_fields),
    .check = formula_check,
    .cost = formula_cost,
    .ws = formula_ws,
    .eval = formula_eval,
};
