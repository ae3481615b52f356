// examples/common/ranker.h: a ranking model exported by pyspmv, behind three functions
// SPDX-License-Identifier: BSD-3-Clause
//
// ranker.c includes the header `pyspmv export ... --name model --out model.h` wrote (the model's
// arrays and a static copy of the core's evaluator) in a translation unit of its own, compiled as
// C, so that the program's other files include the library's spmv.h and link libspmv.
#ifndef RANKER_H
#define RANKER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The configurations the model ranks, and the id of the i-th ("cpu/sell/c=8/sigma=64"). */
int ranker_count(void);
const char *ranker_config_id(int i);

/* order[ranker_count()]: configuration indices, fastest first; ms[ranker_count()]: predicted
 * milliseconds (HUGE_VAL: cannot serve the matrix).  0 or a negative SPMV_E* code. */
int ranker_rank(int32_t nrows, int32_t ncols, const int32_t *indptr, const int32_t *indices,
                int *order, double *ms);

#ifdef __cplusplus
}
#endif

#endif /* RANKER_H */
