// tests/c/test_config.c: the configuration grammar (csrc/config.c) -- parse, canonical id, expansion,
// columns, and ids resolved by the design rows
// SPDX-License-Identifier: BSD-3-Clause
#include "mu.h"
#include "spmv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Parse id, expecting SPMV_EINVAL with msg containing `want` (NULL: expecting success). */
static int parses(const char *id, const char *want) {
    spmv_config c;
    spmv_err err = {0};
    int rc = spmv_config_parse(id, &c, &err);
    if (want == NULL) return rc == SPMV_OK;
    if (rc != SPMV_EINVAL || strstr(err.msg, want) == NULL) {
        fprintf(stderr, "%s: rc %d, message \"%s\", wanted \"%s\"\n", id, rc, err.msg, want);
        return 0;
    }
    return 1;
}

static int test_parse_messages(void) {
    mu_check(parses("cpu/sell/c=8/sigma=64", NULL) && parses("cpu/hyb/k=-4", NULL));
    mu_check(parses("cpu/nope", "Unknown configuration id 'cpu/nope'."));
    mu_check(
        parses("cpu/sell/q=1", "'q' is not a parameter of cpu/sell; it takes ['c', 'sigma']."));
    mu_check(parses("cpu/coo/c=1", "it takes none."));
    mu_check(parses("cpu/csr/rows/c=1", "it takes ['order', 'vals']."));
    /* an axis at its default is named but not given: never printed, still not twice */
    mu_check(parses("pyspmv/csr/merge/order=0/order=0", "parameter 'order' is given twice"));
    mu_check(
        parses("cpu/sell/c=x",
               "parameter 'c' must be a non-negative integer (ASCII digits). Got 'x' instead."));
    mu_check(parses("cpu/sell/c=-8", "Got '-8' instead."));
    mu_check(parses("cpu/hyb/k=--4", "must be an integer (ASCII digits, optionally after '-')"));
    mu_check(parses("cpu/sell/c=8/c=8", "parameter 'c' is given twice; give each at most once."));
    mu_check(parses("cpu/sell/c=32", "parameter 'c' of cpu/sell must be one of 4, 8, 16. Got 32"));
    mu_check(parses("cpu/sell/c=0008/sigma=0001", NULL));
    mu_check(parses("cpu/sell/c=0032", "Got 32 instead."));
    mu_check(parses("cpu/sell/c=8/", "'' follows the parameters; each must read name=value."));
    mu_check(parses("cpu/sell/c=8/sigma", "'sigma' follows the parameters"));
    mu_check(parses("cpu/hyb/k=2147483648", "must be within int32. Got 2147483648 instead."));
    mu_check(parses("cpu/hyb/k=-2147483648", NULL));
    mu_check(parses("cpu/sell/", "Unknown configuration id") && parses("", "Unknown") &&
             parses("c=8", "Unknown") && parses("cpu//sell", "Unknown"));
    mu_check(parses("cpu/sell/c=\n", "Got '\\n' instead."));
    /* the failing part's offset: 0 for the kernel, the item's start for a parameter */
    spmv_config c;
    spmv_err err = {0};
    mu_check(spmv_config_parse("cpu/sell/c=8/q=1", &c, &err) == SPMV_EINVAL && err.where == 13);
    mu_check(spmv_config_parse("cpu/zzz/c=8", &c, &err) == SPMV_EINVAL && err.where == 0);
    mu_check(spmv_config_parse("cpu/sell/c=1", &c, NULL) == SPMV_EINVAL); /* no message taken */
    mu_check(spmv_config_parse(NULL, &c, &err) == SPMV_EINVAL);
    return 0;
}

static int test_parse_values_and_canonical_id(void) {
    spmv_config c;
    char buf[SPMV_CONFIG_ID_MAX];
    mu_check(spmv_config_parse("cpu/sell/sigma=64/c=16", &c, NULL) == SPMV_OK);
    const spmv_kernel_desc *K = spmv_kernel_get(c.kernel);
    mu_check(strcmp(K->id, "cpu/sell") == 0 && c.param[0] == 16 && c.param[1] == 64 &&
             c.given == 3);
    mu_check(spmv_config_id(&c, buf, sizeof buf) == 22 &&
             strcmp(buf, "cpu/sell/c=16/sigma=64") == 0);
    mu_check(spmv_config_parse("cpu/sell", &c, NULL) == SPMV_OK && c.given == 0 &&
             c.param[0] == 8 && c.param[1] == 1);
    mu_check(spmv_config_id(&c, buf, sizeof buf) == 8 && strcmp(buf, "cpu/sell") == 0);
    mu_check(spmv_config_parse("pyspmv/csr/vector/bs=128", &c, NULL) == SPMV_OK &&
             c.param[SPMV_P_TPV] == 8 && c.param[SPMV_P_BLOCK] == 128 && c.given == 8);
    /* snprintf's contract: the length needed, the text cut to the buffer */
    mu_check(spmv_config_id(&c, buf, 4) == 24 && strcmp(buf, "pys") == 0);
    mu_check(spmv_config_id(&c, NULL, 0) == 24);
    c.kernel = spmv_kernel_count();
    mu_check(spmv_config_id(&c, buf, sizeof buf) == -1);
    return 0;
}

