"""Models out of Python: a self-contained C99 header (:func:`export_c`) and a versioned file
(:func:`save_model`, :func:`load_model`).

An exported header carries the C core's own sources (features, format size queries, the model
evaluators, ``spmv_rank``), textually included with ``static`` linkage, plus the model's arrays: the
same evaluator as :func:`pyspmv.rank`, not a second implementation.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import io
import json
import os
import re
import zipfile
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from .configs import DEVICES, config
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
    portable,
)

#: Core sources an exported header includes, in order (timing.c needs POSIX clocks and stays out).
CORE_SOURCES: tuple[str, ...] = (
    "spmv.h", "spmv_internal.h", "error.c", "mem.c", "csr.c", "format.c", "features.c", "coo.c", "ell.c", "sell.c",
    "broell.c", "hyb.c", "dia.c", "jad.c", "bsr.c", "registry.c", "model_linear.c", "model_trees.c", "model_knn.c",
    "model_svm.c", "model_formula.c", "rank.c")

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _csrc_dir() -> Any:
    """The C core's sources (a Path or importlib Traversable): installed as package data
    (pyspmv/csrc), or the source tree's csrc/."""
    installed = resources.files("pyspmv") / "csrc"
    if installed.is_dir():
        return installed
    tree = Path(__file__).resolve().parent.parent / "csrc"
    if tree.is_dir():
        return tree
    raise FileNotFoundError("pyspmv's C sources (csrc/) are missing from this installation; export_c needs them.")


def core_source() -> str:
    """The C core as one translation unit with static linkage, guarded so that several exported
    headers can share it."""
    d = _csrc_dir()
    seen: set[str] = set()

    def inline(name: str) -> str:
        out = []
        for line in (d / name).read_text().splitlines():
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if m:
                inc = m.group(1)
                if inc.endswith("_impl.h"):                  # value-type templates: every time
                    out.append(inline(inc))
                elif inc not in seen:
                    seen.add(inc)
                    out.append(inline(inc))
                continue
            out.append(line)
        return "\n".join(out)

    parts = []
    for f in CORE_SOURCES:
        if f not in seen:
            seen.add(f)
            parts.append(f"/* ==== csrc/{f} ==== */\n" + inline(f))
    return "\n".join([
        "#ifndef PYSPMV_EXPORTED_CORE",
        "#define PYSPMV_EXPORTED_CORE",
        "/* The core's interface with internal linkage (csrc/spmv.h: SPMV_API); no POSIX timing. */",
        "#if defined(__GNUC__)",
        "#define SPMV_API static __attribute__((unused))",
        "#pragma GCC diagnostic push",
        "/* OpenMP pragmas and the variables only they read, when built without -fopenmp */",
        '#pragma GCC diagnostic ignored "-Wunknown-pragmas"',
        '#pragma GCC diagnostic ignored "-Wunused-variable"',
        "#else",
        "#define SPMV_API static",
        "#endif",
        "#define SPMV_DATA static",
        "#define SPMV_NO_TIMING",
        *parts,
        "#if defined(__GNUC__)",
        "#pragma GCC diagnostic pop",
        "#endif",
        "#endif /* PYSPMV_EXPORTED_CORE */",
    ])


def _c_double(v: float) -> str:
    if np.isnan(v):
        return "NAN"
    if np.isinf(v):
        return "HUGE_VAL" if v > 0 else "-HUGE_VAL"
    r = repr(float(v))                                     # shortest round-trip form
    return r if ("." in r or "e" in r or "n" in r) else r + ".0"


def _c_array(ctype: str, name: str, a: np.ndarray) -> str:
    a = np.ravel(a)
    if ctype == "double":
        vals = [_c_double(x) for x in a.tolist()]
    else:
        vals = [str(int(x)) for x in a.tolist()]
    lines = [", ".join(vals[i:i + 12]) for i in range(0, len(vals), 12)]
    body = ",\n    ".join(lines)
    return f"static const {ctype} {name}[{len(vals)}] = {{\n    {body}\n}};"


