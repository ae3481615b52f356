// tests/fuzz/fuzz_model.c: libFuzzer harness — model check, then prediction and ranking of what passes
// SPDX-License-Identifier: BSD-3-Clause
//
// A model of any kind with arrays of exactly the lengths its own counts declare (index entries
// mostly in range, now and then anything; now and then a NULL array), as an untrusted model file
// would give it.  spmv_model_check decides; a model it accepts must go through spmv_model_predict,
// spmv_rank_rows, spmv_design_rows and spmv_rank without a fault.  A "tame" model (byte 0 odd:
// every number finite with |v| <= 4, identity transforms, divisors and KNN's dmin non-zero, SVM
// gammas and KNN weights non-negative) must also predict finite times: nothing it computes can
// overflow, so a NaN or inf would be the evaluator's own.  With an spmv_interrupt check (asked every
// 16 steps in this build) the same numbers come out, or SPMV_EINTR exactly when it says stop.
#include "fuzz_common.h"

enum { MAX_ROWS = 256, MAX_NNZ = 4096, ARENA = 2048 };

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fz_modes_init();
    return 0;
}

/* An interruption check that says stop at its stop-th call (0: never), counting its calls. */
typedef struct {
    int calls, stop;
} stopper;

static int stop_at(void *arg) {
    stopper *s = arg;
    return ++s->calls == s->stop;
}

/* Every array of one input, freed together. */
typedef struct {
    void *p[ARENA];
    int n;
} arena;

static void *arena_alloc(arena *a, int64_t n, size_t size) {
    if (a->n == ARENA) abort();
    return a->p[a->n++] = fz_alloc(n < 0 ? 0 : n, size);
}

static void arena_free(arena *a) {
    for (int i = 0; i < a->n; i++) free(a->p[i]);
    a->n = 0;
}

/* One byte decides whether an array of n entries is there: 255 gives NULL, which the check must
 * catch (n = 0: allowed, and given only in mode null_empty). */
static int absent(fz_in *in, int64_t n) {
    return fz_u8(in) == 255 && (n > 0 || (fz_modes & FZ_NULL_EMPTY));
}

static const int32_t *arr_i32(fz_in *in, arena *a, int64_t n, int64_t lo, int64_t hi) {
    if (absent(in, n)) return NULL;
    int32_t *v = arena_alloc(a, n, sizeof(int32_t));
    for (int64_t k = 0; k < n; k++) v[k] = fz_idx(in, lo, hi);
    return v;
}

/* Nodes of fuzzed trees, children always later than their parent (so that a walk ends) and mostly
 * in range: feature -1 is a leaf.  nleaves >= 0 (forests): a leaf's left names its leaf vector in
 * [0, nleaves), its right is -1; nleaves < 0 (trees): leaves keep fuzzed children, never read. */
static void tree_nodes(fz_in *in, arena *a, int32_t nn, int32_t ni, int32_t nleaves,
                       const int32_t **feature, const int32_t **left, const int32_t **right) {
    int32_t *f = arena_alloc(a, nn, sizeof(int32_t)), *l = arena_alloc(a, nn, sizeof(int32_t));
    int32_t *r = arena_alloc(a, nn, sizeof(int32_t));
    for (int32_t n = 0; n < nn; n++) {
        int room = n + 1 < nn; /* a node with no later node can only be a leaf */
        f[n] = room ? fz_idx(in, -1, ni) : (fz_u8(in) == 255 ? 0 : -1);
        if (nleaves >= 0 && f[n] < 0) {
            l[n] = fz_idx(in, 0, nleaves);
            r[n] = -1;
            continue;
        }
        l[n] = fz_idx(in, n + 1, room ? (n + 5 < nn ? n + 5 : nn) : n + 1);
        r[n] = fz_idx(in, n + 1, room ? (n + 5 < nn ? n + 5 : nn) : n + 1);
    }
    *feature = f;
    *left = l;
    *right = r;
}

