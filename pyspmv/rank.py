"""Rank every configuration of a device for a matrix: features and model evaluation in one C call."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import os
from functools import cache, lru_cache
from importlib import resources
from typing import Any

import numpy as np

from . import _core
from .configs import DEVICES, config
from .machine import calibrated_file, warn_caller, warn_other_machine
from .matrix import as_matrix
from .portable import DTYPES, VALUE_BYTES, RankModel, portable

#: rank(estimate=None) estimates the design rows from a sample (spmv_design_rows_estimate) at and above this many
#: entries: where the estimate ranks within a tolerance of the exact rows, set before measuring as at most 1 point
#: fewer picks within 5 % of the best and a geomean t_pick / t_best at most 0.005 above exact's, on both shipped
#: datasets. No measured size meets it (benchmarks/estimate.py, benchmarks/results/estimate.md, the shipped forest
#: defaults, 2-core AMD EPYC dev VM): on datasets/h100 the estimate picks within 5 % for 97.3 %, 95.0 %, 94.6 %,
#: 86.7 % and 100 % of the matrices of 1e5-3e5, 3e5-1e6, 1e6-4e6, 4e6-1e7 and 1e7-3e7 entries (exact: 98.6, 96.7,
#: 98.2, 93.3, 100 %), one matrix of 207 beyond 20 %, geomean 1.009 to 1.018 (exact 1.005 to 1.011); datasets/cpu:
#: 97.3 %, 95.0 % and 93.8 % to 1e6-4e6 (exact 97.9-98.6 %), geomean at most 1.008. What a sample of rows cannot see is
#: the diagonals (ndiag, dia_fill, diag_dist_*: 43-55 % of the matrices off by more than 10 %); the long rows it
#: misses send it to the exact path (spmv_design_rows_estimate; before that guard it picked a SELL configuration
#: 700-1500x slower than exact's on circuits with dense rows, geomean up to 2.76). So the default mode stays
#: exact past the largest matrix of the datasets (9.8e7 entries); estimate=True asks for the sample.
ESTIMATE_MIN_NNZ = 100_000_000
#: Rows the estimated mode samples at most: 64 blocks of 256 consecutive rows, one from the middle of each of
#: 64 equal strata of the matrix.
ESTIMATE_ROWS = 16384
#: Entries the estimated mode samples at most (fewer blocks where rows are long, one block at least), so that
#: its cost is bounded by entries as well as rows: rank(estimate=True) costs 0.09 and 0.04 single-thread CSR
#: products at 1e7 entries on a 2-D Laplacian and a uniform random matrix (benchmarks/results/estimate.md; the
#: Laplacian's 2e6 rows of indptr, read whole, are most of it). Rows alone or 131072 entries rank a little better
#: on datasets/h100 (3e5-1e6: 96.7 % within 5 % against 95.0 %) but also outside the tolerance above from 1e6.
ESTIMATE_NNZ = 65536

#: The names of the value types rank() takes, by dtype (a dict lookup costs less than dtype.name).
_DTYPE_NAMES = {np.dtype(d): d for d in DTYPES}

#: File names of the shipped default models (pyspmv/data/), per device.
DEFAULT_FILES = {"cpu": "default_cpu.pyspmv", "cuda": "default_h100.pyspmv"}


@cache
def _default(device: str) -> RankModel:
    from .cache import load_shipped
    res = resources.files("pyspmv").joinpath("data", DEFAULT_FILES[device])
    if not res.is_file():
        raise FileNotFoundError(f"pyspmv ships no default model for device {device!r} ({DEFAULT_FILES[device]} is "
                                "missing); train one with `pyspmv train-default` or pass model=.")
    with resources.as_file(res) as path:
        return load_shipped(path)           # through an uncompressed copy in $PYSPMV_HOME/cache (pyspmv.cache)


def default_model(device: str = "cuda") -> RankModel:
    """The embedded default model of ``device``: ``'cuda'`` (trained on the H100 dataset) or ``'cpu'``.

    Trained from ``datasets/`` by ``pyspmv train-default`` and shipped in the package; read once per
    process, through an uncompressed copy that the first use writes to ``$PYSPMV_HOME/cache``
    (:mod:`pyspmv.cache`).
    :func:`rank` uses it unless ``pyspmv calibrate`` saved a model calibrated for this machine
    (:func:`calibrated_model`).
    """
    if device not in DEVICES:
        raise ValueError(f"The 'device' parameter of default_model() must be one of {DEVICES}. Got {device!r} "
                         "instead.")
    return _default(device)


class CalibratedModelWarning(UserWarning):
    """The model ``pyspmv calibrate`` saved for this machine (:func:`calibrated_model`) cannot be read:
    damaged, written by a newer pyspmv, or past a limit of :func:`pyspmv.load_model`. :func:`rank` then
    uses the shipped default model; the message names the file, why, and how to remove or remake it.
    Issued once per file and process (again after :func:`reread_calibrated`)."""


@lru_cache(maxsize=8)
def _calibrated(path: str) -> RankModel | None:
    # Looked up once per path and process: a file-system call on every rank() would release the GIL,
    # and a solver's selection thread would then wait behind the iterations for it.
    if not os.path.isfile(path):
        return None
    from .export import load_model
    try:
        return load_model(path)
    except (ValueError, OSError) as exc:
        # Every rank() of every process would fail on it, and nothing would say how to get out.
        device = os.path.basename(path).removeprefix("calibrated_").removesuffix(".pyspmv")
        warn_caller(f"The calibrated model {path!r} cannot be used, so rank() uses the shipped default model "
                    f"instead: {exc} Remove it (rm {path!r}) or run `pyspmv calibrate --device {device}` again to "
                    "replace it.", CalibratedModelWarning)
        return None


def calibrated_model(device: str = "cpu") -> RankModel | None:
    """The model ``pyspmv calibrate`` saved for ``device`` (:func:`pyspmv.machine.calibrated_path`:
    ``$PYSPMV_HOME/calibrated_<device>.pyspmv``), or None where there is none or it cannot be read
    (:class:`CalibratedModelWarning`, naming the file and how to remove it).

    Read once per process (after :func:`pyspmv.calibrate`, again): a calibration made by another
    process is used by processes started after it, or after :func:`reread_calibrated`.
    """
    return _calibrated(calibrated_file(device))


def reread_calibrated() -> None:
    """Make the next :func:`calibrated_model` (and :func:`rank`) read the calibrated model files again."""
    _calibrated.cache_clear()


def model_in_use(device: str, dtype: str) -> RankModel:
    """What :func:`rank` uses when given no model: :func:`calibrated_model` where it ranks ``dtype``,
    else :func:`default_model`."""
    cal = calibrated_model(device)
    return cal if cal is not None and dtype in cal.tables else default_model(device)


class _Ranked:
    """Per (model, dtype): the capsule and what turns C's order into ids without Python loops."""

    __slots__ = ("capsule", "convert", "deterministic", "formats", "id_tuple", "ids", "keep", "ranked")

    def __init__(self, rm: RankModel, dtype: str):
        t = rm.table(dtype).ranked()              # no size queries for what the model does not rank
        if not t.config_ids:                      # a RankModel made by hand: check_model says the same
            raise ValueError(f"The model {rm!r} ranks no configuration for {dtype}: every entry of its table's "
                             "'group' is -1, so it has no sub-model for any configuration.")
        self.capsule = _core.model_new({**t.spec.to_dict(), **t.config_arrays(rm.gpu)})
        self.ids = np.array(t.config_ids, dtype=object)
        self.ranked = np.asarray(t.group) >= 0
        cfgs = [config(c) for c in t.config_ids]
        self.deterministic = np.array([c.deterministic for c in cfgs])
        # What _core.rank builds rank()'s pairs from: the ids, and per value of `deterministic` the
        # configurations kept (None: all).
        self.id_tuple = tuple(t.config_ids)
        self.keep = {d: None if k.all() else tuple(k.tolist())
                     for d, k in ((False, self.ranked), (True, self.ranked & self.deterministic))}
        conv = rm.meta.get("convert_ms", {})
        self.formats = [c.format for c in cfgs]
        a = np.array([conv.get(c.format, [np.nan, np.nan])[0] for c in cfgs], dtype=np.float64)
        b = np.array([conv.get(c.format, [np.nan, np.nan])[1] for c in cfgs], dtype=np.float64)
        self.convert = (a, b) if conv else None


