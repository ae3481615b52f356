// tests/c/test_rank.c: model evaluation of every kind against hand-computed values, design rows,
// spmv_rank's order, schema errors; built with SPMV_FAIL_INJECT, the allocation-failure walk
// SPDX-License-Identifier: BSD-3-Clause
#include "mu.h"
#include "spmv_internal.h"
#include "testmat.h"
#include "testmodel.h"

#include <math.h>
#include <string.h>

#define NC SPMV_NCOLS

#ifndef SPMV_FAIL_INJECT
static const double INF = HUGE_VAL;

static int close_to(double a, double b) { return fabs(a - b) <= 1e-12 * fmax(1, fabs(b)); }

static int predict1(const spmv_model *M, const double *row, int32_t g, double *ms, double *raw) {
    return spmv_model_predict(M, row, 1, NC, &g, ms, raw, NULL, NULL);
}

static int test_linear(void) {
    spmv_model M = {0};
    inputs in;
    int32_t cols[2] = {0, SPMV_COL_BYTES_MOVED};
    double coef[4] = {2, 0.5, -1, 0}, icpt[2] = {1, 3}, row[NC] = {0}, ms, raw;
    M.kind = SPMV_MODEL_LINEAR;
    M.ngroups = 2;
    inputs_set(&M, &in, 2, cols);
    in.tf[0] = SPMV_TF_LOG;
    in.lo[1] = 10; /* clamp below */
    M.linear.coef = coef;
    M.linear.intercept = icpt;
    M.out_tf = SPMV_TF_EXP;
    mu_check(spmv_model_check(&M, NULL) == 0);
    row[0] = 100;
    row[SPMV_COL_BYTES_MOVED] = 4;
    mu_check(predict1(&M, row, 0, &ms, &raw) == 0);
    mu_check(close_to(raw, 1 + 2 * log(100) + 0.5 * 10));
    mu_check(close_to(ms, exp(raw)));
    mu_check(predict1(&M, row, 1, &ms, &raw) == 0);
    mu_check(close_to(raw, 3 - log(100)));
    mu_check(predict1(&M, row, -1, &ms, &raw) == 0 && ms == INF && isnan(raw));
    mu_check(predict1(&M, row, 2, &ms, &raw) == SPMV_EINVAL);
    in.col[1] = NC; /* past the row */
    spmv_err err = {0};
    mu_check(spmv_model_check(&M, &err) == SPMV_ESCHEMA && strstr(err.msg, "in_col") != NULL);
    return 0;
}

static int test_trees(void) {
    /* one tree per group: node 0 splits input 0 at a float64 threshold just below 0.1f */
    spmv_model M = {0};
    inputs in;
    int32_t cols[1] = {0}, ptr[3] = {0, 1, 2}, root[2] = {0, 3};
    int32_t feat[5] = {0, -1, -1, -1, -1}, left[5] = {1, -1, -1, -1, -1},
            right[5] = {2, -1, -1, -1, -1};
    double thr[5] = {0.1 - 1e-12, 0, 0, 0, 0}, val[5] = {0, 10, 20, 7, 0}, init[2] = {1, 2};
    uint8_t miss[5] = {1, 0, 0, 0, 0};
    double row[NC] = {0}, ms;
    M.kind = SPMV_MODEL_TREES;
    M.ngroups = 2;
    inputs_set(&M, &in, 1, cols);
    M.trees = (spmv_trees){.nout = 1,
                           .ntrees = 2,
                           .nnodes = 5,
                           .tree_ptr = ptr,
                           .root = root,
                           .feature = feat,
                           .left = left,
                           .right = right,
                           .threshold = thr,
                           .value = val,
                           .missing_left = miss,
                           .init = init,
                           .scale = 0.5};
    mu_check(spmv_model_check(&M, NULL) == 0);
    row[0] = 0.1; /* (double)(float)0.1 > 0.1 - 1e-12: right */
    mu_check(predict1(&M, row, 0, &ms, NULL) == 0 && ms == 1 + 0.5 * 20);
    M.trees.cast_f32 = 1; /* float 0.1 = 0.10000000149 > threshold: right too */
    mu_check(predict1(&M, row, 0, &ms, NULL) == 0 && ms == 11);
    row[0] = 0.1 - 2e-12; /* float64: left; cast to float32 it rounds to 0.1f: right */
    mu_check(predict1(&M, row, 0, &ms, NULL) == 0 && ms == 11);
    M.trees.cast_f32 = 0;
    mu_check(predict1(&M, row, 0, &ms, NULL) == 0 && ms == 6);
    row[0] = NAN; /* missing goes left */
    mu_check(predict1(&M, row, 0, &ms, NULL) == 0 && ms == 6);
    mu_check(predict1(&M, row, 1, &ms, NULL) == 0 && ms == 2 + 0.5 * 7);
    left[0] = 0; /* a cycle */
    mu_check(spmv_model_check(&M, NULL) == SPMV_ESCHEMA);
    return 0;
}

