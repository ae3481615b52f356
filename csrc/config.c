// csrc/config.c: configurations -- the one grammar of ids, their expansion and their columns
// SPDX-License-Identifier: BSD-3-Clause
//
// A configuration is a registry kernel (csrc/kernels.def) and its parameter slots (spmv_config).
// Its id is the kernel's id followed by "/name=value" items; this file parses ids, prints the
// canonical one, expands each kernel over its grid in registry order, and gives the columns a
// design row and a spmv_configs table take from a configuration.  pyspmv.configs and the model
// glue are views of these; an exported model header resolves its ids through them.
#include "spmv_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The parameter names ids may give, each one's design-row column (-1: none), and whether it is an
 * axis: a slot at its default is then not "given" (never printed, no column), so that adding the
 * axis to a kernel keeps the ids it had. */
static const struct {
    const char *name;
    int col;
    int axis;
} params[] = {
#define SPMV_PARAM(CODE, name) {#name, SPMV_COL_P_##CODE, 0},
#define SPMV_PARAM_NO_COLUMN(CODE, name) {#name, -1, 0},
#define SPMV_PARAM_AXIS(CODE, name) {#name, -1, 1},
#include "kernels.def"
};
#define NPARAMS ((int)(sizeof params / sizeof params[0]))

/* Index of the parameter called name[len] in params, or -1. */
static int param_index(const char *name, size_t len) {
    for (int i = 0; i < NPARAMS; i++)
        if (strlen(params[i].name) == len && memcmp(params[i].name, name, len) == 0) return i;
    return -1;
}

/* Whether slot k of K holds value v as a given parameter: always, except an axis at its default. */
static int slot_given(const spmv_kernel_desc *K, int k, int32_t v) {
    const char *name = K->param_name[k];
    int i = name != NULL ? param_index(name, strlen(name)) : -1;
    return !(i >= 0 && params[i].axis && v == K->param_default[k]);
}

/* s[len] quoted as Python's repr quotes a str (single quotes unless it holds one and no double
 * quote; control bytes escaped), cut to about 48 bytes with "..." so that a message keeps its end. */
static void quote(char *buf, size_t size, const char *s, size_t len) {
    int dq = memchr(s, '\'', len) != NULL && memchr(s, '"', len) == NULL;
    char q = dq ? '"' : '\'';
    size_t o = 0, cut = len > 48 ? 45 : len;
    if (size < 8) {
        if (size) buf[0] = '\0';
        return;
    }
    buf[o++] = q;
    for (size_t i = 0; i < cut && o + 8 < size; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '\\' || ch == (unsigned char)q) {
            buf[o++] = '\\';
            buf[o++] = (char)ch;
        } else if (ch == '\n' || ch == '\t' || ch == '\r') {
            buf[o++] = '\\';
            buf[o++] = ch == '\n' ? 'n' : ch == '\t' ? 't' : 'r';
        } else if (ch < 0x20 || ch == 0x7f) {
            o += (size_t)snprintf(buf + o, size - o, "\\x%02x", ch);
        } else {
            buf[o++] = (char)ch;
        }
    }
    if (cut < len && o + 4 < size) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o++] = q;
    buf[o] = '\0';
}

/* Whether v[len] is ASCII digits, after one '-' where signed; its value into *out when it fits
 * int32 (*fits = 0 otherwise). */
static int digits(const char *v, size_t len, int sign_ok, int32_t *out, int *fits) {
    size_t i = sign_ok && len > 0 && v[0] == '-';
    int64_t x = 0;
    *fits = 1;
    if (i == len) return 0;
    for (size_t k = i; k < len; k++) {
        if (v[k] < '0' || v[k] > '9') return 0;
        x = x * 10 + (v[k] - '0');
        if (x > (int64_t)INT32_MAX + 1) {
            *fits = 0;
            x = (int64_t)INT32_MAX + 1;
        }
    }
    if (i) x = -x;
    if (x > INT32_MAX || x < INT32_MIN) *fits = 0;
    *out = *fits ? (int32_t)x : 0;
    return 1;
}

