// csrc/exported.h: the functions of a header that pyspmv.export_c writes, made for a model's name
// SPDX-License-Identifier: BSD-3-Clause
//
// Pasted last into the core's amalgamation (csrc/amalgamate.py, installed as
// pyspmv/_exported_core.h), never compiled into the library.  A header that export_c writes declares
// NAME_NCONFIGS, NAME_config_ids and the functions below (NAME_NFEATURES and NAME_feature_names for
// a model on its own features) at its top, with C linkage; in the file that defines
// NAME_IMPLEMENTATION it then carries the amalgamation and only data after it: the model's arrays,
// NAME_config_ids, NAME_NMODELS and NAME_model_set (which sets m[NAME_NMODELS], the model and its
// sub-models), NAME_configs, then one line
//     SPMV_EXPORTED_RANK(NAME, sm_count, threads_per_sm, warp_size, value_bytes)
// or  SPMV_EXPORTED_RANK_FEATURES(NAME)
// which defines the header's functions below, named from NAME, with external linkage.

/* CSR arrays to a ranking: the check of spmv_csr_check first, then spmv_rank; o[C->n] is the
 * caller's scratch, order (NULL: not wanted) gets it as int. */
SPMV_API int spmv_exported_rank(const spmv_configs *C, const spmv_model *M,
                                const spmv_gpu_props *dev, int value_bytes, int32_t nrows,
                                int32_t ncols, const int32_t *indptr, const int32_t *indices,
                                int32_t *o, int *order, double *ms) {
    spmv_csr A;
    int rc;
    if (indptr == NULL || ms == NULL || nrows < 1 || ncols < 1) return SPMV_EINVAL;
    A.nrows = nrows;
    A.ncols = ncols;
    A.indptr = indptr;
    A.indices = indices;
    rc = spmv_csr_check(&A, (int64_t)nrows + 1, indptr[nrows] >= 0 ? indptr[nrows] : 0, NULL);
    if (rc == 0) rc = spmv_rank(&A, dev, C, M, value_bytes, NULL, o, ms, NULL, NULL);
    if (rc == 0 && order != NULL)
        for (int32_t j = 0; j < C->n; j++) order[j] = (int)o[j];
    return rc;
}

/* A feature vector to a ranking (spmv_rank_features); o and order as spmv_exported_rank. */
SPMV_API int spmv_exported_rank_features(const spmv_configs *C, const spmv_model *M,
                                         const double *features, int32_t nfeatures, int32_t *o,
                                         int *order, double *ms) {
    int rc;
    if (features == NULL || ms == NULL) return SPMV_EINVAL;
    rc = spmv_rank_features(C, M, features, nfeatures, NULL, o, ms, NULL, NULL);
    if (rc == 0 && order != NULL)
        for (int32_t j = 0; j < C->n; j++) order[j] = (int)o[j];
    return rc;
}

/* A model on pyspmv's features, computed from a CSR matrix (sorted, distinct column indices, checked):
 *   int NAME_rank(int32_t nrows, int32_t ncols, const int32_t *indptr, const int32_t *indices,
 *                 int *order, double *ms);
 *       ms[NAME_NCONFIGS] = every configuration's prediction (HUGE_VAL: cannot serve the matrix),
 *       order[NAME_NCONFIGS] = configuration indices, fastest first (order may be NULL);
 *   int NAME_predict(int32_t nrows, int32_t ncols, const int32_t *indptr, const int32_t *indices,
 *                    double *ms);
 *       the same without the order.
 * Both return 0 or a negative SPMV_E* code.  The features use the GPU properties given (Guo's
 * strips), and bytes moved the value size (4: float32, 8: float64). */
#define SPMV_EXPORTED_RANK(NAME, SM_COUNT, THREADS_PER_SM, WARP_SIZE, VALUE_BYTES)                 \
    int NAME##_rank(int32_t nrows, int32_t ncols, const int32_t *indptr, const int32_t *indices,   \
                    int *order, double *ms) {                                                      \
        spmv_gpu_props dev;                                                                        \
        spmv_model m[NAME##_NMODELS];                                                              \
        int32_t o[NAME##_NCONFIGS];                                                                \
        dev.sm_count = SM_COUNT;                                                                   \
        dev.threads_per_sm = THREADS_PER_SM;                                                       \
        dev.warp_size = WARP_SIZE;                                                                 \
        NAME##_model_set(m);                                                                       \
        return spmv_exported_rank(&NAME##_configs, m, &dev, VALUE_BYTES, nrows, ncols, indptr,     \
                                  indices, o, order, ms);                                          \
    }                                                                                              \
    int NAME##_predict(int32_t nrows, int32_t ncols, const int32_t *indptr,                        \
                       const int32_t *indices, double *ms) {                                       \
        return NAME##_rank(nrows, ncols, indptr, indices, NULL, ms);                               \
    }

/* A model on its own features:
 *   int NAME_rank_features(const double *features, int *order, double *ms);
 *       features[NAME_NFEATURES] in the order of NAME_feature_names (NaN: missing);
 *       ms[NAME_NCONFIGS], order[NAME_NCONFIGS] (may be NULL) as NAME_rank's;
 *   int NAME_predict_features(const double *features, double *ms);
 * Both return 0 or a negative SPMV_E* code. */
#define SPMV_EXPORTED_RANK_FEATURES(NAME)                                                          \
    int NAME##_rank_features(const double *features, int *order, double *ms) {                     \
        spmv_model m[NAME##_NMODELS];                                                              \
        int32_t o[NAME##_NCONFIGS];                                                                \
        NAME##_model_set(m);                                                                       \
        return spmv_exported_rank_features(&NAME##_configs, m, features, NAME##_NFEATURES, o,      \
                                           order, ms);                                             \
    }                                                                                              \
    int NAME##_predict_features(const double *features, double *ms) {                              \
        return NAME##_rank_features(features, NULL, ms);                                           \
    }
