// csrc/model_knn.c: k nearest neighbours (Lehnert) — normalised, weighted, inverse-distance mean
// SPDX-License-Identifier: BSD-3-Clause
//
// Brute force over the group's point set: a few thousand points of a few dozen inputs fit in cache,
// and a tree index would not pay off at this size.  The k best are kept by insertion in a sorted
// array; a strict < keeps the lower point on ties.
#include "spmv_internal.h"

#include <math.h>
#include <string.h>

static void knn_search(const spmv_model *M, int32_t s, int32_t k, const double *q,
                       spmv_knn_cache *c) {
    const spmv_knn *K = &M->knn;
    int32_t d = M->ninputs, m = 0;
    for (int32_t p = K->set_ptr[s]; p < K->set_ptr[s + 1]; p++) {
        const double *v = K->points + (int64_t)p * d;
        double d2 = 0;
        for (int32_t j = 0; j < d; j++) {
            double e = q[j] - v[j];
            d2 += e * e;
        }
        if (m == k && !(d2 < c->d2[m - 1])) continue;
        int32_t j = m < k ? m++ : m - 1;
        for (; j > 0 && d2 < c->d2[j - 1]; j--) {
            c->d2[j] = c->d2[j - 1];
            c->idx[j] = c->idx[j - 1];
        }
        c->d2[j] = d2;
        c->idx[j] = p;
    }
    c->count = m;
    c->set = s;
    memcpy(c->q, q, (size_t)d * sizeof *q);
}

void spmv_knn_eval(const spmv_model *M, int32_t g, const double *z, spmv_knn_cache *c,
                   double *qbuf, double *raw) {
    const spmv_knn *K = &M->knn;
    int32_t s = K->set[g], d = M->ninputs, k = K->k[g];
    const double *sh = K->shift + (int64_t)s * d, *sc = K->scale + (int64_t)s * d;
    for (int32_t j = 0; j < d; j++) qbuf[j] = (z[j] - sh[j]) * sc[j];
    /* the cache answers for any k up to the one it was filled with only if it holds k; keep simple:
       same set, same query and the same k */
    if (c->set != s || c->count != (k < K->set_ptr[s + 1] - K->set_ptr[s]
                                        ? k : K->set_ptr[s + 1] - K->set_ptr[s]) ||
        memcmp(c->q, qbuf, (size_t)d * sizeof *qbuf) != 0)
        knn_search(M, s, k, qbuf, c);
    const double *y = K->target + K->tcol[g];
    int32_t nt = K->ntargets, m = c->count, zeros = 0;
    double num = 0, den = 0;
    for (int32_t j = 0; j < m; j++) zeros += c->d2[j] == 0;
    for (int32_t j = 0; j < m; j++) {
        double yj = y[(int64_t)c->idx[j] * nt], w = 1;
        if (K->distance_weighted) w = zeros ? (c->d2[j] == 0) : 1 / sqrt(c->d2[j]);
        num += yj * w;
        den += w;
    }
    raw[0] = K->distance_weighted ? num / den : num / m;
}

int spmv_knn_check(const spmv_model *M, spmv_err *err) {
    const spmv_knn *K = &M->knn;
    if (K->set_ptr == NULL || K->set == NULL || K->k == NULL || K->tcol == NULL ||
        K->shift == NULL || K->scale == NULL || K->target == NULL ||
        (K->points == NULL && M->ninputs > 0) || K->ntargets < 1)
        return spmv_fail(err, SPMV_ESCHEMA, -1, -1, -1,
                         "a KNN model needs set_ptr[nsets+1], points, target, shift, scale and "
                         "set, k, tcol[ngroups], ntargets >= 1");
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