static int test_knn(void) {
    spmv_model M = {0};
    inputs in;
    int32_t cols[2] = {0, 1}, setp[2] = {0, 3}, set[2] = {0, 0}, k[2] = {2, 1}, tcol[2] = {0, 1};
    double pts[6] = {0, 0, 1, 0, 0, 2}, tgt[6] = {1, 10, 2, 20, 3, 30};
    double sh[2] = {0, 0}, dv[2] = {1, 1}, row[NC] = {0}, ms;
    M.kind = SPMV_MODEL_KNN;
    M.ngroups = 2;
    inputs_set(&M, &in, 2, cols);
    M.knn = (spmv_knn){.nsets = 1,
                       .npoints = 3,
                       .ntargets = 2,
                       .set_ptr = setp,
                       .points = pts,
                       .target = tgt,
                       .shift = sh,
                       .div = dv,
                       .set = set,
                       .k = k,
                       .tcol = tcol,
                       .weighting = SPMV_KNN_SKLEARN};
    mu_check(spmv_model_check(&M, NULL) == 0);
    row[0] = 0.25; /* neighbours 0 (d .25) and 1 (d .75) */
    mu_check(predict1(&M, row, 0, &ms, NULL) == 0 &&
             close_to(ms, (1 / .25 + 2 / .75) / (4 + 1 / .75)));
    mu_check(predict1(&M, row, 1, &ms, NULL) == 0 && ms == 10);
    row[0] = 1; /* exact match: its target alone */
    mu_check(predict1(&M, row, 0, &ms, NULL) == 0 && ms == 2);
    M.knn.weighting = SPMV_KNN_UNIFORM;
    mu_check(predict1(&M, row, 0, &ms, NULL) == 0 && ms == 1.5);
    M.knn.weighting = SPMV_KNN_FLOOR; /* 1 / max(d, 0.5): point 1 weighs 2, point 0 1 */
    M.knn.dmin = 0.5;
    mu_check(predict1(&M, row, 0, &ms, NULL) == 0 && close_to(ms, (2 * 2 + 1 * 1) / 3.0));
    tgt[2] = NAN; /* point 1 not measured: 0 and 2 */
    M.knn.weighting = SPMV_KNN_SKLEARN;
    mu_check(predict1(&M, row, 0, &ms, NULL) == 0 &&
             close_to(ms, (1 / 1.0 + 3 / sqrt(5)) / (1 + 1 / sqrt(5))));
    k[0] = SPMV_KNN_MAXK + 1;
    mu_check(spmv_model_check(&M, NULL) == SPMV_ESCHEMA);
    return 0;
}

/* 300 points on a line, unmeasured up to 279: the nearest measured ones lie past the sorted
 * prefix of the search, and ties at equal distance go to the lower point. */
