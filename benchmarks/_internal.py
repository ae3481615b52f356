"""What research reaches of pyspmv beyond its public API, in one place, each name with why it is needed.

The public API is what ``pyspmv`` and its public subpackages export (their ``__all__``: the list in
tests/test_public_api.py). The standing measurements and the studies use the public API where it serves, and
these building blocks of deeper modules where it does not (most are documented in docs/api.rst, none is
exported by a package); they import them from here, never from those modules (tests/test_public_api.py checks
it), so that a change of one of them shows here which research it touches. ``studies/_common.py`` passes them
on to the studies.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

# Collection's parts: collect_speed times one matrix's measurement, calibrate_real reads collections back.
from pyspmv.datasets.collect import (
    measure,  # what collect() records of one matrix, without writing files
    read_table,  # a collection's timings.csv.gz as collect() wrote it
)
from pyspmv.datasets.corpus import (
    REAL_FOLDER,  # the real matrices calibration measures (pyspmv/data/real)
    base_matrix,  # a scaled copy's real matrix (studies leave both out together)
)

# The GPU directly: plans timed on one uploaded matrix, conversion on the device, the copy-bandwidth floor.
from pyspmv.devices import (
    arrays,  # device_csr: a CSR that lives on the GPU, for conversion on the device
    gpu,  # DeviceMatrix, Plan, device_info, copy_bandwidth, convert_on_device
)
from pyspmv.devices.machine import fingerprint_of  # the machine a shipped model was measured on, compared

# The evaluation's parts: the tables score models and rankings exactly as `pyspmv train` and evaluate() do, so
# that a benchmark's number and the evaluation's are the same number.
from pyspmv.evaluate import (
    SIZE_BANDS,  # the size bands of issue 48's held-out quality and their targets
    base_folds,  # grouped folds over base matrices: a scaled copy and its real matrix on one side
    baseline_id,  # the configuration a dataset's speedups are measured against
    column_for,  # a timings column (convert_ms, ...) aligned with a dataset's rows
    evaluate,  # one train/test split scored as the evaluation scores it
    evaluate_folds,  # the same over grouped folds (benchmarks/models.py's table)
    in_band,  # the rows of a per-matrix frame in one of SIZE_BANDS
    ranking,  # ranking quality per matrix (pick, best, ratio) of a variant's scores
    split_by_matrix,  # the held-out split of a dataset (twins on one side)
    unit_key,  # the unit a ranking is scored on: a matrix and its value type
    with_sizes,  # a per-matrix frame with what in_band reads (matrix, real, nnz)
)

# Generated matrices that pyspmv.generate's kinds do not make: a chosen density, a band of a chosen width.
from pyspmv.matrices import generators

# A model's inputs and its bytes prior, for the studies that vary them.
from pyspmv.matrices.configs import PARAM_COLUMNS  # a configuration's parameter columns in a design row
from pyspmv.models.forest import bytes_per_value  # what the bytes prior multiplies a predicted time by

# rank(verify="auto")'s rule (choose_k, weigh_verify, verify_runs and their constants), replayed on measured times.
from pyspmv.ranking import verify
from pyspmv.ranking.tables import variants as table_variants  # a configuration with its values as a table (vals)
from pyspmv.ranking.targets import training_data  # the datasets a shipped default was trained on (its file's record)

# The GPU solver's launch and cache settings (USE_L2: its vectors kept in L2), for a same-run A/B of them.
from pyspmv.solvers import device as solver_device

# Calibration's own parts, for benchmarks/calibrate_real.py, which reruns it on several collections.
from pyspmv.training.defaults import TIME_LIMIT_S  # calibration's default time limit, its --time-limit default
from pyspmv.training.rounds import combine as combine_rounds  # timings of several collections as one (medians)

# The shipped defaults' recipe: the tables measure the model `pyspmv train-default` makes, and the studies vary it.
from pyspmv.training.train_default import (
    make_model,  # the recipe's estimator, unfitted
    train,  # the recipe's whole training (unseen_large retrains with it)
)

__all__ = ["PARAM_COLUMNS", "REAL_FOLDER", "SIZE_BANDS", "TIME_LIMIT_S", "arrays", "base_folds", "base_matrix", "baseline_id",
           "bytes_per_value", "column_for", "combine_rounds", "evaluate", "evaluate_folds", "fingerprint_of",
           "generators", "gpu", "in_band", "make_model", "measure", "ranking", "read_table", "solver_device", "split_by_matrix",
           "table_variants", "train", "training_data", "unit_key", "verify", "with_sizes"]
