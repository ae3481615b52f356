// csrc/mmread.c: the body of a Matrix Market file (the entry lines after the size line), parsed
// completely or refused with the line
// SPDX-License-Identifier: BSD-3-Clause
//
// Untrusted text: every byte is read once, every token whole.  An entry line holds exactly its
// tokens (two 1-based indices unless the format is array, then a value unless the field is
// pattern), separated by spaces or tabs; a pattern line may carry one number after its indices,
// checked and dropped (SuiteSparse's Pajek graphs are pattern files that list weights); '%' lines and blank lines may come between entries.  A
// line holding anything else (a control byte, a byte past ASCII, a token with trailing text such
// as "1,5", a hexadecimal float, an index out of range, an extra token) is refused with its line
// number.  Values are converted to double before anything sums them (an integer file's 2^63-1 is
// 9.223372036854775807e18, not a wrapped int64).  Fortran's D exponent ("1D3", "2.5d-1") is read
// as E on purpose: older Matrix Market and Harwell-Boeing exports write it.
#include "spmv_internal.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Longest value token read: any finite double written out exactly in fixed notation fits (the
 * longest, the smallest subnormal, is "-0." and 1074 decimals: 1077 characters; DBL_MAX spelt out
 * has 309 digits).  Longer is refused with this limit rather than cut, or read without bound. */
#define MM_TOKEN_MAX 1100

typedef struct {
    const char *p, *end;
    int64_t line; /* of p */
} mm_cursor;

static int mm_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* The next token of the current line: [*tok, *tok + *len), or *len = 0 at the line's end. */
static void mm_token(mm_cursor *c, const char **tok, int64_t *len) {
    while (c->p < c->end && mm_blank(*c->p)) c->p++;
    *tok = c->p;
    while (c->p < c->end && *c->p != '\n' && !mm_blank(*c->p)) c->p++;
    *len = c->p - *tok;
}

/* Bytes of [p, end) that a Matrix Market body may hold: printable ASCII, space, tab, CR, LF. */
static int mm_byte_ok(unsigned char b) {
    return (b >= 0x20 && b < 0x7f) || b == '\t' || b == '\n' || b == '\r';
}

static int mm_bad_byte(const mm_cursor *c, const char *q, spmv_err *err) {
    return spmv_fail(err, SPMV_EINVAL, c->line, (unsigned char)*q, -1,
                     "line %lld holds the byte 0x%02x; a Matrix Market body holds printable "
                     "ASCII, spaces, tabs and line ends only",
                     (long long)c->line, (unsigned char)*q);
}

/* Skip comment and blank lines; 1 when c->p is at an entry line, 0 at the end of the text. */
static int mm_next_entry(mm_cursor *c, spmv_err *err, int *rc) {
    *rc = SPMV_OK;
    while (c->p < c->end) {
        const char *q = c->p;
        while (q < c->end && mm_blank(*q)) q++;
        if (q < c->end && *q != '\n' && *q != '%') return 1;
        const char *nl = (const char *)memchr(q, '\n', (size_t)(c->end - q));
        const char *stop = nl != NULL ? nl : c->end;
        for (const char *b = q; b < stop; b++) /* comments are text too */
            if (!mm_byte_ok((unsigned char)*b)) {
                *rc = mm_bad_byte(c, b, err);
                return 0;
            }
        c->p = nl != NULL ? nl + 1 : c->end;
        c->line += nl != NULL;
    }
    return 0;
}

static int mm_index(const mm_cursor *c, const char *tok, int64_t len, int32_t n, const char *what,
                    int32_t *out, spmv_err *err) {
    int64_t v = 0;
    for (int64_t k = 0; k < len; k++) {
        if (tok[k] < '0' || tok[k] > '9' || v > INT32_MAX)
            return spmv_fail(err, SPMV_EINVAL, c->line, -1, n,
                             "line %lld: the %s index '%.*s' must be an integer in [1, %d]",
                             (long long)c->line, what, (int)(len < 40 ? len : 40), tok, n);
        v = v * 10 + (tok[k] - '0');
    }
    if (v < 1 || v > n)
        return spmv_fail(err, SPMV_EINDEX, c->line, v, n,
                         "line %lld: the %s index %lld is outside [1, %d]", (long long)c->line,
                         what, (long long)v, n);
    *out = (int32_t)(v - 1);
    return SPMV_OK;
}

