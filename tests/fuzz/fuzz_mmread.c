// tests/fuzz/fuzz_mmread.c: libFuzzer harness of spmv_mm_read, the Matrix Market body parser
// SPDX-License-Identifier: BSD-3-Clause
//
// Bytes: [format/field byte][nrows u8][ncols u8][nentries u8][err byte] then the body text itself,
// exactly sized (no NUL after it: the parser must not read past len).  Oracle beyond "no fault":
// a parse that succeeds gives every index in [0, n), every value of an integer field an integer,
// and no value inf unless the text holds "inf" (case-insensitive); a failure names a line within
// the text (first_line .. first_line + newlines) and agrees with err.
#include "fuzz_common.h"

#include <ctype.h>

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fz_modes_init();
    return 0;
}

static int has_inf_text(const char *t, size_t n) {
    for (size_t k = 0; k + 3 <= n; k++)
        if (tolower((unsigned char)t[k]) == 'i' && tolower((unsigned char)t[k + 1]) == 'n' &&
            tolower((unsigned char)t[k + 2]) == 'f')
            return 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_in in = {data, size, 0};
    uint8_t kind = fz_u8(&in);
    spmv_mm_body B;
    B.format = kind & 1 ? SPMV_MM_ARRAY : SPMV_MM_COORDINATE;
    B.field = (kind >> 1) % 3;
    if (kind & 0x80) B.field = (int)(int8_t)kind; /* out of range now and then */
    B.nrows = 1 + fz_u8(&in) % 64;
    B.ncols = 1 + fz_u8(&in) % 64;
    B.nentries = fz_u8(&in);
    if (B.nentries == 255) B.nentries = -1;
    B.first_line = 3;
    spmv_err e, *err = (fz_u8(&in) & 1) ? NULL : &e;
    size_t len = in.i < in.n ? in.n - in.i : 0;
    char *text = fz_alloc((int64_t)len, 1);
    if (len) memcpy(text, in.p + in.i, len);
    int64_t n = B.nentries > 0 ? B.nentries : 0;
    int32_t *row = fz_alloc(n, sizeof(int32_t)), *col = fz_alloc(n, sizeof(int32_t));
    double *val = fz_alloc(n, sizeof(double));
    int coord = B.format == SPMV_MM_COORDINATE, pattern = B.field == SPMV_MM_PATTERN;
    int rc = spmv_mm_read(&B, text, (int64_t)len, coord ? row : NULL, coord ? col : NULL,
                          pattern ? NULL : val, err);
    if (err) FZ_ERR_AGREES(rc, *err);
    FZ_ASSERT(rc == 0 || rc == SPMV_EINVAL || rc == SPMV_EINDEX, "rc %d", rc);
    if (rc == 0) {
        FZ_ASSERT(B.field >= SPMV_MM_REAL && B.field <= SPMV_MM_PATTERN && B.nentries >= 0,
                  "field %d, nentries %lld accepted", B.field, (long long)B.nentries);
        FZ_ASSERT(!(pattern && !coord), "an array pattern body accepted");
        for (int64_t k = 0; k < n; k++) {
            if (coord)
                FZ_ASSERT(row[k] >= 0 && row[k] < B.nrows && col[k] >= 0 && col[k] < B.ncols,
                          "entry %lld at (%d, %d) outside %d x %d", (long long)k, row[k], col[k],
                          B.nrows, B.ncols);
            if (pattern) continue;
            if (B.field == SPMV_MM_INTEGER)
                FZ_ASSERT(val[k] == floor(val[k]), "integer field gave %.17g", val[k]);
            if (isinf(val[k]))
                FZ_ASSERT(B.field == SPMV_MM_REAL && has_inf_text(text, len),
                          "inf from text that holds none");
        }
    } else if (err) {
        int64_t lines = 0;
        for (size_t k = 0; k < len; k++) lines += text[k] == '\n';
        FZ_ASSERT(err->where == -1 ||
                      (err->where >= B.first_line && err->where <= B.first_line + lines),
                  "error at line %lld of a text of lines %lld..%lld", (long long)err->where,
                  (long long)B.first_line, (long long)(B.first_line + lines));
    }
    free(val);
    free(col);
    free(row);
    free(text);
    return 0;
}
