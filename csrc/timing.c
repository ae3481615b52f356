// csrc/timing.c: the CPU timing harness — monotonic clock, warm-up, quantiles, a time budget
// SPDX-License-Identifier: BSD-3-Clause
#include "spmv_internal.h"

#include <stdlib.h>
#include <time.h>

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* numpy.quantile's default ("linear") on sorted t[n]. */
static double quantile(const double *t, int64_t n, double q) {
    double h = q * (double)(n - 1);
    int64_t lo = (int64_t)h;
    if (lo >= n - 1) return t[n - 1];
    return t[lo] + (h - (double)lo) * (t[lo + 1] - t[lo]);
}

int spmv_timing_summary(double *t, int64_t n, spmv_timing *out, spmv_err *err) {
    /* qsort takes a size_t count and the quantiles read t[n - 1]: n < 1 would sort a wrapped count
     * or read before t. */
    if (n < 1 || t == NULL || out == NULL)
        return spmv_fail(
            err, SPMV_EINVAL, -1, n, 1,
            "spmv_timing_summary: n is %lld (t %s, out %s); it needs n >= 1 times in t "
            "and an out to write",
            (long long)n, t == NULL ? "NULL" : "given", out == NULL ? "NULL" : "given");
    qsort(t, (size_t)n, sizeof(double), cmp_double);
    out->median_ms = quantile(t, n, 0.5);
    out->q25_ms = quantile(t, n, 0.25);
    out->q75_ms = quantile(t, n, 0.75);
    out->min_ms = t[0];
    out->runs = n;
    return SPMV_OK;
}

int spmv_warmup_more(int warmup, double first_ms, double budget_s) {
    int more = warmup - 1;
    if (budget_s > 0 && first_ms > 0 && (double)warmup * first_ms > budget_s * 1e3)
        more = (int)(budget_s * 1e3 / first_ms) - 1; /* < warmup - 1 here */
    return more > 0 ? more : 0;
}

int spmv_time(spmv_work_fn fn, void *ctx, int warmup, int repeats, double budget_s,
              spmv_timing *out, spmv_err *err) {
    if (repeats < 1 || warmup < 0)
        return spmv_fail(err, SPMV_EINVAL, -1, repeats < 1 ? repeats : warmup, repeats < 1 ? 1 : 0,
                         "repeats (%d) must be >= 1 and warmup (%d) >= 0", repeats, warmup);
    double *t = (double *)spmv_malloc(repeats, sizeof(double), err);
    if (t == NULL) return SPMV_ENOMEM;
    int rc = SPMV_OK;
    int64_t n = 0;
    for (int k = 0, more = warmup; k < more && rc == SPMV_OK; k++) {
        double own = -1, t0 = now_ms();
        rc = fn(ctx, &own, err);
        if (k == 0) more = 1 + spmv_warmup_more(warmup, own >= 0 ? own : now_ms() - t0, budget_s);
    }
    double spent = 0, budget_ms = budget_s * 1e3;
    while (rc == SPMV_OK && n < repeats && (n == 0 || budget_s <= 0 || spent < budget_ms)) {
        double own = -1, t0 = now_ms();
        rc = fn(ctx, &own, err);
        t[n] = own >= 0 ? own : now_ms() - t0;
        spent += t[n++];
    }
    if (rc == SPMV_OK) rc = spmv_timing_summary(t, n, out, err);
    spmv_free(t);
    return rc;
}

typedef struct {
    const spmv_fmt *F;
    int kernel;
    const void *x;
    void *y;
} mv_work;

static int mv_f32(void *ctx, double *ms, spmv_err *err) {
    (void)ms;
    mv_work *w = (mv_work *)ctx;
    return spmv_fmt_mv_f32(w->F, w->kernel, (const float *)w->x, (float *)w->y, err);
}

static int mv_f64(void *ctx, double *ms, spmv_err *err) {
    (void)ms;
    mv_work *w = (mv_work *)ctx;
    return spmv_fmt_mv_f64(w->F, w->kernel, (const double *)w->x, (double *)w->y, err);
}

int spmv_fmt_bench_f32(const spmv_fmt *F, int kernel, const float *x, float *y, int warmup,
                       int repeats, double budget_s, spmv_timing *out, spmv_err *err) {
    mv_work w = {F, kernel, x, y};
    return spmv_time(mv_f32, &w, warmup, repeats, budget_s, out, err);
}

int spmv_fmt_bench_f64(const spmv_fmt *F, int kernel, const double *x, double *y, int warmup,
                       int repeats, double budget_s, spmv_timing *out, spmv_err *err) {
    mv_work w = {F, kernel, x, y};
    return spmv_time(mv_f64, &w, warmup, repeats, budget_s, out, err);
}
