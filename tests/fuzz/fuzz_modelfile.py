#!/usr/bin/env python3
# tests/fuzz/fuzz_modelfile.py: mutation fuzzing of load_model's Python reader (zip, .npy headers, header.json)
# SPDX-License-Identifier: BSD-3-Clause
"""Mutation fuzzer of :func:`pyspmv.load_model` for the part no libFuzzer harness reaches: the ``.npz``
archive read in Python (zip directory and members, ``.npy`` headers, ``header.json``) and the checks
before the spec reaches ``spmv_model_check`` (``fuzz_model`` fuzzes that and what follows).

Seeds are the shipped defaults (``pyspmv/data/*.pyspmv``) and small models of every kind fitted on
planted times and saved here. Each execution mutates one seed: ``header.json`` (a value of another type,
length or range, a key removed or added, its text's bytes), an array (values, dtype, length, shape),
a ``.npy`` header (huge or negative shapes, odd dtypes, versions), the members (removed, doubled,
renamed, added, many, compressed otherwise, a compressed run of zeros), the zip directory (declared
sizes, methods, offsets) or the file's bytes (flips, truncation). The oracle: ``load_model`` returns a
model that ranks a small matrix for each of its value types, or raises what its docstring says
(``ValueError``, ``FileNotFoundError``); any other exception, an execution past ``--timeout`` seconds
or a peak RSS past ``--rss-limit-mb`` is a finding: the input is written to the findings folder with
its traceback, ``FUZZ FINDING`` is printed and the exit status is 1.

usage: fuzz_modelfile.py [-max_total_time=S | --seconds S] [--iterations N] [--seed K] [--findings DIR]
       fuzz_modelfile.py FILE...        (replay: each file loaded once, as a finding would be)

Execution i of seed K mutates with ``random.Random(f"{K}:{i}")``: ``--seed K --start i --iterations 1``
repeats it. Prints libFuzzer's ``stat::number_of_executed_units`` and ``exec/s`` lines (run.sh reads them).
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import faulthandler
import hashlib
import io
import json
import math
import os
import random
import re
import resource
import signal
import struct
import sys
import tempfile
import time
import traceback
import warnings
import zipfile
import zlib
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

import pyspmv
from pyspmv.ranking.modelfile import load_model

#: What load_model's docstring says it raises.
DOCUMENTED = (ValueError, FileNotFoundError)
NPY_DTYPES = ("<i1", "<i2", "<i4", "<i8", "<u1", "<u8", "<f2", "<f4", "<f8", ">f8", ">i4", "|b1", "<c16", "|O",
              "<U8", "|V8", "<M8[s]", "[('a', '<f8')]", "<f16")


#: How executions ended: refusals by the start of their message, and "(loaded and ranked)".
OUTCOMES: collections.Counter = collections.Counter()


class Timeout(Exception):
    """An execution ran past --timeout (raised from SIGALRM; the core's interrupt check passes it on)."""


# -- seeds -------------------------------------------------------------------------------------------

def _frame(matrices: list, cfgs: list, rng: np.random.Generator) -> tuple:
    """X, y, groups of the design table over ``matrices`` and ``cfgs`` with planted times."""
    import pandas as pd

    from pyspmv.models._common import PARAM_COLUMNS
    parts = []
    for A in matrices:
        f = pyspmv.features(A)
        cf = pyspmv.config_features(A, cfgs, dtype="float64")
        rows = []
        for j, c in enumerate(cfgs):
            r = {"matrix": A.name, **{k: f[k] for k in pyspmv.FEATURE_NAMES}, "config": c.id, "library": c.library,
                 "format": c.format, "kernel": c.kernel or ""}
            for p in PARAM_COLUMNS:
                r[p] = float(c.params[p[2:]]) if p[2:] in c.params else np.nan
            r["value_bytes"] = 8.0
            for k in ("bytes_moved", "padding_ratio", "launches"):
                r[k] = float(cf[k].to_numpy(dtype=float)[j])
            r["median_ms"] = float(np.exp(-6 + 0.1 * j + 0.9 * np.log1p(f["nnz"])) * rng.uniform(0.8, 1.2))
            rows.append(r)
        parts.append(pd.DataFrame(rows))
    T = pd.concat(parts, ignore_index=True)
    return T.drop(columns=["matrix", "median_ms"]), T["median_ms"], T["matrix"].rename("matrix")


def seed_files(folder: str) -> tuple[Path, ...]:
    """The shipped defaults and a small saved model of every kind (written to ``folder``)."""
    from pyspmv import models
    Path(folder).mkdir(parents=True, exist_ok=True)
    data = Path(pyspmv.__file__).parent / "data"
    out = sorted(data.glob("*.pyspmv"))
    rng = np.random.default_rng(45)
    ms = [pyspmv.generate("poisson2d", 8), pyspmv.generate("random", 150, seed=1),
          pyspmv.generate("powerlaw", 150, seed=2), pyspmv.generate("banded", 100), pyspmv.generate("poisson2d", 12),
          pyspmv.generate("random", 300, seed=3)]
    for i, A in enumerate(ms):
        A.name = f"m{i}"
    cfgs = [pyspmv.config(i) for i in ("cpu/csr/rows", "cpu/csr/nnz", "cpu/coo", "cpu/ell", "cpu/hyb")]
    X, y, groups = _frame(ms, cfgs, rng)
    conv = 0.01 + 1e-6 * X["nnz"].to_numpy()
    kinds = {"linear": models.LinearModel(), "boosted": models.BoostedModel(n_estimators=3, max_depth=2),
             "knn": models.KNNModel(n_passes=1), "guo": models.GuoModel(), "wang": models.WangModel(),
             "svm": models.SVMModel(C_grid=(1.0,), gamma_grid=(1.0,)), "cascade": models.CascadeModel(n_estimators=2),
             "forest": models.ForestModel(n_estimators=2)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, m in kinds.items():
            out.append(pyspmv.save_model(m.fit(X, y, groups, convert_ms=conv), Path(folder) / f"{name}.pyspmv",
                                         device="cpu"))
    return tuple(out)


@cache
def members_of(path: Path) -> tuple[tuple[str, bytes], ...]:
    """The seed's members, decompressed, in order."""
    with zipfile.ZipFile(path) as zf:
        return tuple((i.filename, zf.read(i)) for i in zf.infolist())


@cache
def small_matrix() -> pyspmv.Matrix:
    return pyspmv.generate("powerlaw", 200, seed=7)


# -- mutations ---------------------------------------------------------------------------------------

def _any_value(rng: random.Random, depth: int = 0) -> Any:
    pick = rng.randrange(16)
    if pick == 0:
        return rng.choice([0, 1, -1, 2, 3, 64, 255, 2**31 - 1, 2**31, -2**31 - 1, 2**63, 2**64 + 1, 10**400])
    if pick == 1:
        return rng.choice([0.0, -0.0, 0.5, -1.5, 1e308, -1e308, 5e-324, math.nan, math.inf, -math.inf])
    if pick == 2:
        return rng.choice([True, False, None])
    if pick == 3:
        return rng.choice(["", "x", "cpu", "cuda", "float64", "float32", "linear", "forest", "cpu/csr/rows",
                           "cpu/coo", "\x00", "\ud800", "é" * 3, "a" * rng.choice([70, 5000, 100_000]), "²", "4,2",
                           " 8 ", "-3", "1e3", "9" * rng.choice([20, 5000])])
    if pick == 4 and depth < 3:
        return [_any_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if pick == 5 and depth < 3:
        return {rng.choice(["", "kind", "scalars", "subs", "x", "0", "float64", "ngroups", "é"]): _any_value(rng, depth + 1)
                for _ in range(rng.randrange(3))}
    if pick == 6:
        deep: Any = 0
        for _ in range(rng.choice([50, 500, 5000])):
            deep = [deep]
        return deep
    if pick == 7:
        return list(range(rng.choice([0, 1, 1000, 100_000])))
    return rng.randrange(-3, 300)


def _nodes(obj: Any, path: tuple = ()) -> list[tuple]:
    out = [path]
    if len(path) > 12:
        return out
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _nodes(v, path + (k,))
    elif isinstance(obj, list) and len(obj) <= 64:
        for k, v in enumerate(obj):
            out += _nodes(v, path + (k,))
    return out


#: Provenance a model's ``meta`` may carry, which ranking reads (the machine it was measured on).
META = {"device_info": {"device": "cpu", "processor": "AMD EPYC", "cpu_count": 2, "omp_num_threads": "2",
                        "cpu_affinity": 2, "gpu_name": "NVIDIA H100"},
        "fingerprint": {"device": "cpu", "processor": "AMD EPYC", "threads": 2}, "calibration": {"matrices": 3}}


def _mutate_json(h: Any, rng: random.Random) -> Any:
    meta = h.get("meta") if isinstance(h, dict) else None
    if isinstance(meta, dict) and rng.random() < 0.25:  # provenance, read when ranking: mutated more often
        meta.update(json.loads(json.dumps(dict(rng.sample(sorted(META.items()), rng.randrange(1, 3))))))
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        nodes = _nodes(h)
        if isinstance(h, dict) and isinstance(h.get("meta"), dict) and rng.random() < 0.3:
            nodes = [p for p in nodes if p[:1] == ("meta",)]
        path = rng.choice(nodes)
        if not path:
            if rng.random() < 0.1:
                return _any_value(rng)
            continue
        parent = h
        for k in path[:-1]:
            parent = parent[k]
        key, value = path[-1], parent[path[-1]]
        op = rng.randrange(8)
        if op == 0 and isinstance(parent, dict):
            del parent[key]
        elif op == 1 and isinstance(parent, dict):
            parent[rng.choice(["extra", "kind", "scalars", "subs", "config_ids", "version", "ngroups", "ninputs",
                               str(key) + "_"])] = _any_value(rng)
        elif op == 2 and isinstance(value, list):
            if value and rng.random() < 0.5:
                del value[rng.randrange(len(value)):]
            else:
                value.extend(rng.choice(value) if value else _any_value(rng) for _ in range(rng.randrange(1, 40)))
        elif op == 3 and isinstance(value, (int, float)) and not isinstance(value, bool):
            parent[key] = rng.choice([value + 1, value - 1, -value, value * 2**rng.randrange(1, 70), value * 1e300,
                                      float(value), int(value) if math.isfinite(value) else 0])
        elif op == 4 and isinstance(value, str):
            parent[key] = rng.choice([value + "x", value[:-1], value.upper(), value * 2, value + "/c=8", value + "²",
                                      value + "9" * 5000])
        else:
            parent[key] = _any_value(rng)
    return h


def _npy_bytes(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, a, allow_pickle=False)
    return buf.getvalue()


def _npy_header(dtype: str, shape: Any, fortran: bool = False, version: bytes = b"\x01\x00") -> bytes:
    text = repr({"descr": dtype, "fortran_order": fortran, "shape": shape}).encode("latin1")
    text += b" " * ((64 - (len(text) + 11) % 64) % 64) + b"\n"
    fmt = "<H" if version == b"\x01\x00" else "<I"
    return b"\x93NUMPY" + version + struct.pack(fmt, len(text)) + text


def _mutate_array(data: bytes, rng: random.Random) -> bytes:
    try:
        a = np.lib.format.read_array(io.BytesIO(data), allow_pickle=False)
    except Exception:  # noqa: BLE001 (a member mutated before: mutate its bytes instead)
        return _flip(data, rng)
    op = rng.randrange(9)
    if op == 0 and a.size:
        a = a.copy()
        flat = a.reshape(-1)
        special = [0, 1, -1, 2**31 - 1, -2**31, 255] if a.dtype.kind in "iub" else \
            [np.nan, np.inf, -np.inf, 1e308, -1e308, 0.0, -0.0, 1e-310, 4.0, 1e30]
        for _ in range(rng.randrange(1, 4)):
            with np.errstate(all="ignore"), contextlib.suppress(OverflowError, ValueError):  # -1 in uint8
                flat[rng.randrange(flat.size)] = rng.choice(special)
    elif op == 1:
        dt = rng.choice(["<i1", "<i2", "<i4", "<i8", "<u1", "<u8", "<f2", "<f4", "<f8", ">f8", ">i4", "|b1"])
        with np.errstate(all="ignore"):
            a = a.astype(dt)
    elif op == 2:
        a = a.reshape(-1)[:rng.randrange(a.size + 1)] if a.size else a
    elif op == 3:
        flat = a.reshape(-1)
        a = np.concatenate([flat, flat[:rng.randrange(1, 64)] if flat.size else np.zeros(3, flat.dtype)])
    elif op == 4:
        a = a.reshape(-1)
        a = a.reshape(1, -1) if rng.random() < 0.5 or not a.size else a[:1].reshape(())
    elif op == 5:
        a = np.zeros(rng.choice([0, 1, 2**20]), a.dtype)
    elif op == 6:  # a header of its own over the old payload
        shape = rng.choice([(2**40,), (2**62, 2**62), (-1,), (3, -5), (2**31,), (0,), (), (7,), (1, 1, 1),
                            (2**28,), "x", (1.5,), None])
        version = rng.choice([b"\x01\x00", b"\x02\x00", b"\x03\x00", b"\x09\x09"])
        payload = data[10 + struct.unpack("<H", data[8:10])[0]:] if data[6:8] == b"\x01\x00" else data[-64:]
        return _npy_header(rng.choice(NPY_DTYPES), shape, rng.random() < 0.2, version) + payload
    elif op == 7:
        return _flip(data, rng, span=min(len(data), 128))
    else:
        return data[:rng.randrange(len(data) + 1)]
    return _npy_bytes(a)


def _flip(data: bytes, rng: random.Random, span: int | None = None) -> bytes:
    b = bytearray(data)
    if not b:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 16)))
    for _ in range(rng.choice([1, 1, 2, 4, 16])):
        if not b:
            break
        k = rng.randrange(min(span or len(b), len(b)))
        op = rng.randrange(4)
        if op == 0:
            b[k] ^= 1 << rng.randrange(8)
        elif op == 1:
            b[k] = rng.choice([0, 0xFF, 0x7F, 0x80, ord("9"), ord("-"), ord("{"), ord('"')])
        elif op == 2:
            del b[k:k + rng.randrange(1, 9)]
        else:
            b[k:k] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9)))
    return bytes(b)


