// csrc/model_trees.c: tree ensembles (boosting, regression, per-class) as flat node arrays
// SPDX-License-Identifier: BSD-3-Clause
//
// A loop walks each tree; nested generated ifs would compile slowly and bloat on large ensembles.
// Comparisons are scikit-learn's: DecisionTreeRegressor (GradientBoosting*) casts X to float32 and
// compares against float64 thresholds; HistGradientBoosting* compares float64.  The sum runs tree
// by tree in fitting order, init + scale * leaf each time, as predict_stages does, so that the
// result carries the same rounding.
#include "spmv_internal.h"

#include <math.h>
#include <string.h>

static void trees_eval(const spmv_model *M, int32_t g, const double *row, const double *z,
                       int fresh, void *w, spmv_poll *p, double *raw) {
    (void)row;
    (void)fresh;
    (void)w;
    const spmv_trees *T = &M->trees;
    for (int32_t o = 0; o < T->nout; o++) {
        int32_t go = g * T->nout + o;
        double y = T->init[go];
        for (int32_t t = T->tree_ptr[go]; t < T->tree_ptr[go + 1]; t++) {
            int32_t n = T->root[t];
            int64_t steps = 1;
            while (T->feature[n] >= 0) {
                double x = z[T->feature[n]];
                int left;
                if (isnan(x))
                    left = T->missing_left != NULL && T->missing_left[n];
                else
                    left = (T->cast_f32 ? (double)(float)x : x) <= T->threshold[n];
                n = left ? T->left[n] : T->right[n];
                steps++;
            }
            y += T->scale * T->value[n];
            if (spmv_poll_step(p, steps)) return;
        }
        raw[o] = y;
    }
}

/* Rows part[lo..hi) at node n of a tree: each reaches one leaf and adds scale * its value.  A
 * split on an input that every row shares (uniform[f]: the matrix's features, within one ranking)
 * sends them all one way after one comparison; any other split partitions them in place.
 * The walk follows a side alone without recursing, and when both sides hold rows it recurses into
 * the smaller and loops on the larger: each recursion at least halves the rows, so the stack holds
 * at most log2(rows) + 1 frames however deep the tree (a model file's 100,000-node chain
 * included).  Each row still reaches exactly one leaf per tree, so its sum is unchanged. */
static void tree_batch(const spmv_trees *T, int32_t n, int32_t *part, int32_t lo, int32_t hi,
                       const double *Z, int32_t d, const uint8_t *uniform, double *R, int32_t nout,
                       int32_t o, int64_t *steps) {
    for (;;) {
        int32_t f = T->feature[n];
        *steps += hi - lo; /* what the one-row walks of these rows would count here */
        if (f < 0) {
            double v = T->scale * T->value[n];
            for (int32_t r = lo; r < hi; r++) R[(int64_t)part[r] * nout + o] += v;
            return;
        }
        double thr = T->threshold[n];
        int ml = T->missing_left != NULL && T->missing_left[n];
        if (uniform[f]) {
            double x = Z[(int64_t)part[lo] * d + f];
            n = (x <= thr || (x != x && ml)) ? T->left[n] : T->right[n];
            continue;
        }
        int32_t i = lo, j = hi; /* [lo, i) go left, [j, hi) go right */
        while (i < j) {
            double x = Z[(int64_t)part[i] * d + f];
            if (x <= thr || (x != x && ml)) {
                i++;
            } else {
                int32_t t = part[i];
                part[i] = part[--j];
                part[j] = t;
            }
        }
        if (i == lo || i == hi) { /* one side only: follow it */
            n = i == hi ? T->left[n] : T->right[n];
            continue;
        }
        if (i - lo <= hi - i) {
            tree_batch(T, T->left[n], part, lo, i, Z, d, uniform, R, nout, o, steps);
            n = T->right[n];
            lo = i;
        } else {
            tree_batch(T, T->right[n], part, i, hi, Z, d, uniform, R, nout, o, steps);
            n = T->left[n];
            hi = i;
        }
    }
}

/* The same sums for the rows[nr] of group g at once, tree by tree in fitting order, so that each
 * row adds its leaves in the order of the one-row walk.  Z[row*ninputs]: inputs (already cast to
 * float when cast_f32); uniform[ninputs]: inputs equal in every row; raw[row*nout]: outputs.
 * rows[] is reordered. */
static void eval_group(const spmv_model *M, int32_t g, int32_t *rows, int32_t nr, const double *Z,
                       const uint8_t *uniform, spmv_poll *p, double *raw) {
    const spmv_trees *T = &M->trees;
    int32_t d = M->ninputs, nout = T->nout;
    for (int32_t o = 0; o < nout; o++) {
        int32_t go = g * nout + o;
        for (int32_t r = 0; r < nr; r++) raw[(int64_t)rows[r] * nout + o] = T->init[go];
        for (int32_t t = T->tree_ptr[go]; t < T->tree_ptr[go + 1]; t++) {
            int64_t steps = 0;
            tree_batch(T, T->root[t], rows, 0, nr, Z, d, uniform, raw, nout, o, &steps);
            if (spmv_poll_step(p, steps)) return;
        }
    }
}

/* Every row at once: inputs of every row first, the inputs every row shares marked, rows sorted by
 * group (counting sort), then each group's rows through its trees together. */
