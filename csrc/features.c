// csrc/features.c: PLACEHOLDER until its helper lands the real features
#include "spmv_internal.h"
void spmv_gpu_props_h100(spmv_gpu_props *p) { p->sm_count = 132; p->threads_per_sm = 2048; p->warp_size = 32; }
const char *spmv_feature_name(int i) { (void)i; return NULL; }
int spmv_features_compute(const spmv_csr *A, const spmv_gpu_props *dev, double *out, spmv_err *err) { (void)A; (void)dev; (void)out; return spmv_fail(err, SPMV_EINVAL, -1, -1, -1, "features not implemented yet"); }
