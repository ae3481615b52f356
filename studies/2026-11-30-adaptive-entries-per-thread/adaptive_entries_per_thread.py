"""Same-run A/B of csr/adaptive's entries per thread of a work item (K; 8 shipped, kernels/csr.cu's ADAPTIVE_K) on
the 27 irregular matrices (row-length CV > 1) of benchmarks/kernels_floor.py, both types.

Run on the GPU machine over a tree patched by ``patch_k.py`` (K read from SPMV_PROBE_ADAPTIVE_K, for this study only):
    python patch_k.py && pip install . && python adaptive_entries_per_thread.py BASES OUT.csv.gz 4
BASES: a folder of the matrices' base matrices of ../shared/corpus with its MANIFEST.csv rows; 4: the K against 8.
Each matrix and type: csr/adaptive at bs 64, 128, 256 with K = 8 and the other, alternating, two rounds, with
cuSPARSE's CSR default, CSR alg1 and COO alg1 timed in the K = 8 runs; every product checked against scipy."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import os
import sys
from pathlib import Path

import pandas as pd

import pyspmv
from pyspmv.datasets import folder_corpus, scaled_corpus

#: The recipes of the H200 datasets the 27 come from (kernels_floor.py's): h200_scaled_seed1, h200_scaled, h200.
RECIPES = [(3e6, 1.6e7, 3, 1), (1e6, 5e6, 4, 2), (1e6, 5e6, 4, 3)]


def matrices(bases: Path, names: set[str]) -> list:
    """The named matrices: a scaled matrix's draws depend on its base's name and the seed alone."""
    out = [e for lo, hi, k, seed in RECIPES for e in scaled_corpus(bases, lo, hi, per_kind=k, seed=seed)]
    out += folder_corpus(bases)
    return [e for e in out if e.name in names]


def main() -> None:
    bases, out_csv, other = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    names = set((Path(__file__).parent / "irregular.txt").read_text().split())
    ada = [f"pyspmv/csr/adaptive/bs={b}" for b in (64, 128, 256)]
    cus = ["cusparse/csr/default", "cusparse/csr/alg1", "cusparse/coo/alg1"]
    rows = []
    for e in matrices(bases, names):
        M = e.build()
        for dt in ("float32", "float64"):
            for rnd in range(2):
                for k in ("8", other):
                    os.environ["SPMV_PROBE_ADAPTIVE_K"] = k
                    df = pyspmv.benchmark(M, ada + (cus if k == "8" else []), device="cuda", dtype=dt, repeats=100,
                                          budget_s=0.1, progress=False)
                    df["k"], df["round"], df["matrix"] = int(k), rnd, e.name
                    rows.append(df)
        pd.concat(rows).to_csv(out_csv, index=False)


if __name__ == "__main__":
    main()
