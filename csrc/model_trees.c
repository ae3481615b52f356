// csrc/model_trees.c: tree ensembles (gradient boosting, regression and per-class) as flat node arrays
// SPDX-License-Identifier: BSD-3-Clause
//
// A loop walks each tree; nested generated ifs would compile slowly and bloat on large ensembles.
// Comparisons are scikit-learn's: DecisionTreeRegressor (GradientBoosting*) casts X to float32 and
// compares against float64 thresholds; HistGradientBoosting* compares float64.  The sum runs tree by
// tree in fitting order, init + scale * leaf each time, as predict_stages does, so that the result
// carries the same rounding.
#include "spmv_internal.h"

#include <math.h>

void spmv_trees_eval(const spmv_model *M, int32_t g, const double *z, double *raw) {
    const spmv_trees *T = &M->trees;
    for (int32_t o = 0; o < T->nout; o++) {
        int32_t go = g * T->nout + o;
        double y = T->init[go];
        for (int32_t t = T->tree_ptr[go]; t < T->tree_ptr[go + 1]; t++) {
            int32_t n = T->root[t];
            while (T->feature[n] >= 0) {
                double x = z[T->feature[n]];
                int left;
                if (isnan(x)) left = T->missing_left != NULL && T->missing_left[n];
                else left = (T->cast_f32 ? (double)(float)x : x) <= T->threshold[n];
                n = left ? T->left[n] : T->right[n];
            }
            y += T->scale * T->value[n];
        }
        raw[o] = y;
    }
}

int spmv_trees_check(const spmv_model *M, spmv_err *err) {
    const spmv_trees *T = &M->trees;
    if (T->nout < 1 || T->tree_ptr == NULL || T->init == NULL ||
        (T->ntrees > 0 && T->root == NULL) ||
        (T->nnodes > 0 && (T->feature == NULL || T->left == NULL || T->right == NULL ||
                           T->threshold == NULL || T->value == NULL)))
        return spmv_fail(err, SPMV_ESCHEMA, -1, T->nout, 1,
                         "a tree model needs nout >= 1, tree_ptr[ngroups*nout+1], init, root[ntrees] "
                         "and feature, left, right, threshold, value[nnodes]");
    int64_t ngo = (int64_t)M->ngroups * T->nout;
    int rc = spmv_check_range(T->tree_ptr, ngo + 1, 0, (int64_t)T->ntrees + 1, "trees.tree_ptr", err);
    for (int64_t i = 0; rc == 0 && i < ngo; i++)
        if (T->tree_ptr[i + 1] < T->tree_ptr[i])
            rc = spmv_fail(err, SPMV_ESCHEMA, i, T->tree_ptr[i + 1], T->tree_ptr[i],
                           "trees.tree_ptr decreases at %lld", (long long)i);
    if (rc == 0) rc = spmv_check_range(T->root, T->ntrees, 0, T->nnodes, "trees.root", err);
    if (rc == 0) rc = spmv_check_range(T->feature, T->nnodes, -1, M->ninputs, "trees.feature", err);
    /* Children must come after their parent, so that every walk ends (scikit-learn numbers nodes
     * depth first). */
    for (int32_t n = 0; rc == 0 && n < T->nnodes; n++) {
        if (T->feature[n] < 0) continue;
        int32_t c = T->left[n] <= T->right[n] ? T->left[n] : T->right[n];
        int32_t d = T->left[n] <= T->right[n] ? T->right[n] : T->left[n];
        if (c <= n || d >= T->nnodes)
            rc = spmv_fail(err, SPMV_ESCHEMA, n, c <= n ? c : d, T->nnodes,
                           "trees: node %d has child %d outside (%d, %d)", (int)n,
                           (int)(c <= n ? c : d), (int)n, (int)T->nnodes);
    }
    return rc;
}
