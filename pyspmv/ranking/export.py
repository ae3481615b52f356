"""Models out of Python as a self-contained header for C99, C++17 and CUDA (:func:`export_c`); model files
are :mod:`pyspmv.ranking.modelfile`'s.

An exported header carries the C core's own sources (features, format size queries, the model
evaluators, ``spmv_rank``), textually included with ``static`` linkage, plus the model's arrays: the
same evaluator as :func:`pyspmv.rank`, not a second implementation. It is a single-file library: the
one file that defines ``NAME_IMPLEMENTATION`` compiles the core and the model, every other file sees
only the declarations, so that a solver's own files compile in a fraction of a second.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import errno
import os
import re
import shutil
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from .._atomic import write_atomically
from .._params import OneOf, validate
from ..matrices.matrix import DTYPES, VALUE_BYTES
from .checks import check_model
from .portable import ModelLike, portable
from .rankmodel import RankModel
from .schema import FORMAT_VERSION, KINDS, spec_fields
from .spec import Spec

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

    def write(tmp: str) -> None:
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
    write_atomically(path, write, ".h")


def _spec_c(spec: Spec, prefix: str, out: list[str | _CArray], lines: list[str], at: int, used: list[int]) -> None:
    """Arrays of ``spec`` as C definitions appended to ``out``, and the statements that set model ``m[at]``
    from them appended to ``lines`` (its sub-models take ``m[used[0]]`` on, counted in ``used[0]``).

    Field names come from the C core's field tables (:func:`pyspmv.ranking.schema.spec_fields`), never from
    the spec's own keys: a head field is a member of ``spmv_model``, a kind's field ``kind.member``
    (linear's ``coef``: ``member``) a member of the kind's parameters, ``spmv_model.<kind>``. Values
    are written as numbers. Statements rather than an initialiser: C++17 has no designated
    initialisers, and positional ones would tie the header to the struct's member order."""
    f = spec.fields
    ctype = {"int32": "int32_t", "float64": "double", "uint8": "uint8_t"}
    m = f"m[{at}]"
    lines.append(f"{m}.kind = {KINDS[spec.kind]};")
    for d in spec_fields(spec.kind):
        if d.type == "int":
            value = str(len(spec.subs) if d.derived else int(f[d.name]))
        elif d.type == "real":
            value = _c_double(float(f[d.name]))
        elif d.type == "models":
            first = used[0]
            used[0] += len(spec.subs)
            for i, s in enumerate(spec.subs):
                _spec_c(s, f"{prefix}_s{i}", out, lines, first + i, used)
            value = f"m + {first}"
        elif f.get(d.name) is None or np.size(f[d.name]) == 0:
            continue                                       # NULL: m is zeroed first
        else:
            value = f"{prefix}_{d.name.replace('.', '_')}"
            out.append(_CArray(ctype[d.type], value, np.asarray(f[d.name])))
        member = d.name.rpartition(".")[2]
        lines.append(f"{m}.{member} = {value};" if d.head else f"{m}.{spec.kind}.{member} = {value};")


def _model_c(spec: Spec, N: str, out: list[str | _CArray]) -> str:
    """``N_NMODELS`` and ``N_model_set(m)``, which sets ``m[N_NMODELS]`` to ``spec`` (``m[0]``) and its
    sub-models; the arrays it points to are appended to ``out``."""
    lines: list[str] = []
    used = [1]
    _spec_c(spec, f"{N}_m", out, lines, 0, used)
    body = "\n    ".join(lines)
    return (f"#define {N}_NMODELS {used[0]}\n"
            f"static void {N}_model_set(spmv_model *m) {{\n"
            f"    memset(m, 0, sizeof(spmv_model) * {N}_NMODELS);\n    {body}\n}}")


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
_GENERATED = ("NCONFIGS", "config_ids", "NMODELS", "model_set", "configs", "rank", "predict", "m_", "cfg_",
              "NFEATURES", "feature_names", "rank_features", "predict_features", "IMPLEMENTATION", "IMPLEMENTED")
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


def export_c(model: ModelLike, path: str | os.PathLike[str], *, name: str | None = None, dtype: str = "float64",
             device: str | None = None) -> Path:
    """Write ``model`` as one self-contained header for C99, C++17 and CUDA.

    The header declares, for ``name`` ``NAME`` and with C linkage: ``NAME_NCONFIGS``,
    ``NAME_config_ids``, ``NAME_predict(nrows, ncols, indptr, indices, ms)`` and ``NAME_rank(nrows,
    ncols, indptr, indices, order, ms)`` (the C API, docs/c_api.md). Both check the CSR arrays first
    and return 0 or a negative ``SPMV_E*`` code; a configuration that cannot serve the matrix gets
    ``HUGE_VAL`` ms and ranks last. In the one file of a program that defines ``NAME_IMPLEMENTATION``
    before including it, it also holds the C core's sources (static linkage) and the model's arrays,
    and defines them there; its opening comment says so. It compiles as C99 or later, as C++17 (g++,
    clang++) and under nvcc, warning-free with ``-Wall -Wextra``, and needs libm (``-lm``). Its
    include guard is ``NAME_H``, ``NAME`` spelt exactly as given.

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
        :func:`pyspmv.ranking.checks.check_model` or the C core's check (its cost included).
    OSError
        The disk has less room than the header may take (``errno.ENOSPC``, with both figures), or
        writing fails; no partial header is left.
    """
    path = Path(path)
    N = _check_name(path.stem if name is None else name)
    validate("export_c()", {"dtype": OneOf(DTYPES)}, locals())
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
    model_set = _model_c(t.spec, N, arrays)
    cfg = t.config_arrays(rm.gpu)
    # the model's groups and columns, then the ids, which the core resolves on each call (spmv_configs.ids);
    # designators in spmv_configs' member order, as C++ requires
    items = [f".n = {n}"]
    for k, ct in (("cfg.group", "int32_t"), ("cfg.extra", "double")):
        nm = f"{N}_cfg_{k[4:]}"
        if np.size(cfg[k]):
            arrays.append(_CArray(ct, nm, cfg[k]))
        if k == "cfg.extra":
            items.append(f".nextra = {int(cfg['cfg.nextra'])}")
        items.append(f".{k[4:]} = {nm if np.size(cfg[k]) else 'NULL'}")
    items.append(f".ids = {N}_config_ids")
    cfg_init = ", ".join(items)
    dev = cfg["dev"]
    ids = ",\n    ".join(f'"{c}"' for c in t.config_ids)
    output = "predicted ms" if rm.score == "ms" else "score (lower is better)"
    about = (f"a pyspmv ranking model exported by pyspmv.export_c (portable format {FORMAT_VERSION}).\n"
             f" * Model kind: {t.spec.kind}; device: {rm.device}; value type: {dtype}; {n} configurations; output: "
             f"{output}.")
    api = (f"#define {N}_NCONFIGS {n}\n"
           f"extern const char *const {N}_config_ids[{N}_NCONFIGS];\n"
           f"int {N}_rank(int32_t nrows, int32_t ncols, const int32_t *indptr, const int32_t *indices, int *order,\n"
           f"         double *ms);\n"
           f"int {N}_predict(int32_t nrows, int32_t ncols, const int32_t *indptr, const int32_t *indices, double *ms);")
    usage = (f" *     int order[{N}_NCONFIGS];\n"
             f" *     double ms[{N}_NCONFIGS];\n"
             f" *     int rc = {N}_rank(nrows, ncols, indptr, indices, order, ms);  // 0 or a negative SPMV_E* code\n"
             f" *     const char *best = {N}_config_ids[order[0]];\n"
             f" * ms[j]: configuration j's {output} (HUGE_VAL: it cannot serve the matrix); order:\n"
             f" * configuration indices, best first (may be NULL).  {N}_predict(nrows, ncols, indptr, indices, ms) is\n"
             " * the same without the order.  The CSR pattern needs sorted, distinct column indices; it is checked.")
    data = (f"{_ARRAYS}\n\n"
            f"const char *const {N}_config_ids[{N}_NCONFIGS] = {{\n    {ids}\n}};\n\n"
            f"{model_set}\n\n"
            f"static const spmv_configs {N}_configs = {{{cfg_init}}};")
    call = f"SPMV_EXPORTED_RANK({N}, {int(dev[0])}, {int(dev[1])}, {int(dev[2])}, {VALUE_BYTES[dtype]})"
    _write_header(path, _header_text(N, about, usage, api, data, call), arrays)
    return path


def _header_text(N: str, about: str, usage: str, api: str, data: str, call: str) -> str:
    """An exported header's text: ``about`` (generated facts) and how to use it (``usage``: its calls) in its
    opening comment; then, under the include guard ``N_H``, ``api``, its declarations (C linkage); then,
    only where ``N_IMPLEMENTATION`` is defined, the core with the C text of the header's functions
    (:func:`core_source`, ending in csrc/exported.h's macros), the model's ``data`` (its arrays at
    :data:`_ARRAYS`, ids, model and configurations) and ``call``, the one macro line that defines its
    functions from ``N``."""
    quiet = ('#if defined(__GNUC__)\n#pragma GCC diagnostic push\n'
             '#pragma GCC diagnostic ignored "-Wmissing-field-initializers"\n#endif\n')
    return (f"/* {N}.h: {about}\n"
            " *\n"
            " * Use: in exactly one C or C++ file of the program, define the implementation switch first,\n"
            f" *     #define {N}_IMPLEMENTATION\n"
            f" *     #include \"{N}.h\"\n"
            " * and that file compiles the model and pyspmv's C core (static linkage, so that several such\n"
            " * headers and libspmv can share a program).  A file of its own for it (those two lines), compiled\n"
            " * once, keeps the rest fast to build: every other file includes the header plainly and sees only\n"
            " * the declarations below, then calls\n"
            f"{usage}\n"
            " * Compiles as C99 or later, as C++17 (g++, clang++) and under nvcc, warning-free with\n"
            " * -Wall -Wextra; link libm (-lm); nothing else.  Build with -fopenmp to let the features use\n"
            " * several threads.\n"
            " * SPDX-License-Identifier: BSD-3-Clause */\n"
            f"#ifndef {N}_H\n#define {N}_H\n\n#include <stdint.h>\n\n"
            "#ifdef __cplusplus\nextern \"C\" {\n#endif\n"
            f"{api}\n"
            "#ifdef __cplusplus\n}\n#endif\n"
            f"#endif /* {N}_H */\n\n"
            f"#if defined({N}_IMPLEMENTATION) && !defined({N}_IMPLEMENTED)\n#define {N}_IMPLEMENTED\n"
            f"{core_source()}\n/* ---- model {N} ---- */\n{quiet}{data}\n\n{call}\n"
            "#if defined(__GNUC__)\n#pragma GCC diagnostic pop\n#endif\n"
            f"#endif /* {N}_IMPLEMENTATION */\n")


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
    model_set = _model_c(t.spec, N, arrays)
    items = [f".n = {n}"]                       # in spmv_configs' member order, as C++ requires
    arrays.append(_CArray("int32_t", f"{N}_cfg_group", np.asarray(t.group, np.int32)))
    items.append(f".group = {N}_cfg_group")
    items.append(f".nextra = {int(t.extra.shape[1])}")
    if t.extra.size:
        arrays.append(_CArray("double", f"{N}_cfg_extra", t.extra))
        items.append(f".extra = {N}_cfg_extra")
    output = "predicted ms" if rm.score == "ms" else "score (lower is better)"
    ids = ",\n    ".join(_c_string(c) for c in t.config_ids)
    names = ",\n    ".join(_c_string(f) for f in rm.features)
    about = (f"a pyspmv ranking model on its own features, exported by pyspmv.export_c (portable format\n"
             f" * {FORMAT_VERSION}).  Model kind: {t.spec.kind}; value type: {dtype}; {n} configurations; {nf} features;\n"
             f" * output: {output}.")
    api = (f"#define {N}_NCONFIGS {n}\n#define {N}_NFEATURES {nf}\n"
           f"extern const char *const {N}_config_ids[{N}_NCONFIGS];\n"
           f"extern const char *const {N}_feature_names[{N}_NFEATURES];\n"
           f"int {N}_rank_features(const double *features, int *order, double *ms);\n"
           f"int {N}_predict_features(const double *features, double *ms);")
    usage = (f" *     double features[{N}_NFEATURES];  // in the order of {N}_feature_names (NaN: missing)\n"
             f" *     int order[{N}_NCONFIGS];\n"
             f" *     double ms[{N}_NCONFIGS];\n"
             f" *     int rc = {N}_rank_features(features, order, ms);  // 0 or a negative SPMV_E* code\n"
             f" *     const char *best = {N}_config_ids[order[0]];\n"
             f" * ms[j]: configuration j's {output}; order: configuration indices, best first (may be\n"
             f" * NULL).  {N}_predict_features(features, ms) is the same without the order.")
    data = (f"{_ARRAYS}\n\n"
            f"const char *const {N}_config_ids[{N}_NCONFIGS] = {{\n    {ids}\n}};\n\n"
            f"const char *const {N}_feature_names[{N}_NFEATURES] = {{\n    {names}\n}};\n\n"
            f"{model_set}\n\n"
            f"static const spmv_configs {N}_configs = {{{', '.join(items)}}};")
    return _header_text(N, about, usage, api, data, f"SPMV_EXPORTED_RANK_FEATURES({N})"), arrays
