// csrc/model_trees.c: tree ensembles (gradient boosting, regression and per-class) as flat node
// arrays SPDX-License-Identifier: BSD-3-Clause
//
// A loop walks each tree; nested generated ifs would compile slowly and bloat on large ensembles.
// Comparisons are scikit-learn's: DecisionTreeRegressor (GradientBoosting*) casts X to float32 and
// compares against float64 thresholds; HistGradientBoosting* compares float64.  The sum runs tree
// by tree in fitting order, init + scale * leaf each time, as predict_stages does, so that the
// result carries the same rounding.
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
                if (isnan(x))
                    left = T->missing_left != NULL && T->missing_left[n];
                else
                    left = (T->cast_f32 ? (double)(float)x : x) <= T->threshold[n];
                n = left ? T->left[n] : T->right[n];
            }
            y += T->scale * T->value[n];
        }
        raw[o] = y;
    }
}

/* The same sums for many rows, tree by tree, walking TREE_LANES rows of a tree in lockstep: a walk
 * is a chain of dependent loads (node, input, threshold, child), so one row at a time leaves the
 * core waiting on latency, while independent walks side by side overlap.  The step is branch-free
 * (a leaf keeps its node; NaN fails every <= and takes missing_left where given), and a tree's
 * nodes are fetched once for all the rows of its group.  Each row still adds its leaves in fitting
 * order.  rows[nr] are the row indices of group g; Z[row*ninputs] their inputs, already cast to
 * float when cast_f32; raw[row*nout] their outputs. */
#define TREE_LANES 8
void spmv_trees_eval_rows(const spmv_model *M, int32_t g, const int32_t *rows, int32_t nr,
                          const double *Z, double *raw) {
    const spmv_trees *T = &M->trees;
    const int32_t *feat = T->feature, *lc = T->left, *rc = T->right;
    const double *thr = T->threshold;
    const uint8_t *ml = T->missing_left;
    int32_t d = M->ninputs, nout = T->nout;
    for (int32_t o = 0; o < nout; o++) {
        int32_t go = g * nout + o;
        for (int32_t r0 = 0; r0 < nr; r0 += TREE_LANES) {
            int32_t m = nr - r0 < TREE_LANES ? nr - r0 : TREE_LANES, cur[TREE_LANES];
            const double *z[TREE_LANES];
            double y[TREE_LANES];
            for (int32_t k = 0; k < m; k++) {
                z[k] = Z + (int64_t)rows[r0 + k] * d;
                y[k] = T->init[go];
            }
            for (int32_t t = T->tree_ptr[go]; t < T->tree_ptr[go + 1]; t++) {
                for (int32_t k = 0; k < m; k++) cur[k] = T->root[t];
                for (int inner = 1; inner;) {
                    inner = 0;
                    for (int32_t k = 0; k < m; k++) {
                        int32_t n = cur[k], f = feat[n], split = f >= 0;
                        double x = z[k][f & -split]; /* a leaf reads input 0 */
                        int32_t left = x <= thr[n];
                        if (ml != NULL) left |= (x != x) & ml[n];
                        /* arithmetic, not ?: -- a data-dependent branch here mispredicts half
                           the time and costs more than the walk */
                        int32_t next = rc[n] + left * (lc[n] - rc[n]);
                        cur[k] = n + split * (next - n);
                        inner |= split;
                    }
                }
                for (int32_t k = 0; k < m; k++) y[k] += T->scale * T->value[cur[k]];
            }
            for (int32_t k = 0; k < m; k++) raw[(int64_t)rows[r0 + k] * nout + o] = y[k];
        }
    }
}

int spmv_trees_check(const spmv_model *M, spmv_err *err) {
    const spmv_trees *T = &M->trees;
    if (T->nout < 1 || T->tree_ptr == NULL || T->init == NULL ||
        (T->ntrees > 0 && T->root == NULL) ||
        (T->nnodes > 0 && (T->feature == NULL || T->left == NULL || T->right == NULL ||
                           T->threshold == NULL || T->value == NULL)))
        return spmv_fail(
            err, SPMV_ESCHEMA, -1, T->nout, 1,
            "a tree model needs nout >= 1, tree_ptr[ngroups*nout+1], init, root[ntrees] "
            "and feature, left, right, threshold, value[nnodes]");
    int64_t ngo = (int64_t)M->ngroups * T->nout;
    int rc =
        spmv_check_range(T->tree_ptr, ngo + 1, 0, (int64_t)T->ntrees + 1, "trees.tree_ptr", err);
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