/* A pointer array of n entries in [0, count], mostly non-decreasing by at least minstep. */
static const int32_t *arr_ptr(fz_in *in, arena *a, int64_t n, int32_t count, int minstep) {
    if (absent(in, n)) return NULL;
    int32_t *v = arena_alloc(a, n, sizeof(int32_t));
    for (int64_t k = 0; k < n; k++) {
        uint8_t b = fz_u8(in);
        int64_t next = k == 0 ? 0 : (int64_t)v[k - 1] + minstep + b % 4;
        v[k] = b == 255 ? (int32_t)fz_u32(in) : (int32_t)(next < count ? next : count);
    }
    return v;
}

enum { ANY = 0, NONZERO = 1, NONNEG = 2 };
static double tame_fix(double d, int tame, int what) {
    if (!tame) return d;
    if (what == NONZERO && d == 0) return 1;
    if (what == NONNEG) return fabs(d);
    return d;
}

static const double *arr_f64(fz_in *in, arena *a, int64_t n, int tame, int what) {
    if (absent(in, n)) return NULL;
    double *v = arena_alloc(a, n, sizeof(double));
    for (int64_t k = 0; k < n; k++) v[k] = tame_fix(fz_double(in, tame), tame, what);
    return v;
}

/* A tree as deep as it has nodes: node t splits on input 0 and sends everything left to t+1. */
static void deep_tree(fz_in *in, arena *a, spmv_model *M) {
    spmv_trees *T = &M->trees;
    int32_t nn = 4096 * (1 + fz_u8(in) % 64), ngo = M->ngroups;
    int32_t *tp = arena_alloc(a, ngo + 1, sizeof(int32_t)),
            *root = arena_alloc(a, 1, sizeof(int32_t));
    int32_t *feat = arena_alloc(a, nn, sizeof(int32_t)), *l = arena_alloc(a, nn, sizeof(int32_t));
    int32_t *r = arena_alloc(a, nn, sizeof(int32_t));
    double *thr = arena_alloc(a, nn, sizeof(double)), *val = arena_alloc(a, nn, sizeof(double));
    double *init = arena_alloc(a, ngo, sizeof(double));
    for (int32_t g = 0; g <= ngo; g++) tp[g] = g == 0 ? 0 : 1;
    for (int32_t g = 0; g < ngo; g++) init[g] = 0;
    root[0] = 0;
    for (int32_t t = 0; t < nn; t++) {
        feat[t] = t + 1 < nn ? 0 : -1;
        l[t] = t + 1;
        r[t] = nn - 1;
        thr[t] = INFINITY;
        val[t] = 1;
    }
    T->nout = 1;
    T->ntrees = 1;
    T->nnodes = nn;
    T->tree_ptr = tp;
    T->root = root;
    T->feature = feat;
    T->left = l;
    T->right = r;
    T->threshold = thr;
    T->value = val;
    T->init = init;
    T->scale = 1;
}

enum { NK = SPMV_MODEL_NKINDS };

