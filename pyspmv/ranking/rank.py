"""Rank a device's configurations for a matrix: features and model evaluation in one C call."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import math
import os
import time
from collections.abc import Iterable
from functools import lru_cache
from html import escape
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from .. import _core
from ..devices import arrays, gpu
from ..devices.benchmark import _DtypeRun, benchmark
from ..devices.machine import (calibrated_file, measured_on, model_fingerprint, on_this_machine, warn_caller,
                               warn_other_machine)
from ..devices.run import prepare_on_device, require_device
from ..matrices.configs import DEVICES, LIBRARIES, config, device_libraries
from ..matrices.matrix import DTYPES, VALUE_BYTES
from ..matrices.mmio import as_matrix
from .modelfile import load_model
from .portable import ModelLike, portable
from .rankmodel import RankModel
from .shipped import default_for, default_model  # noqa: F401 (default_model: imported from here)

if TYPE_CHECKING:                       # imported where a table is made: pandas costs 0.4 s to import
    import numpy.typing as npt
    import pandas as pd

    from ..devices.arrays import SparseOnDevice
    from ..matrices.mmio import MatrixLike

#: rank(estimate=None) estimates the design rows from a sample (spmv_design_rows_estimate) at and above this many
#: entries: where the estimate would rank within a tolerance of the exact rows, set before measuring (at most 1 point
#: fewer picks within 5 % of the best, a geomean t_pick / t_best at most 0.005 above exact's, on both shipped
#: datasets). No measured size met it, because a sample of rows cannot see the diagonals (the long rows it misses
#: send it to the exact path): studies/2026-11-24-estimated-ranking/estimate.md. So the default mode stays exact past
#: the largest matrix of the datasets (9.8e7 entries); estimate=True asks for the sample.
ESTIMATE_MIN_NNZ = 100_000_000
#: Rows the estimated mode samples at most: 64 blocks of 256 consecutive rows, one from the middle of each of
#: 64 equal strata of the matrix.
ESTIMATE_ROWS = 16384
#: Entries the estimated mode samples at most (fewer blocks where rows are long, one block at least), so that
#: its cost is bounded by entries as well as rows; its cost, and how other budgets rank:
#: studies/2026-11-24-estimated-ranking/estimate.md.
ESTIMATE_NNZ = 65536

#: The names of the value types rank() takes, by dtype (a dict lookup costs less than dtype.name).
_DTYPE_NAMES = {np.dtype(d): d for d in DTYPES}

# rank(verify=k) times each configuration as pyspmv.benchmark() does (its noise checks included), with fewer runs
# than its defaults so that verifying costs tens of products rather than hundreds. Untuned; they are also what
# rank(verify=k, n_calls=...) counts as the cost of measuring (verify_runs).
#: Untimed runs rank(verify=k) makes of each configuration before timing it, at most.
VERIFY_WARMUP = 3
#: Timed runs rank(verify=k) makes of each configuration, at most; their median orders them.
VERIFY_REPEATS = 30
#: Seconds of timed runs per configuration in rank(verify=k): timing stops once they are spent.
VERIFY_BUDGET_S = 0.1
#: The median of |e| for a normal e is this many standard deviations: rank(verify=k, n_calls=...) reads the
#: model's median error on the ratio to the pick (Precision.tie_tol) as a log-normal error of that median.
_MEDIAN_ABS_NORMAL = 0.6744897501960817


class Precision(NamedTuple):
    """How far a model's predicted times can be read, as measured on held-out matrices.

    ``g`` below is a configuration's predicted time divided by the pick's (the configuration ranked
    first).

    Attributes
    ----------
    tie_tol : float
        The median error of ``g`` against the measured ratio over the configurations ranked 2 to 10
        (0.021: 2.1 %). A configuration with ``g <= 1 + tie_tol`` is a tie of the pick: the model
        cannot tell the two apart.
    max_gap : float
        Up to this ``g`` the predicted times read as times (the median error of every bin of ``g``
        below it is at most 10 %); beyond it only the order holds. The default forest caps each
        training slowdown at ``exp(clip)``, 1.65 times the best, so the predictions there understate
        the measured gaps, and by how much the model cannot say.
    source : str
        Where the figures were measured.
    """

    tie_tol: float
    max_gap: float
    source: str


#: The default recipe's figures per device, measured by benchmarks/rank_table.py (the default forest fitted on 75 % of
#: the dataset's matrices, split by matrix, as benchmarks/default_quality.py; the pick ranked as rank() ranks); the
#: per-rank and per-gap errors behind them, and how often ties measured within 5 % of the pick, are in its tables.
DEFAULT_PRECISION = {
    "cuda": Precision(0.021, 1.5, "the cuda default's recipe on held-out matrices of datasets/h100 "
                                  "(benchmarks/results/rank_table_h100.md)"),
    "cpu": Precision(0.087, 1.3, "the cpu default's recipe on held-out matrices of datasets/cpu "
                                 "(benchmarks/results/rank_table_cpu.md)"),
}


def precision_of(rm: RankModel) -> Precision | None:
    """The :class:`Precision` that :class:`Ranking` marks ties and order-only rows with for a model:
    :data:`DEFAULT_PRECISION` of its device for a runtime ForestModel (the default recipe's kind, as
    the shipped defaults and ``pyspmv calibrate`` make), None for other kinds and classifiers, whose
    errors were not measured."""
    if rm.score != "ms" or not str(rm.source).startswith("ForestModel("):
        return None
    return DEFAULT_PRECISION.get(str(rm.device))


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
    try:
        rm = load_model(path)
    except (ValueError, OSError) as exc:
        # Every rank() of every process would fail on it, and nothing would say how to get out.
        device = os.path.basename(path).removeprefix("calibrated_").removesuffix(".pyspmv")
        warn_caller(f"The calibrated model {path!r} cannot be used, so rank() uses the shipped default model "
                    f"instead: {exc} Remove it (rm {path!r}) or run `pyspmv calibrate --device {device}` again to "
                    "replace it.", CalibratedModelWarning)
        return None
    rm.origin = f"calibrated for this machine ({path})"
    return rm


def calibrated_model(device: str = "cpu") -> RankModel | None:
    """The model ``pyspmv calibrate`` saved for ``device`` (:func:`pyspmv.devices.machine.calibrated_path`:
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
    return cal if cal is not None and dtype in cal.tables else default_for(device, dtype)


class _Ranked:
    """Per (model, dtype): the capsule and what turns C's order into ids without Python loops."""

    __slots__ = ("about", "bytes_pow", "capsule", "checked", "convert", "deterministic", "formats", "id_tuple", "ids",
                 "keep", "libraries", "precision", "ranked")

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
        self.libraries = np.array([c.library for c in cfgs], dtype=object)
        self.checked: dict[Any, tuple[str, ...]] = {}    # rank()'s libraries argument -> _libraries' answer
        conv = rm.meta.get("convert_ms", {})
        self.formats = [c.format for c in cfgs]
        a = np.array([conv.get(c.format, [np.nan, np.nan])[0] for c in cfgs], dtype=np.float64)
        b = np.array([conv.get(c.format, [np.nan, np.nan])[1] for c in cfgs], dtype=np.float64)
        self.convert = (a, b) if conv else None
        self.precision = precision_of(rm)
        self.bytes_pow = float(t.spec.fields.get("rank_bytes_pow", 0.0))
        #: what a Ranking says of its model: (the model in words, the machine it was measured on, its fingerprint)
        self.about = (rm.label, measured_on(rm), model_fingerprint(rm))


    def keep_of(self, deterministic: bool, libraries: tuple[str, ...]) -> tuple[bool, ...] | None:
        """``keep`` for rank(deterministic=..., libraries=...): made once per pair and kept, so that a
        restricted rank() costs what an unrestricted one does."""
        key = (deterministic, libraries)
        if key not in self.keep:
            k = self.ranked & np.isin(self.libraries, libraries)
            if deterministic:
                k &= self.deterministic
            self.keep[key] = None if k.all() else tuple(k.tolist())
        return self.keep[key]


def _libraries(libraries: Any, device: str, p: _Ranked) -> tuple[str, ...]:
    """rank()'s ``libraries`` checked against ``device`` and the model, as a tuple in :data:`LIBRARIES`' order;
    a str or tuple once per model and value type (checking costs more than ranking a small matrix)."""
    try:
        return p.checked[libraries]
    except (KeyError, TypeError):                           # not seen, or unhashable (a list)
        pass
    names = (libraries,) if isinstance(libraries, str) else libraries
    try:
        names = tuple(names)
    except TypeError:
        names = ()
    if not names or not all(isinstance(n, str) and n in LIBRARIES for n in names):
        raise ValueError(f"The 'libraries' parameter of rank() must be None or a non-empty tuple of library names "
                         f"from {LIBRARIES}. Got {libraries!r} instead.")
    have = device_libraries(device)
    if any(n not in have for n in names):
        raise ValueError(f"The 'libraries' parameter of rank() names {[n for n in names if n not in have]}, which "
                         f"have no configuration on device {device!r}: its libraries are {have}.")
    names = tuple(n for n in LIBRARIES if n in names)
    if not np.isin(p.libraries[p.ranked], names).any():
        raise ValueError(f"The 'libraries' parameter of rank() asks for {names}, of which the model ranks no "
                         "configuration.")
    if isinstance(libraries, str | tuple):
        p.checked[libraries] = names
    return names


def _prepared(rm: RankModel, dtype: str) -> _Ranked:
    cache = rm.__dict__.setdefault("_ranked", {})
    if dtype not in cache:
        cache[dtype] = _Ranked(rm, dtype)
    return cache[dtype]


def vs_pick(g: float | None) -> str:
    """A :attr:`RankRow.vs_pick` as the tables print it: ``+1.2%``, ``-0.4%``, or empty for None."""
    return "" if g is None else f"{100.0 * (g - 1.0):+.1f}%"


class Baseline(NamedTuple):
    """The configuration a user would otherwise run, as a :class:`Ranking` places it (:attr:`Ranking.baseline`)."""

    config: str
    rank: int
    #: its predicted ms (inf: it cannot serve the matrix)
    predicted: float
    #: its predicted time over the pick's: the pick's predicted gain (None where either is not finite)
    gain: float | None
    #: beyond :attr:`Ranking.order_only_beyond`, where the model's times understate the gaps: the gain is at least this
    understated: bool

    def sentence(self, n: int, unit_us: bool = True) -> str:
        """One line for the tables: its rank of ``n``, its predicted time, the pick's gain over it."""
        if self.gain is None:
            return f"{self.config}: rank {self.rank} of {n}; it cannot serve this matrix"
        if self.rank == 1:
            return f"{self.config}: the pick itself"
        t = f"{self.predicted * 1e3:.3f} µs" if unit_us else f"{self.predicted:.6g} ms"
        gain = f"{'at least ' if self.understated else ''}{self.gain:.2f}x"
        why = " (beyond the order-only bound, where the model understates gaps)" if self.understated else ""
        return f"{self.config}: rank {self.rank} of {n}, predicted {t}; the pick is predicted {gain} faster{why}"


class RankRow(NamedTuple):
    """One row of a :class:`Ranking` as its table shows it (:meth:`Ranking.rows`)."""

    rank: int
    config: str
    #: The prediction (ms, or the score of a classifier); None where only the order holds or the
    #: configuration cannot serve the matrix.
    predicted: float | None
    #: ``predicted`` divided by the pick's (None where ``predicted`` is, and for scores).
    vs_pick: float | None
    #: ``'pick'``, ``'tie'`` (the model cannot tell it from the pick), ``''``, ``'order only'`` (predicted
    #: beyond :attr:`Precision.max_gap` times the pick) or ``'n/a'`` (cannot serve the matrix).
    mark: str


class Measured(NamedTuple):
    """One configuration ``rank(verify=k)`` timed (:attr:`Ranking.verified`): its row of the
    :func:`pyspmv.benchmark` table."""

    config: str
    #: Median, first and third quartile of the timed products in ms (NaN where ``status`` is not 'ok').
    median_ms: float
    q25_ms: float
    q75_ms: float
    #: The conversion in ms; on the GPU with the upload (or the conversion on the device) and the setup.
    convert_ms: float
    #: benchmark()'s: ``'ok'``, ``'not_applicable'`` or ``'error'`` (``note`` says why).
    status: str
    #: benchmark()'s note: why it was not timed, or whether its timings stayed noisy.
    note: str


class Ranking(list[tuple[str, float]]):
    """What :func:`rank` returns: a list of ``(configuration id, predicted ms)`` pairs in ranked order.

    It is a plain list of tuples (iteration, ``len``, ``r[0] -> (id, ms)``, slicing and equality with a list
    of tuples all behave as a list's), plus ``best`` (the first id), ``to_frame()`` (a pandas DataFrame) and
    a table when Jupyter shows it. ``score`` names the column: ``'predicted_ms'`` for runtime models,
    ``'score'`` (lower is better) for classifiers.

    The order is the one :attr:`order` describes: by predicted time, except that a model with a bytes
    weight (``bytes_pow`` > 0, the cuda default's 0.05) puts of two predictions a few per cent apart the
    one moving fewer bytes first, so neighbours may be out of time order. How far the predicted times can
    be read is :attr:`precision` (None where it was not measured for the model): :meth:`rows` and the
    tables mark the configurations predicted within ``precision.tie_tol`` of the pick as ties, and give
    beyond ``precision.max_gap`` times the best prediction the order only.

    A ranking restricted to some configurations (``rank(libraries=...)``, ``rank(deterministic=True)``)
    lists those alone, in the order and with the predictions they have in the whole ranking; its pick is
    the first of them, and :attr:`libraries` and :attr:`best_of_all` say what was left out. Ties are
    counted from that pick (the model's error on the ratio of two predictions near each other), but
    "order only" from :attr:`best_of_all`: the default forest's predictions understate the gaps beyond
    ``max_gap`` times the best configuration of the device, restricted or not, so a restricted pick
    slower than that has only its order too (a note says so).

    A ranking made with ``rank(verify=k)`` lists its first configurations in the order measured on the
    device, with their predictions (ties and marks then count from the measured best): :attr:`verified`,
    :attr:`measured` and :attr:`verify_note` say what was timed and how, and :attr:`order` says so in words.
    """

    #: The libraries ``rank(libraries=...)`` kept (:attr:`pyspmv.Config.library`, in
    #: :data:`pyspmv.matrices.configs.LIBRARIES`' order); None: every library of the device.
    libraries: tuple[str, ...] | None = None
    #: Whether ``rank(deterministic=True)`` kept only the configurations whose every run gives the same bits.
    deterministic: bool = False
    #: ``(id, predicted)`` of the configuration the whole ranking (no ``libraries``, not
    #: ``deterministic``) puts first, where this ranking leaves some out; None where it lists them all.
    best_of_all: tuple[str, float] | None = None
    #: What ``rank(verify=k)`` timed (:class:`Measured`), in the order it gave them (fastest first, those
    #: that could not be timed last); an empty tuple where it timed nothing (``n_calls`` too few to pay
    #: for it: :attr:`verify_note` says so); None where verification was not asked.
    verified: tuple[Measured, ...] | None = None
    #: What ``rank(verify=k)`` did, in one sentence (also a line of :meth:`notes`); None without verify.
    verify_note: str | None = None
    #: ``(cost, gain)`` that ``rank(verify=k, n_calls=...)`` weighed, in products of the pick's predicted
    #: time: the estimated cost of measuring, and its expected saving over ``n_calls`` products; None where
    #: nothing was weighed.
    verify_weighed: tuple[float, float] | None = None

    #: The model, in words (:attr:`pyspmv.RankModel.label`: the shipped default, a calibration, a model file).
    model: str | None = None
    #: The machine the model was measured on (its GPU's name, or its processor): what the ranking is for.
    measured_on: str | None = None
    _model_fp: dict[str, Any] | None = None

    #: Rows the HTML table shows; ``to_frame()`` has them all.
    HTML_ROWS = 20
    #: The configuration a user would run without pyspmv, per device: its predicted time and the pick's gain
    #: over it are what :attr:`baseline` reports.
    BASELINES = {"cuda": "cusparse/csr/default", "cpu": "cpu/csr/rows"}

    def __init__(self, pairs: Iterable[tuple[str, float]] = (), *, device: str | None = None, dtype: str | None = None,
                 score: str = "predicted_ms", matrix: str | None = None, precision: Precision | None = None,
                 bytes_pow: float = 0.0, libraries: tuple[str, ...] | None = None, deterministic: bool = False,
                 best_of_all: tuple[str, float] | None = None):
        super().__init__(pairs)
        self.device, self.dtype, self.score, self.matrix = device, dtype, score, matrix
        self.precision, self.bytes_pow = precision, bytes_pow
        self.libraries, self.deterministic, self.best_of_all = libraries, deterministic, best_of_all

    @classmethod
    def _of(cls, pairs: list, device: str, dtype: str, score: str, matrix: str | None, p: _Ranked,
            libraries: tuple[str, ...] | None = None, deterministic: bool = False,
            best_of_all: tuple[str, float] | None = None) -> Ranking:
        """What ``Ranking(pairs, device=..., ...)`` makes, in half its time (rank()'s return: keywords
        and ``__init__``'s call cost a third of a microsecond)."""
        r = list.__new__(cls)
        r.extend(pairs)
        r.device, r.dtype, r.score, r.matrix = device, dtype, score, matrix
        r.precision, r.bytes_pow = p.precision, p.bytes_pow
        r.model, r.measured_on, r._model_fp = p.about
        if libraries is not None or deterministic or best_of_all is not None:     # else the class's defaults
            r.libraries, r.deterministic, r.best_of_all = libraries, deterministic, best_of_all
        return r

    @property
    def best(self) -> str | None:
        """The configuration ranked first (None when nothing was ranked)."""
        return self[0][0] if self else None

    @property
    def here(self) -> str | None:
        """Whether this machine has the device the ranking is for, in one sentence (None: a ranking made by
        hand, of no model): no usable GPU, another GPU, another processor, or the one measured."""
        if self.device is None or self.measured_on is None:
            return None
        return on_this_machine(self.device, self.measured_on, self._model_fp)

    @property
    def baseline(self) -> Baseline | None:
        """What the pick is predicted to gain over the configuration a user would otherwise run
        (:data:`BASELINES`: cuSPARSE's CSR default on the GPU, the row-parallel CSR kernel on the CPU); None
        where this ranking does not list it (a restricted one, a model that does not rank it) or has no times."""
        cid = self.BASELINES.get(self.device or "")
        if cid is None or self.score != "predicted_ms" or not self:
            return None
        for i, (c, v) in enumerate(self, 1):
            if c == cid:
                first = self[0][1]
                ok = math.isfinite(v) and math.isfinite(first) and first > 0
                beyond = self.order_only_beyond
                return Baseline(cid, i, v, v / first if ok else None,
                                ok and beyond is not None and v / first > beyond)
        return None

    @property
    def measured(self) -> dict[str, float]:
        """The measured median ms of each configuration :attr:`verified` timed, by id (empty where none was)."""
        return {m.config: m.median_ms for m in self.verified or () if m.status == "ok"}

    @property
    def order(self) -> str:
        """What the order of the list is, in words."""
        if self.score != "predicted_ms":
            rule = "by the model's score, lowest first"
        elif self.bytes_pow > 0:
            rule = ("by predicted time, except that of two predictions a few per cent apart the one moving fewer "
                    f"bytes comes first (time x (bytes moved per byte of values)^{self.bytes_pow:g}), so a neighbour "
                    "may be predicted a little faster")
        else:
            rule = "by predicted time, fastest first"
        n = len(self.verified or ())
        return rule if not n else f"the first {n} by measured time (rank(verify=...)), then the rest {rule}"

    def _best(self) -> float:
        """The prediction "order only" counts from: :attr:`best_of_all`'s, else the pick's (NaN: none)."""
        if self.best_of_all is not None:
            return self.best_of_all[1]
        return self[0][1] if self else math.nan

    @property
    def order_only_beyond(self) -> float | None:
        """The ``vs_pick`` beyond which :meth:`rows` give the order only: ``precision.max_gap`` times the best
        prediction (:attr:`best_of_all`'s where this ranking is restricted, else the pick's) over the pick's.
        None without a :attr:`precision` or times."""
        first, best = (self[0][1] if self else math.nan), self._best()
        if self.precision is None or self.score != "predicted_ms" or not (
                math.isfinite(first) and first > 0 and math.isfinite(best) and best > 0):
            return None
        return self.precision.max_gap * (best / first if self.best_of_all is not None else 1.0)

    def rows(self, top: int | None = None) -> list[RankRow]:
        """The first ``top`` rows (None: all) as the tables show them: the prediction, its ratio to the
        pick's, and the mark (:class:`RankRow`; ties of the pick and order-only rows beyond
        ``max_gap`` times the best prediction, :meth:`_best`, by :attr:`precision`)."""
        out = []
        p = self.precision
        first, best = (self[0][1] if self else math.nan), self._best()
        ms = self.score == "predicted_ms"
        ok0 = ms and math.isfinite(first) and first > 0
        okb = ms and math.isfinite(best) and best > 0
        for i, (c, v) in enumerate(self if top is None else self[:top], 1):
            if not math.isfinite(v):
                out.append(RankRow(i, c, None, None, "n/a"))
                continue
            g = v / first if ok0 else None
            if i == 1:
                mark = "pick"
            elif g is None or p is None:
                mark = ""
            elif okb and v / best > p.max_gap:
                out.append(RankRow(i, c, None, None, "order only"))
                continue
            elif g <= 1.0 + p.tie_tol:
                mark = "tie"
            else:
                mark = ""
            out.append(RankRow(i, c, v, g, mark))
        return out

    def ties(self) -> list[str]:
        """The pick and the configurations marked as its ties (:meth:`rows`), in ranked order: those the
        model cannot tell apart. Just the pick where :attr:`precision` is None."""
        return [r.config for r in self.rows() if r.mark in ("pick", "tie")]

    def to_frame(self) -> pd.DataFrame:
        """A pandas DataFrame, one row per configuration: ``rank`` (1 = fastest, the index), ``config`` and
        ``predicted_ms`` (or ``score``); ``inf`` where a configuration cannot serve the matrix. Where
        ``rank(verify=k)`` was asked, also ``measured_ms`` (NaN where not measured). What the ranking is for
        goes in ``df.attrs``: ``device``, ``dtype``, ``matrix``, ``model``, ``measured_on``, ``here`` (whether this
        machine has that device) and ``baseline`` (:attr:`baseline` as a dict, or None)."""
        import pandas as pd
        df = pd.DataFrame(list(self), columns=["config", self.score])
        df.index = pd.RangeIndex(1, len(df) + 1, name="rank")
        b = self.baseline
        df.attrs.update(device=self.device, dtype=self.dtype, matrix=self.matrix, model=self.model,
                        measured_on=self.measured_on, here=self.here, baseline=None if b is None else b._asdict())
        if self.verified is not None:
            t = self.measured
            df["measured_ms"] = [t.get(c, math.nan) for c, _ in self]
        return df

    def _restriction(self) -> str:
        """The note of a restricted ranking: what it kept, and the best configuration it left out."""
        kept = (f"{' and '.join(self.libraries)} configurations" if self.libraries else "configurations")
        note = f"only the {'deterministic ' if self.deterministic else ''}{kept}"
        ask = ", ".join(([f"libraries={self.libraries!r}"] if self.libraries else [])
                        + (["deterministic=True"] if self.deterministic else []))
        b = self.best_of_all
        first = self[0][1] if self else math.nan
        if b is None:
            return f"{note} ({ask}): the device has no other."
        if not self:
            return f"{note} ({ask}): none; the best of all is {b[0]}."
        if b[0] == self[0][0]:
            return f"{note} ({ask}); the pick is also the best of all the device's configurations."
        if self.score != "predicted_ms" or not (math.isfinite(first) and math.isfinite(b[1]) and b[1] > 0):
            return f"{note} ({ask}); the best of all the device's configurations is {b[0]}."
        out = (f"{note} ({ask}); the best of all the device's configurations, {b[0]}, is predicted to take "
               f"{b[1] / first:.2f}x the pick's time")
        p = self.precision
        if p is not None and first / b[1] > p.max_gap:
            return (out + f": beyond {p.max_gap:g}x, where the model's times understate the measured gaps, so the "
                    "pick's predicted time is an order only, as every row below it is.")
        return out + (f"; 'order only' counts from its time (beyond {p.max_gap:g}x)." if p is not None else ".")

    def purpose(self) -> list[str]:
        """What the ranking is for, as lines the tables print above and below it: the device and model, whether
        this machine has that device, and the pick's predicted gain over :attr:`baseline`."""
        out = []
        if self.measured_on is not None:
            out.append(f"for: {self.device} as measured on {self.measured_on}, by {self.model}")
        here = self.here
        if here is not None:
            out.append(here[0].upper() + here[1:] + ".")
        b = self.baseline
        if b is not None:
            out.append("baseline " + b.sentence(len(self)) + ".")
        return out

    def __repr__(self) -> str:
        """A summary, not the list: the matrix, what the ranking is for, the pick and the baseline; ``list(r)``
        shows the pairs."""
        b = self.baseline
        pick = f"pick {self[0][0]!r}" if self else "nothing ranked"
        vs = "" if b is None or b.gain is None or not self or b.config == self[0][0] else \
            f", {'>=' if b.understated else ''}{b.gain:.2f}x faster than {b.config!r} (predicted)"
        of = f" of {self.matrix!r}" if self.matrix else ""
        on = f", measured on {self.measured_on}" if self.measured_on else ""
        return (f"<pyspmv.Ranking{of}: {len(self)} {self.device or ''} configurations, {self.dtype or ''}{on}; "
                f"{pick}{vs}>")

    def _repr_html_(self) -> str:
        rows = self.rows(self.HTML_ROWS)
        head = (f"<p><b>pyspmv ranking</b>{' of ' + escape(self.matrix) if self.matrix else ''}: "
                f"{len(self)} configurations{', device ' + escape(self.device) if self.device else ''}"
                f"{', ' + escape(self.dtype) if self.dtype else ''}; ordered {escape(self.order)}"
                + (f" (first {self.HTML_ROWS} shown; <code>to_frame()</code> has all)" if len(self) > self.HTML_ROWS
                   else "") + "</p>" + "".join(f"<p>{escape(line)}</p>" for line in self.purpose()))
        t = self.measured if self.verified is not None else None
        us = self.score == "predicted_ms"           # times in µs, as pyspmv rank prints them; scores as they are

        def measured(c: str) -> str:
            return "" if t is None else f"<td>{f'{t[c] * 1e3:.3f}' if c in t else ''}</td>"

        def predicted(v: float | None) -> str:
            return "&mdash;" if v is None else f"{v * 1e3:.3f}" if us else f"{v:.6g}"
        body = "".join(
            f"<tr><th>{r.rank}</th><td>{escape(r.config)}</td><td>{predicted(r.predicted)}</td>"
            f"<td>{vs_pick(r.vs_pick)}</td>{measured(r.config)}<td>{escape(r.mark)}</td></tr>"
            for r in rows)
        score = "predicted_us" if us else escape(self.score)
        table = (f"<table><thead><tr><th>rank</th><th>config</th><th>{score}</th><th>vs_pick</th>"
                 f"{'' if t is None else '<th>measured_us</th>'}<th>mark</th></tr></thead><tbody>{body}</tbody>"
                 "</table>")
        return head + table + "".join(f"<p><small>{escape(n)}</small></p>" for n in self.notes(rows))

    def notes(self, rows: list[RankRow] | None = None) -> list[str]:
        """What the marks of ``rows`` (default: all of :meth:`rows`) mean, one sentence each, for those present."""
        rows = self.rows() if rows is None else rows
        marks = {r.mark for r in rows}
        p = self.precision
        out = []
        if self.libraries is not None or self.deterministic:
            out.append(self._restriction())
        if self.verify_note:
            out.append(self.verify_note)
        if p is not None and "tie" in marks:
            out.append(f"tie: predicted at most {p.tie_tol:.1%} slower than the pick (or faster), the median error "
                       f"of the predicted ratio to the pick near the top, measured for {p.source}: the model cannot "
                       "tell these from the pick.")
        if p is not None and "order only" in marks:
            b = self.best_of_all
            of = ("the pick's time" if b is None or (self and b[0] == self[0][0])
                  else f"the time of the best of all, {b[0]} ({self.order_only_beyond:.2f}x the pick's)")
            out.append(f"order only: predicted more than {p.max_gap:g}x {of}, where the model's times "
                       "understate the measured gaps (capped slowdowns): the order holds, by how much does not; "
                       "`pyspmv bench` measures it.")
        if p is None and self.score == "predicted_ms" and len(rows) > 1:
            out.append("no ties marked: this model's error was not measured (only the default forest recipe's is).")
        if "n/a" in marks:
            out.append("n/a: cannot serve this matrix.")
        return out


#: Most products ``rank(n_calls=...)`` weighs a conversion against: int64's range (a count past it is no count of
#: products, and divides the conversion's cost to nothing anyway).
N_CALLS_MAX = 2**63 - 1


def _short(v: Any) -> str:
    """``repr(v)``, or the digit count of an int too long to print in a message."""
    text = repr(v)
    return text if len(text) <= 40 else f"an int of {len(text.lstrip('-'))} digits"


def rank(A: MatrixLike | SparseOnDevice, model: ModelLike | str | os.PathLike[str] | None = None,
         device: str | None = None, dtype: npt.DTypeLike | None = None, n_calls: int | None = None,
         deterministic: bool = False, estimate: bool | None = None, libraries: str | Iterable[str] | None = None,
         verify: int | None = None) -> Ranking:
    """Every configuration of ``device`` that the model ranks (those it was trained on) for matrix ``A``,
    ranked by predicted time. A configuration registered after the model was trained is in
    :func:`pyspmv.configs` and :func:`pyspmv.benchmark` but not in this ranking until a model is trained
    with its timings.

    Features, per-configuration columns (bytes moved, padding from the formats' size queries) and the
    model's evaluation run in one C call (``spmv_rank``).

    Parameters
    ----------
    A : Matrix, scipy.sparse matrix, or path of a Matrix Market file (str or path-like)
        Or a sparse matrix that lives on the GPU (``cupyx.scipy.sparse``, a PyTorch sparse tensor): its
        structure is read to the host once for the features (computing them on the GPU is to come).
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
    libraries : tuple of {'pyspmv', 'cusparse', 'cpu'}, optional
        Keep only the configurations of these libraries (:attr:`pyspmv.Config.library`; one name may
        be given as a str): ``('cusparse',)`` ranks what a program calling cuSPARSE itself can run,
        each configuration standing for a ``cusparseFormat_t`` and ``cusparseSpMVAlg_t``
        (:attr:`pyspmv.Config.cusparse_format`, :attr:`~pyspmv.Config.cusparse_alg`); ``('pyspmv',)``
        pyspmv's own CUDA kernels; ``'cpu'`` is the CPU's only library. Each must have configurations
        on the device. None (default): every configuration. The configurations kept come in the
        order and with the predictions they have in the whole ranking, and the Ranking says what was
        left out (:attr:`Ranking.libraries`, :attr:`Ranking.best_of_all`, a note); the same holds for
        ``deterministic``.
    verify : int, optional
        Measure what the model is unsure of: time the first ``verify`` configurations of the ranking that
        can serve ``A`` (all of them where fewer can) on ``device`` and return them re-ordered by measured
        time, fastest first, the rest after them in the model's order; 0 or None (default): the model's
        order alone. They are timed as :func:`pyspmv.benchmark` times (its noise checks and warnings
        included, results not checked against scipy), with at most :data:`VERIFY_WARMUP` untimed and
        :data:`VERIFY_REPEATS` timed runs each within :data:`VERIFY_BUDGET_S` seconds. On ``'cuda'`` a
        matrix that lives on the GPU is converted there (:func:`pyspmv.devices.gpu.convert_on_device`),
        any other on the host and uploaded. With ``n_calls`` the order is by measured time plus the
        measured conversion divided by ``n_calls``. The Ranking says what was done:
        :attr:`Ranking.verified` (ids, measured ms and quartiles), :attr:`Ranking.verify_note` (also in
        :meth:`Ranking.notes`), ``measured_ms`` in ``to_frame()``.

        With ``n_calls`` it measures only where the expected gain pays for the measuring. For the
        candidates i = 1..k (1: the pick) with predicted product times ``t_i`` and conversion times
        ``c_i`` (the model's fit that ``n_calls`` adds), the cost is ``sum_i c_i + r_i t_i``, ``r_i``
        the runs made at the settings above; the gain is ``n_calls * sum_{i>=2} E[(v_1 - c_i / n_calls
        - t_i e^x)+]``, the expected saving per product over the pick (``v_1 = t_1 + c_1 / n_calls``)
        where a candidate's measured time is its prediction times ``e^x``, ``x`` normal with median
        ``|x|`` the model's measured error on the ratio to the pick (:attr:`Precision.tie_tol`). It
        measures when the gain exceeds the cost; otherwise it measures nothing and its note gives both,
        in products of the pick's predicted time (also :attr:`Ranking.verify_weighed`). A model whose
        error was not measured (:attr:`Ranking.precision` None) cannot be weighed: it is measured, and
        the note says so.

    Returns
    -------
    Ranking
        A list of ``(configuration id, predicted ms)`` fastest first (for classifiers the ms is the
        model's score, lower is better); configurations that cannot serve ``A`` come last with
        ``inf``. A model that weighs in the bytes moved (``rank_bytes_pow`` of its spec; the cuda
        default's 0.05, ForestModel's ``bytes_prior``) orders by predicted ms times the bytes each
        configuration moves per byte of values to that power, so that of two near-equal predictions
        the one moving fewer bytes comes first; the ms listed are the predictions themselves
        (``Ranking.order`` says which rule). It also has ``best``, ``to_frame()``, the ties of the pick
        and how far the predicted times can be read (``ties()``, ``rows()``, ``precision``) and a table
        in Jupyter (:class:`Ranking`).

    Raises
    ------
    ValueError
        An argument outside what it takes (the message names it and what is allowed), a model of
        another device, a ``libraries`` of which the device or the model has no configuration.
    pyspmv.DeviceUnavailableError
        ``verify`` on ``'cuda'`` where no GPU is usable (whether or not ``n_calls`` would have it measure).

    Warns
    -----
    pyspmv.OtherMachineWarning
        Once per model, when the model records a machine (``meta['fingerprint']`` or
        ``meta['device_info']``) other than this one: another processor or thread count, another GPU.
        ``pyspmv calibrate`` adapts the model to this machine.
    pyspmv.NoisyTimingWarning, pyspmv.BusyMachineWarning
        With ``verify``, as :func:`pyspmv.benchmark` warns: its timings were disturbed by other work.
    """
    if device is not None and device not in DEVICES:
        raise ValueError(f"The 'device' parameter of rank() must be one of {DEVICES} or None. Got {device!r} instead.")
    if n_calls is not None and (isinstance(n_calls, bool) or not isinstance(n_calls, int | np.integer)
                                or not 1 <= n_calls <= N_CALLS_MAX):
        raise ValueError(f"The 'n_calls' parameter of rank() must be an int in [1, {N_CALLS_MAX}] (2**63 - 1) or "
                         f"None. Got {_short(n_calls)} instead.")
    on_gpu = None
    if isinstance(A, arrays.DeviceCSR) or arrays.is_device_matrix(A):     # a DeviceCSR: Operator's read of one
        on_gpu = A if isinstance(A, arrays.DeviceCSR) else arrays.device_csr(A, None)
        A = on_gpu.to_host()
    k = 0 if verify is None else _verify_arg(verify)
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
    det = bool(deterministic)
    score = "predicted_ms" if rm.score == "ms" else "score"
    if libraries is None and not det:
        pairs = _core.rank(p.capsule, M.nrows, M.ncols, M.indptr, M.indices, VALUE_BYTES[dtype], add, sample,
                           p.id_tuple, p.keep[False], ESTIMATE_NNZ)
        r = Ranking._of(pairs, rm.device, dtype, score, M.name, p)
    else:
        if libraries is not None:
            libraries = _libraries(libraries, rm.device, p)
        keep = p.keep[True] if libraries is None else p.keep_of(det, libraries)
        pairs, i, ms = _core.rank(p.capsule, M.nrows, M.ncols, M.indptr, M.indices, VALUE_BYTES[dtype], add,
                                  sample, p.id_tuple, keep, ESTIMATE_NNZ, True)
        best = (p.id_tuple[i], ms) if keep is not None and i >= 0 else None
        r = Ranking._of(pairs, rm.device, dtype, score, M.name, p, libraries, det, best)
    if k:
        _verify(r, k, M, on_gpu, p, n_calls)
    return r


def _verify_arg(verify: Any) -> int:
    """rank()'s ``verify``, checked: an int >= 0."""
    if isinstance(verify, bool | np.bool_) or not isinstance(verify, int | np.integer) or verify < 0:
        raise ValueError(f"The 'verify' parameter of rank() must be an int >= 0 (how many of the first configurations "
                         f"to time; 0: none) or None. Got {verify!r} instead.")
    return int(verify)


def _normal_cdf(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


def verify_runs(t_ms: float) -> float:
    """The products ``rank(verify=k)`` makes of a configuration whose product takes ``t_ms``: the warm-up and
    timed runs :func:`pyspmv.benchmark` makes with :data:`VERIFY_WARMUP`, :data:`VERIFY_REPEATS` and
    :data:`VERIFY_BUDGET_S` (as many as fit in the budget, at least one of each)."""
    fit = max(1.0, VERIFY_BUDGET_S * 1e3 / t_ms)
    return min(float(VERIFY_WARMUP), fit) + min(float(VERIFY_REPEATS), fit)


def weigh_verify(t: list[float], conv: list[float], n_calls: int, tie_tol: float) -> tuple[float, float]:
    """``(cost, gain)`` in ms of timing the candidates whose predicted product times are ``t`` (``t[0]`` the
    pick's) and predicted conversions ``conv``, for ``n_calls`` products: the rule of ``rank(verify=k,
    n_calls=...)`` (its docstring). The cost is every candidate's conversion and :func:`verify_runs`
    products; the gain ``n_calls`` times the expected saving per product of each other candidate over the
    pick, summed, its measured time being its prediction times a log-normal factor whose median error is
    ``tie_tol`` (``E[(K - X)+]`` of a log-normal ``X``, Black's formula)."""
    s = max(tie_tol, 1e-12) / _MEDIAN_ABS_NORMAL
    cost = sum(c + verify_runs(ti) * ti for ti, c in zip(t, conv))
    v1 = t[0] + conv[0] / n_calls
    per_call = 0.0
    for ti, c in zip(t[1:], conv[1:]):
        K = v1 - c / n_calls                   # what the candidate must beat, its conversion counted
        if K <= 0.0:
            continue
        d = math.log(K / ti) / s
        per_call += K * _normal_cdf(d) - ti * math.exp(0.5 * s * s) * _normal_cdf(d - s)
    return cost, n_calls * max(per_call, 0.0)


def _verify(r: Ranking, k: int, M: Any, on_gpu: arrays.DeviceCSR | None, p: _Ranked, n_calls: int | None) -> None:
    """rank(verify=k): time the first k usable configurations of ``r`` (unless n_calls says it does not pay) and
    re-order them in place by measurement; set ``verified``, ``verify_note`` and ``verify_weighed``."""
    r.verified = ()
    require_device(r.device)              # whether or not n_calls has it measure: the same answer every time
    n = 0
    while n < len(r) and n < k and math.isfinite(r[n][1]):     # inf (cannot serve A) only last
        n += 1
    asked = f"verify={k}" + (f" with n_calls={n_calls}" if n_calls is not None else "")
    fewer = f" (only {n} can serve the matrix)" if n < k else ""
    if n == 0:
        r.verify_note = f"{asked}: nothing measured: no configuration of the ranking can serve the matrix."
        return
    weighed = ""
    if n_calls is not None:
        why = _unweighable(r)
        if why:
            weighed = f"; measured without weighing its cost: {why}"
        else:
            t, conv = _predicted_parts(r, p, n, M.nnz, n_calls)
            cost, gain = weigh_verify(t, conv, n_calls, r.precision.tie_tol)
            r.verify_weighed = (cost / t[0], gain / t[0])
            runs = sum(verify_runs(x) for x in t)
            nums = (f"measuring was estimated to cost {cost / t[0]:.3g} products of the pick's predicted time "
                    f"({n} conversion{'s' if n > 1 else ''} and {runs:.0f} timed products), against an expected gain "
                    f"of {gain / t[0]:.3g} over {n_calls} product{'s' if n_calls > 1 else ''} (the model's measured "
                    f"error on the ratio to the pick: {r.precision.tie_tol:.1%})")
            if gain <= cost:
                r.verify_note = f"{asked}: nothing measured{fewer}: {nums}: it does not pay; the model's order stands."
                return
            weighed = f"; {nums}"
    rows = _measure(M, on_gpu, [c for c, _ in r[:n]], r.device, r.dtype)

    def key(m: Measured) -> float:
        conv = m.convert_ms / n_calls if n_calls is not None and math.isfinite(m.convert_ms) else 0.0
        return m.median_ms + conv

    ok = sorted((m for m in rows if m.status == "ok" and math.isfinite(m.median_ms)), key=key)   # stable
    bad = [m for m in rows if not (m.status == "ok" and math.isfinite(m.median_ms))]
    predicted = dict(r[:n])
    model_rank = {c: i for i, (c, _) in enumerate(r[:n], 1)}
    r[:n] = [(m.config, predicted[m.config]) for m in ok + bad]
    r.verified = tuple(ok + bad)
    where = (" converted on the GPU" if on_gpu is not None and r.device == "cuda" else
             " converted on the host and uploaded" if r.device == "cuda" else "")
    by = "measured time plus measured conversion / n_calls" if n_calls is not None else "measured time"
    if ok:
        b = ok[0]
        said = f"{b.config} fastest at {b.median_ms * 1e3:.3f} µs, the model's {_ordinal(model_rank[b.config])}"
        pick = next((m for m in ok if model_rank[m.config] == 1), None)
        if pick is not None and pick is not b and b.median_ms > 0:
            said += f"; the model's pick measured {pick.median_ms / b.median_ms - 1:.1%} slower"
    else:
        said = "none could be timed"
    failed = "".join(f"; {m.config} not timed ({m.status}: {m.note})" for m in bad)
    r.verify_note = (f"{asked}: the model's first {n} configurations{fewer} timed on {r.device}{where}, "
                     f"re-ordered by {by}: {said}{failed}{weighed}.")


def _predicted_parts(r: Ranking, p: _Ranked, n: int, nnz: int, n_calls: int) -> tuple[list[float], list[float]]:
    """The predicted product times and conversion times (ms) of the first ``n`` configurations of ``r``, ranked
    with ``n_calls``: each conversion by the model's fit, as rank() added it (no fit: 0), the product time
    what remains of the prediction."""
    fits = {f: (a, b) for f, a, b in zip(p.formats, *p.convert)}
    conv = []
    for c, _ in r[:n]:
        a, b = fits.get(config(c).format, (math.nan, math.nan))
        ms = a + b * nnz
        conv.append(float(ms) if math.isfinite(ms) else 0.0)
    return [max(v - c / n_calls, 1e-12) for (_, v), c in zip(r[:n], conv)], conv


def _unweighable(r: Ranking) -> str:
    """Why rank(verify=k, n_calls=...) cannot weigh the cost of measuring against its gain ('' where it can)."""
    if r.score != "predicted_ms":
        return "the model scores configurations instead of predicting their times"
    if r.precision is None:
        return "this model's error was not measured, so the expected gain is unknown"
    if not (math.isfinite(r[0][1]) and r[0][1] > 0):
        return "the pick's predicted time is not a positive number"
    return ""


def _ordinal(i: int) -> str:
    """'pick' for 1, else 2nd, 3rd, 4th, ..., 11th, 21st, ..."""
    if i == 1:
        return "pick"
    suffix = "th" if 10 <= i % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(i % 10, "th")
    return f"{i}{suffix}"


def _measure(M: Any, on_gpu: arrays.DeviceCSR | None, ids: list[str], device: str, dtype: str) -> list[Measured]:
    """The configurations ``ids`` timed on ``device`` by pyspmv.benchmark's machinery: on the GPU, a matrix that
    lives there converted there; any other converted on the host (and uploaded, on the GPU)."""
    if on_gpu is not None and device == "cuda":
        recs = _time_on_device(M, on_gpu, ids, dtype)
        cols = [[x[f] for x in recs] for f in _MEASURED_COLUMNS]
    else:
        df = benchmark(M, ids, device=device, dtype=dtype, repeats=VERIFY_REPEATS, warmup=VERIFY_WARMUP,
                       budget_s=VERIFY_BUDGET_S, check=False, progress=False)
        cols = [df[f].tolist() for f in _MEASURED_COLUMNS]        # a third of to_dict()'s time
    return [Measured(c, float(m), float(q25), float(q75), float(cv), str(st), str(nt))
            for c, m, q25, q75, cv, st, nt in zip(*cols)]


#: The columns of a benchmark() row that make a Measured, in its order.
_MEASURED_COLUMNS = ("config", "median_ms", "q25_ms", "q75_ms", "convert_ms", "status", "note")


def _time_on_device(M: Any, D: arrays.DeviceCSR, ids: list[str], dtype: str) -> list[dict[str, Any]]:
    """benchmark()'s rows of ``ids`` for a CSR matrix that lives on the GPU: converted there as an Operator of it
    converts (``prepare_on_device``; once per format and format parameters, as benchmark() converts, kept until
    its last configuration is timed), timed by benchmark()'s own runner; ``M`` is its host copy."""
    dt = np.dtype(dtype)
    if D.dtype != dt:
        D = arrays.device_csr(D.owner, dt)
    DM = gpu.DeviceMatrix.wrap_csr(D)
    run = _DtypeRun(M, dt, "cuda", 0, None)
    cfgs = [config(c) for c in ids]
    keys = [(c.format, tuple(sorted(c.format_kwargs.items()))) for c in cfgs]
    last = {key: i for i, key in enumerate(keys)}
    held: dict[Any, tuple[Any, float]] = {}
    rows = []
    for i, (c, key) in enumerate(zip(cfgs, keys)):
        if key not in held:
            t0 = time.perf_counter()
            try:
                F: Any = prepare_on_device(DM, c)[1]
            except (_core.NotApplicableError, MemoryError) as exc:     # MemoryError: the GPU's, for this format
                F = exc
            held[key] = (F, (time.perf_counter() - t0) * 1e3)
        F, ms = held[key]
        row = run.one(c, F, None if isinstance(F, Exception) else F, ms, VERIFY_WARMUP, VERIFY_REPEATS,
                      VERIFY_BUDGET_S, False)
        if isinstance(F, MemoryError):
            row.update(status="error", note=f"MemoryError: {F}")
        rows.append(row)
        if last[key] == i:
            del held[key]
    return rows
