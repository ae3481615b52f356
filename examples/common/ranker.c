// examples/common/ranker.c: the exported model (model.h) in a translation unit of its own
// SPDX-License-Identifier: BSD-3-Clause
//
// model.h: `pyspmv export --default cpu --name model --out model.h` (or --default cuda, or
// --model FILE).  This is the one file that compiles the model and the core's copy it carries
// (model_IMPLEMENTATION); that copy is static, so it clashes with nothing of libspmv, and only
// model_rank, model_predict and model_config_ids are seen outside.
#include "ranker.h"
#define model_IMPLEMENTATION
#include "model.h"

int ranker_count(void) { return model_NCONFIGS; }

const char *ranker_config_id(int i) {
    return i >= 0 && i < model_NCONFIGS ? model_config_ids[i] : (const char *)0;
}

int ranker_rank(int32_t nrows, int32_t ncols, const int32_t *indptr, const int32_t *indices,
                int *order, double *ms) {
    return model_rank(nrows, ncols, indptr, indices, order, ms);
}
