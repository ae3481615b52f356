// tests/fuzz/fuzz_convert.c: libFuzzer harness — conversion, back-conversion, CPU kernels vs a reference
// SPDX-License-Identifier: BSD-3-Clause
//
// A valid CSR (fz_csr_decode), values and x from the bytes, a format and its parameters (mostly
// valid ones).  For float64 and float32 each: size, fill into arrays of exactly the sizes the size
// step gave (pre-filled with garbage, so a slot the fill forgets shows), back to CSR, which must give
// the input exactly (values bit for bit), then every CPU kernel variant of the format, whose y must
// match a float64 product computed here within a bound on the rounding of its row.
// With spmv_fmt_check in the header (FZ_HAVE_FMT_CHECK, set by meson), a freshly converted format
// must pass it, and a mutated one that passes must convert back and multiply without a fault; one
// that passes spmv_fmt_check_values too must multiply as the CSR it converts back to.
#include "fuzz_common.h"

#include <float.h>

enum { MAX_ROWS = 4096, MAX_NNZ = 65536 };
/* Formats whose stored arrays pass this are skipped: they pad, and a fuzzer wants many executions. */
#define MAX_BYTES ((int64_t)48 << 20)

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fz_modes_init();
    return 0;
}

static uint64_t rng_next(uint64_t *s) { /* xorshift64* */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

typedef struct {
    const fz_csr *c;
    const double *v, *x;    /* float64 values and x */
    const float *v32, *x32; /* the same rounded to float32 */
    double *ref, *abs;      /* [nrows] per value type: the product and sum |a_ij x_j| */
    double *ref32, *abs32;
    spmv_err *err;
} job;

/* The reference: in float64 from the values the kernel sees. */
static void reference(const fz_csr *c, const double *v, const double *x, double *ref, double *abs) {
    for (int32_t i = 0; i < c->A.nrows; i++) {
        double s = 0, a = 0;
        for (int32_t p = c->indptr[i]; p < c->indptr[i + 1]; p++) {
            s += v[p] * x[c->indices[p]];
            a += fabs(v[p] * x[c->indices[p]]);
        }
        ref[i] = s;
        abs[i] = a;
    }
}

/* y against the reference: a sum of len terms in any order is off by at most about len*eps*abs;
 * rows whose reference is not finite, or near overflow where order decides, are not compared. */
static void check_y(const spmv_fmt *F, int kernel, int f32, const void *y, const job *J) {
    const fz_csr *c = J->c;
    double eps = f32 ? FLT_EPSILON : DBL_EPSILON, big = f32 ? 1e37 : 1e300;
    const double *ref = f32 ? J->ref32 : J->ref, *abs = f32 ? J->abs32 : J->abs;
    for (int32_t i = 0; i < c->A.nrows; i++) {
        double yi = f32 ? ((const float *)y)[i] : ((const double *)y)[i];
        if (!isfinite(ref[i]) || !(abs[i] < big)) continue;
        double tol = 2.0 * (c->indptr[i + 1] - c->indptr[i] + 2) * eps * abs[i];
        FZ_ASSERT(fabs(yi - ref[i]) <= tol,
                  "%s (param %d, %d) kernel %d %s: y[%d] = %.17g, reference %.17g (tol %g)",
                  spmv_format_name(F->format), F->param[0], F->param[1], kernel,
                  f32 ? "f32" : "f64", i, yi, ref[i], tol);
    }
}

static int fill(int f32, const job *J, spmv_fmt *F) {
    return f32 ? spmv_fmt_fill_f32(&J->c->A, J->v32, F, J->err)
               : spmv_fmt_fill_f64(&J->c->A, J->v, F, J->err);
}
static int to_csr(int f32, const spmv_fmt *F, int32_t *ip, int32_t *ix, void *v, spmv_err *err) {
    return f32 ? spmv_fmt_to_csr_f32(F, ip, ix, v, err) : spmv_fmt_to_csr_f64(F, ip, ix, v, err);
}
static int mv(int f32, const spmv_fmt *F, int k, const job *J, void *y) {
    return f32 ? spmv_fmt_mv_f32(F, k, J->x32, y, J->err) : spmv_fmt_mv_f64(F, k, J->x, y, J->err);
}

#ifdef FZ_HAVE_FMT_CHECK
/* 1 when x[ncols] is finite: formats that multiply padding by x (spmv_format_finite_x) are only
 * compared with their own entries' product then, as Python only runs them then. */
static int x_finite(int f32, const job *J, int32_t ncols) {
    for (int32_t j = 0; j < ncols; j++)
        if (!isfinite(f32 ? (double)J->x32[j] : J->x[j])) return 0;
    return 1;
}

/* Mutate index arrays, scalars, parameters, nnz or value slots of a converted F; whatever
 * spmv_fmt_check then accepts must convert back and multiply without a fault, and what
 * spmv_fmt_check_values accepts too must multiply as the CSR it converts back to (a padding slot
 * holding a non-zero was once accepted, and DIA and BSR kernels added it to y). */
static void mutate_and_check(fz_in *in, int f32, spmv_fmt *F, const job *J) {
    int nmut = 1 + fz_u8(in) % 8;
    for (int m = 0; m < nmut; m++) {
        uint8_t what = fz_u8(in);
        int32_t val = (int32_t)fz_u32(in);
        if (what < 180) {
            int k = what % SPMV_MAXIDX;
            if (F->nidx[k] > 0) {
                int64_t at = (int64_t)(fz_u32(in) % (uint64_t)F->nidx[k]);
                /* wrapping: packed arrays (cidx's offsets, value tables' indices) hold any bits */
                F->idx[k][at] =
                    what & 0x80 ? val : (int32_t)((uint32_t)F->idx[k][at] + (uint32_t)(int8_t)val);
            }
        } else if (what < 210) { /* a value slot: an entry's or a padding slot's */
            int k = what % SPMV_MAXVAL;
            if (F->nval[k] > 0) {
                int64_t at = (int64_t)(fz_u32(in) % (uint64_t)F->nval[k]);
                if (f32)
                    ((float *)F->val[k])[at] = (float)(int8_t)val;
                else
                    ((double *)F->val[k])[at] = (double)(int8_t)val;
            }
        } else if (what < 225) {
            F->scalar[what % 4] = val;
        } else if (what < 240) {
            F->param[what & 1] = val;
        } else {
            F->nnz = (int64_t)val;
        }
    }
    int rc = spmv_fmt_check(F, J->err);
    if (J->err) FZ_ERR_AGREES(rc, *J->err);
    if (rc != 0 || F->nnz < 0 || F->nnz > 16 * MAX_NNZ) return;
    int vrc = f32 ? spmv_fmt_check_values_f32(F, J->err) : spmv_fmt_check_values_f64(F, J->err);
    if (J->err) FZ_ERR_AGREES(vrc, *J->err);
    FZ_ASSERT(vrc == 0 || vrc == SPMV_EINVAL || vrc == SPMV_ENOMEM, "check_values: %d", vrc);
    size_t es = f32 ? sizeof(float) : sizeof(double);
    int32_t n = F->nrows, *ip = fz_alloc((int64_t)n + 1, sizeof(int32_t)),
            *ix = fz_alloc(F->nnz, sizeof(int32_t));
    void *v = fz_alloc(F->nnz, es), *y = fz_alloc(n, es);
    double *ref = fz_alloc(n, sizeof(double)), *abs = fz_alloc(n, sizeof(double));
    rc = to_csr(f32, F, ip, ix, v, J->err);
    int compare =
        rc == 0 && vrc == 0 && (!spmv_format_finite_x(F->format) || x_finite(f32, J, F->ncols));
    for (int32_t i = 0; compare && i < n; i++) { /* F's own entries, in float64 */
        double sum = 0, a = 0;
        for (int32_t p = ip[i]; p < ip[i + 1]; p++) {
            double vp = f32 ? ((const float *)v)[p] : ((const double *)v)[p];
            double xj = f32 ? J->x32[ix[p]] : J->x[ix[p]];
            sum += vp * xj;
            a += fabs(vp * xj);
        }
        ref[i] = sum;
        abs[i] = a;
    }
    for (int k = 0; k < 4; k++) {
        if (mv(f32, F, k, J, y) != 0 || !compare) continue;
        double eps = f32 ? FLT_EPSILON : DBL_EPSILON, big = f32 ? 1e37 : 1e300;
        for (int32_t i = 0; i < n; i++) {
            double yi = f32 ? ((const float *)y)[i] : ((const double *)y)[i];
            if (!isfinite(ref[i]) || !(abs[i] < big)) continue;
            double tol = 2.0 * (ip[i + 1] - ip[i] + 2) * eps * abs[i];
            FZ_ASSERT(fabs(yi - ref[i]) <= tol,
                      "checked %s (param %d, %d) kernel %d %s: y[%d] = %.17g, its own entries "
                      "give %.17g",
                      spmv_format_name(F->format), F->param[0], F->param[1], k, f32 ? "f32" : "f64",
                      i, yi, ref[i]);
        }
    }
    free(abs);
    free(ref);
    free(y);
    free(v);
    free(ix);
    free(ip);
}
#endif

static void convert_one(fz_in *in, const spmv_fmt *proto, int f32, const job *J) {
    const fz_csr *c = J->c;
    spmv_fmt F = *proto;
    int rc = spmv_fmt_size(&c->A, &F, J->err);
    if (J->err) FZ_ERR_AGREES(rc, *J->err);
    if (proto->format < 0 || proto->format >= SPMV_NFORMATS)
        FZ_ASSERT(rc == SPMV_EINVAL, "format code %d accepted", proto->format);
    if (rc) {
        FZ_ASSERT(rc == SPMV_EINVAL || rc == SPMV_ENOTAPPLICABLE || rc == SPMV_ENOMEM,
                  "size of %s: %d", spmv_format_name(F.format), rc);
        return;
    }
    FZ_ASSERT(F.nnz == c->nnz && F.nrows == c->A.nrows && F.ncols == c->A.ncols, "size: nnz %lld",
              (long long)F.nnz);
    size_t es = f32 ? sizeof(float) : sizeof(double);
    for (int k = 0; k < SPMV_MAXIDX; k++)
        FZ_ASSERT(F.nidx[k] >= 0, "nidx[%d] = %lld", k, (long long)F.nidx[k]);
    for (int k = 0; k < SPMV_MAXVAL; k++)
        FZ_ASSERT(F.nval[k] >= 0, "nval[%d] = %lld", k, (long long)F.nval[k]);
    if (spmv_fmt_bytes(&F, (int)es) > MAX_BYTES) return;
    for (int k = 0; k < SPMV_MAXIDX; k++) {
        F.idx[k] = fz_alloc(F.nidx[k], sizeof(int32_t));
        memset(F.idx[k], 0xA5, (size_t)F.nidx[k] * sizeof(int32_t));
    }
    for (int k = 0; k < SPMV_MAXVAL; k++) {
        F.val[k] = fz_alloc(F.nval[k], es);
        memset(F.val[k], 0xA5, (size_t)F.nval[k] * es);
    }
    int32_t n = c->A.nrows, *ip = fz_alloc((int64_t)n + 1, sizeof(int32_t)),
            *ix = fz_alloc(c->nnz, sizeof(int32_t));
    void *v = fz_alloc(c->nnz, es), *y = fz_alloc(n, es);
    rc = fill(f32, J, &F);
    if (rc == SPMV_ENOMEM) goto done;
    /* a value table refuses more distinct values than its indices reach (csrc/vtab.c) */
    if (rc == SPMV_ENOTAPPLICABLE && ((F.format == SPMV_FMT_JAD && F.param[0] == 8) ||
                                      (F.format == SPMV_FMT_CSR && F.param[1] == 8)))
        goto done;
    FZ_ASSERT(rc == 0, "fill of %s: %d", spmv_format_name(F.format), rc);

    memset(ip, 0xA5, ((size_t)n + 1) * sizeof(int32_t));
    memset(ix, 0xA5, (size_t)c->nnz * sizeof(int32_t));
    memset(v, 0xA5, (size_t)c->nnz * es);
    rc = to_csr(f32, &F, ip, ix, v, J->err);
    if (rc == SPMV_ENOMEM) goto done;
    FZ_ASSERT(rc == 0, "to_csr of %s: %d", spmv_format_name(F.format), rc);
    FZ_ASSERT(memcmp(ip, c->indptr, ((size_t)n + 1) * sizeof(int32_t)) == 0,
              "%s (param %d, %d): indptr differs after the round trip", spmv_format_name(F.format),
              F.param[0], F.param[1]);
    FZ_ASSERT(c->nnz == 0 || memcmp(ix, c->indices, (size_t)c->nnz * sizeof(int32_t)) == 0,
              "%s (param %d, %d): indices differ after the round trip", spmv_format_name(F.format),
              F.param[0], F.param[1]);
    FZ_ASSERT(c->nnz == 0 || memcmp(v, f32 ? (const void *)J->v32 : (const void *)J->v,
                                    (size_t)c->nnz * es) == 0,
              "%s (param %d, %d): values differ after the round trip", spmv_format_name(F.format),
              F.param[0], F.param[1]);

    for (int k = 0;; k++) {
        for (int32_t i = 0; i < n; i++) {
            if (f32)
                ((float *)y)[i] = NAN;
            else
                ((double *)y)[i] = NAN; /* every row must be written */
        }
        rc = mv(f32, &F, k, J, y);
        if (rc == SPMV_EINVAL && k > 0) break;
        FZ_ASSERT(rc == 0, "%s kernel %d: %d", spmv_format_name(F.format), k, rc);
        check_y(&F, k, f32, y, J);
        FZ_ASSERT(k < 64, "%s accepts every kernel variant", spmv_format_name(F.format));
    }
    FZ_ASSERT(mv(f32, &F, -1, J, y) == SPMV_EINVAL, "kernel variant -1 accepted");
    if (!f32 && (fz_u8(in) & 1)) { /* the bench entry point, one timed run */
        spmv_timing t;
        rc = spmv_fmt_bench_f64(&F, 0, J->x, y, 0, 1, 0.0, &t, J->err);
        FZ_ASSERT(rc == 0 && t.runs == 1, "bench: %d, %lld runs", rc, (long long)t.runs);
    }
#ifdef FZ_HAVE_FMT_CHECK
    rc = spmv_fmt_check(&F, J->err);
    FZ_ASSERT(rc == 0, "spmv_fmt_check refuses a fresh %s (param %d, %d): %d %s",
              spmv_format_name(F.format), F.param[0], F.param[1], rc, J->err ? J->err->msg : "");
    mutate_and_check(in, f32, &F, J);
#endif
done:
    free(y);
    free(v);
    free(ix);
    free(ip);
    for (int k = 0; k < SPMV_MAXIDX; k++) free(F.idx[k]);
    for (int k = 0; k < SPMV_MAXVAL; k++) free(F.val[k]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_in in = {data, size, 0};
    uint8_t sel = fz_u8(&in);
    spmv_err e, *err = (sel & 0x80) ? NULL : &e;
    spmv_fmt proto;
    memset(&proto, 0, sizeof proto);
    uint8_t fb = fz_u8(&in);
    proto.format = fb < 250 ? fb % SPMV_NFORMATS
                            : (int[]){-1, SPMV_NFORMATS, INT32_MIN, 1000, -7, 99}[fb - 250];
    fz_fmt_params(&in, proto.format, proto.param);
    proto.max_fill = fz_max_fill(&in);
    uint8_t vmode = fz_u8(&in);
    uint64_t seed = fz_u32(&in) | 1;

    fz_csr c;
    fz_csr_decode(&in, MAX_ROWS, MAX_NNZ, &c);
    FZ_ASSERT(spmv_csr_check(&c.A, (int64_t)c.A.nrows + 1, c.nnz, NULL) == 0,
              "decoded CSR invalid");
    int32_t n = c.A.nrows, m = c.A.ncols;
    double *v = fz_alloc(c.nnz, sizeof(double)), *x = fz_alloc(m, sizeof(double));
    float *v32 = fz_alloc(c.nnz, sizeof(float)), *x32 = fz_alloc(m, sizeof(float));
    /* Small integers (explicit zeros among them) by default: exact in any order and in float32.
     * vmode & 3 == 3: any doubles from the bytes (inf, nan, huge, subnormal), which the round trip
     * must keep bit for bit. */
    for (int64_t p = 0; p < c.nnz; p++)
        v[p] = (vmode & 3) == 3 && fz_left(&in) ? fz_double(&in, 0)
                                                : (double)(int)(rng_next(&seed) % 15) - 7;
    for (int32_t j = 0; j < m; j++)
        x[j] = (vmode & 4) && fz_left(&in) ? fz_double(&in, 1)
                                           : (double)(int)(rng_next(&seed) % 9) - 4;
    for (int64_t p = 0; p < c.nnz; p++) v32[p] = (float)v[p];
    for (int32_t j = 0; j < m; j++) x32[j] = (float)x[j];
    double *w64 = fz_alloc(c.nnz, sizeof(double)), *xw = fz_alloc(m, sizeof(double));
    for (int64_t p = 0; p < c.nnz; p++) w64[p] = v32[p];
    for (int32_t j = 0; j < m; j++) xw[j] = x32[j];
    double *ref = fz_alloc(4 * (int64_t)n, sizeof(double));
    job J = {&c, v, x, v32, x32, ref, ref + n, ref + 2 * n, ref + 3 * n, err};
    reference(&c, v, x, J.ref, J.abs);
    reference(&c, w64, xw, J.ref32, J.abs32);

    convert_one(&in, &proto, 0, &J);
    convert_one(&in, &proto, 1, &J);

    free(ref);
    free(xw);
    free(w64);
    free(x32);
    free(v32);
    free(x);
    free(v);
    fz_csr_free(&c);
    return 0;
}
