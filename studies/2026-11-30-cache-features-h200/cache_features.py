"""The five load-balance and x-footprint features of studies/2026-11-27-scale-features, tried on the H200's data.

Usage: python studies/2026-11-30-cache-features-h200/cache_features.py --corpus ../shared/corpus --corpus ../shared/matrices
       [--folds 4] [--repeats 3] [--min-nnz 1e6] [--out studies/2026-11-30-cache-features-h200]

The same candidates, folds, forest and report as that study's ``scale_features.py`` (whose functions this imports),
on the seven H200 datasets instead of the H100's three: the default's five
(``pyspmv.ranking.targets.training_data('h200')``) and ``h200_scaled_seed5``, ``h200_scaled_seed6``. Each scaled
matrix is built again from the first corpus by its collection's ``scaled_corpus`` draw (a draw depends on the seed,
the size range and the matrix's name alone; ``per_kind`` only chooses among them, so a large one finds them all).
The cache starts from the H100 study's rows of the matrices both name (the real and standard-corpus ones: the same
structures, so the same values).
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "benchmarks"))
from _internal import training_data

# The H100 study's script, loaded by path (a dated folder is not a package name).
_SPEC = importlib.util.spec_from_file_location("scale_features",
                                               HERE.parent / "2026-11-27-scale-features" / "scale_features.py")
assert _SPEC is not None and _SPEC.loader is not None
sf = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(sf)

DATASETS = (*training_data("h200"), "h200_scaled_seed5", "h200_scaled_seed6")
#: ``(min_nnz, max_nnz, per_kind, seed)`` of each scaled H200 collection (datasets/README.md), ``per_kind`` large.
SCALED = ((3e6, 1.6e7, 1000, 1), (1e6, 5e6, 1000, 2), (1e6, 5e6, 1000, 3), (1e6, 8e6, 1000, 4),
          (1e6, 8e6, 1000, 5), (1e6, 8e6, 1000, 6))


def main() -> None:
    args = sf.arguments(__doc__, HERE)
    cache = Path(args.out) / "features_cache.csv.gz"
    if not cache.is_file():
        shutil.copy(HERE.parent / "2026-11-27-scale-features" / "features_cache.csv.gz", cache)
    sf.report(args, sf.study(args, DATASETS, SCALED), "H200", "studies/2026-11-30-cache-features-h200/cache_features.py")


if __name__ == "__main__":
    main()