static int test_knn_past_prefix(void) {
    enum { N = 300 };
    static double pts[N], tgt[N];
    spmv_model M = {0};
    inputs in;
    int32_t cols[1] = {0}, setp[2] = {0, N}, set[1] = {0}, k[1] = {2}, tcol[1] = {0};
    double row[NC] = {0}, ms;
    for (int i = 0; i < N; i++) {
        pts[i] = (i * 7919) % N; /* a permutation of 0..N-1: unsorted */
        tgt[i] = pts[i] < 280 ? NAN : pts[i];
    }
    M.kind = SPMV_MODEL_KNN;
    M.ngroups = 1;
    inputs_set(&M, &in, 1, cols);
    M.knn = (spmv_knn){.nsets = 1,
                       .npoints = N,
                       .ntargets = 1,
                       .set_ptr = setp,
                       .points = pts,
                       .target = tgt,
                       .set = set,
                       .k = k,
                       .tcol = tcol,
                       .weighting = SPMV_KNN_UNIFORM};
    mu_check(spmv_model_check(&M, NULL) == 0);
    row[0] = -1;
    mu_check(predict1(&M, row, 0, &ms, NULL) == 0 && ms == (280 + 281) / 2.0);
    for (int i = 0; i < N; i++) tgt[i] = pts[i] == 150 || pts[i] == 152 ? pts[i] : NAN;
    row[0] = 151; /* 150 and 152 tie at distance 1 */
    k[0] = 1;
    mu_check(predict1(&M, row, 0, &ms, NULL) == 0);
    int32_t lower = 0; /* the lower point index of the two wins */
    for (int i = 0; i < N; i++)
        if (pts[i] == 150 || pts[i] == 152) {
            lower = i;
            break;
        }
    mu_check(ms == pts[lower]);
    return 0;
}

static int test_svm_formula(void) {
    spmv_model M = {0};
    inputs in;
    int32_t cols[2] = {0, 1}, svp[2] = {0, 2};
    double sv[4] = {0, 0, 1, 1}, dual[2] = {2, -1}, gam[1] = {0.5}, icpt[1] = {0.25};
    double row[NC] = {0}, ms;
    M.kind = SPMV_MODEL_SVM;
    M.ngroups = 1;
    inputs_set(&M, &in, 2, cols);
    M.svm = (spmv_svm){
        .nsv = 2, .sv_ptr = svp, .sv = sv, .dual = dual, .gamma = gam, .intercept = icpt};
    mu_check(spmv_model_check(&M, NULL) == 0);
    row[0] = 1;
    mu_check(predict1(&M, row, 0, &ms, NULL) == 0 &&
             close_to(ms, 2 * exp(-0.5) - exp(-0.5) + 0.25));
    int32_t svp2[3] = {0, 2, 2}; /* a one-class classifier: intercept -1, "bad" */
    double gam2[2] = {0.5, 1}, icpt2[2] = {0.25, -1}, raw2[2];
    M.svm = (spmv_svm){.nsv = 2,
                       .classify = 1,
                       .sv_ptr = svp2,
                       .sv = sv,
                       .dual = dual,
                       .gamma = gam2,
                       .intercept = icpt2,
                       .penalty = 1000};
    mu_check(spmv_model_check(&M, NULL) == 0);
    mu_check(predict1(&M, row, 0, &ms, raw2) == 0 && close_to(ms, 1000 * raw2[0]) && raw2[1] == -1);

    /* two segments in input 0 split at 10, plus input0 * input1 everywhere */
    spmv_model F = {0};
    int32_t tp[2] = {0, 5}, a[5] = {-1, 0, -1, 0, 0}, b[5] = {-1, -1, -1, -1, 1};
    int32_t gate[5] = {0, 0, 0, 0, -1};
    double coef[5] = {1, 2, 5, 3, 0.5}, lo[5] = {-INF, -INF, 10, 10, 0},
           hi[5] = {10, 10, INF, INF, 0};
    F.kind = SPMV_MODEL_FORMULA;
    F.ngroups = 1;
    inputs_set(&F, &in, 2, cols);
    F.formula = (spmv_formula){.nterms = 5,
                               .term_ptr = tp,
                               .a = a,
                               .b = b,
                               .gate = gate,
                               .coef = coef,
                               .lo = lo,
                               .hi = hi};
    mu_check(spmv_model_check(&F, NULL) == 0);
    row[0] = 10, row[1] = 4;
    mu_check(predict1(&F, row, 0, &ms, NULL) == 0 && ms == 1 + 20 + 0.5 * 40);
    row[0] = 11;
    mu_check(predict1(&F, row, 0, &ms, NULL) == 0 && ms == 5 + 33 + 0.5 * 44);
    return 0;
}