static int mm_digits(const char *s, int64_t len, int64_t *k) {
    int64_t k0 = *k;
    while (*k < len && s[*k] >= '0' && s[*k] <= '9') (*k)++;
    return *k > k0;
}

static int mm_word(const char *s, int64_t len, const char *word) {
    size_t n = strlen(word);
    if ((size_t)len != n) return 0;
    for (size_t k = 0; k < n; k++)
        if ((s[k] | 0x20) != word[k]) return 0;
    return 1;
}

/* 1 when s[len] is a decimal number (sign, digits with at most one point, an exponent with E or D
 * when integer_only is 0) or, for reals, inf, infinity or nan; *named = 1 for those three. */
static int mm_number_syntax(const char *s, int64_t len, int integer_only, int *named) {
    int64_t k = 0;
    *named = 0;
    if (k < len && (s[k] == '+' || s[k] == '-')) k++;
    if (!integer_only && (mm_word(s + k, len - k, "inf") || mm_word(s + k, len - k, "infinity") ||
                          mm_word(s + k, len - k, "nan")))
        return *named = 1;
    int whole = mm_digits(s, len, &k), frac = 0;
    if (integer_only) return whole && k == len;
    if (k < len && s[k] == '.') {
        k++;
        frac = mm_digits(s, len, &k);
    }
    if (!whole && !frac) return 0;
    if (k < len && (s[k] == 'e' || s[k] == 'E' || s[k] == 'd' || s[k] == 'D')) {
        k++;
        if (k < len && (s[k] == '+' || s[k] == '-')) k++;
        if (!mm_digits(s, len, &k)) return 0;
    }
    return k == len;
}

static int mm_value(const mm_cursor *c, const char *tok, int64_t len, int field, double *out,
                    spmv_err *err) {
    int named, integer = field == SPMV_MM_INTEGER;
    const char *kind = integer ? "an integer" : "a real number";
    if (len > MM_TOKEN_MAX)
        return spmv_fail(err, SPMV_EINVAL, c->line, len, MM_TOKEN_MAX,
                         "line %lld: the value '%.16s...' has %lld characters, past the limit "
                         "of %d (any double written out in full fits); use an exponent (1.5e308)",
                         (long long)c->line, tok, (long long)len, MM_TOKEN_MAX);
    if (!mm_number_syntax(tok, len, integer, &named))
        return spmv_fail(err, SPMV_EINVAL, c->line, -1, -1,
                         "line %lld: the value '%.*s%s' is not %s%s", (long long)c->line,
                         (int)(len < 40 ? len : 40), tok, len > 40 ? "..." : "", kind,
                         integer ? "" : " (decimal, with an E or D exponent; or inf, nan)");
    char buf[MM_TOKEN_MAX + 1], *stop;
    for (int64_t k = 0; k < len; k++) buf[k] = (tok[k] == 'd' || tok[k] == 'D') ? 'e' : tok[k];
    buf[len] = '\0';
    double v = strtod(buf, &stop);
    /* The syntax is checked above, so strtod stops early only where the C locale's decimal point
     * is not '.' (a program that called setlocale): refuse rather than read half a number. */
    if (stop != buf + len)
        return spmv_fail(
            err, SPMV_EINVAL, c->line, -1, -1,
            "line %lld: the value '%.24s%s' could not be read whole (is LC_NUMERIC set to a "
            "locale whose decimal point is not '.'?)",
            (long long)c->line, buf, len > 24 ? "..." : "");
    if (isinf(v) && !named)
        return spmv_fail(
            err, SPMV_EINVAL, c->line, -1, -1,
            "line %lld: the value '%.24s%s' is past the float64 limit %.3g and would become "
            "inf; write inf where inf is meant",
            (long long)c->line, buf, len > 24 ? "..." : "", DBL_MAX);
    *out = v;
    return SPMV_OK;
}