/* Every configuration of each device: registry order, the grid's product, ids that round-trip. */
static int test_expand_round_trips(void) {
    int32_t total = 0;
    for (int dev = SPMV_DEV_CPU; dev <= SPMV_DEV_CUDA; dev++) {
        int32_t n = spmv_config_expand(dev, NULL), want = 0;
        for (int i = 0; i < spmv_kernel_count(); i++) {
            const spmv_kernel_desc *K = spmv_kernel_get(i);
            int32_t m = 1;
            for (int k = 0; k < SPMV_NPARAM; k++)
                if (K->param_name[k] != NULL && K->ngrid[k] > 0) m *= K->ngrid[k];
            want += K->device == dev ? m : 0;
        }
        mu_check(n == want && n > 0);
        spmv_config *c = calloc((size_t)n, sizeof *c);
        mu_check(c != NULL && spmv_config_expand(dev, c) == n);
        for (int32_t j = 0; j < n; j++) {
            char id[SPMV_CONFIG_ID_MAX];
            spmv_config back;
            mu_check(j == 0 || c[j].kernel >= c[j - 1].kernel); /* registry order */
            mu_check(spmv_kernel_get(c[j].kernel)->device == dev);
            mu_check(spmv_config_id(&c[j], id, sizeof id) < (int)sizeof id);
            mu_check(spmv_config_parse(id, &back, NULL) == SPMV_OK);
            mu_check(memcmp(&back, &c[j], sizeof back) == 0);
            for (int32_t i = 0; i < j; i++) mu_check(memcmp(&c[i], &c[j], sizeof back) != 0);
        }
        free(c);
        total += n;
    }
    /* the registry of this release; the shipped models rank the 23 + 135 that came before cidx
     * (the H100's) or the 25 + 234 that came before JAD's and CSR's value tables and csr/adaptive's
     * ept (the H200's) */
    mu_check(total == 25 + 344);
    return 0;
}

static int test_columns(void) {
    spmv_config c;
    spmv_config_cols cols;
    spmv_err err = {0};
    mu_check(spmv_config_parse("cpu/sell/c=4/sigma=256", &c, NULL) == SPMV_OK);
    mu_check(spmv_config_columns(&c, &cols, &err) == SPMV_OK);
    mu_check(cols.format == SPMV_FMT_SELL && cols.param[0] == 4 && cols.param[1] == 256 &&
             cols.launches == 0);
    for (int k = 0; k < SPMV_NPCOLS; k++) {
        int col = SPMV_NFEATURES + k;
        double want = col == SPMV_COL_P_C ? 4 : col == SPMV_COL_P_SIGMA ? 256 : NAN;
        mu_check(isnan(want) ? isnan(cols.p[k]) : cols.p[k] == want);
    }
    mu_check(spmv_config_parse("cpu/sell", &c, NULL) == SPMV_OK &&
             spmv_config_columns(&c, &cols, NULL) == SPMV_OK &&
             isnan(cols.p[SPMV_COL_P_C - SPMV_NFEATURES]) &&
             cols.param[0] == 8); /* defaults in the format's parameters, not in the design row */
    mu_check(spmv_config_parse("pyspmv/hyb/bs=64", &c, NULL) == SPMV_OK &&
             spmv_config_columns(&c, &cols, NULL) == SPMV_OK && cols.launches == 2 &&
             cols.p[SPMV_COL_P_BS - SPMV_NFEATURES] == 64 && cols.param[0] == -1);
    mu_check(spmv_config_parse("pyspmv/bsr", &c, NULL) == SPMV_EINVAL); /* no such own kernel */
    mu_check(spmv_config_parse("cusparse/bsr/b=8", &c, NULL) == SPMV_OK &&
             spmv_config_columns(&c, &cols, NULL) == SPMV_OK && cols.format == SPMV_FMT_BSR &&
             cols.unread == spmv_format_unread(SPMV_FMT_BSR));
    c.kernel = -1;
    mu_check(spmv_config_columns(&c, &cols, &err) == SPMV_EINVAL);
    /* every parameter name of the registry is one of kernels.def's SPMV_PARAM lists; cuSPARSE's
     * kernels, and only they, name cuSPARSE's format and algorithm */
    for (int i = 0; i < spmv_kernel_count(); i++) {
        spmv_config d = {.kernel = i};
        const spmv_kernel_desc *K = spmv_kernel_get(i);
        int cus = K->library == SPMV_LIB_CUSPARSE;
        mu_check(spmv_config_columns(&d, &cols, &err) == SPMV_OK);
        mu_check(cus ? K->cusparse_format != NULL && K->cusparse_alg != NULL &&
                           strncmp(K->cusparse_format, "CUSPARSE_FORMAT_", 16) == 0 &&
                           strncmp(K->cusparse_alg, "CUSPARSE_SPMV_", 14) == 0
                     : K->cusparse_format == NULL && K->cusparse_alg == NULL);
    }
    const spmv_kernel_desc *alg2 = spmv_kernel_find("cusparse/csr/alg2");
    mu_check(alg2 != NULL && strcmp(alg2->cusparse_format, "CUSPARSE_FORMAT_CSR") == 0 &&
             strcmp(alg2->cusparse_alg, "CUSPARSE_SPMV_CSR_ALG2") == 0);
    /* the design columns' names come from the same list */
    mu_check(strcmp(spmv_design_column_name(SPMV_COL_P_TPV), "p_tpv") == 0 &&
             strcmp(spmv_design_column_name(SPMV_COL_P_B), "p_b") == 0 &&
             strcmp(spmv_design_column_name(SPMV_COL_VALUE_BYTES), "value_bytes") == 0 &&
             SPMV_NPCOLS == 7);
    return 0;
}