static int test_cascade(void) {
    /* stage 0: three classes, one stump per class on input 0; stage 1: binary logit; stage 2: one
     * class.  Configuration g's path: levels (stage, class). */
    spmv_model S[3] = {{0}}, M = {0};
    inputs in0, in1;
    int32_t cols[1] = {0}, ptr0[4] = {0, 1, 2, 3}, root0[3] = {0, 0, 0}, ptr1[2] = {0, 1},
            root1[1] = {0};
    int32_t feat[3] = {0, -1, -1}, left[3] = {1, -1, -1}, right[3] = {2, -1, -1};
    double thr[3] = {5, 0, 0}, v[3] = {0, 1, -1}, init0[3] = {0, 1, 2}, init1[1] = {0.5};
    S[0].kind = S[1].kind = SPMV_MODEL_TREES;
    S[0].ngroups = S[1].ngroups = 1;
    inputs_set(&S[0], &in0, 1, cols);
    inputs_set(&S[1], &in1, 1, cols);
    S[0].trees = (spmv_trees){.nout = 3,
                              .ntrees = 3,
                              .nnodes = 3,
                              .tree_ptr = ptr0,
                              .root = root0,
                              .feature = feat,
                              .left = left,
                              .right = right,
                              .threshold = thr,
                              .value = v,
                              .init = init0,
                              .scale = 1};
    S[1].trees = (spmv_trees){.nout = 1,
                              .ntrees = 1,
                              .nnodes = 3,
                              .tree_ptr = ptr1,
                              .root = root1,
                              .feature = feat,
                              .left = left,
                              .right = right,
                              .threshold = thr,
                              .value = v,
                              .init = init1,
                              .scale = 1};
    int32_t node[6] = {0, 1, 0, 2, 0, -1}, cls[6] = {2, 0, 1, 0, 1, 0};
    M.kind = SPMV_MODEL_CASCADE;
    M.ngroups = 3;
    M.ncols = NC;
    M.out_col = -1;
    M.out_lo = -INF;
    M.cascade = (spmv_cascade){.nstages = 3, .nlevels = 2, .sub = S, .node = node, .cls = cls};
    mu_check(spmv_model_check(&M, NULL) == 0);
    double rows[3 * NC] = {0}, ms[3];
    int32_t g[3] = {0, 1, 2};
    for (int i = 0; i < 3; i++) rows[i * NC] = 7; /* right leaves: -1 */
    mu_check(spmv_model_predict(&M, rows, 3, NC, g, ms, NULL, NULL, NULL) == 0);
    double e0 = exp(-1 - 1), e1 = exp(0 - 1), e2 = exp(1 - 1), sum = e0 + e1 + e2;
    double p1 = 1 / (1 + exp(-(0.5 - 1)));
    mu_check(close_to(ms[0], -(e2 / sum) * (1 - p1)));
    mu_check(close_to(ms[1], -(e1 / sum) * 1.0));
    mu_check(ms[2] == 0); /* a level without a stage: probability 0 */
    cls[1] = 2;           /* a binary stage has classes 0 and 1 */
    mu_check(spmv_model_check(&M, NULL) == SPMV_ESCHEMA);
    return 0;
}