def _prepared(rm: RankModel, dtype: str) -> _Ranked:
    cache = rm.__dict__.setdefault("_ranked", {})
    if dtype not in cache:
        cache[dtype] = _Ranked(rm, dtype)
    return cache[dtype]


class Ranking(list):
    """What :func:`rank` returns: a list of ``(configuration id, predicted ms)`` pairs, fastest first.

    It is a plain list of tuples (iteration, ``len``, ``r[0] -> (id, ms)``, slicing and equality with a list
    of tuples all behave as a list's), plus ``best`` (the first id), ``to_frame()`` (a pandas DataFrame) and
    a table when Jupyter shows it. ``score`` names the column: ``'predicted_ms'`` for runtime models,
    ``'score'`` (lower is better) for classifiers.
    """

    #: Rows the HTML table shows; ``to_frame()`` has them all.
    HTML_ROWS = 20

    def __init__(self, pairs: Any = (), *, device: str | None = None, dtype: str | None = None,
                 score: str = "predicted_ms", matrix: str | None = None):
        super().__init__(pairs)
        self.device, self.dtype, self.score, self.matrix = device, dtype, score, matrix

    @classmethod
    def _of(cls, pairs: list, device: str, dtype: str, score: str, matrix: str | None) -> Ranking:
        """What ``Ranking(pairs, device=..., ...)`` makes, in half its time (rank()'s return: keywords
        and ``__init__``'s call cost a third of a microsecond)."""
        r = list.__new__(cls)
        r.extend(pairs)
        r.device, r.dtype, r.score, r.matrix = device, dtype, score, matrix
        return r

    @property
    def best(self) -> str | None:
        """The configuration ranked first (None when nothing was ranked)."""
        return self[0][0] if self else None

    def to_frame(self) -> Any:
        """A pandas DataFrame, one row per configuration: ``rank`` (1 = fastest, the index), ``config`` and
        ``predicted_ms`` (or ``score``); ``inf`` where a configuration cannot serve the matrix."""
        import pandas as pd
        df = pd.DataFrame(list(self), columns=["config", self.score])
        df.index = pd.RangeIndex(1, len(df) + 1, name="rank")
        return df

    def _repr_html_(self) -> str:
        from html import escape
        head = (f"<p><b>pyspmv ranking</b>{' of ' + escape(self.matrix) if self.matrix else ''}: "
                f"{len(self)} configurations{', device ' + escape(self.device) if self.device else ''}"
                f"{', ' + escape(self.dtype) if self.dtype else ''}; fastest predicted first"
                + (f" (first {self.HTML_ROWS} shown; <code>to_frame()</code> has all)" if len(self) > self.HTML_ROWS
                   else "") + "</p>")
        return head + self.to_frame().head(self.HTML_ROWS).to_html()


