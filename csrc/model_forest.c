// csrc/model_forest.c: multi-output forests — one walk per tree gives every configuration's time
// SPDX-License-Identifier: BSD-3-Clause
//
// A whole-matrix model: its inputs are the matrix's features, its leaves vectors with one entry per
// configuration (group), so that ranking a matrix costs ntrees walks and ntrees * nout additions,
// not a walk per tree per configuration.  The sum of the vectors is kept for the last inputs:
// every row of one matrix reads it.
#include "spmv_internal.h"

/* Workspace: the summed vector [nout]. */
static int64_t forest_ws(const spmv_model *M, void *w) {
    (void)w;
    return 8 * (int64_t)M->forest.nout;
}

/* The leaf vector tree t's walk ends in; the nodes it visited are added to *steps. */
static const double *forest_leaf(const spmv_forest *F, int32_t t, const double *z, int64_t *steps) {
    int32_t n = F->root[t];
    int64_t k = 1;
    while (F->feature[n] >= 0) {
        double x = z[F->feature[n]];
        if (F->cast_f32) x = (double)(float)x;
        n = x <= F->threshold[n] ? F->left[n] : F->right[n]; /* NaN: right */
        k++;
    }
    *steps += k;
    return F->value + (int64_t)F->left[n] * F->nout;
}

/* The leaf vectors summed four trees at a time: one load and store of the sum per four vectors,
 * the adds' cost at a hundred outputs rather than the walks'.  Returns nonzero once p says stop
 * (the sum then partial, and the call ending with SPMV_EINTR). */
static int forest_sum(const spmv_model *M, const double *z, spmv_poll *p,
                      double *SPMV_RESTRICT sum) {
    const spmv_forest *F = &M->forest;
    int32_t nout = F->nout, t = 0;
    for (int32_t o = 0; o < nout; o++) sum[o] = 0;
    for (; t + 4 <= F->ntrees; t += 4) {
        int64_t steps = 4 * (int64_t)nout;
        const double *SPMV_RESTRICT v0 = forest_leaf(F, t, z, &steps),
                                    *SPMV_RESTRICT v1 = forest_leaf(F, t + 1, z, &steps);
        const double *SPMV_RESTRICT v2 = forest_leaf(F, t + 2, z, &steps),
                                    *SPMV_RESTRICT v3 = forest_leaf(F, t + 3, z, &steps);
        for (int32_t o = 0; o < nout; o++) sum[o] += (v0[o] + v1[o]) + (v2[o] + v3[o]);
        if (spmv_poll_step(p, steps)) return 1;
    }
    for (; t < F->ntrees; t++) {
        int64_t steps = nout;
        const double *SPMV_RESTRICT v = forest_leaf(F, t, z, &steps);
        for (int32_t o = 0; o < nout; o++) sum[o] += v[o];
        if (spmv_poll_step(p, steps)) return 1;
    }
    return 0;
}

static void forest_eval(const spmv_model *M, int32_t g, const double *row, const double *z,
                        int fresh, void *w, spmv_poll *p, double *raw) {
    (void)row;
    double *sum = (double *)w;
    if (fresh && forest_sum(M, z, p, sum)) return;
    raw[0] = M->forest.base >= 0 ? sum[g] + sum[M->forest.base] : sum[g];
}

/* Every tree's longest walk, plus trees x outputs additions: one row's sum (every row of one matrix
 * shares it, but a hostile model may read per-configuration inputs and make each row walk). */
static int forest_cost(const spmv_model *M, int64_t *steps, spmv_err *err) {
    const spmv_forest *F = &M->forest;
    int32_t *h = (int32_t *)spmv_malloc(F->nnodes, sizeof(int32_t), err);
    if (h == NULL) return SPMV_ENOMEM;
    spmv_tree_heights(F->feature, F->left, F->right, F->nnodes, h);
    int64_t s = spmv_sat_mul(F->ntrees, F->nout);
    for (int32_t t = 0; t < F->ntrees; t++) s = spmv_sat_add(s, h[F->root[t]]);
    spmv_free(h);
    *steps = s;
    return SPMV_OK;
}

static const spmv_model_field forest_fields[] = {
    SPMV_KIND_INT(forest, ntrees, 1, INT32_MAX),
    SPMV_KIND_INT(forest, nnodes, 1, INT32_MAX),
    SPMV_KIND_INT(forest, nleaves, 1, INT32_MAX),
    SPMV_KIND_INT(forest, nout, 1, INT32_MAX),
    SPMV_KIND_INT(forest, base, -1, INT32_MAX),
    SPMV_KIND_INT(forest, cast_f32, 0, 1),
    SPMV_KIND_ARRAY(forest, root, SPMV_FIELD_I32, "forest.ntrees"),
    SPMV_KIND_ARRAY(forest, feature, SPMV_FIELD_I32, "forest.nnodes"),
    SPMV_KIND_ARRAY(forest, left, SPMV_FIELD_I32, "forest.nnodes"),
    SPMV_KIND_ARRAY(forest, right, SPMV_FIELD_I32, "forest.nnodes"),
    SPMV_KIND_ARRAY(forest, threshold, SPMV_FIELD_F64, "forest.nnodes"),
    SPMV_KIND_ARRAY(forest, value, SPMV_FIELD_F64, "forest.nleaves", "forest.nout"),
};

static int forest_check(const spmv_model *M, spmv_err *err) {
    const spmv_forest *F = &M->forest;
    if (M->ngroups > F->nout) /* group g reads output g */
        return spmv_fail(err, SPMV_ESCHEMA, -1, M->ngroups, F->nout,
                         "forest: ngroups = %d is past nout = %d", (int)M->ngroups, (int)F->nout);
    int rc = spmv_check_range(&F->base, 1, -1, F->nout, "forest.base", err);
    if (rc == 0) rc = spmv_check_range(F->root, F->ntrees, 0, F->nnodes, "forest.root", err);
    if (rc == 0)
        rc = spmv_check_range(F->feature, F->nnodes, -1, M->ninputs, "forest.feature", err);
    /* Children come after their parent, so that every walk ends (scikit-learn numbers nodes depth
     * first); a leaf's left is its vector. */
    for (int32_t n = 0; rc == 0 && n < F->nnodes; n++) {
        if (F->feature[n] < 0) {
            rc = spmv_check_range(&F->left[n], 1, 0, F->nleaves, "forest.left (a leaf's vector)",
                                  err);
            continue;
        }
        int32_t c = F->left[n] <= F->right[n] ? F->left[n] : F->right[n];
        int32_t d = F->left[n] <= F->right[n] ? F->right[n] : F->left[n];
        if (c <= n || d >= F->nnodes)
            rc = spmv_fail(err, SPMV_ESCHEMA, n, c <= n ? c : d, F->nnodes,
                           "forest: node %d has child %d outside (%d, %d)", (int)n,
                           (int)(c <= n ? c : d), (int)n, (int)F->nnodes);
    }
    return rc;
}

SPMV_API const spmv_model_ops spmv_forest_ops = {
    .fields = forest_fields,
    .nfields = SPMV_NFIELDS(forest_fields),
    .check = forest_check,
    .cost = forest_cost,
    .ws = forest_ws,
    .eval = forest_eval,
};
