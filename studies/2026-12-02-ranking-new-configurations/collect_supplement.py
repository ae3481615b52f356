"""How the two H200 supplements were measured: the matrices named, their bases packed for the device, the collection.

On the dev VM (the corpus does not travel: its bases are packed, sorted COO as row and column deltas, xz)::

    python collect_supplement.py names DIR                  # DIR/names.json: the 381 matrices, in collection order
    python collect_supplement.py pack DIR ../shared/corpus:h200_scaled ../shared/corpus:h200_scaled_seed6
    python collect_supplement.py pack DIR/matrices ../shared/matrices:ALL

On the H200, DIR carried (``datasets/h200_adaptive`` and ``datasets/h200_tables`` are the two runs)::

    python collect_supplement.py collect DIR OUT WORK adaptive   # csr/adaptive without a table: ept 8, 4; 2 orders
    python collect_supplement.py collect DIR OUT WORK vals       # every configuration with a value table
    python collect_supplement.py collect DIR OUT WORK sell gen_large,scaled,seed6   # SELL again, 1e6 entries and more
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import csv
import gzip
import io
import json
import lzma
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.io
import scipy.sparse as sp

import pyspmv
from pyspmv.datasets import collect, folder_corpus, scaled_corpus, standard_corpus

DATASETS = Path(__file__).resolve().parents[2] / "datasets"
SCALED = re.compile(r"^(?P<base>.+)_x\d+(?:tile|kron)_r\d+$")
#: The scaled datasets' draws (scaled_corpus's size range and seed); per_kind is left wide: the names filter.
DRAWS = ((1e6, 5e6, 2), (1e6, 5e6, 3), (1e6, 8e6, 6))


def features(name: str) -> pd.DataFrame:
    return pd.read_csv(DATASETS / name / "features.csv.gz")


def names(folder: Path, shared: Path) -> None:
    """The matrices to measure, most wanted first: the generated ones of 1e6 entries and more, the scaled real
    ones whose bases travel, the real ones of ``shared``, then the generated ones below 1e6."""
    std = {e.name for e in standard_corpus(max_nnz=3e6)}
    gen, h200 = features("h200_generated"), features("h200")
    real = {r["name"] for r in csv.DictReader(open(shared / "MANIFEST.csv"))}
    small = pd.concat([h200[h200["matrix"].isin(std)], gen[gen["nnz"] < 1e6]])
    order = [("gen_large", list(gen[gen["nnz"] >= 1e6].sort_values("nnz")["matrix"])),
             ("scaled", list(features("h200_scaled").sort_values("nnz")["matrix"])),
             ("seed6", list(features("h200_scaled_seed6").sort_values("nnz")["matrix"])),
             ("shared", list(h200[h200["matrix"].isin(real)].sort_values("nnz")["matrix"])),
             ("gen_small", list(small.sort_values("nnz")["matrix"]))]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "names.json").write_text(json.dumps(order))


def pack(out: Path, specs: list[str]) -> None:
    """``FOLDER:DATASET`` (the bases of DATASET's scaled matrices) or ``FOLDER:ALL`` into ``out/bases.npz.xz`` and
    ``out/MANIFEST.csv`` (the folder's rows of them)."""
    want: dict[str, Path] = {}
    for spec in specs:
        folder, ds = spec.rsplit(":", 1)
        found = ([p.name[:-7] for p in Path(folder).glob("*.mtx.gz")] if ds == "ALL" else
                 sorted({m["base"] for m in map(SCALED.match, features(ds)["matrix"]) if m}))
        want.update({n: Path(folder) for n in found})
    arrays, rows, header = {}, [], None
    for n, folder in sorted(want.items()):
        raw = gzip.decompress((folder / f"{n}.mtx.gz").read_bytes())
        field, sym = raw.split(b"\n", 1)[0].decode().lower().split()[3:5]
        A = scipy.io.mmread(io.BytesIO(raw)).tocoo()
        A = (sp.tril(A) if sym == "symmetric" else A).tocsr()
        A.sort_indices()
        A = A.tocoo()
        r, c = A.row.astype(np.int64), A.col.astype(np.int64)
        first = np.diff(np.r_[-1, r]) != 0                    # a row's first entry: its column; else the step
        arrays[f"{n}|shape"] = np.array([*A.shape, field == "pattern", sym == "symmetric"], np.int64)
        arrays[f"{n}|dr"] = np.diff(np.r_[0, r]).astype(np.int32)
        arrays[f"{n}|dc"] = np.where(first, c, np.diff(np.r_[0, c])).astype(np.int32)
        if field != "pattern":
            arrays[f"{n}|v"] = A.data.astype(np.float64)
        with open(folder / "MANIFEST.csv") as f:
            rd = csv.DictReader(f)
            header = header or rd.fieldnames
            rows += [x for x in rd if x["name"] == n]
    out.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    (out / "bases.npz.xz").write_bytes(lzma.compress(buf.getvalue(), preset=9 | lzma.PRESET_EXTREME))
    with open(out / "MANIFEST.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=header)
        w.writeheader()
        w.writerows(rows)


def unpack(src: Path, dst: Path) -> None:
    """Matrix Market files (and the MANIFEST.csv) of a packed folder: the same matrices as the originals read."""
    dst.mkdir(parents=True, exist_ok=True)
    z = np.load(io.BytesIO(lzma.decompress((src / "bases.npz.xz").read_bytes())))
    for n in sorted({k.split("|")[0] for k in z.files}):
        m, k, pattern, sym = (int(x) for x in z[f"{n}|shape"])
        r = np.cumsum(z[f"{n}|dr"].astype(np.int64))
        dc = z[f"{n}|dc"].astype(np.int64)
        first = np.r_[True, np.diff(r) != 0]
        seg, start = np.cumsum(first) - 1, np.flatnonzero(first)
        c = np.cumsum(np.where(first, 0, dc))
        c = c - c[start][seg] + dc[start][seg]
        with open(dst / f"{n}.mtx", "w") as f:
            f.write(f"%%MatrixMarket matrix coordinate {'pattern' if pattern else 'real'} "
                    f"{'symmetric' if sym else 'general'}\n{m} {k} {len(r)}\n")
            cols = [r + 1, c + 1] if pattern else [r + 1, c + 1, z[f"{n}|v"]]
            np.savetxt(f, np.c_[tuple(cols)], fmt="%d %d" if pattern else "%d %d %.17g")
    (dst / "MANIFEST.csv").write_bytes((src / "MANIFEST.csv").read_bytes())


#: Which configurations each collection measures.
FAMILIES = {"adaptive": lambda i: i.startswith("pyspmv/csr/adaptive/") and "/vals=" not in i,
            "vals": lambda i: "/vals=" in i,
            "sell": lambda i: i.startswith("pyspmv/sell/")}


def measure(src: Path, out: Path, work: Path, which: str, groups: str | None = None) -> None:
    unpack(src, work / "corpus")
    pool = {e.name: e for e in standard_corpus(max_nnz=3e6)}
    for lo, hi, seed in DRAWS:
        pool.update({e.name: e for e in scaled_corpus(work / "corpus", lo, hi, per_kind=1000, seed=seed)})
    if (src / "matrices").is_dir():                     # left behind where the collection needs none of them
        unpack(src / "matrices", work / "matrices")
        pool.update({e.name: e for e in folder_corpus(work / "matrices")})
    order = json.loads((src / "names.json").read_text())
    keep = set(groups.split(",")) if groups else {g for g, _ in order}
    entries = [pool[n] for g, names in order if g in keep for n in names]   # a name it cannot build is an error
    cfgs = [c for c in pyspmv.configs("cuda") if FAMILIES[which](c.id)]
    print(len(entries), "matrices,", len(cfgs), "configurations", flush=True)
    collect(entries, out, device="cuda", configs=cfgs, repeats=100, budget_s=0.05, progress=False)


if __name__ == "__main__":
    cmd, rest = sys.argv[1], sys.argv[2:]
    if cmd == "names":
        names(Path(rest[0]), Path(rest[1]) if len(rest) > 1 else Path("../shared/matrices"))
    elif cmd == "pack":
        pack(Path(rest[0]), rest[1:])
    elif cmd == "collect":
        measure(Path(rest[0]), Path(rest[1]), Path(rest[2]), rest[3], rest[4] if len(rest) > 4 else None)
    else:
        raise SystemExit(__doc__)
