// csrc/model_linear.c: linear models (Lehnert) — per group, intercept + coefficients . inputs
// SPDX-License-Identifier: BSD-3-Clause
//
// Per-format feature selection is a zero coefficient; log-transformed features and runtime are the
// model's input and output transforms (csrc/model.c).
#include "spmv_internal.h"

static void linear_eval(const spmv_model *M, int32_t g, const double *row, const double *z,
                        int fresh, void *w, spmv_poll *p, double *raw) {
    (void)row;
    (void)fresh;
    (void)w;
    (void)p;                             /* ninputs steps: the row loop counts them */
    int64_t o = (int64_t)g * M->ninputs; /* an index, not coef + o: coef may be NULL when empty */
    double y = 0;
    for (int32_t k = 0; k < M->ninputs; k++) y += M->linear.coef[o + k] * z[k];
    raw[0] = y + M->linear.intercept[g];
}

/* The rows of one matrix (shared): the inputs from its features and value size are the same in
 * every row, so their part of each group's sum is computed once per group, and a row pays only
 * for its configuration's own inputs.  Other rows: left to linear_eval. */
static int linear_rows(const spmv_model *M, const double *rows, int32_t n, int32_t stride,
                       const int32_t *group, int shared, spmv_poll *p, double *raw, spmv_err *err) {
    if (!shared) return 1;
    int32_t ni = M->ninputs, ng = M->ngroups, nv = 0, first = -1;
    double *z = (double *)spmv_malloc(3 * (int64_t)ni + 2 * (int64_t)ng, sizeof(double), err);
    int32_t *var = z == NULL ? NULL : (int32_t *)spmv_malloc(ni, sizeof(int32_t), err);
    if (var == NULL) {
        spmv_free(z);
        return SPMV_ENOMEM;
    }
    double *memo = z + ni, *part = memo + 2 * ni, *have = part + ng;
    spmv_model_memo_init(memo, ni);
    for (int32_t g = 0; g < ng; g++) have[g] = 0;
    for (int32_t k = 0; k < ni; k++)
        if (!(M->in_col[k] < SPMV_NFEATURES || M->in_col[k] == SPMV_COL_VALUE_BYTES)) var[nv++] = k;
    for (int32_t i = 0; i < n; i++) {
        const double *row = rows + (int64_t)i * stride;
        int32_t g = group[i];
        if (g < 0) continue;
        const double *w = ni > 0 ? M->linear.coef + (int64_t)g * ni
                                 : M->linear.coef; /* coef may be NULL when ni is 0 */
        if (first < 0) {
            first = i;
            spmv_model_inputs(M, row, z, memo);
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
        double y = part[g];
        for (int32_t v = 0; v < nv; v++) y += w[var[v]] * spmv_model_input(M, var[v], row, memo);
        raw[i] = y + M->linear.intercept[g];
        if (spmv_poll_step(p, 2 * (int64_t)ni + 1)) break;
    }
    spmv_free(var);
    spmv_free(z);
    return p->stopped ? SPMV_EINTR : SPMV_OK;
}

/* A dot product of the inputs. */
static int linear_cost(const spmv_model *M, int64_t *steps, spmv_err *err) {
    (void)err;
    *steps = M->ninputs;
    return SPMV_OK;
}

/* Its fields keep the names of the first model files, which had no kind prefix for them. */
static const spmv_model_field linear_fields[] = {
    {.name = "coef",
     .type = SPMV_FIELD_F64,
     .len = {"ngroups", "ninputs"},
     .offset = offsetof(spmv_model, linear.coef)},
    {.name = "intercept",
     .type = SPMV_FIELD_F64,
     .len = {"ngroups"},
     .offset = offsetof(spmv_model, linear.intercept)},
};

SPMV_API const spmv_model_ops spmv_linear_ops = {
    .fields = linear_fields,
    .nfields = SPMV_NFIELDS(linear_fields),
    .cost = linear_cost,
    .eval = linear_eval,
    .rows = linear_rows,
};
