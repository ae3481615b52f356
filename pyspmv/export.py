"""Models out of Python: a self-contained C99 header (:func:`export_c`) and a versioned file
(:func:`save_model`, :func:`load_model`).

An exported header carries the C core's own sources (features, format size queries, the model
evaluators, ``spmv_rank``), textually included with ``static`` linkage, plus the model's arrays: the
same evaluator as :func:`pyspmv.rank`, not a second implementation.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import re
import shutil
import zipfile
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from .configs import DEVICES
from .features import FEATURE_NAMES
from .portable import (
    DTYPES,
    FORMAT_VERSION,
    KINDS,
    ROW_COLUMNS,
    VALUE_BYTES,
    RankModel,
    Spec,
    Table,
    check_model,
    native,
    portable,
    spec_fields,
)

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

#: The C core as one translation unit with static linkage, made from csrc/meson.build's source list
#: at build time (csrc/amalgamate.py) and installed beside this module.
EXPORTED_CORE = "_exported_core.h"


@cache
def core_source() -> str:
    """The C core as one translation unit with static linkage, guarded so that several exported
    headers can share it (the build's amalgamation, :data:`EXPORTED_CORE`)."""
    f = resources.files("pyspmv") / EXPORTED_CORE
    if not f.is_file():
        raise FileNotFoundError(f"pyspmv's C core amalgamation ({EXPORTED_CORE}) is missing from this installation; "
                                "export_c needs it: reinstall pyspmv (pip install .) so that meson builds it.")
    return f.read_text()


def _c_double(v: float) -> str:
    if np.isnan(v):
        return "NAN"
    if np.isinf(v):
        return "HUGE_VAL" if v > 0 else "-HUGE_VAL"
    r = repr(float(v))                                     # shortest round-trip form
    return r if ("." in r or "e" in r or "n" in r) else r + ".0"


#: Values an array's definition is written in at a time, twelve a line: its text is made and written a
#: piece at a time, so that export_c needs a few MB beyond the model whatever its size. Made whole, the
#: text took 16 times the model's array bytes (150 MB for the shipped cpu default's 9 MB).
_CHUNK = 12 * 1024
#: Most characters of one value in C (``-2.2250738585072014e-308``, ``-2147483648``, ``255``).
_C_WIDTH = {"double": 24, "int32_t": 11, "uint8_t": 3}


class _CArray:
    """The C definition of an array, written to a file in pieces (:data:`_CHUNK` values)."""

    def __init__(self, ctype: str, name: str, a: np.ndarray):
        self.ctype, self.name, self.a = ctype, name, np.ravel(a)

    def bound(self) -> int:
        """Most characters :meth:`write` writes: each value at its widest and its separator."""
        return 64 + len(self.name) + self.a.size * (_C_WIDTH[self.ctype] + 6)

    def write(self, fh: Any) -> None:
        fh.write(f"static const {self.ctype} {self.name}[{self.a.size}] = {{\n    ")
        for at in range(0, self.a.size, _CHUNK):
            part = self.a[at:at + _CHUNK].tolist()
            vals = [_c_double(x) for x in part] if self.ctype == "double" else [str(int(x)) for x in part]
            if at:
                fh.write(",\n    ")
            fh.write(",\n    ".join(", ".join(vals[i:i + 12]) for i in range(0, len(vals), 12)))
        fh.write("\n};")


#: Where an exported header's template takes its arrays (NUL: in no C text).
_ARRAYS = "\0arrays\0"


def _write_header(path: Path, text: str, arrays: list[str | _CArray]) -> None:
    """Write ``text`` to ``path`` with the definitions ``arrays`` (text, or arrays written in pieces), one a
    line, at :data:`_ARRAYS`: first to a temporary file beside it, renamed into place once whole, after
    checking that the disk has room for the most it can take."""
    head, tail = text.split(_ARRAYS)
    need = len(head) + len(tail) + sum((len(a) if isinstance(a, str) else a.bound()) + 1 for a in arrays)
    folder = path.parent if str(path.parent) else Path(".")
    free = shutil.disk_usage(folder).free
    if need > free:
        raise OSError(errno.ENOSPC, f"export_c needs up to {need} bytes of disk for {str(path)!r}; {free} are free "
                                    f"there")
    tmp = folder / f".{path.name}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(head)
            for i, a in enumerate(arrays):
                if i:
                    fh.write("\n")
                if isinstance(a, str):
                    fh.write(a)
                else:
                    a.write(fh)
            fh.write(tail)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def _spec_c(spec: Spec, prefix: str, out: list[str | _CArray]) -> str:
    """Arrays of ``spec`` as C definitions appended to ``out``; returns its designated initialiser.

    Field names come from the C core's field tables (:func:`pyspmv.portable.spec_fields`), never from
    the spec's own keys: a head field is a member of ``spmv_model``, a kind's field ``kind.member``
    (linear's ``coef``: ``member``) a member of the kind's parameters, ``spmv_model.<kind>``. Values
    are written as numbers."""
    f = spec.fields
    ctype = {"int32": "int32_t", "float64": "double", "uint8": "uint8_t"}
    init, own = [f".kind = {KINDS[spec.kind]}"], []
    for d in spec_fields(spec.kind):
        if d.type == "int":
            value = str(len(spec.subs) if d.derived else int(f[d.name]))
        elif d.type == "real":
            value = _c_double(float(f[d.name]))
        elif d.type == "models":
            inits = [_spec_c(s, f"{prefix}_s{i}", out) for i, s in enumerate(spec.subs)]
            value = f"{prefix}_stages"
            out.append(f"static const spmv_model {value}[{len(inits)}] = {{\n    " + ",\n    ".join(inits) + "\n};")
        elif f.get(d.name) is None or np.size(f[d.name]) == 0:
            value = "NULL"
        else:
            value = f"{prefix}_{d.name.replace('.', '_')}"
            out.append(_CArray(ctype[d.type], value, np.asarray(f[d.name])))
        (init if d.head else own).append(f".{d.name.rpartition('.')[2]} = {value}")
    if own:
        init.append(f".{spec.kind} = {{" + ", ".join(own) + "}")
    return "{" + ", ".join(init) + "}"


_C_KEYWORDS = frozenset((  # C11's keywords, and bool, true, false, typeof (C23), NULL and asm
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum", "extern",
    "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return", "short", "signed",
    "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "_Alignas",
    "_Alignof", "_Atomic", "_Bool", "_Complex", "_Generic", "_Imaginary", "_Noreturn", "_Static_assert",
    "_Thread_local", "bool", "true", "false", "NULL", "asm", "typeof"))
#: Reserved for the implementation (C11 7.1.3: a leading '_', any '__') and for pyspmv's core (spmv_, SPMV_).
_RESERVED = re.compile(r"_.*|.*__.*|(?i:(py)?spmv).*")
#: Suffixes of the names an exported header defines for ``name``. Its include guard is ``NAME_H`` with
#: ``name`` as given, so that the headers of two names that differ only in case can both be included
#: (guards of ``name.upper()`` once made the second of ``abc.h`` and ``ABC.h`` define nothing).
_GENERATED = ("NCONFIGS", "config_ids", "model", "configs", "rank", "predict", "m_", "cfg_", "NFEATURES",
              "feature_names", "rank_features", "predict_features")
_MAX_NAME = 40


def _check_name(name: Any) -> str:
    """``name`` as a header prefix: a C identifier, no keyword, nothing reserved, and no name the header
    generates from it (``NAME_*``, ``NAME_H``) that the core or the C library already uses."""
    msg = f"The 'name' parameter of export_c() must be a C identifier of at most {_MAX_NAME} characters"
    if not isinstance(name, str) or not _NAME.fullmatch(name) or len(name) > _MAX_NAME:
        raise ValueError(f"{msg} ([A-Za-z_][A-Za-z0-9_]*). Got {name!r} instead.")
    generated = [name, f"{name}_H", *(f"{name}_{s}" for s in _GENERATED)]
    bad = [g for g in generated if g in _C_KEYWORDS or _RESERVED.fullmatch(g)]
    if bad:
        raise ValueError(f"{msg}, not a C keyword and not reserved (a leading '_', '__', a 'spmv' or 'pyspmv' prefix in "
                         "any case). "
                         f"Got {name!r} instead; it would define {bad[0]!r}.")
    core = _core_identifiers()
    exact = set(generated[1:]) - {f"{name}_m_", f"{name}_cfg_"}
    clash = sorted(c for c in core if c in exact or c.startswith((f"{name}_m_", f"{name}_cfg_")))
    if clash:
        raise ValueError(f"{msg} whose names do not collide with pyspmv's core. Got {name!r} instead; the core already "
                         f"defines {clash[0]!r}.")
    return name


@cache
def _core_identifiers() -> frozenset[str]:
    return frozenset(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", core_source()))


#: What a configuration id may hold to be written into a C string literal as is.
_SAFE_ID = re.compile(r"[A-Za-z0-9_/=.-]+")


def export_c(model: Any, path: str | os.PathLike[str], *, name: str | None = None, dtype: str = "float64",
             device: str | None = None) -> Path:
    """Write ``model`` as one self-contained C99 header.

    The header holds the C core's sources (static linkage) and the model's arrays, and exposes, for
    ``name`` ``NAME``: ``NAME_NCONFIGS``, ``NAME_config_ids``, ``NAME_predict(nrows, ncols, indptr,
    indices, ms)`` and ``NAME_rank(nrows, ncols, indptr, indices, order, ms)`` (the C API, docs/c_api.md).
    Both check the CSR arrays first and return 0 or a negative ``SPMV_E*`` code; a configuration that
    cannot serve the matrix gets ``HUGE_VAL`` ms and ranks last. Compile with any C99 compiler and
    link libm (``-lm``). Its include guard is ``NAME_H``, ``NAME`` spelt exactly as given.

    The model must pass the C core's check, whose cost bound holds a ranking to
    ``SPMV_MODEL_MAX_STEPS`` (:func:`load_model`). The header is written a piece at a time, through a
    temporary file beside ``path`` renamed into place once whole: it needs a few MB of memory beyond
    the model, and up to 30 bytes of disk per array entry, which is checked before anything is
    written (a model file's 256 MiB of arrays at most make up to 1 GB of text).

    The header carries only numbers and identifiers that pyspmv generated and checked: the model's
    free text (``source``, ``meta``) stays out, field names come from the model kind's schema, and
    configuration ids must be ones of ``pyspmv.configs(device)``.

    A model fitted on the user's own schema (``features``/``params``) ranks its own configurations
    from its own feature vector instead: its header exposes ``NAME_NCONFIGS``, ``NAME_NFEATURES``,
    ``NAME_config_ids``, ``NAME_feature_names`` (the user's names, written only as escaped string
    literals), ``NAME_predict_features(features, ms)`` and ``NAME_rank_features(features, order,
    ms)``, ``features[NAME_NFEATURES]`` in the order of ``NAME_feature_names`` (NaN: missing).

    Parameters
    ----------
    model : fitted pyspmv.models estimator or RankModel
    path : path of the header to write
    name : str, optional
        C identifier prefix; default: the file's stem. Not a C keyword, not reserved (a leading
        ``_``, ``__``, a ``spmv`` or ``pyspmv`` prefix in any case), and no name the header defines
        (``NAME_*``, ``NAME_H``) may be one of the core's.
    dtype : {'float32', 'float64'}
        The value type it ranks for (bytes moved depend on it).
    device : {'cpu', 'cuda'}, optional
        For estimators: whose configurations; default the model's.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ValueError
        A bad ``name`` or ``dtype``, a value type the model has no table for, or a model that fails
        :func:`pyspmv.portable.check_model` or the C core's check (its cost included).
    OSError
        The disk has less room than the header may take (``errno.ENOSPC``, with both figures), or
        writing fails; no partial header is left.
    """
    path = Path(path)
    N = _check_name(path.stem if name is None else name)
    if dtype not in DTYPES:
        raise ValueError(f"The 'dtype' parameter of export_c() must be one of {DTYPES}. Got {dtype!r} instead.")
    rm = portable(model, device)
    check_model(rm)
    rm.capsule(dtype)             # the C core's check, its cost within SPMV_MODEL_MAX_STEPS included
    if rm.features is not None:
        _write_header(path, *_features_header(rm, N, dtype))
        return path
    t = rm.table(dtype).ranked()
    n = len(t.config_ids)
    for cid in t.config_ids:                      # check_model knows them all; written into C only if plain
        if not _SAFE_ID.fullmatch(cid):
            raise ValueError(f"The model's configuration id {cid!r} holds characters an exported header does not carry.")
    arrays: list[str | _CArray] = []
    model_init = _spec_c(t.spec, f"{N}_m", arrays)
    cfg = t.config_arrays(rm.gpu)
    # the ids, which the core resolves on each call (spmv_configs.ids), then the model's groups and columns
    items = [f".n = {n}", f".nextra = {int(cfg['cfg.nextra'])}", f".ids = {N}_config_ids"]
    for k, ct in (("cfg.group", "int32_t"), ("cfg.extra", "double")):
        nm = f"{N}_cfg_{k[4:]}"
        if np.size(cfg[k]):
            arrays.append(_CArray(ct, nm, cfg[k]))
        items.append(f".{k[4:]} = {nm if np.size(cfg[k]) else 'NULL'}")
    cfg_init = ", ".join(items)
    dev = cfg["dev"]
    ids = ",\n    ".join(f'"{c}"' for c in t.config_ids)
    output = "predicted ms" if rm.score == "ms" else "score (lower is better)"
    text = f"""/* {N}.h: a pyspmv ranking model exported by pyspmv.export_c (portable format {FORMAT_VERSION}).
 * Model kind: {t.spec.kind}; device: {rm.device}; value type: {dtype}; {n} configurations; output: {output}.
 *
 *   {N}_NCONFIGS, {N}_config_ids[{N}_NCONFIGS]
 *   int {N}_predict(int32_t nrows, int32_t ncols, const int32_t *indptr, const int32_t *indices, double *ms);
 *   int {N}_rank(int32_t nrows, int32_t ncols, const int32_t *indptr, const int32_t *indices, int *order,
 *                double *ms);
 * CSR with sorted, distinct column indices (checked); ms[{N}_NCONFIGS], order[{N}_NCONFIGS] are the
 * caller's.  Return 0 or a negative SPMV_E* code.  Needs a C99 compiler and libm (-lm); nothing else.
 * The C core below is pyspmv's own (csrc/), included with static linkage.
 * SPDX-License-Identifier: BSD-3-Clause */
#ifndef {N}_H
#define {N}_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

{core_source()}

/* ---- model {N} ---- */
#define {N}_NCONFIGS {n}
{_ARRAYS}

SPMV_API const char *const {N}_config_ids[{N}_NCONFIGS] = {{
    {ids}
}};

SPMV_API const spmv_model {N}_model = {model_init};

SPMV_API const spmv_configs {N}_configs = {{{cfg_init}}};

/* Same as {N}_predict, plus order[0..{N}_NCONFIGS) = configuration indices, fastest first. */
SPMV_API int {N}_rank(int32_t nrows, int32_t ncols, const int32_t *indptr, const int32_t *indices, int *order,
                   double *ms) {{
    spmv_csr A;
    spmv_gpu_props dev;
    int32_t o[{N}_NCONFIGS];
    int rc;
    if (indptr == NULL || ms == NULL || nrows < 1 || ncols < 1) return SPMV_EINVAL;
    A.nrows = nrows;
    A.ncols = ncols;
    A.indptr = indptr;
    A.indices = indices;
    dev.sm_count = {int(dev[0])};
    dev.threads_per_sm = {int(dev[1])};
    dev.warp_size = {int(dev[2])};
    rc = spmv_csr_check(&A, (int64_t)nrows + 1, indptr[nrows] >= 0 ? indptr[nrows] : 0, NULL);
    if (rc == 0) rc = spmv_rank(&A, &dev, &{N}_configs, &{N}_model, {VALUE_BYTES[dtype]}, NULL, o, ms, NULL, NULL);
    if (rc == 0 && order != NULL)
        for (int j = 0; j < {N}_NCONFIGS; j++) order[j] = (int)o[j];
    return rc;
}}

/* Predicted runtime in ms of every configuration for a CSR matrix; returns 0 or a negative error code. */
SPMV_API int {N}_predict(int32_t nrows, int32_t ncols, const int32_t *indptr, const int32_t *indices, double *ms) {{
    return {N}_rank(nrows, ncols, indptr, indices, NULL, ms);
}}

#endif /* {N}_H */
"""
    _write_header(path, text, arrays)
    return path


def _c_string(text: str) -> str:
    """``text`` as a C string literal: every byte but [A-Za-z0-9_] as a three-digit octal escape, so that
    no quote, backslash, newline, comment or trigraph a user's name holds reaches the C source as is."""
    safe = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"
    return '"' + "".join(chr(b) if b in safe else f"\\{b:03o}" for b in text.encode()) + '"'


def _features_header(rm: RankModel, N: str, dtype: str) -> tuple[str, list[str | _CArray]]:
    """The header of a model on its own features (see :func:`export_c`), and the arrays it takes at
    :data:`_ARRAYS`."""
    t = rm.table(dtype).ranked()
    assert rm.features is not None
    n, nf = len(t.config_ids), len(rm.features)
    arrays: list[str | _CArray] = []
    model_init = _spec_c(t.spec, f"{N}_m", arrays)
    items = [f".n = {n}", f".nextra = {int(t.extra.shape[1])}"]
    arrays.append(_CArray("int32_t", f"{N}_cfg_group", np.asarray(t.group, np.int32)))
    items.append(f".group = {N}_cfg_group")
    if t.extra.size:
        arrays.append(_CArray("double", f"{N}_cfg_extra", t.extra))
        items.append(f".extra = {N}_cfg_extra")
    output = "predicted ms" if rm.score == "ms" else "score (lower is better)"
    ids = ",\n    ".join(_c_string(c) for c in t.config_ids)
    names = ",\n    ".join(_c_string(f) for f in rm.features)
    text = f"""/* {N}.h: a pyspmv ranking model on its own features, exported by pyspmv.export_c (portable format
 * {FORMAT_VERSION}).  Model kind: {t.spec.kind}; value type: {dtype}; {n} configurations; {nf} features;
 * output: {output}.
 *
 *   {N}_NCONFIGS, {N}_config_ids[{N}_NCONFIGS], {N}_NFEATURES, {N}_feature_names[{N}_NFEATURES]
 *   int {N}_predict_features(const double *features, double *ms);
 *   int {N}_rank_features(const double *features, int *order, double *ms);
 * features[{N}_NFEATURES] in the order of {N}_feature_names (NaN: missing); ms[{N}_NCONFIGS] and
 * order[{N}_NCONFIGS] (configuration indices, fastest first) are the caller's.  Return 0 or a
 * negative SPMV_E* code.  Needs a C99 compiler and libm (-lm); nothing else.
 * SPDX-License-Identifier: BSD-3-Clause */
#ifndef {N}_H
#define {N}_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

{core_source()}

/* ---- model {N} ---- */
#define {N}_NCONFIGS {n}
#define {N}_NFEATURES {nf}
{_ARRAYS}

SPMV_API const char *const {N}_config_ids[{N}_NCONFIGS] = {{
    {ids}
}};

SPMV_API const char *const {N}_feature_names[{N}_NFEATURES] = {{
    {names}
}};

SPMV_API const spmv_model {N}_model = {model_init};

SPMV_API const spmv_configs {N}_configs = {{{", ".join(items)}}};

/* Every configuration's prediction for one feature vector, and order[0..{N}_NCONFIGS) = configuration
 * indices, fastest first (order may be NULL). */
SPMV_API int {N}_rank_features(const double *features, int *order, double *ms) {{
    int32_t o[{N}_NCONFIGS];
    int rc;
    if (features == NULL || ms == NULL) return SPMV_EINVAL;
    rc = spmv_rank_features(&{N}_configs, &{N}_model, features, {N}_NFEATURES, NULL, o, ms, NULL, NULL);
    if (rc == 0 && order != NULL)
        for (int j = 0; j < {N}_NCONFIGS; j++) order[j] = (int)o[j];
    return rc;
}}

/* Every configuration's prediction for one feature vector. */
SPMV_API int {N}_predict_features(const double *features, double *ms) {{
    return {N}_rank_features(features, NULL, ms);
}}

#endif /* {N}_H */
"""
    return text, arrays


# ---- save / load --------------------------------------------------------------------------------------

_MAGIC = "pyspmv-model"
#: Most bytes of arrays a model file may hold, decompressed: 14 times the shipped defaults' 18 MB (two
#: value types of 9 MB), and a 256-tree ForestModel over the H100's 135 configurations. Reading is
#: LZMA's decompression, about 120 MB/s on a 2-core VM: at most about 2 s. Before, 1 GiB let an 84 KB
#: file take 20 s and 1.7 GB to be read.
MAX_MODEL_BYTES = 1 << 28
#: Most bytes of ``header.json`` (configuration ids, scalars, provenance): the shipped defaults' are 4
#: and 13 KB; a model on its own features of 100,000 configurations named in 100 characters fits.
MAX_HEADER_BYTES = 1 << 24
_MAX_MEMBERS = 4096
try:                                    # lzma is optional in a CPython build
    import lzma  # noqa: F401
    _ZIP_COMPRESSION = zipfile.ZIP_LZMA
except ImportError:
    _ZIP_COMPRESSION = zipfile.ZIP_DEFLATED
_MAX_TEXT = 1 << 16


def _spec_meta(spec: Spec, key: str, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    scalars = {}
    for k, v in spec.fields.items():
        if k == "rank_bytes_pow" and v == 0:
            continue  # its default: the file stays readable by a pyspmv of format version 1 or 2
        if isinstance(v, np.ndarray):
            arrays[f"{key}/{k}"] = v
        else:
            scalars[k] = v.item() if isinstance(v, np.generic) else v
    return {"kind": spec.kind, "scalars": scalars,
            "subs": [_spec_meta(s, f"{key}/sub{i}", arrays) for i, s in enumerate(spec.subs)]}


def save_model(model: Any, path: str | os.PathLike[str], *, device: str | None = None) -> Path:
    """Save ``model`` in portable form: the one model file format of pyspmv.

    The file is a NumPy ``.npz`` archive: ``header.json`` (format version, pyspmv version, device,
    the feature schema, each value type's configuration ids, scalar fields, the conversion-cost fit
    and provenance in ``meta``) and the arrays. Load it with :func:`load_model`; no pickle is involved.

    Parameters
    ----------
    model : fitted pyspmv.models estimator (any of ``pyspmv.models.MODELS``) or RankModel
    path : path of the file to write
    device : {'cpu', 'cuda'}, optional
        For estimators: whose configurations; default the model's.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    TypeError
        ``model`` is neither a pyspmv.models estimator nor a RankModel.
    sklearn.exceptions.NotFittedError
        The estimator is not fitted.
    ValueError
        The model fails :func:`pyspmv.portable.check_model` (a RankModel made by hand, say).
    """
    from . import __version__
    rm = portable(model, device)
    check_model(rm)
    arrays: dict[str, np.ndarray] = {}
    tables = {}
    for dtype, t in rm.tables.items():
        arrays[f"{dtype}/group"] = np.asarray(t.group, np.int32)
        arrays[f"{dtype}/extra"] = np.asarray(t.extra, np.float64)
        tables[dtype] = {"config_ids": list(t.config_ids), "spec": _spec_meta(t.spec, f"{dtype}/spec", arrays)}
    own = rm.features is not None                  # the model's own features: format version 2
    by_bytes = any(t.spec.fields.get("rank_bytes_pow", 0) != 0 for t in rm.tables.values())  # version 3
    header = {"format": _MAGIC, "version": 3 if by_bytes else 2 if own else 1, "pyspmv": __version__,
              "device": rm.device,
              "source": rm.source, "score": rm.score, "gpu": rm.gpu, "meta": rm.meta,
              "feature_names": list(rm.features if own else FEATURE_NAMES),
              "row_columns": [] if own else list(ROW_COLUMNS), "tables": tables}
    if own:
        header["features"] = list(rm.features)
    path = Path(path)
    buf = io.BytesIO()
    members = {"header.json": np.frombuffer(json.dumps(header).encode(), np.uint8), **arrays}
    # An .npz as np.savez writes it, but LZMA-compressed where Python has lzma: a forest's leaf values
    # compress to a third of deflate's (the shipped cpu default: 8.9 MB deflated, 3.1 MB).  np.load
    # and _read_npz read either.
    with zipfile.ZipFile(buf, "w", compression=_ZIP_COMPRESSION) as zf:
        for key, arr in members.items():
            with zf.open(f"{key}.npy", "w", force_zip64=True) as fh:
                np.lib.format.write_array(fh, np.asanyarray(arr), allow_pickle=False)
    path.write_bytes(buf.getvalue())
    return path


class _Corrupt(ValueError):
    """A model file that cannot be read as one (its message names the member or key)."""


def _array_limit() -> tuple[int, str]:
    """Most bytes of arrays a model file may decompress to here, and what sets it."""
    limit, what = MAX_MODEL_BYTES, "pyspmv's limit MAX_MODEL_BYTES"
    try:
        avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        if avail < limit:
            limit, what = avail, "the memory available"
    except (ValueError, OSError, AttributeError):
        pass
    return limit, what


def _check_declared(infos: list[zipfile.ZipInfo], limit: int, what: str) -> None:
    """The members' sizes as the archive's directory declares them (zipfile stops a member there: it
    cannot expand past it), against :data:`MAX_HEADER_BYTES` for ``header.json`` and ``limit`` for the
    arrays, in all, before anything is decompressed (also :mod:`pyspmv.cache`'s, before it copies a
    model file)."""
    if len(infos) > _MAX_MEMBERS:
        raise _Corrupt(f"it has {len(infos)} members; a model file has at most {_MAX_MEMBERS}")
    declared = 0
    for info in infos:
        if info.filename == "header.json.npy":
            if info.file_size > MAX_HEADER_BYTES + 4096:      # + the .npy header
                raise _Corrupt(f"member 'header.json' would decompress to {info.file_size} bytes; a model "
                               f"file's header holds at most {MAX_HEADER_BYTES} (MAX_HEADER_BYTES)")
            continue
        declared += info.file_size
        if declared > limit + 4096 * len(infos):
            raise _Corrupt(f"its arrays would decompress to {declared} bytes or more (member {info.filename!r} "
                           f"declares {info.file_size}), past {limit} bytes, {what}")


def _read_npz(path: Path) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` file, read without pickle. Before anything is decompressed, the
    sizes the archive declares (:func:`_check_declared`: :data:`MAX_HEADER_BYTES` for ``header.json``,
    :data:`MAX_MODEL_BYTES` and the memory available for the arrays); then each array's shape and
    dtype from its ``.npy`` header, before its data is read."""
    out: dict[str, np.ndarray] = {}
    total = 0
    limit, what = _array_limit()
    try:
        zf = zipfile.ZipFile(path)
    except (FileNotFoundError, MemoryError):
        raise
    except Exception as exc:  # noqa: BLE001 (BadZipFile, OSError, struct.error, ...: all mean not a model)
        raise _Corrupt(f"it is not a zip archive ({type(exc).__name__}: {exc})") from None
    with zf:
        infos = zf.infolist()
        _check_declared(infos, limit, what)
        for info in infos:
            name = info.filename
            if not name.endswith(".npy") or name[:-4] in out:
                raise _Corrupt(f"member {name!r} is not a NumPy array of its own")
            key = name[:-4]
            try:
                with zf.open(info) as fh:
                    version = np.lib.format.read_magic(fh)
                    if version == (1, 0):
                        shape, _, dt = np.lib.format.read_array_header_1_0(fh)
                    elif version == (2, 0):
                        shape, _, dt = np.lib.format.read_array_header_2_0(fh)
                    else:
                        raise _Corrupt(f"array {key!r} has .npy version {version}; model files use 1.0 or 2.0")
                    if dt.hasobject or dt.kind not in "biuf":
                        raise _Corrupt(f"array {key!r} has dtype {dt}; model files hold numbers only")
                    nbytes = int(np.prod(shape, dtype=object)) * dt.itemsize
                    if key == "header.json":
                        if nbytes > MAX_HEADER_BYTES:
                            raise _Corrupt(f"member 'header.json' holds {nbytes} bytes; a model file's header holds at "
                                           f"most {MAX_HEADER_BYTES} (MAX_HEADER_BYTES)")
                    else:
                        total += nbytes
                    if total > limit:
                        raise _Corrupt(f"array {key!r} of shape {shape} would take the arrays past {limit} bytes, "
                                       f"{what}")
                with zf.open(info) as fh:
                    a = np.lib.format.read_array(fh, allow_pickle=False)
            except (_Corrupt, MemoryError):
                raise
            except Exception as exc:  # noqa: BLE001 (zlib.error, EOFError, OverflowError, ...: a corrupt member)
                raise _Corrupt(f"array {key!r} cannot be read ({type(exc).__name__}: {exc})") from None
            out[key] = np.ascontiguousarray(native(a))
    return out


def _want(cond: bool, what: str, expected: str, got: Any) -> None:
    if not cond:
        raise _Corrupt(f"{what} must be {expected}. Got {got!r} instead" if len(repr(got)) < 200 else
                       f"{what} must be {expected}. Got a {type(got).__name__} instead")


def _spec_load(meta: Any, key: str, arrays: dict[str, np.ndarray], used: set[str], depth: int = 0) -> Spec:
    _want(isinstance(meta, dict) and set(meta) == {"kind", "scalars", "subs"}, f"header entry {key!r}",
          "a dict of 'kind', 'scalars', 'subs'", meta)
    kind, scalars, subs = meta["kind"], meta["scalars"], meta["subs"]
    _want(isinstance(kind, str) and kind in KINDS, f"the model kind of {key!r}", f"one of {tuple(KINDS)}", kind)
    _want(isinstance(scalars, dict), f"the scalars of {key!r}", "a dict", scalars)
    _want(isinstance(subs, list) and (depth == 0 or not subs) and len(subs) <= 64, f"the stages of {key!r}",
          "a list of at most 64 (cascades only, one level)", subs)
    fields: dict[str, Any] = {"rank_bytes_pow": 0.0, **scalars}  # format versions 1 and 2 lack it: by ms alone
    prefix = key + "/"
    for k, a in arrays.items():
        if k.startswith(prefix) and "/" not in k[len(prefix):]:
            f = k[len(prefix):]
            if f in fields:
                raise _Corrupt(f"field {f!r} of {key!r} is both a scalar and an array")
            fields[f] = a
            used.add(k)
    return Spec(kind, fields, [_spec_load(s, f"{key}/sub{i}", arrays, used, depth + 1) for i, s in enumerate(subs)])


def load_model(path: str | os.PathLike[str]) -> RankModel:
    """Load a model saved by :func:`save_model`.

    Model files are untrusted: the file is read without pickle, every array's dtype (big-endian ones
    are byte-swapped), shape and length, every scalar's type and range, the GPU properties and the
    conversion-cost fit are checked against the model kind's schema before the C core reads them,
    and then the C core's own model check runs.

    What a file may cost is bounded, and a file past a bound is refused with its figure and the
    bound:

    - reading it: its arrays decompress to at most :data:`MAX_MODEL_BYTES` (256 MiB, and no more
      than the memory available), ``header.json`` to at most :data:`MAX_HEADER_BYTES` (16 MiB), both
      checked on the sizes the archive declares before anything is decompressed; reading takes at
      most about 2 s and twice the arrays' bytes of memory on a 2-core VM;
    - ranking with it: evaluating the model for every configuration of one matrix takes at most
      ``SPMV_MODEL_MAX_STEPS`` = 2^28 steps (``pyspmv._core.MODEL_MAX_STEPS``), counted from the
      model's arrays as the C core evaluates them: per configuration, the inputs, then the longest
      root-to-leaf walk of each tree of its group (a forest: of every tree, plus trees x outputs
      additions), the points of the largest set searched x (inputs + 1 + log2 of its size), the
      support vectors x (inputs + 1), the derived inputs and terms, or the stages' own costs. The
      shipped defaults take 6.6e5 (cuda) and 1.8e5 (cpu); 2^28 takes 0.5 s to 5 s on a 2-core VM,
      and Ctrl-C stops it.

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        Everything else, naming the key or field and what was expected: the file is not a pyspmv model
        file or is corrupt; it was written by a newer format version; its feature schema or design-row
        columns differ from this pyspmv's; a configuration id it ranks is unknown here, belongs to
        another device or is not one of ``pyspmv.configs(device)``; a field has the wrong type, dtype
        or length; its arrays fail the C core's model check.
    """
    path = Path(path)
    where = f"Model file {str(path)!r}"
    try:
        arrays = _read_npz(path)
        raw = arrays.pop("header.json", None)
        _want(raw is not None and raw.dtype == np.uint8 and raw.ndim == 1, "the member 'header.json'",
              "1-D uint8 JSON text", None if raw is None else f"{raw.dtype} of shape {raw.shape}")
        header = json.loads(bytes(raw).decode())
        _want(isinstance(header, dict) and header.get("format") == _MAGIC, "the header", f"a {_MAGIC!r} header",
              type(header).__name__)
        version = header.get("version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise _Corrupt(f"its format version must be an int >= 1. Got {version!r} instead")
        if version > FORMAT_VERSION:
            raise _Refused(f"{where} has format version {version!r}; this pyspmv reads up to {FORMAT_VERSION}. "
                           "Upgrade pyspmv or re-export the model.")
        own = header.get("features")                 # format 2: a model on its own features
        _want(own is None or isinstance(own, list), "the header's 'features'", "a list or absent", own)
        for k, typ in (("device", type(None) if own is not None else str), ("source", str), ("score", str),
                       ("gpu", dict), ("meta", dict), ("feature_names", list), ("row_columns", list),
                       ("tables", dict)):
            _want(isinstance(header.get(k), typ), f"the header's {k!r}", f"a {typ.__name__}", header.get(k))
        _want(len(header["source"]) <= _MAX_TEXT, "the header's 'source'", f"at most {_MAX_TEXT} characters",
              f"{len(header['source'])} characters")
        used: set[str] = set()
        raw_tables = {}
        for d, m in header["tables"].items():
            _want(isinstance(m, dict) and set(m) == {"config_ids", "spec"}, f"the header's table {d!r}",
                  "a dict of 'config_ids' and 'spec'", m)
            for k in ("group", "extra"):
                _want(f"{d}/{k}" in arrays, f"the array '{d}/{k}'", "present", None)
                used.add(f"{d}/{k}")
            raw_tables[d] = (m["config_ids"], arrays[f"{d}/group"], arrays[f"{d}/extra"],
                             _spec_load(m["spec"], f"{d}/spec", arrays, used))
        extra_keys = sorted(set(arrays) - used)
        if extra_keys:
            raise _Corrupt(f"array {extra_keys[0]!r} belongs to no field of the model")
    except _Refused:
        raise
    except FileNotFoundError:
        raise
    except (_Corrupt, OSError, ValueError, zipfile.BadZipFile, EOFError, UnicodeDecodeError, RecursionError) as exc:
        hint = ""
        with contextlib.suppress(OSError), open(path, "rb") as fh:
            if fh.read(1) == b"\x80":
                hint = (" It looks like a pickle, which pyspmv never reads (reading one runs code); save the estimator "
                        "with pyspmv.save_model() instead.")
        raise ValueError(f"{str(path)!r} is not a pyspmv model file or is corrupt: {exc}.{hint}") from None
    if own is None and (header["feature_names"] != list(FEATURE_NAMES) or header["row_columns"] != list(ROW_COLUMNS)):
        theirs, ours = [str(f)[:64] for f in header["feature_names"]], list(FEATURE_NAMES)
        diff = [f for f in theirs if f not in ours] + [f for f in ours if f not in theirs]
        raise ValueError(f"{where} was made with another feature schema ({len(theirs)} features, "
                         f"{len(header['row_columns'])} design columns) than this pyspmv's ({len(ours)}, "
                         f"{len(ROW_COLUMNS)}); differing: {diff[:6] or 'the order'}. Retrain the model.")
    device = header["device"]
    if own is None and device not in DEVICES:
        raise ValueError(f"{where} names device {device[:64]!r}; known devices: {DEVICES}.")
    tables = {}
    for dtype, (ids, group, extra, spec) in raw_tables.items():
        if dtype not in DTYPES:
            raise ValueError(f"{where} has a table for value type {dtype[:64]!r}; known: {DTYPES}.")
        tables[dtype] = Table(ids, group, extra, spec)
    rm = RankModel(device, tables, source=header["source"], gpu=header["gpu"], score=header["score"],
                   meta=header["meta"], features=own)
    check_model(rm, where)
    for dtype in tables:
        try:
            rm.capsule(dtype)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{where} fails the model check for {dtype}: {exc}") from None
    return rm


class _Refused(ValueError):
    """A readable file that this version refuses (kept apart from corruption)."""


def read_model(path: str | os.PathLike[str]) -> RankModel:
    """A model from a file, whatever its suffix: :func:`load_model`. Pickles are refused (reading one
    runs code): the ValueError says to save the estimator with :func:`save_model` instead."""
    return load_model(path)
