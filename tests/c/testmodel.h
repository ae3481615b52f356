// tests/c/testmodel.h: model inputs for the C tests — one identity input per column, no clamp
// SPDX-License-Identifier: BSD-3-Clause
#ifndef TESTMODEL_H
#define TESTMODEL_H

#include "spmv.h"

#include <math.h>

/* Storage for up to four inputs; inputs_set points M's input arrays into it. */
typedef struct {
    int32_t col[4], tf[4];
    double nan[4], lo[4], hi[4], shift[4], div[4];
} inputs;

/* M reads the n columns cols[] of SPMV_NCOLS-wide design rows unchanged (identity, no clamp, NaN
 * kept), and its output is the model's own (no output column, no floor). */
static inline void inputs_set(spmv_model *M, inputs *in, int n, const int32_t *cols) {
    for (int k = 0; k < n; k++) {
        in->col[k] = cols[k];
        in->tf[k] = SPMV_TF_IDENTITY;
        in->nan[k] = NAN;
        in->lo[k] = -HUGE_VAL;
        in->hi[k] = HUGE_VAL;
        in->shift[k] = 0;
        in->div[k] = 1;
    }
    M->ninputs = n;
    M->ncols = SPMV_NCOLS;
    M->in_col = in->col;
    M->in_tf = in->tf;
    M->in_nan = in->nan;
    M->in_lo = in->lo;
    M->in_hi = in->hi;
    M->in_shift = in->shift;
    M->in_div = in->div;
    M->out_lo = -HUGE_VAL;
    M->out_col = -1;
}

#endif /* TESTMODEL_H */
