// examples/common/ranker.c: the exported model (model.h) in a translation unit of its own
// SPDX-License-Identifier: BSD-3-Clause
//
// model.h: `pyspmv export --default cpu --name model --out model.h` (or --default cuda, or
// --model FILE).  Every function of it is static, so it clashes with nothing of libspmv.
#include "ranker.h"
#include "model.h"

int ranker_count(void) { return model_NCONFIGS; }

const char *ranker_config_id(int i) {
    return i >= 0 && i < model_NCONFIGS ? model_config_ids[i] : (const char *)0;
}

int ranker_rank(int32_t nrows, int32_t ncols, const int32_t *indptr, const int32_t *indices,
                int *order, double *ms) {
    return model_rank(nrows, ncols, indptr, indices, order, ms);
}