static int trees_rows(const spmv_model *M, const double *rows, int32_t n, int32_t stride,
                      const int32_t *group, int shared, spmv_poll *p, double *R, spmv_err *err) {
    (void)shared;
    int32_t ng = M->ngroups, ni = M->ninputs;
    double *Z = (double *)spmv_malloc(((int64_t)n + 2) * ni, sizeof(double), err);
    int32_t *idx =
        Z == NULL ? NULL : (int32_t *)spmv_malloc((int64_t)n + ng + 1, sizeof(int32_t), err);
    uint8_t *uniform = idx == NULL ? NULL : (uint8_t *)spmv_malloc(ni, 1, err);
    if (uniform == NULL) {
        spmv_free(idx);
        spmv_free(Z);
        return SPMV_ENOMEM;
    }
    double *memo = Z + (int64_t)n * ni;
    int32_t *ptr = idx + n, first = -1; /* ptr[g+1]: rows of groups <= g */
    spmv_model_memo_init(memo, ni);
    for (int32_t g = 0; g <= ng; g++) ptr[g] = 0;
    for (int32_t k = 0; k < ni; k++) uniform[k] = 1;
    for (int32_t i = 0; i < n; i++) {
        if (group[i] < 0) continue;
        double *z = Z + (int64_t)i * ni;
        ptr[group[i] + 1]++;
        spmv_model_inputs(M, rows + (int64_t)i * stride, z, memo);
        if (M->trees.cast_f32) /* as DecisionTreeRegressor reads X */
            for (int32_t k = 0; k < ni; k++) z[k] = (double)(float)z[k];
        if (first < 0) first = i;
        for (int32_t k = 0; k < ni; k++)
            uniform[k] &= memcmp(&z[k], &Z[(int64_t)first * ni + k], sizeof(double)) == 0;
    }
    for (int32_t g = 0; g < ng; g++) ptr[g + 1] += ptr[g];
    for (int32_t i = 0; i < n; i++)
        if (group[i] >= 0) idx[ptr[group[i]]++] = i;
    for (int32_t g = ng; g > 0; g--) ptr[g] = ptr[g - 1]; /* back to starts */
    ptr[0] = 0;
    for (int32_t g = 0; g < ng && !p->stopped; g++)
        if (ptr[g + 1] > ptr[g])
            eval_group(M, g, idx + ptr[g], ptr[g + 1] - ptr[g], Z, uniform, p, R);
    spmv_free(uniform);
    spmv_free(idx);
    spmv_free(Z);
    return p->stopped ? SPMV_EINTR : SPMV_OK;
}

static int32_t trees_nout(const spmv_model *M) { return M->trees.nout; }

static const spmv_model_field trees_fields[] = {
    SPMV_KIND_INT(trees, nout, 1, INT32_MAX),
    SPMV_KIND_INT(trees, ntrees, 0, INT32_MAX),
    SPMV_KIND_INT(trees, nnodes, 0, INT32_MAX),
    SPMV_KIND_INT(trees, cast_f32, 0, 1),
    SPMV_KIND_REAL(trees, scale),
    SPMV_MODEL_FIELD(trees, tree_ptr, .type = SPMV_FIELD_I32, .len = {"ngroups", "trees.nout"},
                     .add = 1),
    SPMV_KIND_ARRAY(trees, root, SPMV_FIELD_I32, "trees.ntrees"),
    SPMV_KIND_ARRAY(trees, feature, SPMV_FIELD_I32, "trees.nnodes"),
    SPMV_KIND_ARRAY(trees, left, SPMV_FIELD_I32, "trees.nnodes"),
    SPMV_KIND_ARRAY(trees, right, SPMV_FIELD_I32, "trees.nnodes"),
    SPMV_KIND_ARRAY(trees, threshold, SPMV_FIELD_F64, "trees.nnodes"),
    SPMV_KIND_ARRAY(trees, value, SPMV_FIELD_F64, "trees.nnodes"),
    SPMV_MODEL_FIELD(trees, missing_left, .type = SPMV_FIELD_U8, .flags = SPMV_FIELD_OPTIONAL,
                     .len = {"trees.nnodes"}),
    SPMV_KIND_ARRAY(trees, init, SPMV_FIELD_F64, "ngroups", "trees.nout"),
};

static int trees_check(const spmv_model *M, spmv_err *err) {
    const spmv_trees *T = &M->trees;
    int64_t ngo = (int64_t)M->ngroups * T->nout;
    if (ngo >= INT32_MAX) /* the evaluators index (group, output) pairs with int32 */
        return spmv_fail(err, SPMV_ESCHEMA, -1, ngo, INT32_MAX,
                         "trees: ngroups * nout = %lld is past the int32 limit %d", (long long)ngo,
                         INT32_MAX);
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

/* Per group, the longest walk of each of its trees summed over its outputs, plus the outputs; the
 * costliest group's.  A model file's 84 KB once held 2e8 roots of one 1e5-node chain. */
static int trees_cost(const spmv_model *M, int64_t *steps, spmv_err *err) {
    const spmv_trees *T = &M->trees;
    int32_t *h = (int32_t *)spmv_malloc(T->nnodes, sizeof(int32_t), err);
    if (h == NULL) return SPMV_ENOMEM;
    spmv_tree_heights(T->feature, T->left, T->right, T->nnodes, h);
    int64_t most = 0;
    for (int32_t g = 0; g < M->ngroups; g++) {
        int64_t s = T->nout;
        for (int32_t t = T->tree_ptr[(int64_t)g * T->nout];
             t < T->tree_ptr[(int64_t)(g + 1) * T->nout]; t++)
            s = spmv_sat_add(s, h[T->root[t]]);
        if (s > most) most = s;
    }
    spmv_free(h);
    *steps = most;
    return SPMV_OK;
}

SPMV_API const spmv_model_ops spmv_trees_ops = {
    .fields = trees_fields,
    .nfields = SPMV_NFIELDS(trees_fields),
    .check = trees_check,
    .cost = trees_cost,
    .nout = trees_nout,
    .eval = trees_eval,
    .rows = trees_rows,
};
