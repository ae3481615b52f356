// tests/c/test_model_cost.c: spmv_model_cost against hand counts, SPMV_MODEL_MAX_STEPS refusals,
// and spmv_interrupt stopping long evaluations; with SPMV_FAIL_INJECT, the cost's workspace
// SPDX-License-Identifier: BSD-3-Clause
#include "mu.h"
#include "spmv_internal.h"
#include "testmat.h"
#include "testmodel.h"

#include <stdlib.h>
#include <string.h>

#define NC SPMV_NCOLS

/* A trees model of one group whose ntrees trees all start at node 0 of one chain of depth nodes
 * (node i goes to i + 1 whatever its input; the last is a leaf).  Arrays from malloc, freed by
 * chain_free. */
typedef struct {
    spmv_model M;
    inputs in;
    int32_t *root, *feature, *next, ptr[2];
    double *threshold, *value, init;
} chain;

static int chain_make(chain *c, int32_t depth, int32_t ntrees) {
    memset(c, 0, sizeof *c);
    int32_t cols[1] = {0};
    c->root = calloc((size_t)ntrees + 1, sizeof(int32_t));
    c->feature = malloc((size_t)depth * sizeof(int32_t));
    c->next = malloc((size_t)depth * sizeof(int32_t));
    c->threshold = malloc((size_t)depth * sizeof(double));
    c->value = malloc((size_t)depth * sizeof(double));
    if (!c->root || !c->feature || !c->next || !c->threshold || !c->value) return 1;
    for (int32_t i = 0; i < depth; i++) {
        c->feature[i] = i + 1 < depth ? 0 : -1;
        c->next[i] = i + 1 < depth ? i + 1 : 0;
        c->threshold[i] = 1e300;
        c->value[i] = 1;
    }
    c->ptr[1] = ntrees;
    c->M.kind = SPMV_MODEL_TREES;
    c->M.ngroups = 1;
    inputs_set(&c->M, &c->in, 1, cols);
    c->M.trees = (spmv_trees){.nout = 1,
                              .ntrees = ntrees,
                              .nnodes = depth,
                              .tree_ptr = c->ptr,
                              .root = c->root,
                              .feature = c->feature,
                              .left = c->next,
                              .right = c->next,
                              .threshold = c->threshold,
                              .value = c->value,
                              .init = &c->init,
                              .scale = 1};
    return 0;
}

static void chain_free(chain *c) {
    free(c->root);
    free(c->feature);
    free(c->next);
    free(c->threshold);
    free(c->value);
}

#ifndef SPMV_FAIL_INJECT
/* The check's stops: after `stop` calls (0: never), counting every call. */
typedef struct {
    int calls, stop;
} counter;

static int count_calls(void *arg) {
    counter *k = arg;
    k->calls++;
    return k->stop > 0 && k->calls >= k->stop;
}

/* Two trees of heights 3 and 1 over five nodes, two outputs: the walks of one row's group. */
static int test_tree_cost_is_the_longest_walks(void) {
    spmv_model M = {0};
    inputs in;
    int32_t cols[2] = {0, 1}, ptr[5] = {0, 1, 2, 2, 2}, root[2] = {0, 3};
    int32_t feat[5] = {0, -1, 1, -1, -1}, left[5] = {1, 0, 3, 0, 0}, right[5] = {2, 0, 4, 0, 0};
    double thr[5] = {0}, val[5] = {0}, init[4] = {0};
    M.kind = SPMV_MODEL_TREES;
    M.ngroups = 2;
    inputs_set(&M, &in, 2, cols);
    M.trees = (spmv_trees){.nout = 2,
                           .ntrees = 2,
                           .nnodes = 5,
                           .tree_ptr = ptr,
                           .root = root,
                           .feature = feat,
                           .left = left,
                           .right = right,
                           .threshold = thr,
                           .value = val,
                           .init = init,
                           .scale = 1};
    int64_t steps = -1;
    mu_check(spmv_model_check(&M, NULL) == 0);
    mu_check(spmv_model_cost(&M, &steps, NULL) == 0);
    mu_check(steps == (2 + 1) + (3 + 1) + 2); /* inputs + 1, walks of group 0, outputs */
    return 0;
}