int spmv_config_parse(const char *id, spmv_config *c, spmv_err *err) {
    char qid[64], qa[64], list[64];
    if (id == NULL || c == NULL)
        return spmv_fail(err, SPMV_EINVAL, -1, -1, -1,
                         "a configuration id and its output, not NULL");
    size_t n = strlen(id);
    spmv_what(err, qid, sizeof qid, "x"); /* "" where no message is taken */
    if (err != NULL) quote(qid, sizeof qid, id, n);
    /* The kernel: everything before the item holding the first '=' (the whole id without one). */
    const char *eq = strchr(id, '=');
    size_t klen = n;
    if (eq != NULL) {
        klen = 0;
        for (const char *s = eq; s > id; s--)
            if (s[-1] == '/') {
                klen = (size_t)(s - 1 - id);
                break;
            }
    }
    const spmv_kernel_desc *K = NULL;
    int ki = 0;
    for (; ki < spmv_kernel_count(); ki++) {
        const spmv_kernel_desc *d = spmv_kernel_get(ki);
        if (strlen(d->id) == klen && memcmp(d->id, id, klen) == 0) {
            K = d;
            break;
        }
    }
    if (K == NULL)
        return spmv_fail(err, SPMV_EINVAL, 0, -1, -1, "Unknown configuration id %s.", qid);
    memset(c, 0, sizeof *c);
    c->kernel = ki;
    int32_t seen = 0; /* slots named so far (an axis at its default is named but not given) */
    for (int k = 0; k < SPMV_NPARAM; k++) c->param[k] = K->param_default[k];
    /* The kernel's names as Python lists them: ['c', 'sigma'], or none. */
    size_t o = 0;
    list[0] = '\0';
    for (int k = 0; err != NULL && k < SPMV_NPARAM; k++)
        if (K->param_name[k] != NULL && o + 8 < sizeof list)
            o += (size_t)snprintf(list + o, sizeof list - o, "%s'%s'", o ? ", " : "[",
                                  K->param_name[k]);
    if (o) snprintf(list + o, sizeof list - o, "]");
    for (const char *s = klen < n ? id + klen + 1 : NULL; s != NULL;) {
        const char *end = strchr(s, '/');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        int64_t at = s - id;
        const char *e = (const char *)memchr(s, '=', len);
        if (e == NULL) {
            if (err != NULL) quote(qa, sizeof qa, s, len);
            return spmv_fail(err, SPMV_EINVAL, at, -1, -1,
                             "Configuration %s: %s follows the parameters; each must read "
                             "name=value.",
                             qid, qa);
        }
        size_t nlen = (size_t)(e - s), vlen = len - nlen - 1;
        int k = 0;
        while (k < SPMV_NPARAM && !(K->param_name[k] != NULL && strlen(K->param_name[k]) == nlen &&
                                    memcmp(K->param_name[k], s, nlen) == 0))
            k++;
        if (k == SPMV_NPARAM)
            return spmv_fail(err, SPMV_EINVAL, at, -1, -1,
                             "Configuration %s: '%.*s' is not a parameter of %s; it takes %s.", qid,
                             (int)(nlen < 32 ? nlen : 32), s, K->id, o ? list : "none");
        if ((seen >> k) & 1)
            return spmv_fail(err, SPMV_EINVAL, at, -1, -1,
                             "Configuration %s: parameter '%s' is given twice; give each at most "
                             "once.",
                             qid, K->param_name[k]);
        int32_t v = 0;
        int fits = 1, sign_ok = K->param_default[k] < 0;
        if (!digits(e + 1, vlen, sign_ok, &v, &fits)) {
            if (err != NULL) quote(qa, sizeof qa, e + 1, vlen);
            return spmv_fail(err, SPMV_EINVAL, at, -1, -1,
                             "Configuration %s: parameter '%s' must be %s. Got %s instead.", qid,
                             K->param_name[k],
                             sign_ok ? "an integer (ASCII digits, optionally after '-')"
                                     : "a non-negative integer (ASCII digits)",
                             qa);
        }
        int in_grid = K->ngrid[k] == 0 && fits;
        for (int g = 0; fits && g < K->ngrid[k]; g++) in_grid |= K->grid[k][g] == v;
        if (!in_grid) {
            char allowed[64] = "";
            size_t a = 0;
            for (int g = 0; g < K->ngrid[k] && a + 16 < sizeof allowed; g++)
                a += (size_t)snprintf(allowed + a, sizeof allowed - a, "%s%d", g ? ", " : "",
                                      (int)K->grid[k][g]);
            if (K->ngrid[k] == 0) snprintf(allowed, sizeof allowed, "within int32");
            /* the value as Python's int() prints it: sign, digits without leading zeros */
            const char *d = e + 1;
            size_t dl = vlen, neg = d[0] == '-';
            d += neg;
            dl -= neg;
            while (dl > 1 && d[0] == '0') d++, dl--;
            return spmv_fail(err, SPMV_EINVAL, at, fits ? v : -1, -1,
                             "Configuration %s: parameter '%s' of %s must be %s%s. Got %s%.*s "
                             "instead.",
                             qid, K->param_name[k], K->id, K->ngrid[k] ? "one of " : "", allowed,
                             neg && !(dl == 1 && d[0] == '0') ? "-" : "", (int)(dl < 40 ? dl : 40),
                             d);
        }
        c->param[k] = v;
        seen |= 1 << k;
        if (slot_given(K, k, v)) c->given |= 1 << k;
        s = end ? end + 1 : NULL;
    }
    return SPMV_OK;
}