/* Three configurations over CSR, ELL and SELL-8-8; a linear model in bytes_moved ranks them. */
static int test_rank_order(void) {
    testmat T;
    mu_check(testmat_make(&T, 64, 50, 6, 1, 5) == 0); /* one long row: ELL pads a lot */
    spmv_csr A = {T.nrows, T.ncols, T.indptr, T.indices};
    spmv_gpu_props dev;
    spmv_gpu_props_h100(&dev);
    int32_t fmt[4] = {SPMV_FMT_CSR, SPMV_FMT_ELL, SPMV_FMT_SELL, SPMV_FMT_DIA};
    int32_t par[8] = {0, 0, 0, 0, 8, 8, 0, 0}, unread[4] = {0, 0, 0, 2}, grp[4] = {0, 0, 0, 0};
    double p[4 * SPMV_NPCOLS], la[4] = {0, 0, 0, 0}, coef[1] = {1e-6}, icpt[1] = {0};
    for (int i = 0; i < 4 * SPMV_NPCOLS; i++) p[i] = NAN;
    spmv_configs C = {.n = 4,
                      .format = fmt,
                      .param = par,
                      .unread = unread,
                      .p = p,
                      .launches = la,
                      .group = grp};
    spmv_model M = {0};
    inputs in;
    int32_t cols[1] = {SPMV_COL_BYTES_MOVED};
    M.kind = SPMV_MODEL_LINEAR;
    M.ngroups = 1;
    inputs_set(&M, &in, 1, cols);
    M.linear.coef = coef;
    M.linear.intercept = icpt;
    double rows[4 * NC], ms[4], add[4] = {0, 0, 0, 0};
    int32_t order[4];
    mu_check(spmv_design_rows(&A, &dev, &C, 8, 0, rows, NULL) == 0);
    int64_t nnz = T.indptr[T.nrows];
    mu_check(rows[SPMV_COL_BYTES_MOVED] ==
             4.0 * (T.nrows + 1 + nnz) + 8.0 * (nnz + T.nrows + T.ncols));
    mu_check(rows[SPMV_COL_PADDING_RATIO] == 1.0 && rows[SPMV_COL_VALUE_BYTES] == 8);
    mu_check(rows[NC + SPMV_COL_PADDING_RATIO] > 5); /* ELL: every row as long as the longest */
    mu_check(spmv_rank(&A, &dev, &C, &M, 8, NULL, order, ms, NULL, NULL) == 0);
    for (int j = 0; j < 4; j++)
        mu_check(isnan(rows[j * NC + SPMV_COL_BYTES_MOVED])
                     ? ms[j] == INF
                     : close_to(ms[j], 1e-6 * rows[j * NC + SPMV_COL_BYTES_MOVED]));
    for (int j = 1; j < 4; j++) mu_check(ms[order[j - 1]] <= ms[order[j]]);
    mu_check(order[0] == 0 && order[2] == 1); /* CSR first, ELL after SELL */
    mu_check(order[3] == 3 && ms[3] == INF);  /* DIA pads past max_fill: last */
    add[0] = 1;                               /* conversion cost moves CSR back */
    mu_check(spmv_rank(&A, &dev, &C, &M, 8, add, order, ms, NULL, NULL) == 0 && order[2] == 0);
    /* equal predictions, ranked by bytes moved per value byte: CSR, SELL, ELL; ms stay the model's */
    coef[0] = 0;
    icpt[0] = 1;
    mu_check(spmv_rank(&A, &dev, &C, &M, 8, NULL, order, ms, NULL, NULL) == 0);
    mu_check(order[0] == 0 && order[1] == 1 &&
             order[2] == 2); /* equal: the configurations' order */
    M.rank_bytes_pow = 0.5;
    mu_check(spmv_model_check(&M, NULL) == 0);
    mu_check(spmv_rank(&A, &dev, &C, &M, 8, NULL, order, ms, NULL, NULL) == 0);
    mu_check(order[0] == 0 && order[1] == 2 && order[2] == 1 && order[3] == 3);
    mu_check(ms[0] == 1 && ms[1] == 1 && ms[2] == 1 && ms[3] == INF);
    add[0] = 10; /* the conversion cost is added to the key as it is to ms */
    mu_check(spmv_rank(&A, &dev, &C, &M, 8, add, order, ms, NULL, NULL) == 0 && order[2] == 0 &&
             ms[0] == 11);
    spmv_err err = {0};
    M.rank_bytes_pow = 1.5;
    mu_check(spmv_model_check(&M, &err) == SPMV_ESCHEMA &&
             strstr(err.msg, "rank_bytes_pow") != NULL);
    M.rank_bytes_pow = NAN;
    mu_check(spmv_model_check(&M, NULL) == SPMV_ESCHEMA);
    M.rank_bytes_pow = 0;
    fmt[1] = 42;
    mu_check(spmv_rank(&A, &dev, &C, &M, 8, NULL, order, ms, NULL, NULL) == SPMV_EINVAL);
    testmat_free(&T);
    return 0;
}

/* Design rows take no reasons: a configuration that cannot serve A is NaN without a message, and
 * a bad one's error still names itself (the summary is asked again for the message). */