static int test_forest_cost_counts_walks_and_additions(void) {
    spmv_model M = {0};
    inputs in;
    int32_t cols[1] = {0}, root[3] = {0, 0, 3};
    int32_t feat[4] = {0, -1, -1, -1}, left[4] = {1, 0, 1, 0}, right[4] = {2, 0, 0, 0};
    double thr[4] = {0}, val[10] = {0};
    M.kind = SPMV_MODEL_FOREST;
    M.ngroups = 5;
    inputs_set(&M, &in, 1, cols);
    M.forest = (spmv_forest){.ntrees = 3,
                             .nnodes = 4,
                             .nleaves = 2,
                             .nout = 5,
                             .base = -1,
                             .root = root,
                             .feature = feat,
                             .left = left,
                             .right = right,
                             .threshold = thr,
                             .value = val};
    int64_t steps = -1;
    mu_check(spmv_model_check(&M, NULL) == 0 && spmv_model_cost(&M, &steps, NULL) == 0);
    mu_check(steps == (1 + 1) + (2 + 2 + 1) + 3 * 5);
    return 0;
}

/* The file, scaled down: one chain of 1000 nodes under 300,000 roots walks 3e8 nodes a row,
 * and is refused with the figure and the limit before any walk. */
static int test_a_chain_under_many_roots_is_refused(void) {
    chain c;
    mu_check(chain_make(&c, 1000, 300000) == 0);
    spmv_err err = {0};
    int rc = spmv_model_check(&c.M, &err);
    int64_t want = 2 + 300000LL * 1000 + 1;
    mu_check(rc == SPMV_ESCHEMA && err.value == want && err.limit == SPMV_MODEL_MAX_STEPS);
    mu_check(strstr(err.msg, "300000003 steps") != NULL && strstr(err.msg, "268435456") != NULL);
    c.M.trees.ntrees = c.ptr[1] = 200000; /* 2e8: allowed */
    mu_check(spmv_model_check(&c.M, NULL) == SPMV_OK);
    chain_free(&c);
    return 0;
}

/* Costs past int64 saturate instead of wrapping to something small. */
static int test_costs_saturate(void) {
    mu_check(spmv_sat_mul(INT64_MAX / 2, 3) == INT64_MAX && spmv_sat_mul(0, INT64_MAX) == 0);
    mu_check(spmv_sat_add(INT64_MAX - 1, 2) == INT64_MAX && spmv_sat_add(2, 3) == 5);
    return 0;
}

/* 2e8 steps of walks: the check is asked about every SPMV_POLL_STEPS of them, and a stop ends
 * spmv_model_predict, spmv_rank_rows and spmv_rank with SPMV_EINTR at once. */