/* Entry lines of [c->p, c->end), numbered from k; *k is advanced past them.  A line that would be
 * entry kmax + 1 is refused as past the declared count. */
static int mm_parse(const spmv_mm_body *B, mm_cursor *c, int64_t *k, int64_t kmax, int32_t *row,
                    int32_t *col, double *val, spmv_err *err) {
    int coord = B->format == SPMV_MM_COORDINATE, pattern = B->field == SPMV_MM_PATTERN, rc;
    while (mm_next_entry(c, err, &rc)) {
        const char *tok;
        int64_t tlen;
        if (*k == kmax)
            return spmv_fail(err, SPMV_EINVAL, c->line, *k + 1, B->nentries,
                             "line %lld holds entry %lld, past the %lld the size line declares",
                             (long long)c->line, (long long)*k + 1, (long long)B->nentries);
        const char *start = c->p;
        while (c->p < c->end && *c->p != '\n') /* the line's bytes, before any token is read */
            if (!mm_byte_ok((unsigned char)*c->p++)) return mm_bad_byte(c, c->p - 1, err);
        c->p = start;
        if (coord) {
            mm_token(c, &tok, &tlen);
            rc = mm_index(c, tok, tlen, B->nrows, "row", &row[*k], err);
            if (rc) return rc;
            mm_token(c, &tok, &tlen);
            if (tlen == 0)
                return spmv_fail(err, SPMV_EINVAL, c->line, -1, -1,
                                 "line %lld ends after its row index; an entry line holds the "
                                 "row, the column%s",
                                 (long long)c->line, pattern ? "" : " and the value");
            rc = mm_index(c, tok, tlen, B->ncols, "column", &col[*k], err);
            if (rc) return rc;
        }
        if (!pattern) {
            mm_token(c, &tok, &tlen);
            if (tlen == 0)
                return spmv_fail(err, SPMV_EINVAL, c->line, -1, -1,
                                 "line %lld holds no value; an entry line of a %s file ends with "
                                 "its value",
                                 (long long)c->line, coord ? "coordinate" : "array");
            rc = mm_value(c, tok, tlen, B->field, &val[*k], err);
            if (rc) return rc;
        }
        mm_token(c, &tok, &tlen);
        if (tlen != 0 && pattern) { /* checked as a number, then dropped, as the banner says */
            double ignored;
            rc = mm_value(c, tok, tlen, SPMV_MM_REAL, &ignored, err);
            if (rc) return rc;
            mm_token(c, &tok, &tlen);
        }
        if (tlen != 0)
            return spmv_fail(err, SPMV_EINVAL, c->line, -1, -1,
                             "line %lld holds more than an entry: '%.*s%s' follows it",
                             (long long)c->line, (int)(tlen < 40 ? tlen : 40), tok,
                             tlen > 40 ? "..." : "");
        (*k)++;
    }
    return rc;
}

/* The whole body in order: the reference, and where the parallel read declines. */
static int mm_read_serial(const spmv_mm_body *B, const char *text, int64_t len, int32_t *row,
                          int32_t *col, double *val, spmv_err *err) {
    mm_cursor c = {text, text + len, B->first_line};
    int64_t k = 0;
    int rc = mm_parse(B, &c, &k, B->nentries, row, col, val, err);
    if (rc) return rc;
    if (k < B->nentries)
        return spmv_fail(err, SPMV_EINVAL, c.line, k, B->nentries,
                         "the file ends after %lld of the %lld entries its size line declares",
                         (long long)k, (long long)B->nentries);
    return SPMV_OK;
}

#ifdef _OPENMP
/* Below this many bytes one thread reads the body: a fork costs more than it saves.  A build may
 * set it (the fuzz build does, so that its small inputs take the parallel path too). */
#ifndef SPMV_MM_PAR_MIN_BYTES
#define SPMV_MM_PAR_MIN_BYTES ((int64_t)1 << 20)
#endif
enum { MM_DECLINE = 1 };

/* Counts of [p, end), which starts at a line's start: entry lines (as mm_next_entry finds them:
 * a non-blank first byte other than '%') and line ends. */