static int test_design_rows_errors(void) {
    testmat T;
    mu_check(testmat_make(&T, 64, 50, 6, 1, 5) == 0);
    spmv_csr A = {T.nrows, T.ncols, T.indptr, T.indices};
    spmv_gpu_props dev;
    spmv_gpu_props_h100(&dev);
    int32_t fmt[3] = {SPMV_FMT_CSR, SPMV_FMT_DIA, SPMV_FMT_SELL};
    int32_t par[6] = {0, 0, 0, 0, 8, 8}, unread[3] = {0, 2, 0};
    double p[3 * SPMV_NPCOLS], la[3] = {0, 0, 0}, rows[3 * NC];
    for (int i = 0; i < 3 * SPMV_NPCOLS; i++) p[i] = NAN;
    spmv_configs C = {
        .n = 3, .format = fmt, .param = par, .unread = unread, .p = p, .launches = la};
    spmv_err err = {0};
    mu_check(spmv_design_rows(&A, &dev, &C, 8, 0, rows, &err) == 0 && err.code == 0);
    mu_check(isnan(rows[NC + SPMV_COL_BYTES_MOVED]) && !isnan(rows[2 * NC + SPMV_COL_BYTES_MOVED]));
    par[4] = 3; /* SELL's c must be a power of two */
    mu_check(spmv_design_rows(&A, &dev, &C, 8, 0, rows, &err) == SPMV_EINVAL);
    mu_check(err.code == SPMV_EINVAL && err.value == 3 && strstr(err.msg, "'c' parameter") != NULL);
    testmat_free(&T);
    return 0;
}

/* spmv_rank_rows' order: lowest first, equal times in index order, a configuration the matrix
 * cannot use (NaN bytes) at +inf after them, a NaN time (here from add_ms) last, in index order. */
static int test_rank_sort(void) {
    enum { N = 10 };
    double bytes[N] = {3, 1, 5, 1, 2, 3, 0, 7, 1, NAN}, add[N] = {0}, rows[N * NC] = {0}, ms[N];
    int32_t grp[N] = {0}, order[N], cols[1] = {SPMV_COL_BYTES_MOVED};
    int32_t want[N] = {6, 1, 3, 8, 4, 0, 7, 9, 2, 5};
    add[2] = add[5] = NAN;
    for (int j = 0; j < N; j++) rows[j * NC + SPMV_COL_BYTES_MOVED] = bytes[j];
    double coef[1] = {1}, icpt[1] = {0};
    spmv_configs C = {.n = N, .group = grp};
    spmv_model M = {0};
    inputs in;
    M.kind = SPMV_MODEL_LINEAR;
    M.ngroups = 1;
    inputs_set(&M, &in, 1, cols);
    M.linear.coef = coef;
    M.linear.intercept = icpt;
    mu_check(spmv_rank_rows(&C, &M, rows, add, order, ms, NULL, NULL) == 0);
    for (int j = 0; j < N; j++) mu_check(order[j] == want[j]);
    mu_check(ms[9] == INF && isnan(ms[2]) && isnan(ms[5]));
    return 0;
}

static int test_rank_features(void) {
    /* a caller's 2 features, then 1 extra column per configuration: ms = f0 * extra + slog1p(f1) */
    spmv_model M = {0};
    inputs in;
    int32_t cols[3] = {0, 2, 1}, group[3] = {0, 0, -1}, order[3];
    double coef[3] = {0, 1, 1}, icpt[1] = {0}, extra[3] = {3, 1, 5}, f[2] = {2, -4}, ms[3];
    M.kind = SPMV_MODEL_LINEAR;
    M.ngroups = 1;
    inputs_set(&M, &in, 3, cols);
    M.ncols = 3;
    in.tf[2] = SPMV_TF_SLOG1P;
    M.linear.coef = coef;
    M.linear.intercept = icpt;
    spmv_configs C = {0};
    C.n = 3;
    C.group = group;
    C.nextra = 1;
    C.extra = extra;
    mu_check(spmv_model_check(&M, NULL) == 0); /* a feature vector shorter than a design row */
    mu_check(spmv_rank_features(&C, &M, f, 2, NULL, order, ms, NULL, NULL) == 0);
    mu_check(close_to(ms[0], 3 - log1p(4)) && close_to(ms[1], 1 - log1p(4)) && ms[2] == INF);
    mu_check(order[0] == 1 && order[1] == 0 && order[2] == 2);
    spmv_err err = {0};
    mu_check(spmv_rank_features(&C, &M, f, 3, NULL, order, ms, NULL, &err) == SPMV_EINVAL &&
             strstr(err.msg, "columns") != NULL); /* 3 features + 1 extra != the model's 3 */
    mu_check(spmv_rank(NULL, NULL, &C, &M, 8, NULL, order, ms, NULL, NULL) == SPMV_EINVAL);
    M.rank_bytes_pow = 0.5; /* a feature vector has no bytes moved to rank by */
    mu_check(spmv_rank_features(&C, &M, f, 2, NULL, order, ms, NULL, &err) == SPMV_EINVAL &&
             strstr(err.msg, "bytes moved") != NULL);
    return 0;
}