static void model_decode(fz_in *in, arena *a, spmv_model *M, int tame, int depth, int32_t ncols) {
    memset(M, 0, sizeof *M);
    uint8_t k = fz_u8(in);
    if (depth > 0)
        M->kind = k < 200 ? SPMV_MODEL_TREES : k < 240 ? 0 : 1 + k % 6;
    else
        M->kind = k < 246 ? 1 + k % (SPMV_MODEL_NKINDS - 1) /* every kind of csrc/models.def */
                          : (int[]){0,      NK,     -1,     INT32_MIN, 100,
                                    NK + 1, NK + 2, NK + 3, NK + 4,    NK + 5}[k - 246];
    uint8_t g = fz_u8(in);
    M->ngroups = depth > 0 ? (g == 255 ? 2 : 1) : g == 255 ? 0 : 1 + g % 8;
    M->ncols = ncols;
    int deep =
        (fz_modes & FZ_DEEP_TREES) && M->kind == SPMV_MODEL_TREES && depth == 0 && (g & 0x80);
    M->ninputs = fz_u8(in) % 9 + deep;
    int32_t ni = M->ninputs, ng = M->ngroups < 0 ? 0 : M->ngroups;
    M->in_col = arr_i32(in, a, ni, 0, ncols);
    M->in_tf = arr_i32(in, a, ni, 0, SPMV_TF_POW2 + 1);
    if (tame && M->in_tf) memset((void *)M->in_tf, 0, (size_t)ni * sizeof(int32_t));
    M->in_nan = arr_f64(in, a, ni, tame, ANY);
    M->in_lo = arr_f64(in, a, ni, tame, ANY);
    M->in_hi = arr_f64(in, a, ni, tame, ANY);
    M->in_shift = arr_f64(in, a, ni, tame, ANY);
    M->in_div = arr_f64(in, a, ni, tame, NONZERO);
    M->out_tf = tame ? (fz_u8(in), 0) : fz_idx(in, 0, SPMV_TF_POW2 + 1);
    M->out_col = fz_idx(in, -1, ncols);
    M->out_lo = fz_double(in, tame);
    /* tame: within [0, 1] (a ranking by bytes moved); else any double, which the check refuses */
    M->rank_bytes_pow = tame ? fz_u8(in) / 255.0 : fz_double(in, 0);
    switch (M->kind) {
    case SPMV_MODEL_LINEAR:
        M->linear.coef = arr_f64(in, a, (int64_t)ng * ni, tame, ANY);
        M->linear.intercept = arr_f64(in, a, ng, tame, ANY);
        break;
    case SPMV_MODEL_TREES: {
        if (deep) {
            deep_tree(in, a, M);
            break;
        }
        spmv_trees *T = &M->trees;
        T->nout = fz_u8(in) % 5;
        T->ntrees = fz_u8(in) % 17;
        T->nnodes = fz_u8(in) % 65;
        int64_t ngo = (int64_t)ng * T->nout;
        int32_t nn = T->nnodes;
        T->tree_ptr = arr_ptr(in, a, ngo + 1, T->ntrees, 0);
        T->root = arr_i32(in, a, T->ntrees, 0, nn);
        tree_nodes(in, a, nn, ni, -1, &T->feature, &T->left, &T->right);
        T->threshold = arr_f64(in, a, nn, tame, ANY);
        T->value = arr_f64(in, a, nn, tame, ANY);
        if (fz_u8(in) & 1) {
            uint8_t *ml = arena_alloc(a, nn, 1);
            for (int32_t n = 0; n < nn; n++) ml[n] = fz_u8(in) & 1;
            T->missing_left = ml;
        }
        T->init = arr_f64(in, a, ngo, tame, ANY);
        T->scale = fz_double(in, tame);
        T->cast_f32 = fz_u8(in) & 1;
        break;
    }
    case SPMV_MODEL_FOREST: {
        spmv_forest *F = &M->forest;
        F->ntrees = fz_u8(in) % 9;
        F->nnodes = fz_u8(in) % 65;
        F->nleaves = fz_u8(in) % 17;
        F->nout = fz_u8(in) % 12;
        F->base = fz_idx(in, -1, F->nout);
        int32_t nn = F->nnodes;
        F->root = arr_i32(in, a, F->ntrees, 0, nn);
        tree_nodes(in, a, nn, ni, F->nleaves, &F->feature, &F->left, &F->right);
        F->threshold = arr_f64(in, a, nn, tame, ANY);
        F->value = arr_f64(in, a, (int64_t)F->nleaves * F->nout, tame, ANY);
        F->cast_f32 = fz_u8(in) & 1;
        break;
    }
    case SPMV_MODEL_KNN: {
        spmv_knn *K = &M->knn;
        K->nsets = 1 + fz_u8(in) % 4;
        K->npoints = fz_u8(in) % 33;
        K->ntargets = fz_u8(in) % 4;
        K->set_ptr = arr_ptr(in, a, (int64_t)K->nsets + 1, K->npoints, 1);
        K->points = arr_f64(in, a, (int64_t)K->npoints * ni, tame, ANY);
        K->target = arr_f64(in, a, (int64_t)K->npoints * K->ntargets, tame, ANY);
        uint8_t which = fz_u8(in);
        int64_t nsi = (int64_t)K->nsets * ni;
        if (which & 1) K->shift = arr_f64(in, a, nsi, tame, ANY);
        if ((which & 1) != (which == 255)) K->div = arr_f64(in, a, nsi, tame, NONZERO);
        if (which & 2) K->weight = arr_f64(in, a, nsi, tame, NONNEG);
        K->set = arr_i32(in, a, ng, 0, K->nsets);
        K->k = arr_i32(in, a, ng, 1, SPMV_KNN_MAXK + 1);
        K->tcol = arr_i32(in, a, ng, 0, K->ntargets);
        K->weighting = fz_idx(in, 0, 3);
        K->dmin = tame ? 0.5 + fabs(fz_double(in, 1)) : fz_double(in, 0);
        break;
    }
    case SPMV_MODEL_SVM: {
        spmv_svm *S = &M->svm;
        S->classify = fz_idx(in, 0, 2);
        int64_t nsets = (int64_t)ng * (S->classify == 1 ? 2 : 1);
        S->nsv = fz_u8(in) % 17;
        S->sv_ptr = arr_ptr(in, a, nsets + 1, S->nsv, 0);
        S->sv = arr_f64(in, a, (int64_t)S->nsv * ni, tame, ANY);
        S->dual = arr_f64(in, a, S->nsv, tame, ANY);
        S->gamma = arr_f64(in, a, nsets, tame, NONNEG);
        S->intercept = arr_f64(in, a, nsets, tame, ANY);
        S->penalty = fz_double(in, tame);
        break;
    }
    case SPMV_MODEL_FORMULA: {
        spmv_formula *F = &M->formula;
        int32_t nd = F->nderived = fz_u8(in) % 5;
        int32_t *d[4];
        for (int j = 0; j < 4; j++) d[j] = arena_alloc(a, nd, sizeof(int32_t));
        for (int32_t q = 0; q < nd; q++)
            for (int j = 0; j < 4; j++) d[j][q] = fz_idx(in, -1, ni + q);
        F->da = d[0];
        F->db = d[1];
        F->dc = d[2];
        F->dd = d[3];
        F->dceil = arr_i32(in, a, nd, 0, 2);
        F->dlo = arr_f64(in, a, nd, tame, ANY);
        F->ddiv = arr_f64(in, a, nd, tame, NONZERO);
        F->dlo2 = arr_f64(in, a, nd, tame, ANY);
        F->dadd = arr_f64(in, a, nd, tame, ANY);
        F->nterms = fz_u8(in) % 17;
        F->term_ptr = arr_ptr(in, a, (int64_t)ng + 1, F->nterms, 0);
        F->a = arr_i32(in, a, F->nterms, -1, ni + nd);
        F->b = arr_i32(in, a, F->nterms, -1, ni + nd);
        F->gate = arr_i32(in, a, F->nterms, -1, ni + nd);
        F->coef = arr_f64(in, a, F->nterms, tame, ANY);
        F->lo = arr_f64(in, a, F->nterms, tame, ANY);
        F->hi = arr_f64(in, a, F->nterms, tame, ANY);
        break;
    }
    case SPMV_MODEL_CASCADE: {
        spmv_cascade *K = &M->cascade;
        K->nstages = 1 + fz_u8(in) % 3;
        K->nlevels = 1 + fz_u8(in) % 3;
        if (!absent(in, K->nstages)) {
            spmv_model *sub = arena_alloc(a, K->nstages, sizeof(spmv_model));
            for (int32_t s = 0; s < K->nstages; s++) {
                int32_t sc = ncols - fz_u8(in) % 2;
                if (depth < 2)
                    model_decode(in, a, &sub[s], tame, depth + 1,
                                 sc < SPMV_NCOLS ? SPMV_NCOLS : sc);
                else
                    memset(&sub[s], 0, sizeof sub[s]);
            }
            K->sub = sub;
        }
        K->node = arr_i32(in, a, (int64_t)ng * K->nlevels, -1, K->nstages);
        K->cls = arr_i32(in, a, (int64_t)ng * K->nlevels, -1, 3);
        break;
    }
    default:
        break;
    }
}