static void mm_count(const char *p, const char *end, int64_t *entries, int64_t *lines) {
    int64_t e = 0, n = 0;
    while (p < end) {
        while (p < end && mm_blank(*p)) p++;
        e += p < end && *p != '\n' && *p != '%';
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        n += nl != NULL;
        p = nl != NULL ? nl + 1 : end;
    }
    *entries = e;
    *lines = n;
}

/* The body cut at line starts into nt pieces, counted, then parsed side by side, each piece's
 * entries written from its place.  Any failure (a count other than declared, a bad line, no
 * workspace) declines (MM_DECLINE), and the serial read then gives the first error in the text's
 * order, exactly. */
static int mm_read_parallel(const spmv_mm_body *B, const char *text, int64_t len, int nt,
                            int32_t *row, int32_t *col, double *val) {
    int64_t *at = spmv_malloc(4 * ((int64_t)nt + 1), sizeof(int64_t), NULL);
    if (at == NULL) return MM_DECLINE;
    int64_t *ent = at + nt + 1, *lines = ent + nt + 1, *failed = lines + nt + 1;
    at[0] = 0;
    for (int t = 1; t <= nt; t++) {
        int64_t q = len * t / nt;
        const char *nl =
            q > 0 && q < len ? memchr(text + q - 1, '\n', (size_t)(len - q + 1)) : NULL;
        at[t] = t == nt || nl == NULL ? len : (int64_t)(nl - text) + 1;
        if (at[t] < at[t - 1]) at[t] = at[t - 1];
    }
#pragma omp parallel for num_threads(nt) schedule(static, 1)
    for (int t = 0; t < nt; t++) mm_count(text + at[t], text + at[t + 1], &ent[t], &lines[t]);
    int64_t k = 0, line = B->first_line;
    for (int t = 0; t < nt; t++) { /* each piece's first entry and line */
        int64_t e = ent[t], n = lines[t];
        ent[t] = k;
        lines[t] = line;
        k += e;
        line += n;
    }
    ent[nt] = k;
    int64_t bad = k != B->nentries;
    if (!bad) {
#pragma omp parallel for num_threads(nt) schedule(static, 1)
        for (int t = 0; t < nt; t++) {
            mm_cursor c = {text + at[t], text + at[t + 1], lines[t]};
            int64_t kt = ent[t];
            failed[t] = mm_parse(B, &c, &kt, ent[t + 1], row, col, val, NULL) != SPMV_OK ||
                        kt != ent[t + 1];
        }
    }
    for (int t = 0; !bad && t < nt; t++) bad |= failed[t];
    spmv_free(at);
    return bad ? MM_DECLINE : SPMV_OK;
}
#endif

int spmv_mm_read(const spmv_mm_body *B, const char *text, int64_t len, int32_t *row, int32_t *col,
                 double *val, spmv_err *err) {
    int coord = B->format == SPMV_MM_COORDINATE, pattern = B->field == SPMV_MM_PATTERN;
    if (B->nrows < 1 || B->ncols < 1 || B->nentries < 0 || len < 0 || (len > 0 && text == NULL) ||
        (B->format != SPMV_MM_COORDINATE && B->format != SPMV_MM_ARRAY) ||
        B->field < SPMV_MM_REAL || B->field > SPMV_MM_PATTERN || (!coord && pattern) ||
        (B->nentries > 0 && ((coord && (row == NULL || col == NULL)) || (!pattern && val == NULL))))
        return spmv_fail(err, SPMV_EINVAL, -1, -1, -1,
                         "spmv_mm_read: a %d x %d body of %lld entries (format %d, field %d) with "
                         "%lld bytes and these arrays cannot be read",
                         B->nrows, B->ncols, (long long)B->nentries, B->format, B->field,
                         (long long)len);
#ifdef _OPENMP
    int nt = omp_get_max_threads();
    if (len >= SPMV_MM_PAR_MIN_BYTES && nt > 1 &&
        mm_read_parallel(B, text, len, nt, row, col, val) == SPMV_OK)
        return SPMV_OK;
#endif
    return mm_read_serial(B, text, len, row, col, val, err);
}