/* A spmv_configs of ids (as an exported header gives) makes the same design rows as its columns. */
static int test_design_rows_from_ids(void) {
    static const char *const ids[] = {"cpu/csr/rows", "cpu/sell/c=4/sigma=1", "cpu/bsr/b=2",
                                      "pyspmv/csr/vector/tpv=4/bs=64"};
    enum { N = 4 };
    int32_t ip[] = {0, 2, 3, 5, 6}, ix[] = {0, 3, 1, 0, 2, 3}, format[N], param[2 * N], unread[N];
    int32_t group[N] = {0, 0, 0, 0};
    double p[SPMV_NPCOLS * N], launches[N], *a = malloc(sizeof(double) * N * SPMV_NCOLS),
                                            *b = malloc(sizeof(double) * N * SPMV_NCOLS);
    spmv_csr A = {4, 4, ip, ix};
    spmv_gpu_props dev;
    spmv_err err = {0};
    spmv_gpu_props_h100(&dev);
    mu_check(a != NULL && b != NULL);
    mu_check(spmv_configs_table(N, ids, format, param, unread, p, launches, &err) == SPMV_OK);
    mu_check(format[1] == SPMV_FMT_SELL && param[2] == 4 && param[3] == 1 && launches[3] == 1);
    spmv_configs table = {.n = N,
                          .format = format,
                          .param = param,
                          .unread = unread,
                          .p = p,
                          .launches = launches,
                          .group = group};
    spmv_configs by_id = {.n = N, .group = group, .ids = ids};
    mu_check(spmv_design_rows(&A, &dev, &table, 8, 0, a, &err) == SPMV_OK);
    mu_check(spmv_design_rows(&A, &dev, &by_id, 8, 0, b, &err) == SPMV_OK);
    mu_check(memcmp(a, b, sizeof(double) * N * SPMV_NCOLS) == 0);
    mu_check(spmv_design_rows_estimate(&A, &dev, &by_id, 8, 0, 256, 0, b, &err) == SPMV_OK);
    mu_check(memcmp(a, b, sizeof(double) * N * SPMV_NCOLS) == 0);
    double bytes[N], pad[N];
    mu_check(spmv_config_sizes(&A, &by_id, 8, 0, bytes, pad, NULL, &err) == SPMV_OK);
    for (int j = 0; j < N; j++)
        mu_check(bytes[j] == a[j * SPMV_NCOLS + SPMV_COL_BYTES_MOVED] &&
                 pad[j] == a[j * SPMV_NCOLS + SPMV_COL_PADDING_RATIO]);
    /* a bad id: its index and the grammar's message */
    static const char *const bad[] = {"cpu/csr/rows", "cpu/sell/c=5"};
    mu_check(spmv_configs_table(2, bad, format, param, unread, p, launches, &err) == SPMV_EINVAL &&
             err.where == 1);
    spmv_configs by_bad = {.n = 2, .group = group, .ids = bad};
    mu_check(spmv_design_rows(&A, &dev, &by_bad, 8, 0, b, &err) == SPMV_EINVAL && err.where == 1 &&
             strstr(err.msg, "must be one of 4, 8, 16") != NULL);
    free(a);
    free(b);
    return 0;
}

int main(void) {
    int failures = 0;
    mu_run(test_parse_messages);
    mu_run(test_parse_values_and_canonical_id);
    mu_run(test_expand_round_trips);
    mu_run(test_columns);
    mu_run(test_design_rows_from_ids);
    return failures ? 1 : 0;
}