def _spec_c(spec: Spec, prefix: str, out: list[str]) -> str:
    """Arrays of ``spec`` as C definitions appended to ``out``; returns its designated initialiser."""
    f = spec.fields
    ctype = {np.dtype(np.int32): "int32_t", np.dtype(np.float64): "double", np.dtype(np.uint8): "uint8_t"}

    def ref(key: str) -> str:
        a = f.get(key)
        if a is None or np.size(a) == 0:
            return "NULL"
        nm = f"{prefix}_{key.replace('.', '_')}"
        out.append(_c_array(ctype[np.asarray(a).dtype], nm, np.asarray(a)))
        return nm

    def num(key: str) -> str:
        v = f[key]
        return _c_double(float(v)) if isinstance(v, float) else str(int(v))

    init = [f".kind = {KINDS[spec.kind]}", f".ngroups = {f['ngroups']}", f".ncols = {f['ncols']}",
            f".ninputs = {f['ninputs']}"]
    init += [f".{k} = {ref(k)}" for k in ("in_col", "in_tf", "in_nan", "in_lo", "in_hi", "in_shift", "in_div")]
    init += [f".out_tf = {f['out_tf']}", f".out_col = {f['out_col']}", f".out_lo = {_c_double(f['out_lo'])}"]
    sub: dict[str, list[str]] = {}
    for key in f:
        if "." not in key:
            if key in ("coef", "intercept"):
                init.append(f".{key} = {ref(key)}")
            continue
        part, fld = key.split(".", 1)
        sub.setdefault(part, []).append(f".{fld} = {ref(key) if isinstance(f[key], np.ndarray) else num(key)}")
    if spec.kind == "cascade":
        inits = [_spec_c(s, f"{prefix}_s{i}", out) for i, s in enumerate(spec.subs)]
        out.append(f"static const spmv_model {prefix}_stages[{len(inits)}] = {{\n    " + ",\n    ".join(inits) + "\n};")
        sub.setdefault("cascade", []).extend([f".nstages = {len(inits)}", f".sub = {prefix}_stages"])
    for part, items in sub.items():
        init.append(f".{part} = {{" + ", ".join(items) + "}")
    return "{" + ", ".join(init) + "}"


def export_c(model: Any, path: str | os.PathLike[str], *, name: str | None = None, dtype: str = "float64",
             device: str | None = None) -> Path:
    """Write ``model`` as one self-contained C99 header.

    The header holds the C core's sources (static linkage) and the model's arrays, and exposes, for
    ``name`` ``NAME``: ``NAME_NCONFIGS``, ``NAME_config_ids``, ``NAME_predict(nrows, ncols, indptr,
    indices, ms)`` and ``NAME_rank(nrows, ncols, indptr, indices, order, ms)`` (DESIGN.md, "Export").
    Both check the CSR arrays first and return 0 or a negative ``SPMV_E*`` code; a configuration that
    cannot serve the matrix gets ``HUGE_VAL`` ms and ranks last. Compile with any C99 compiler and
    link libm (``-lm``).

    Parameters
    ----------
    model : fitted pyspmv.models estimator or RankModel
    path : path of the header to write
    name : str, optional
        C identifier prefix; default: the file's stem.
    dtype : {'float32', 'float64'}
        The value type it ranks for (bytes moved depend on it).
    device : {'cpu', 'cuda'}, optional
        For estimators: whose configurations; default the model's.

    Returns
    -------
    pathlib.Path
    """
    path = Path(path)
    name = path.stem if name is None else name
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"The 'name' parameter of export_c() must be a C identifier. Got {name!r} instead.")
    if dtype not in DTYPES:
        raise ValueError(f"The 'dtype' parameter of export_c() must be one of {DTYPES}. Got {dtype!r} instead.")
    rm = portable(model, device)
    t = rm.table(dtype).ranked()
    n = len(t.config_ids)
    arrays: list[str] = []
    model_init = _spec_c(t.spec, f"{name}_m", arrays)
    cfg = t.config_arrays(rm.gpu)
    items = [f".n = {n}", f".nextra = {cfg['cfg.nextra']}"]
    for k, ct in (("cfg.format", "int32_t"), ("cfg.param", "int32_t"), ("cfg.unread", "int32_t"),
                  ("cfg.p", "double"), ("cfg.launches", "double"), ("cfg.group", "int32_t"), ("cfg.extra", "double")):
        nm = f"{name}_cfg_{k[4:]}"
        if np.size(cfg[k]):
            arrays.append(_c_array(ct, nm, cfg[k]))
        items.append(f".{k[4:]} = {nm if np.size(cfg[k]) else 'NULL'}")
    cfg_init = ", ".join(items)
    dev = cfg["dev"]
    ids = ",\n    ".join(json.dumps(c) for c in t.config_ids)
    N = name
    text = f"""/* {path.name}: a pyspmv ranking model exported by pyspmv.export_c (portable format {FORMAT_VERSION}).
 * Model: {rm.source}
 * Device: {rm.device}; value type: {dtype}; {n} configurations; output: {"predicted ms" if rm.score == "ms" else "score (lower is better)"}.
 *
 *   {N}_NCONFIGS, {N}_config_ids[{N}_NCONFIGS]
 *   int {N}_predict(int32_t nrows, int32_t ncols, const int32_t *indptr, const int32_t *indices, double *ms);
 *   int {N}_rank(int32_t nrows, int32_t ncols, const int32_t *indptr, const int32_t *indices, int *order,
 *                double *ms);
 * CSR with sorted, distinct column indices (checked); ms[{N}_NCONFIGS], order[{N}_NCONFIGS] are the
 * caller's.  Return 0 or a negative SPMV_E* code.  Needs a C99 compiler and libm (-lm); nothing else.
 * The C core below is pyspmv's own (csrc/), included with static linkage.
 * SPDX-License-Identifier: BSD-3-Clause */
#ifndef {N.upper()}_H
#define {N.upper()}_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

{core_source()}

/* ---- model {N} ---- */
#define {N}_NCONFIGS {n}
{chr(10).join(arrays)}

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
    if (rc == 0) rc = spmv_rank(&A, &dev, &{N}_configs, &{N}_model, {VALUE_BYTES[dtype]}, NULL, o, ms, NULL);
    if (rc == 0 && order != NULL)
        for (int j = 0; j < {N}_NCONFIGS; j++) order[j] = (int)o[j];
    return rc;
}}

/* Predicted runtime in ms of every configuration for a CSR matrix; returns 0 or a negative error code. */
SPMV_API int {N}_predict(int32_t nrows, int32_t ncols, const int32_t *indptr, const int32_t *indices, double *ms) {{
    return {N}_rank(nrows, ncols, indptr, indices, NULL, ms);
}}

#endif /* {N.upper()}_H */
"""
    path.write_text(text)
    return path