@cache
def zero_run(header: bytes, nbytes: int) -> tuple[bytes, int]:
    """``header`` and ``nbytes`` zeros deflated (a small member that decompresses to a lot), and their CRC."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = bytes(1 << 20)
    out, crc = [c.compress(header)], zlib.crc32(header)
    for _ in range(nbytes >> 20):
        out.append(c.compress(chunk))
        crc = zlib.crc32(chunk, crc)
    out.append(c.flush())
    return b"".join(out), crc


def _write_zip(members: list[tuple[str, bytes]], rng: random.Random) -> bytes:
    buf = io.BytesIO()
    methods = [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA]
    small = sum(len(d) for _, d in members) < 1 << 18  # compressing a shipped default's 9 MB takes seconds
    method = zipfile.ZIP_STORED if rng.random() < 0.7 or not small else rng.choice(methods)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # duplicate names, on purpose
        with zipfile.ZipFile(buf, "w", compression=method) as zf:
            for name, data in members:
                zf.writestr(name, data)
    return buf.getvalue()


def _bomb_zip(members: list[tuple[str, bytes]], rng: random.Random) -> bytes:
    """The members stored, then an array of zeros deflated: declared at its size (up to past
    MAX_MODEL_BYTES) or smaller than it decompresses to."""
    nbytes = rng.choice([1 << 24, 1 << 24, 1 << 27, (1 << 28) + (1 << 20)])
    header = _npy_header("<f8", (nbytes // 8,))
    data, crc = zero_run(header, nbytes)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        for name, m in members:
            zf.writestr(name, m)
        name = rng.choice(["float64/spec/coef.npy", "float64/extra.npy", "bomb.npy", "header.json.npy"])
        info = zipfile.ZipInfo(name, (2020, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        # written raw: zipfile would compress the zeros itself, slowly
        declared = rng.choice([len(header) + nbytes, 1 << 20, 64])
        info.file_size, info.compress_size, info.CRC = declared, len(data), crc
        info.header_offset = buf.tell()
        info.flag_bits = 0
        buf.write(info.FileHeader(zip64=False))
        buf.write(data)
        zf.filelist.append(info)
        zf.NameToInfo[name] = info
        zf.start_dir = buf.tell()
        zf._didModify = True
    return buf.getvalue()


def _patch_directory(data: bytes, rng: random.Random) -> bytes:
    """A field of one central-directory entry (or of the end record) rewritten."""
    b = bytearray(data)
    entries = [m.start() for m in re.finditer(b"PK\x01\x02", b) if m.start() + 46 <= len(b)]
    if not entries or rng.random() < 0.15:
        end = b.rfind(b"PK\x05\x06")
        if end >= 0:
            off = rng.choice([8, 10, 12, 16])
            width = 2 if off < 12 else 4
            b[end + off:end + off + width] = rng.choice([0, 1, 0xFFFF, 5000, 0xFFFFFFFF]).to_bytes(8, "little")[:width]
        return bytes(b)
    e = rng.choice(entries)
    off, width = rng.choice([(10, 2), (16, 4), (20, 4), (24, 4), (28, 2), (42, 4)])  # method, crc, sizes, name, offset
    value = rng.choice([0, 1, 8, 12, 14, 99, 0xFFFF, 2**31, 0xFFFFFFFF, 2**30, 300_000_000,
                        int.from_bytes(b[e + off:e + off + width], "little") + rng.choice([-1, 1, 100])])
    b[e + off:e + off + width] = (value % (1 << (8 * width))).to_bytes(width, "little")
    return bytes(b)


def mutate(seed: Path, rng: random.Random) -> bytes:
    """One mutated model file from ``seed``."""
    members = list(members_of(seed))
    op = rng.randrange(100)
    if op < 25:  # header.json, parsed
        k = next(i for i, (n, _) in enumerate(members) if n == "header.json.npy")
        raw = np.lib.format.read_array(io.BytesIO(members[k][1]))
        h = _mutate_json(json.loads(bytes(raw).decode()), rng)
        try:
            text = json.dumps(h).encode("utf-8", "surrogatepass")
        except (ValueError, RecursionError):
            text = b"{"
        members[k] = (members[k][0], _npy_bytes(np.frombuffer(text, np.uint8)))
    elif op < 32:  # header.json's bytes
        k = next(i for i, (n, _) in enumerate(members) if n == "header.json.npy")
        raw = bytes(np.lib.format.read_array(io.BytesIO(members[k][1])))
        raw = _flip(raw, rng) if rng.random() < 0.7 else raw[:rng.randrange(len(raw))]
        members[k] = (members[k][0], _npy_bytes(np.frombuffer(raw, np.uint8)))
    elif op < 57:  # an array
        k = rng.randrange(len(members))
        members[k] = (members[k][0], _mutate_array(members[k][1], rng))
    elif op < 67:  # the members
        k = rng.randrange(len(members))
        sub = rng.randrange(6)
        if sub == 0:
            del members[k]
        elif sub == 1:
            members.insert(rng.randrange(len(members) + 1), members[k])
        elif sub == 2:
            members[k] = (rng.choice(["header.json", "../x.npy", "/abs.npy", "a/b/c.npy", "float64/spec/zz.npy",
                                      "float64/spec/sub0/coef.npy", "float16/group.npy", "/", "x" * 300 + ".npy",
                                      members[k][0].upper(), members[k][0] + ".npy"]), members[k][1])
        elif sub == 3:
            members.append((rng.choice(["junk.npy", "float64/spec/ngroups.npy", "meta.json"]),
                            _npy_bytes(np.arange(rng.randrange(1, 50), dtype=np.float64))))
        elif sub == 4:
            members += [(f"m{i}.npy", b"") for i in range(rng.choice([100, 5000]))]
        else:
            rng.shuffle(members)
    elif op < 70:  # a compressed run of zeros
        return _bomb_zip(members, rng)
    data = _write_zip(members, rng)
    op = rng.randrange(100)
    if op < 20:
        data = _patch_directory(data, rng)
    elif op < 28:
        data = _flip(data, rng)
    elif op < 32:
        data = data[:rng.randrange(len(data) + 1)]
    return data


# -- the oracle ----------------------------------------------------------------------------------------

def _alarm(signum: int, frame: Any) -> None:
    raise Timeout("execution past the time limit")


def execute(path: Path, timeout: float) -> str | None:
    """None when load_model behaves as documented on ``path``, else what it did (with the traceback)."""
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        with warnings.catch_warnings():
            # a warning out of numpy or the standard library is a finding too (the suite makes
            # warnings errors); pyspmv's own (the shipped cpu default measured on another machine) are not
            warnings.simplefilter("error")
            warnings.filterwarnings("ignore", category=pyspmv.OtherMachineWarning)
            return _load_and_rank(path)
    except Timeout:
        return "timeout: load_model and rank ran past the limit\n" + traceback.format_exc()
    except Exception:  # noqa: BLE001 (what the oracle looks for)
        return traceback.format_exc()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _load_and_rank(path: Path) -> str | None:
    try:
        m = load_model(path)
    except DOCUMENTED as exc:
        OUTCOMES[str(exc).split(": ", 1)[-1][:50]] += 1
        return None
    OUTCOMES["(loaded and ranked)"] += 1
    for dtype in m.tables:
        r = pyspmv.rank(small_matrix(), model=m, dtype=dtype)
        if len(r) == 0 or not all(isinstance(c, str) for c, _ in r):
            return f"a loaded model ranks {r!r} for {dtype}"
    return None


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(seconds: float = 60, iterations: int | None = None, seed: int = 0, start: int = 0,
        findings: str | os.PathLike[str] | None = None, timeout: float = 30, rss_limit_mb: float = 2048,
        default_every: int = 20, log: Any = sys.stdout) -> tuple[int, list[str]]:
    """Mutate and load for ``seconds`` (or ``iterations`` executions); returns (executions, findings).
    One execution in ``default_every`` mutates a shipped default (0.3-0.5 s each), the others the
    small models. Stops at the first finding."""
    out_dir = Path(findings) if findings else None
    found: list[str] = []
    # The peak RSS is the process's whole life's: inside a test suite, earlier tests may have raised it past the
    # limit already. What the loads add to it is what counts (run.sh's own process starts small).
    base_mb = rss_mb()
    t0 = time.monotonic()
    n = 0
    with tempfile.TemporaryDirectory(prefix="fuzz_modelfile-") as tmp:
        seeds = seed_files(os.path.join(tmp, "seeds"))
        shipped = [s for s in seeds if s.parent.name == "data"]
        small = [s for s in seeds if s not in shipped]
        path = Path(tmp) / "mutated.pyspmv"
        old = signal.signal(signal.SIGALRM, _alarm)
        faulthandler.dump_traceback_later(3 * timeout + 60, exit=True)  # a hang the alarm cannot break
        try:
            while (n < iterations) if iterations is not None else (time.monotonic() - t0 < seconds):
                i = start + n
                rng = random.Random(f"{seed}:{i}")
                src = rng.choice(shipped) if shipped and i % default_every == default_every - 1 else rng.choice(small)
                data = mutate(src, rng)
                path.write_bytes(data)
                what = execute(path, timeout)
                n += 1
                faulthandler.dump_traceback_later(3 * timeout + 60, exit=True)
                if what is None and rss_mb() - base_mb > rss_limit_mb:
                    what = (f"peak RSS {rss_mb():.0f} MB, {rss_mb() - base_mb:.0f} MB past the start, over "
                            f"{rss_limit_mb} MB")
                if what is not None:
                    digest = hashlib.sha1(data).hexdigest()
                    msg = f"FUZZ FINDING (seed {seed}, execution {i}, from {src.name}): {what}"
                    found.append(msg)
                    print(msg, file=log)
                    if out_dir is not None:
                        out_dir.mkdir(parents=True, exist_ok=True)
                        (out_dir / f"modelfile-crash-{digest}").write_bytes(data)
                        (out_dir / f"modelfile-crash-{digest}.log").write_text(msg + "\n")
                        print(f"Test unit written to {out_dir / f'modelfile-crash-{digest}'}", file=log)
                    break
        finally:
            faulthandler.cancel_dump_traceback_later()
            signal.signal(signal.SIGALRM, old)
    elapsed = max(time.monotonic() - t0, 1e-9)
    print(f"stat::number_of_executed_units: {n}", file=log)
    print(f"exec/s: {int(n / elapsed)}  peak RSS {rss_mb():.0f} MB", file=log)
    print(f"outcomes: {OUTCOMES['(loaded and ranked)']} loaded and ranked, {n - OUTCOMES['(loaded and ranked)']} "
          f"refused; most common refusals: {OUTCOMES.most_common(8)}", file=log)
    return n, found


def main(argv: list[str]) -> int:
    # libFuzzer's spelling, as run.sh passes it to every harness
    argv = [a.replace("-max_total_time=", "--seconds=") if a.startswith("-max_total_time=") else a for a in argv]
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="*", help="replay these inputs once each")
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--iterations", type=int)
    p.add_argument("--seed", type=int, default=int(time.time()) % 100_000)
    p.add_argument("--start", type=int, default=0)
    p.add_argument("--findings")
    p.add_argument("--timeout", type=float, default=30)
    p.add_argument("--rss-limit-mb", type=float, default=2048)
    a = p.parse_args(argv)
    if a.files:
        bad = 0
        for f in a.files:
            what = execute(Path(f), a.timeout)
            print(f"{f}: {'ok' if what is None else 'FUZZ FINDING: ' + what}")
            bad += what is not None
        return 1 if bad else 0
    print(f"fuzz_modelfile: seed {a.seed}", flush=True)
    _, found = run(a.seconds, a.iterations, a.seed, a.start, a.findings, a.timeout, a.rss_limit_mb)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