#else
static int rank_once(const testmat *T, spmv_model *K) {
    spmv_csr A = {T->nrows, T->ncols, T->indptr, T->indices};
    spmv_gpu_props dev;
    spmv_gpu_props_h100(&dev);
    int32_t fmt[3] = {SPMV_FMT_SELL, SPMV_FMT_HYB, SPMV_FMT_JAD};
    int32_t par[6] = {8, 16, -1, 0, 0, 0}, unread[3] = {0}, grp[3] = {0, 0, 0};
    double p[3 * SPMV_NPCOLS] = {0}, la[3] = {0}, ms[3];
    int32_t order[3];
    spmv_configs C = {.n = 3,
                      .format = fmt,
                      .param = par,
                      .unread = unread,
                      .p = p,
                      .launches = la,
                      .group = grp};
    return spmv_rank(&A, &dev, &C, K, 4, NULL, order, ms, NULL, NULL);
}

static int walk(const testmat *T, spmv_model *K) {
    spmv_fail_after(0);
    mu_check(rank_once(T, K) == SPMV_OK);
    int64_t total = spmv_alloc_count();
    mu_check(total > 3);
    for (int64_t i = 1; i <= total; i++) {
        spmv_fail_after(i);
        mu_check(rank_once(T, K) == SPMV_ENOMEM);
    }
    spmv_fail_after(0);
    return 0;
}

static int test_every_allocation_failure_is_reported(void) {
    testmat T;
    mu_check(testmat_make(&T, 70, 60, 7, 1, 9) == 0);
    spmv_model M = {0}, L = {0};
    inputs in, lin;
    int32_t cols[2] = {SPMV_COL_BYTES_MOVED, 0}, setp[2] = {0, 2}, set[1] = {0}, k[1] = {1},
            tc[1] = {0};
    double pts[4] = {0, 0, 1, 1}, tgt[2] = {1, 2}, sh[2] = {0, 0}, sc[2] = {1, 1};
    double coef[2] = {1e-6, 0.5}, icpt[1] = {0};
    M.kind = SPMV_MODEL_KNN;
    M.ngroups = 1;
    inputs_set(&M, &in, 2, cols);
    M.knn = (spmv_knn){.nsets = 1,
                       .npoints = 2,
                       .ntargets = 1,
                       .set_ptr = setp,
                       .points = pts,
                       .target = tgt,
                       .shift = sh,
                       .div = sc,
                       .set = set,
                       .k = k,
                       .tcol = tc};
    L.kind = SPMV_MODEL_LINEAR; /* rank's shared-features path */
    L.ngroups = 1;
    inputs_set(&L, &lin, 2, cols);
    L.linear.coef = coef;
    L.linear.intercept = icpt;
    int rc = walk(&T, &M) || walk(&T, &L);
    testmat_free(&T);
    return rc;
}
#endif

int main(void) {
    int failures = 0;
#ifdef SPMV_FAIL_INJECT
    mu_run(test_every_allocation_failure_is_reported);
#else
    mu_run(test_linear);
    mu_run(test_trees);
    mu_run(test_knn);
    mu_run(test_knn_past_prefix);
    mu_run(test_svm_formula);
    mu_run(test_cascade);
    mu_run(test_rank_order);
    mu_run(test_rank_sort);
    mu_run(test_design_rows_errors);
    mu_run(test_rank_features);
#endif
    return failures != 0;
}