static void check_order(const int32_t *order, int32_t n) {
    uint8_t seen[256] = {0};
    for (int32_t j = 0; j < n; j++) {
        FZ_ASSERT(order[j] >= 0 && order[j] < n && !seen[order[j]], "order[%d] = %d", j, order[j]);
        seen[order[j]] = 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static arena a; /* static: 16 KiB of pointers off the stack; emptied before returning */
    fz_in in = {data, size, 0};
    uint8_t sel = fz_u8(&in);
    int tame = sel & 1;
    spmv_err e, *err = (sel & 0x80) ? NULL : &e;
    spmv_model M;
    int32_t ncols = SPMV_NCOLS + fz_u8(&in) % 4;
    model_decode(&in, &a, &M, tame, 0, ncols);
    int rc = spmv_model_check(&M, err);
    if (err) FZ_ERR_AGREES(rc, *err);
    if (rc != 0) {
        FZ_ASSERT(rc == SPMV_ESCHEMA || rc == SPMV_EINVAL, "model check: %d", rc);
        arena_free(&a);
        return 0;
    }
    int32_t nout = spmv_model_nout(&M), ng = M.ngroups;
    FZ_ASSERT(nout >= 1, "nout %d", nout);

    /* spmv_model_predict on rows of the bytes. */
    int32_t n = fz_u8(&in) % 17, stride = M.ncols + fz_u8(&in) % 3;
    double *rows = arena_alloc(&a, (int64_t)n * stride, sizeof(double));
    double *ms = arena_alloc(&a, n, sizeof(double)),
           *raw = arena_alloc(&a, (int64_t)n * nout, sizeof(double));
    int32_t *group = arena_alloc(&a, n, sizeof(int32_t));
    int groups_ok = 1;
    for (int64_t k = 0; k < (int64_t)n * stride; k++) rows[k] = fz_double(&in, tame);
    for (int32_t i = 0; i < n; i++) {
        group[i] = fz_idx(&in, -1, ng);
        groups_ok &= group[i] >= -1 && group[i] < ng;
    }
    rc = spmv_model_predict(&M, rows, n, stride, group, ms, (sel & 2) ? raw : NULL, NULL, err);
    if (err) FZ_ERR_AGREES(rc, *err);
    FZ_ASSERT(rc == 0 || rc == SPMV_ENOMEM || (rc == SPMV_EINVAL && !groups_ok), "predict: %d", rc);
    if (rc == 0 && tame)
        for (int32_t i = 0; i < n; i++)
            FZ_ASSERT(group[i] < 0 || isfinite(ms[i]),
                      "tame model (kind %d) predicts %g for row %d", M.kind, ms[i], i);

    /* The same rows with an interruption check (asked every SPMV_POLL_STEPS = 16 steps in this
     * build) that stops at its k-th call, k = bits 4-5 of sel (0: never; no byte more is read, so
     * that the corpus decodes as before): the same numbers, or SPMV_EINTR at that call. */
    stopper st = {0, (sel >> 4) & 3};
    spmv_interrupt intr = {stop_at, &st};
    double *ms2 = arena_alloc(&a, n, sizeof(double));
    if (rc == 0) {
        int rc2 = spmv_model_predict(&M, rows, n, stride, group, ms2, NULL, &intr, err);
        if (err) FZ_ERR_AGREES(rc2, *err);
        FZ_ASSERT(rc2 == 0 || rc2 == SPMV_ENOMEM || (rc2 == SPMV_EINTR && st.calls == st.stop),
                  "predict with a stop at call %d: %d after %d calls", st.stop, rc2, st.calls);
        for (int32_t i = 0; rc2 == 0 && i < n; i++)
            FZ_ASSERT(memcmp(&ms[i], &ms2[i], sizeof ms[i]) == 0 || (isnan(ms[i]) && isnan(ms2[i])),
                      "kind %d row %d: %g, %g with an interruption check", M.kind, i, ms[i],
                      ms2[i]);
    }

    /* Configurations, then spmv_rank_rows on rows of the bytes. */
    spmv_configs C;
    memset(&C, 0, sizeof C);
    C.n = fz_u8(&in) % 13;
    C.nextra = (sel & 0x40) ? fz_u8(&in) % 4 : M.ncols - SPMV_NCOLS;
    int32_t nc = C.n, *fmt = arena_alloc(&a, nc, sizeof(int32_t)),
            *par = arena_alloc(&a, 2 * (int64_t)nc, sizeof(int32_t));
    int32_t *unread = arena_alloc(&a, nc, sizeof(int32_t)),
            *cg = arena_alloc(&a, nc, sizeof(int32_t));
    for (int32_t j = 0; j < nc; j++) {
        fmt[j] = fz_idx(&in, 0, SPMV_NFORMATS);
        fz_fmt_params(&in, fmt[j], par + 2 * j);
        unread[j] = fz_u8(&in) & 15;
        cg[j] = fz_idx(&in, -1, ng);
    }
    C.format = fmt;
    C.param = par;
    C.unread = unread;
    C.group = cg;
    C.p = arr_f64(&in, &a, (int64_t)SPMV_NPCOLS * nc, tame, ANY);
    C.launches = arr_f64(&in, &a, nc, tame, ANY);
    C.extra = arr_f64(&in, &a, (int64_t)C.nextra * nc, tame, ANY);
    const double *add = (sel & 4) ? arr_f64(&in, &a, nc, tame, ANY) : NULL;
    int32_t *order = arena_alloc(&a, nc, sizeof(int32_t));
    double *rms = arena_alloc(&a, nc, sizeof(double));
    double *rrows = arena_alloc(&a, (int64_t)nc * M.ncols, sizeof(double));
    for (int64_t k = 0; k < (int64_t)nc * M.ncols; k++) rrows[k] = fz_double(&in, tame);
    st.calls = 0;
    rc = spmv_rank_rows(&C, &M, rrows, add, order, rms, &intr, err);
    if (err) FZ_ERR_AGREES(rc, *err);
    FZ_ASSERT(rc != SPMV_EINTR || st.calls == st.stop, "rank_rows: stopped unasked");
    if (rc == 0) {
        check_order(order, nc);
        if (tame)
            for (int32_t j = 0; j < nc; j++)
                FZ_ASSERT(isfinite(rms[j]) || (cg[j] < 0 && rms[j] == HUGE_VAL),
                          "tame model (kind %d) ranks configuration %d at %g", M.kind, j, rms[j]);
    }

    /* spmv_design_rows and spmv_rank on a valid CSR. */
    fz_csr c;
    fz_csr_decode(&in, MAX_ROWS, MAX_NNZ, &c);
    spmv_gpu_props dev;
    fz_props(&in, &dev);
    int vb = (int[]){8, 4, 8, 3}[fz_u8(&in) % 4];
    double *drows = arena_alloc(&a, (int64_t)nc * (SPMV_NCOLS + C.nextra), sizeof(double));
    rc = spmv_design_rows(&c.A, &dev, &C, vb, fz_max_fill(&in), drows, err);
    if (err) FZ_ERR_AGREES(rc, *err);
    st.calls = 0;
    rc = spmv_rank(&c.A, &dev, &C, &M, vb, add, order, rms, &intr, err);
    if (err) FZ_ERR_AGREES(rc, *err);
    FZ_ASSERT(rc != SPMV_EINTR || st.calls == st.stop, "rank: stopped unasked");
    if (rc == 0) check_order(order, nc);
    fz_csr_free(&c);

    if (sel & 8) { /* the registry's lookups take any string */
        char id[64];
        size_t len = fz_u8(&in) % sizeof id;
        for (size_t k = 0; k < len; k++) id[k] = (char)fz_u8(&in);
        id[len < sizeof id ? len : sizeof id - 1] = 0;
        const spmv_kernel_desc *d = spmv_kernel_find(id);
        FZ_ASSERT(d == NULL || strcmp(d->id, id) == 0, "kernel_find(%s) gave %s", id, d->id);
        int nk = spmv_kernel_count(), k = (int)fz_u32(&in);
        FZ_ASSERT((spmv_kernel_get(k) != NULL) == (k >= 0 && k < nk), "kernel_get(%d) of %d", k,
                  nk);
        /* the configuration grammar: any string parses or fails with a message; a parsed one
         * prints a canonical id that parses back to the same value */
        spmv_config cf, back;
        spmv_err e = {0};
        char canon[SPMV_CONFIG_ID_MAX];
        if (spmv_config_parse(id, &cf, &e) == SPMV_OK) {
            FZ_ASSERT(spmv_config_id(&cf, canon, sizeof canon) < (int)sizeof canon, "id of %s", id);
            FZ_ASSERT(spmv_config_parse(canon, &back, NULL) == SPMV_OK &&
                          memcmp(&cf, &back, sizeof cf) == 0,
                      "%s printed as %s, which parses to another configuration", id, canon);
        } else {
            FZ_ASSERT(e.code == SPMV_EINVAL && e.msg[0] != 0, "parse(%s): no message", id);
        }
    }
    arena_free(&a);
    return 0;
}