# ---- save / load --------------------------------------------------------------------------------------

_MAGIC = "pyspmv-model"


def _spec_meta(spec: Spec, key: str, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    scalars = {}
    for k, v in spec.fields.items():
        if isinstance(v, np.ndarray):
            arrays[f"{key}/{k}"] = v
        else:
            scalars[k] = v
    return {"kind": spec.kind, "scalars": scalars,
            "subs": [_spec_meta(s, f"{key}/sub{i}", arrays) for i, s in enumerate(spec.subs)]}


def save_model(model: Any, path: str | os.PathLike[str], *, device: str | None = None) -> Path:
    """Save ``model`` (a fitted pyspmv.models estimator or a RankModel) in portable form.

    The file is a NumPy ``.npz`` archive: ``header.json`` (format version, pyspmv version, device,
    the feature schema, each value type's configuration ids, scalar fields) and the arrays. Load it
    with :func:`load_model`; no pickle is involved.
    """
    from . import __version__
    rm = portable(model, device)
    arrays: dict[str, np.ndarray] = {}
    tables = {}
    for dtype, t in rm.tables.items():
        arrays[f"{dtype}/group"] = np.asarray(t.group, np.int32)
        arrays[f"{dtype}/extra"] = np.asarray(t.extra, np.float64)
        tables[dtype] = {"config_ids": list(t.config_ids), "spec": _spec_meta(t.spec, f"{dtype}/spec", arrays)}
    header = {"format": _MAGIC, "version": FORMAT_VERSION, "pyspmv": __version__, "device": rm.device,
              "source": rm.source, "score": rm.score, "gpu": rm.gpu, "meta": rm.meta,
              "feature_names": list(FEATURE_NAMES), "row_columns": list(ROW_COLUMNS), "tables": tables}
    path = Path(path)
    buf = io.BytesIO()
    np.savez_compressed(buf, **{"header.json": np.frombuffer(json.dumps(header).encode(), np.uint8)}, **arrays)
    path.write_bytes(buf.getvalue())
    return path


def _spec_load(meta: dict[str, Any], key: str, z: Any) -> Spec:
    fields: dict[str, Any] = dict(meta["scalars"])
    prefix = key + "/"
    for k in z.files:
        if k.startswith(prefix) and "/" not in k[len(prefix):]:
            fields[k[len(prefix):]] = z[k]
    if meta["kind"] not in KINDS:
        raise ValueError(f"unknown model kind {meta['kind']!r}")
    return Spec(meta["kind"], fields, [_spec_load(s, f"{key}/sub{i}", z) for i, s in enumerate(meta["subs"])])


def load_model(path: str | os.PathLike[str]) -> RankModel:
    """Load a model saved by :func:`save_model`.

    Raises
    ------
    ValueError
        The file is not a pyspmv model file or is corrupt; it was written by a newer format version;
        its feature schema or design-row columns differ from this pyspmv's; a configuration id it ranks
        is unknown here or belongs to another device; its arrays fail the C core's model check.
    """
    path = Path(path)
    try:
        with open(path, "rb") as fh, np.load(fh, allow_pickle=False) as z:
            header = json.loads(bytes(z["header.json"]).decode())
            if not isinstance(header, dict) or header.get("format") != _MAGIC:
                raise ValueError("no pyspmv model header")
            version = header["version"]
            if not isinstance(version, int) or version > FORMAT_VERSION:
                raise _Refused(f"Model file {str(path)!r} has format version {version!r}; this pyspmv reads up to "
                               f"{FORMAT_VERSION}. Upgrade pyspmv or re-export the model.")
            raw = {d: (m, z[f"{d}/group"], z[f"{d}/extra"], _spec_load(m["spec"], f"{d}/spec", z))
                   for d, m in header["tables"].items()}
    except _Refused:
        raise
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile, EOFError, json.JSONDecodeError,
            UnicodeDecodeError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise ValueError(f"{str(path)!r} is not a pyspmv model file or is corrupt ({type(exc).__name__}: {exc}).") \
            from exc
    if header["feature_names"] != list(FEATURE_NAMES) or header["row_columns"] != list(ROW_COLUMNS):
        theirs, ours = header["feature_names"], list(FEATURE_NAMES)
        diff = [f for f in theirs if f not in ours] + [f for f in ours if f not in theirs]
        raise ValueError(f"Model file {str(path)!r} was made with another feature schema ({len(theirs)} features, "
                         f"{len(header['row_columns'])} design columns) than this pyspmv's ({len(ours)}, "
                         f"{len(ROW_COLUMNS)}); differing: {diff[:6] or 'the order'}. Retrain the model.")
    device = header["device"]
    if device not in DEVICES:
        raise ValueError(f"Model file {str(path)!r} names device {device!r}; known devices: {DEVICES}.")
    tables = {}
    for dtype, (m, group, extra, spec) in raw.items():
        if dtype not in DTYPES:
            raise ValueError(f"Model file {str(path)!r} has a table for value type {dtype!r}; known: {DTYPES}.")
        ids = list(m["config_ids"])
        for cid in ids:
            try:
                c = config(cid)
            except ValueError as exc:
                raise ValueError(f"Model file {str(path)!r} ranks configuration {cid!r}, unknown to this pyspmv: "
                                 f"{exc} The model's configuration list does not match; retrain it.") from None
            if c.device != device:
                raise ValueError(f"Model file {str(path)!r} is for device {device!r} but ranks {cid!r} of device "
                                 f"{c.device!r}.")
        if len(group) != len(ids) or extra.ndim != 2 or extra.shape[0] != len(ids):
            raise ValueError(f"Model file {str(path)!r} is corrupt: {len(ids)} configuration ids but group/extra "
                             f"tables of {len(group)} and {extra.shape[0] if extra.ndim else '?'} rows.")
        tables[dtype] = Table(ids, np.asarray(group, np.int32), np.asarray(extra, np.float64), spec)
    rm = RankModel(device, tables, source=header.get("source", ""), gpu=header.get("gpu"),
                   score=header.get("score", "ms"), meta=header.get("meta"))
    for dtype in tables:
        try:
            rm.capsule(dtype)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"Model file {str(path)!r} fails the model check for {dtype}: {exc}") from None
    return rm


class _Refused(ValueError):
    """A readable file that this version refuses (kept apart from corruption)."""


def read_model(path: str | os.PathLike[str]) -> Any:
    """A model from a file: a :func:`save_model` file, or (``.pkl``, ``.pickle``: trusted files only)
    a pickled estimator as ``pyspmv train --out`` writes."""
    path = Path(path)
    if path.suffix in (".pkl", ".pickle"):
        import pickle
        with open(path, "rb") as f:
            return pickle.load(f)
    return load_model(path)