int spmv_config_id(const spmv_config *c, char *buf, size_t size) {
    const spmv_kernel_desc *K = c != NULL ? spmv_kernel_get(c->kernel) : NULL;
    if (K == NULL) return -1;
    char tmp[1];
    if (buf == NULL || size == 0) {
        buf = tmp;
        size = 1;
    }
    int o = snprintf(buf, size, "%s", K->id);
    for (int k = 0; k < SPMV_NPARAM; k++)
        if (K->param_name[k] != NULL && ((c->given >> k) & 1))
            o += snprintf(buf + (size_t)o < buf + size ? buf + o : tmp,
                          (size_t)o < size ? size - (size_t)o : 1, "/%s=%d", K->param_name[k],
                          (int)c->param[k]);
    return o;
}

int32_t spmv_config_expand(int device, spmv_config *out) {
    int32_t n = 0;
    for (int i = 0; i < spmv_kernel_count(); i++) {
        const spmv_kernel_desc *K = spmv_kernel_get(i);
        if (K->device != device) continue;
        int32_t count = 1;
        for (int k = 0; k < SPMV_NPARAM; k++)
            if (K->param_name[k] != NULL && K->ngrid[k] > 0) count *= K->ngrid[k];
        for (int32_t j = 0; out != NULL && j < count; j++) {
            spmv_config *c = &out[n + j];
            memset(c, 0, sizeof *c);
            c->kernel = i;
            /* j in mixed radix over the gridded slots, the last slot fastest */
            int32_t r = j;
            for (int k = SPMV_NPARAM - 1; k >= 0; k--) {
                c->param[k] = K->param_default[k];
                if (K->param_name[k] == NULL || K->ngrid[k] == 0) continue;
                c->param[k] = K->grid[k][r % K->ngrid[k]];
                if (slot_given(K, k, c->param[k])) c->given |= 1 << k;
                r /= K->ngrid[k];
            }
        }
        n += count;
    }
    return n;
}

int spmv_config_columns(const spmv_config *c, spmv_config_cols *out, spmv_err *err) {
    const spmv_kernel_desc *K = c != NULL ? spmv_kernel_get(c->kernel) : NULL;
    if (K == NULL || out == NULL)
        return spmv_fail(err, SPMV_EINVAL, -1, c != NULL ? c->kernel : -1, spmv_kernel_count(),
                         "a configuration's kernel must be a registry index in [0, %d)",
                         spmv_kernel_count());
    out->format = K->format;
    out->param[0] = c->param[0];
    out->param[1] = c->param[1];
    out->unread = spmv_format_unread(K->format);
    out->launches = K->launches;
    for (int k = 0; k < SPMV_NPCOLS; k++) out->p[k] = NAN;
    for (int k = 0; k < SPMV_NPARAM; k++) {
        if (K->param_name[k] == NULL) continue;
        int i = param_index(K->param_name[k], strlen(K->param_name[k]));
        if (i < 0) /* a kernel's name missing from the list: refused, never dropped */
            return spmv_fail(err, SPMV_EINVAL, k, -1, -1,
                             "kernel %s: parameter '%s' is not in csrc/kernels.def's SPMV_PARAM "
                             "lists",
                             K->id, K->param_name[k]);
        if (((c->given >> k) & 1) && params[i].col >= 0)
            out->p[params[i].col - SPMV_NFEATURES] = c->param[k];
    }
    return SPMV_OK;
}

int spmv_configs_table(int32_t n, const char *const *ids, int32_t *format, int32_t *param,
                       int32_t *unread, double *p, double *launches, spmv_err *err) {
    for (int32_t j = 0; j < n; j++) {
        spmv_config c;
        spmv_config_cols cols;
        int rc = spmv_config_parse(ids[j], &c, err);
        if (rc == 0) rc = spmv_config_columns(&c, &cols, err);
        if (rc) {
            if (err != NULL) err->where = j;
            return rc;
        }
        format[j] = cols.format;
        param[2 * j] = cols.param[0];
        param[2 * j + 1] = cols.param[1];
        unread[j] = cols.unread;
        memcpy(p + (int64_t)j * SPMV_NPCOLS, cols.p, sizeof cols.p);
        launches[j] = cols.launches;
    }
    return SPMV_OK;
}

int spmv_configs_resolve(const spmv_configs *C, spmv_configs *R, void **block, spmv_err *err) {
    *R = *C;
    *block = NULL;
    if (C->format != NULL || C->ids == NULL || C->n <= 0) return SPMV_OK; /* checked later */
    int64_t n = C->n;
    /* one block: p[SPMV_NPCOLS*n], launches (double), then format, param[2n], unread (int32) */
    double *d = (double *)spmv_malloc(n * (SPMV_NPCOLS + 1) + (4 * n + 1) / 2, sizeof(double), err);
    if (d == NULL) return SPMV_ENOMEM;
    double *p = d, *launches = d + n * SPMV_NPCOLS;
    int32_t *format = (int32_t *)(launches + n), *param = format + n, *unread = param + 2 * n;
    int rc = spmv_configs_table(C->n, C->ids, format, param, unread, p, launches, err);
    if (rc) {
        spmv_free(d);
        return rc;
    }
    R->format = format;
    R->param = param;
    R->unread = unread;
    R->p = p;
    R->launches = launches;
    *block = d;
    return SPMV_OK;
}
