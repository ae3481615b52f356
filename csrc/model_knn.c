// csrc/model_knn.c: k nearest neighbours (Lehnert) — normalised, weighted, inverse-distance mean
// SPDX-License-Identifier: BSD-3-Clause
//
// Brute force over the group's point set, sorted once per distinct query: the training matrices
// number hundreds to thousands, and every configuration of one matrix asks the same query, each
// walking the sorted list to its first k points measured with that configuration.
#include "spmv_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    double d;
    int32_t i;
} spmv_knn_nb;

static int nb_cmp(const void *a, const void *b) {
    const spmv_knn_nb *x = (const spmv_knn_nb *)a, *y = (const spmv_knn_nb *)b;
    if (x->d != y->d) return x->d < y->d ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

static int nb_less(const spmv_knn_nb *x, const spmv_knn_nb *y) { return nb_cmp(x, y) < 0; }

static void nb_swap(spmv_knn_nb *a, spmv_knn_nb *b) {
    spmv_knn_nb t = *a;
    *a = *b;
    *b = t;
}

/* Reorder a[0..n) so that a[0..p) are its p smallest (in nb_cmp order, which is total: distance,
 * then point), a[p..n) the rest.  Hoare-partition quickselect, median-of-three pivots: expected
 * O(n), against O(n log n) for sorting all the points when only the nearest few are read. */
static void nb_select(spmv_knn_nb *a, int32_t n, int32_t p) {
    int32_t lo = 0, hi = n - 1;
    while (hi > lo) {
        int32_t mid = lo + (hi - lo) / 2;
        if (nb_less(&a[mid], &a[lo])) nb_swap(&a[mid], &a[lo]);
        if (nb_less(&a[hi], &a[lo])) nb_swap(&a[hi], &a[lo]);
        if (nb_less(&a[hi], &a[mid])) nb_swap(&a[hi], &a[mid]);
        spmv_knn_nb pivot = a[mid];
        int32_t i = lo, j = hi;
        while (i <= j) {
            while (nb_less(&a[i], &pivot)) i++;
            while (nb_less(&pivot, &a[j])) j--;
            if (i <= j) nb_swap(&a[i++], &a[j--]);
        }
        if (p - 1 <= j)
            hi = j; /* the p-th smallest lies left of the cut */
        else if (p - 1 >= i)
            lo = i;
        else
            break;
    }
}

/* Points sorted up front per query: enough for k finite targets unless many are NaN. */
#define KNN_PREFIX 256

/* The sorted neighbours of the last query are kept: the rows of one matrix usually ask the same
 * point set the same question (inputs from matrix features only), and then search once. */
typedef struct {
    int32_t set;     /* -1: empty */
    int32_t sorted;  /* nb[0..sorted) are in order; the rest all come after them */
    double *q, *qn;  /* [ninputs]: the last query, the new one */
    spmv_knn_nb *nb; /* [largest set]: its points by distance */
} knn_cache;

static int32_t knn_maxset(const spmv_model *M) {
    int32_t m = 0;
    for (int32_t s = 0; s < M->knn.nsets; s++)
        if (M->knn.set_ptr[s + 1] - M->knn.set_ptr[s] > m)
            m = M->knn.set_ptr[s + 1] - M->knn.set_ptr[s];
    return m;
}

static int64_t knn_ws(const spmv_model *M, void *w) {
    int64_t nq = 2 * (int64_t)M->ninputs, nb = knn_maxset(M);
    int64_t bytes = (int64_t)sizeof(knn_cache) + 8 * nq + (int64_t)sizeof(spmv_knn_nb) * nb;
    if (w != NULL) {
        knn_cache *c = (knn_cache *)w;
        c->set = -1;
        c->sorted = 0;
        c->q = (double *)(c + 1);
        c->qn = c->q + M->ninputs;
        c->nb = (spmv_knn_nb *)(c->qn + M->ninputs);
    }
    return bytes;
}

static void knn_eval(const spmv_model *M, int32_t g, const double *row, const double *z, int fresh,
                     void *w, spmv_poll *p, double *raw) {
    (void)row;
    (void)fresh;
    knn_cache *c = (knn_cache *)w;
    const spmv_knn *K = &M->knn;
    int32_t s = K->set[g], d = M->ninputs, p0 = K->set_ptr[s], n = K->set_ptr[s + 1] - p0;
    int64_t o = (int64_t)s * d;
    for (int32_t j = 0; j < d; j++)
        c->qn[j] = K->shift ? (z[j] - K->shift[o + j]) / K->div[o + j] : z[j];
    if (c->set != s || memcmp(c->q, c->qn, (size_t)d * sizeof *c->q) != 0) {
        for (int32_t i = 0; i < n; i++) {
            int64_t v = (int64_t)(p0 + i) * d; /* an index: points may be NULL when d is 0 */
            double d2 = 0;
            for (int32_t j = 0; j < d; j++) {
                double e = c->qn[j] - K->points[v + j];
                d2 += (K->weight ? K->weight[o + j] : 1.0) * (e * e);
            }
            c->nb[i].d = sqrt(d2);
            c->nb[i].i = p0 + i;
            if (spmv_poll_step(p, (int64_t)d + 1)) {
                c->set = -1; /* the cache holds a part of a search */
                return;
            }
        }
        c->sorted = n < KNN_PREFIX ? n : KNN_PREFIX;
        if (c->sorted < n) nb_select(c->nb, n, c->sorted);
        qsort(c->nb, (size_t)c->sorted, sizeof *c->nb, nb_cmp);
        memcpy(c->q, c->qn, (size_t)d * sizeof *c->q);
        c->set = s;
    }
    const double *y = K->target + K->tcol[g];
    int32_t nt = K->ntargets, k = K->k[g], m = 0, zeros = 0;
    double yk[SPMV_KNN_MAXK], dk[SPMV_KNN_MAXK];
    for (int32_t i = 0; i < n && m < k; i++) {
        if (i == c->sorted) { /* past the prefix: sort the rest */
            qsort(c->nb + i, (size_t)(n - i), sizeof *c->nb, nb_cmp);
            c->sorted = n;
        }
        double v = y[(int64_t)c->nb[i].i * nt];
        if (isnan(v)) continue;
        yk[m] = v;
        dk[m] = c->nb[i].d;
        zeros += dk[m++] == 0;
    }
    double num = 0, den = 0;
    for (int32_t j = 0; j < m; j++) {
        double w = 1;
        if (K->weighting == SPMV_KNN_SKLEARN)
            w = zeros ? (dk[j] == 0) : 1 / dk[j];
        else if (K->weighting == SPMV_KNN_FLOOR)
            w = 1 / (dk[j] > K->dmin ? dk[j] : K->dmin);
        num += yk[j] * w;
        den += w;
    }
    raw[0] = m == 0 ? NAN : K->weighting == SPMV_KNN_UNIFORM ? num / m : num / den;
}

static const spmv_model_field knn_fields[] = {
    SPMV_KIND_INT(knn, nsets, 0, INT32_MAX),
    SPMV_KIND_INT(knn, npoints, 0, INT32_MAX),
    SPMV_KIND_INT(knn, ntargets, 1, INT32_MAX),
    SPMV_KIND_INT(knn, weighting, SPMV_KNN_UNIFORM, SPMV_KNN_FLOOR),
    SPMV_KIND_REAL(knn, dmin),
    SPMV_MODEL_FIELD(knn, set_ptr, .type = SPMV_FIELD_I32, .len = {"knn.nsets"}, .add = 1),
    SPMV_KIND_ARRAY(knn, points, SPMV_FIELD_F64, "knn.npoints", "ninputs"),
    SPMV_KIND_ARRAY(knn, target, SPMV_FIELD_F64, "knn.npoints", "knn.ntargets"),
    SPMV_MODEL_FIELD(knn, shift, .type = SPMV_FIELD_F64, .flags = SPMV_FIELD_OPTIONAL,
                     .len = {"knn.nsets", "ninputs"}),
    SPMV_MODEL_FIELD(knn, div, .type = SPMV_FIELD_F64, .flags = SPMV_FIELD_OPTIONAL,
                     .len = {"knn.nsets", "ninputs"}),
    SPMV_MODEL_FIELD(knn, weight, .type = SPMV_FIELD_F64, .flags = SPMV_FIELD_OPTIONAL,
                     .len = {"knn.nsets", "ninputs"}),
    SPMV_KIND_ARRAY(knn, set, SPMV_FIELD_I32, "ngroups"),
    SPMV_KIND_ARRAY(knn, k, SPMV_FIELD_I32, "ngroups"),
    SPMV_KIND_ARRAY(knn, tcol, SPMV_FIELD_I32, "ngroups"),
};

/* The largest point set any group searches: a distance per point (inputs + 1 steps), then a
 * selection and sorts (log2 of the set per point at most), then k neighbours. */
static int knn_cost(const spmv_model *M, int64_t *steps, spmv_err *err) {
    (void)err;
    const spmv_knn *K = &M->knn;
    int64_t most = 0;
    for (int32_t g = 0; g < M->ngroups; g++) {
        int64_t n = K->set_ptr[K->set[g] + 1] - K->set_ptr[K->set[g]], bits = 1;
        while (bits < 62 && ((int64_t)1 << bits) <= n) bits++;
        int64_t s = spmv_sat_add(spmv_sat_mul(n, (int64_t)M->ninputs + 1 + bits), K->k[g]);
        if (s > most) most = s;
    }
    *steps = most;
    return SPMV_OK;
}

static int knn_check(const spmv_model *M, spmv_err *err) {
    const spmv_knn *K = &M->knn;
    if ((K->shift == NULL) != (K->div == NULL))
        return spmv_fail(err, SPMV_ESCHEMA, -1, -1, -1,
                         "a KNN model needs knn.shift and knn.div both or neither");
    int rc = spmv_check_range(K->set_ptr, (int64_t)K->nsets + 1, 0, (int64_t)K->npoints + 1,
                              "knn.set_ptr", err);
    for (int32_t s = 0; rc == 0 && s < K->nsets; s++)
        if (K->set_ptr[s + 1] <= K->set_ptr[s])
            rc = spmv_fail(err, SPMV_ESCHEMA, s, K->set_ptr[s + 1], K->set_ptr[s],
                           "knn: point set %d is empty", (int)s);
    if (rc == 0) rc = spmv_check_range(K->set, M->ngroups, 0, K->nsets, "knn.set", err);
    if (rc == 0) rc = spmv_check_range(K->k, M->ngroups, 1, SPMV_KNN_MAXK + 1, "knn.k", err);
    if (rc == 0) rc = spmv_check_range(K->tcol, M->ngroups, 0, K->ntargets, "knn.tcol", err);
    return rc;
}

SPMV_API const spmv_model_ops spmv_knn_ops = {
    .fields = knn_fields,
    .nfields = SPMV_NFIELDS(knn_fields),
    .check = knn_check,
    .cost = knn_cost,
    .ws = knn_ws,
    .eval = knn_eval,
};
