"""tools/store_models.py: rewrite model files as the shipped defaults are kept (issue 51): every forest's leaf
vectors once each (``pyspmv.models.forest.share_leaf_vectors``) and every member stored uncompressed, so that
the first ``rank()`` of a process reads them without decompressing (benchmarks/results/cold_start.md).

    python tools/store_models.py pyspmv/data/default_cpu.pyspmv
    python tools/store_models.py --deflate pyspmv/data/default_h100.pyspmv pyspmv/data/default_h200.pyspmv

``--deflate`` deflates every member at level 1 instead of storing it: the GPU defaults' 9 MB stored were past the
8 MiB limit of a committed file (about 4.7 MB deflated; a first rank() in a fresh process 44 ms, cold_start.md).

Each file is rewritten in place. Only what sharing changes is written anew (``forest.value``, ``forest.left``
and ``forest.nleaves`` in ``header.json``); every other member keeps its bytes, order and date. Before a file is
replaced, the rewritten model must predict bit for bit what the old one predicts: every configuration of both
value types for 30 generated matrices (:data:`SIZES`), and their rankings, with and without ``n_calls``.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import io
import json
import tempfile
import zipfile
from pathlib import Path

import numpy as np

import pyspmv
from pyspmv import _core
from pyspmv._atomic import write_atomically
from pyspmv.models.forest import share_leaf_vectors


def _array(raw: bytes) -> np.ndarray:
    return np.lib.format.read_array(io.BytesIO(raw), allow_pickle=False)


def _npy(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.asanyarray(a), allow_pickle=False)
    return buf.getvalue()


def _forests(spec: dict, key: str) -> list[tuple[str, dict]]:
    """(array prefix, scalars) of every forest in a header's spec entry (cascade stages included)."""
    out = [(key, spec["scalars"])] if spec["kind"] == "forest" else []
    for i, sub in enumerate(spec["subs"]):
        out += _forests(sub, f"{key}/sub{i}")
    return out


def rewrite(src: Path, deflate: bool = False) -> bytes:
    """The bytes of ``src`` rewritten: leaf vectors shared, members stored (``deflate``: deflated at level 1)."""
    with zipfile.ZipFile(src) as zf:
        infos = zf.infolist()
        raw = {i.filename: zf.read(i) for i in infos}
    header = json.loads(bytes(_array(raw["header.json.npy"])).decode())
    for dtype, table in header["tables"].items():
        for key, scalars in _forests(table["spec"], f"{dtype}/spec"):
            feature = _array(raw[f"{key}/forest.feature.npy"])
            left = _array(raw[f"{key}/forest.left.npy"])
            nout = int(scalars["forest.nout"])
            value = _array(raw[f"{key}/forest.value.npy"]).reshape(-1, nout)
            left, value = share_leaf_vectors(feature, left, value)
            raw[f"{key}/forest.left.npy"] = _npy(left)
            raw[f"{key}/forest.value.npy"] = _npy(np.ascontiguousarray(value).reshape(-1))
            scalars["forest.nleaves"] = int(value.shape[0])
    raw["header.json.npy"] = _npy(np.frombuffer(json.dumps(header).encode(), np.uint8))
    buf = io.BytesIO()
    how = {"compress_type": zipfile.ZIP_DEFLATED, "compresslevel": 1} if deflate else {}
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zout:
        for i in infos:
            zout.writestr(zipfile.ZipInfo(i.filename, date_time=i.date_time), raw[i.filename], **how)
    return buf.getvalue()


#: The matrices the predictions are compared on: 6 sizes of each generator (generate()'s size: a grid side for
#: poisson2d and poisson3d, rows for the others), 30 in all.
SIZES = {"poisson2d": (10, 30, 60, 100, 200, 300), "poisson3d": (5, 10, 15, 20, 30, 40),
         "random": (100, 1000, 5000, 20_000, 50_000, 100_000), "powerlaw": (100, 1000, 5000, 20_000, 50_000, 100_000),
         "banded": (100, 1000, 5000, 20_000, 50_000, 100_000)}


def same_predictions(old: pyspmv.RankModel, new: pyspmv.RankModel) -> int:
    """How many rankings were compared; raises where any prediction or ranking differs by a bit."""
    count = 0
    for kind, sizes in SIZES.items():
        for i, size in enumerate(sizes):
            A = pyspmv.generate(kind, size, seed=i)
            for dtype, t in old.tables.items():
                R = np.ascontiguousarray(old.core_rows(A, dtype))    # every configuration's row, the C model
                g = np.ascontiguousarray(t.group, dtype=np.int32)
                ma, _ = _core.model_predict(old.capsule(dtype), R.reshape(-1), R.shape[1], g)
                mb, _ = _core.model_predict(new.capsule(dtype), R.reshape(-1), R.shape[1], g)
                assert np.array_equal(ma.view(np.uint64), mb.view(np.uint64)), (kind, size, dtype)
                for n_calls in (None, 10, 10_000):
                    ra = pyspmv.rank(A, old, dtype=dtype, n_calls=n_calls)
                    rb = pyspmv.rank(A, new, dtype=dtype, n_calls=n_calls)
                    pa, pb = np.array([v for _, v in ra]), np.array([v for _, v in rb])
                    assert [c for c, _ in ra] == [c for c, _ in rb], (kind, size, dtype, n_calls)
                    assert np.array_equal(pa.view(np.uint64), pb.view(np.uint64)), (kind, size, dtype, n_calls)
                    count += 1
    return count


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--deflate", action="store_true", help="deflate every member at level 1 instead of storing it")
    args = ap.parse_args()
    for src in args.files:
        data = rewrite(src, args.deflate)
        with tempfile.TemporaryDirectory() as tmp:
            new_path = Path(tmp) / src.name
            new_path.write_bytes(data)
            old, new = pyspmv.load_model(src), pyspmv.load_model(new_path)
            n = same_predictions(old, new)
        before = src.stat().st_size
        write_atomically(src, lambda tmp: Path(tmp).write_bytes(data), src.suffix)
        print(f"{src}: {before} -> {len(data)} bytes; {n} rankings and every prediction bit for bit the same")


if __name__ == "__main__":
    main()