static int test_an_interrupt_stops_a_long_evaluation(void) {
    chain c;
    mu_check(chain_make(&c, 1000, 200000) == 0);
    mu_check(spmv_model_check(&c.M, NULL) == 0);
    double row[NC] = {0}, ms = 0, ms0 = 0;
    int32_t g = 0;
    counter k = {0, 0};
    spmv_interrupt intr = {count_calls, &k};
    mu_check(spmv_model_predict(&c.M, row, 1, NC, &g, &ms0, NULL, NULL, NULL) == 0);
    mu_check(ms0 == 200000.0);
    mu_check(spmv_model_predict(&c.M, row, 1, NC, &g, &ms, NULL, &intr, NULL) == 0 && ms == ms0);
    /* asked after the tree that passes each SPMV_POLL_STEPS, a tree being 1000 steps */
    mu_check(k.calls == (int)(200000 / ((SPMV_POLL_STEPS + 999) / 1000)));
    k = (counter){0, 2};
    spmv_err err = {0};
    mu_check(spmv_model_predict(&c.M, row, 1, NC, &g, &ms, NULL, &intr, &err) == SPMV_EINTR);
    mu_check(k.calls == 2 && err.code == SPMV_EINTR);
    /* the ranking step, and the whole ranking, of one configuration */
    int32_t fmt[1] = {SPMV_FMT_CSR}, par[2] = {0, 0}, unread[1] = {0}, order[1];
    double p[SPMV_NPCOLS] = {0}, la[1] = {0};
    spmv_configs C = {
        .n = 1, .format = fmt, .param = par, .unread = unread, .p = p, .launches = la, .group = &g};
    k = (counter){0, 1};
    mu_check(spmv_rank_rows(&C, &c.M, row, NULL, order, &ms, &intr, NULL) == SPMV_EINTR);
    testmat T;
    mu_check(testmat_make(&T, 50, 40, 5, 1, 3) == 0);
    spmv_csr A = {T.nrows, T.ncols, T.indptr, T.indices};
    spmv_gpu_props dev;
    spmv_gpu_props_h100(&dev);
    k = (counter){0, 1};
    mu_check(spmv_rank(&A, &dev, &C, &c.M, 8, NULL, order, &ms, &intr, NULL) == SPMV_EINTR);
    k = (counter){0, 0};
    intr.fn = NULL; /* never asked */
    mu_check(spmv_rank(&A, &dev, &C, &c.M, 8, NULL, order, &ms, &intr, NULL) == 0 && ms == ms0);
    mu_check(k.calls == 0);
    testmat_free(&T);
    chain_free(&c);
    return 0;
}

/* Support vectors are counted one by one: a stop comes between them, not after the set. */
static int test_an_interrupt_stops_an_svm(void) {
    enum { NSV = 3000000 };
    spmv_model M = {0};
    inputs in;
    int32_t cols[1] = {0}, ptr[2] = {0, NSV};
    double *sv = calloc(NSV, sizeof(double)), *dual = calloc(NSV, sizeof(double));
    double gam[1] = {1}, icpt[1] = {0}, row[NC] = {0}, ms;
    mu_check(sv != NULL && dual != NULL);
    M.kind = SPMV_MODEL_SVM;
    M.ngroups = 1;
    inputs_set(&M, &in, 1, cols);
    M.svm = (spmv_svm){
        .nsv = NSV, .sv_ptr = ptr, .sv = sv, .dual = dual, .gamma = gam, .intercept = icpt};
    int64_t steps = 0;
    mu_check(spmv_model_check(&M, NULL) == 0 && spmv_model_cost(&M, &steps, NULL) == 0);
    mu_check(steps == 2 + 2LL * NSV);
    counter k = {0, 1};
    spmv_interrupt intr = {count_calls, &k};
    int32_t g = 0;
    mu_check(spmv_model_predict(&M, row, 1, NC, &g, &ms, NULL, &intr, NULL) == SPMV_EINTR);
    mu_check(k.calls == 1);
    free(sv);
    free(dual);
    return 0;
}
#else
/* The cost's workspace (a height per tree node) failing makes spmv_model_check fail with
 * SPMV_ENOMEM, leaking nothing. */
static int test_the_cost_workspace_failing_is_reported(void) {
    chain c;
    mu_check(chain_make(&c, 100, 10) == 0);
    spmv_fail_after(0);
    mu_check(spmv_model_check(&c.M, NULL) == 0);
    int64_t total = spmv_alloc_count();
    mu_check(total >= 1);
    for (int64_t i = 1; i <= total; i++) {
        spmv_err err = {0};
        spmv_fail_after(i);
        mu_check(spmv_model_check(&c.M, &err) == SPMV_ENOMEM && err.value > 0);
    }
    spmv_fail_after(0);
    chain_free(&c);
    return 0;
}
#endif

int main(void) {
    int failures = 0;
#ifdef SPMV_FAIL_INJECT
    mu_run(test_the_cost_workspace_failing_is_reported);
#else
    mu_run(test_tree_cost_is_the_longest_walks);
    mu_run(test_forest_cost_counts_walks_and_additions);
    mu_run(test_a_chain_under_many_roots_is_refused);
    mu_run(test_costs_saturate);
    mu_run(test_an_interrupt_stops_a_long_evaluation);
    mu_run(test_an_interrupt_stops_an_svm);
#endif
    return failures != 0;
}