def rank(A: Any, model: Any = None, device: str | None = None, dtype: Any = None, n_calls: int | None = None,
         deterministic: bool = False, estimate: bool | None = None) -> Ranking:
    """Every configuration of ``device`` for matrix ``A``, fastest predicted first.

    Features, per-configuration columns (bytes moved, padding from the formats' size queries) and the
    model's evaluation run in one C call (``spmv_rank``).

    Parameters
    ----------
    A : Matrix, scipy.sparse matrix, or path of a Matrix Market file (str or path-like)
    model : fitted pyspmv.models estimator, RankModel, path of a saved model, or None
        None: the model ``pyspmv calibrate`` saved for this machine (:func:`calibrated_model`), else
        :func:`default_model` of ``device``. A path is read with :func:`pyspmv.load_model`. An
        estimator is converted on every call; convert it once with :func:`pyspmv.portable` where
        speed matters.
    device : {'cuda', 'cpu'}, optional
        Whose configurations to rank. Default: the model's device (a RankModel's ``device``, an
        estimator's from the configurations it was trained on); with no model, ``'cuda'``. Given
        with a model of another device, it is an error.
    dtype : {'float64', 'float32'}, optional
        The value type the configurations will compute in. Default: ``A``'s (a float32 Matrix is
        ranked for float32).
    n_calls : int, optional
        SpMV calls the caller expects: each configuration's conversion cost (a per-format fit of
        ``convert_ms`` against nonzeros carried by the model, ``model.meta['convert_ms']``) is added
        divided by ``n_calls``.
    deterministic : bool
        Keep only configurations whose every run gives the same bits.
    estimate : bool, optional
        True: features and per-configuration columns estimated from at most :data:`ESTIMATE_ROWS` rows and
        :data:`ESTIMATE_NNZ` entries (blocks of 256 consecutive rows, one in the middle of each of as many
        equal strata of ``A``), at a cost that does not grow with the entries; False: exact (one pass over
        ``A``). None (default): estimated when ``A`` has at least
        :data:`ESTIMATE_MIN_NNZ` entries. Only the sampled rows are read (and ``indptr`` at every 256th
        row), so ``A`` must be a valid CSR (a :class:`pyspmv.Matrix` always is). Where a block of 256
        rows holds more than twice the entries of the fullest sampled one, the exact path is taken:
        a sample that misses the long rows misjudges every padded format.

    Returns
    -------
    Ranking
        A list of ``(configuration id, predicted ms)`` fastest first (for classifiers the ms is the
        model's score, lower is better); configurations that cannot serve ``A`` come last with
        ``inf``. A model that weighs in the bytes moved (``rank_bytes_pow`` of its spec; the cuda
        default's 0.05, ForestModel's ``bytes_prior``) orders by predicted ms times the bytes each
        configuration moves per byte of values to that power, so that of two near-equal predictions
        the one moving fewer bytes comes first; the ms listed are the predictions themselves. It also
        has ``best``, ``to_frame()`` and a table in Jupyter (:class:`Ranking`).

    Warns
    -----
    pyspmv.OtherMachineWarning
        Once per model, when the model records a machine (``meta['fingerprint']`` or
        ``meta['device_info']``) other than this one: another processor or thread count, another GPU.
        ``pyspmv calibrate`` adapts the model to this machine.
    """
    if device is not None and device not in DEVICES:
        raise ValueError(f"The 'device' parameter of rank() must be one of {DEVICES} or None. Got {device!r} instead.")
    if n_calls is not None and (isinstance(n_calls, bool) or not isinstance(n_calls, int | np.integer)
                                or n_calls < 1):
        raise ValueError(f"The 'n_calls' parameter of rank() must be a positive int or None. Got {n_calls!r} instead.")
    M = as_matrix(A)
    if dtype is None:
        dtype = _DTYPE_NAMES.get(M.dtype) or M.dtype.name
    else:
        try:
            dtype = np.dtype(dtype).name
        except TypeError:
            dtype = repr(dtype)
        if dtype not in DTYPES:
            raise ValueError(f"The 'dtype' parameter of rank() must be one of {DTYPES} or None. Got {dtype} instead.")
    if model is not None and isinstance(model, (str, os.PathLike)):
        from .export import load_model
        model = load_model(model)
    rm = model_in_use(device or "cuda", dtype) if model is None else portable(model, device)
    if rm.features is not None:
        raise ValueError("The 'model' parameter of rank() takes its own features, not a matrix's: rank its "
                         "configurations with pyspmv.portable(model).rank_features(features).")
    if device is not None and rm.device != device:
        raise ValueError(f"The model ranks {rm.device!r} configurations; rank() was asked for device {device!r}.")
    warn_other_machine(rm)
    p = _prepared(rm, dtype)
    add = None
    if n_calls is not None:
        if p.convert is None:
            raise ValueError("The 'n_calls' parameter of rank() needs the model's conversion-cost fit "
                             "(model.meta['convert_ms'], made by pyspmv train-default); this model has none.")
        a, b = p.convert
        add = np.nan_to_num((a + b * M.nnz) / n_calls, nan=0.0)
    if estimate is not None and not isinstance(estimate, bool | np.bool_):
        raise ValueError(f"The 'estimate' parameter of rank() must be True, False or None. Got {estimate!r} instead.")
    sample = ESTIMATE_ROWS if (M.nnz >= ESTIMATE_MIN_NNZ if estimate is None else estimate) else 0
    pairs = _core.rank(p.capsule, M.nrows, M.ncols, M.indptr, M.indices, VALUE_BYTES[dtype], add, sample,
                       p.id_tuple, p.keep[bool(deterministic)], ESTIMATE_NNZ)
    return Ranking._of(pairs, rm.device, dtype, "predicted_ms" if rm.score == "ms" else "score", M.name)
