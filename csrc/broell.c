// csrc/broell.c: PLACEHOLDER until its helper lands the real format
#include "spmv_internal.h"
static int sz(const spmv_csr *A, spmv_fmt *F, spmv_err *err) { (void)A; (void)F; return spmv_fail(err, SPMV_ENOTAPPLICABLE, -1, -1, -1, "broell not implemented yet"); }
static int f32(const spmv_csr *A, const float *v, spmv_fmt *F, spmv_err *err) { (void)A; (void)v; (void)F; (void)err; return SPMV_EINVAL; }
static int f64(const spmv_csr *A, const double *v, spmv_fmt *F, spmv_err *err) { (void)A; (void)v; (void)F; (void)err; return SPMV_EINVAL; }
static int t32(const spmv_fmt *F, int32_t *a, int32_t *b, float *c, spmv_err *err) { (void)F; (void)a; (void)b; (void)c; (void)err; return SPMV_EINVAL; }
static int t64(const spmv_fmt *F, int32_t *a, int32_t *b, double *c, spmv_err *err) { (void)F; (void)a; (void)b; (void)c; (void)err; return SPMV_EINVAL; }
static int m32(const spmv_fmt *F, int k, const float *x, float *y, spmv_err *err) { (void)F; (void)k; (void)x; (void)y; (void)err; return SPMV_EINVAL; }
static int m64(const spmv_fmt *F, int k, const double *x, double *y, spmv_err *err) { (void)F; (void)k; (void)x; (void)y; (void)err; return SPMV_EINVAL; }
const spmv_format_ops spmv_broell_ops = { sz, f32, f64, t32, t64, m32, m64, 1 };
