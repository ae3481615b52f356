"""Rank a device's configurations for a matrix: features and model evaluation in one C call.

The model in use (given, calibrated for this machine, or the shipped default) and :func:`rank` itself live here;
what it returns in :mod:`pyspmv.ranking.result`, ``rank(verify=k)``'s timing in :mod:`pyspmv.ranking.verify`.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import os
from collections.abc import Iterable
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .. import _core
from .._params import AnyOf, Interval, OneOf, Satisfies, validate
from ..devices import arrays, gpu
from ..devices.machine import calibrated_file, measured_on, model_fingerprint, warn_caller, warn_other_machine
from ..matrices.configs import DEVICES, LIBRARIES, config, device_libraries
from ..matrices.matrix import DTYPES, VALUE_BYTES
from ..matrices.mmio import as_matrix
from .modelfile import load_model
from .portable import ModelLike, portable
from .precision import DEFAULT_PRECISION, Precision  # noqa: F401 (re-exported: below)
from .rankmodel import RankModel
from .sampled import SampledRows, sample_on_device
from .result import Baseline, Measured, Ranking, RankRow, vs_pick  # noqa: F401 (re-exported: below)
from .shipped import default_for, default_model  # noqa: F401 (default_model: imported from here)
from .targets import TARGET_DEVICE, check_target, target_gpu
from .verify import VERIFY_BUDGET_S, VERIFY_REPEATS, VERIFY_WARMUP, verify_first, verify_runs, weigh_verify  # noqa: F401

# Precision and DEFAULT_PRECISION, the result's types and the verification's settings are imported from here too:
# this module held them before the result (result.py) and the verification (verify.py) had files of their own, and
# code, documentation and rankings pickled before name them here (pyspmv.ranking.rank.Ranking).

if TYPE_CHECKING:
    import numpy.typing as npt

    from ..devices.arrays import SparseOnDevice
    from ..matrices.matrix import Matrix
    from ..matrices.mmio import MatrixLike

#: rank(estimate=None) estimates the design rows from a sample (spmv_design_rows_estimate) at and above this many
#: entries: where the estimate would rank within a tolerance of the exact rows, set before measuring (at most 1 point
#: fewer picks within 5 % of the best, a geomean t_pick / t_best at most 0.005 above exact's, on both shipped
#: datasets). No measured size met it, because a sample of rows cannot see the diagonals (the long rows it misses
#: send it to the exact path): studies/2026-11-24-estimated-ranking/estimate.md. So the default mode stays exact past
#: the largest matrix of the datasets (9.8e7 entries); estimate=True asks for the sample.
ESTIMATE_MIN_NNZ = 100_000_000
#: rank(estimate=None) of a matrix that lives on the GPU ranks it from a sample of its rows at and above this many
#: entries: only the sampled rows come to the host (:mod:`pyspmv.ranking.sampled`), where the exact features read
#: the whole structure back and pass over it (the pass alone, rank() of a host matrix, took 34 ms at 5e6 entries and
#: 60 ms at 1e7 on the H200's host, against 22-82 us for a product there, the sampled rank() 4-6 ms:
#: benchmarks/results/operator_build.md); the cost in ranking quality: studies/2026-11-30-sampled-rank.
DEVICE_ESTIMATE_MIN_NNZ = 1_000_000
#: Rows the estimated mode samples at most: 64 blocks of 256 consecutive rows, one from the middle of each of
#: 64 equal strata of the matrix.
ESTIMATE_ROWS = 16384
#: Entries the estimated mode samples at most (fewer blocks where rows are long, one block at least), so that
#: its cost is bounded by entries as well as rows; its cost, and how other budgets rank:
#: studies/2026-11-24-estimated-ranking/estimate.md.
ESTIMATE_NNZ = 65536

#: The names of the value types rank() takes, by dtype (a dict lookup costs less than dtype.name).
_DTYPE_NAMES = {np.dtype(d): d for d in DTYPES}


def precision_of(rm: RankModel) -> Precision | None:
    """The :class:`Precision` that :class:`Ranking` marks ties and order-only rows with for a model: the one the
    model records (:attr:`pyspmv.RankModel.precision`, stated by its estimator and kept by model files: a
    ForestModel's is :data:`DEFAULT_PRECISION` of its device, as the shipped defaults and ``pyspmv calibrate``
    have it), None where its error was not measured (other kinds, classifiers)."""
    return rm.precision


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


def model_in_use(device: str, dtype: str, target: str | None = None) -> RankModel:
    """What :func:`rank` uses when given no model: with ``target``, that shipped default; else
    :func:`calibrated_model` where it ranks ``dtype``, else :func:`default_model` (of the target
    :func:`pyspmv.ranking.targets.target_for` chooses)."""
    if target is not None:
        return default_for(device, dtype, target)
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
         verify: int | Literal["auto"] | None = None, target: str | None = None) -> Ranking:
    """Every configuration of ``device`` that the model ranks (those it was trained on) for matrix ``A``,
    ranked by predicted time. A configuration registered after the model was trained is in
    :func:`pyspmv.configs` and :func:`pyspmv.benchmark` but not in this ranking until a model is trained
    with its timings.

    Features, per-configuration columns (bytes moved, padding from the formats' size queries) and the
    model's evaluation run in one C call (``spmv_rank``).

    Parameters
    ----------
    A : Matrix, scipy.sparse matrix, or path of a Matrix Market file (str or path-like)
        Or a sparse matrix that lives on the GPU (``cupyx.scipy.sparse``, a PyTorch sparse tensor): estimated, only
        its sampled rows come to the host (:mod:`pyspmv.ranking.sampled`), else its whole structure, once.
    model : fitted pyspmv.models estimator, RankModel, path of a saved model, or None
        None: the shipped default of ``target`` where given; else the model ``pyspmv calibrate`` saved for
        this machine (:func:`calibrated_model`), else :func:`default_model` of ``device``. A path is read with :func:`pyspmv.load_model`. An
        estimator is converted on every call; convert it once with :func:`pyspmv.portable` where
        speed matters.
    device : {'cuda', 'cpu'}, optional
        Whose configurations to rank. Default: the model's device (a RankModel's ``device``, an
        estimator's from the configurations it was trained on); with no model, the device of ``target``,
        else ``'cuda'``. Given with a model or target of another device, it is an error.
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
        :data:`ESTIMATE_MIN_NNZ` entries, or lives on the GPU and has at least
        :data:`DEVICE_ESTIMATE_MIN_NNZ`. Only the sampled rows are read (and ``indptr`` at every 256th
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
    verify : int or "auto", optional
        Measure what the model is unsure of: time the first ``verify`` configurations of the ranking that
        can serve ``A`` (all of them where fewer can) on ``device`` and return them re-ordered by measured
        time, fastest first, the rest after them in the model's order; 0 or None (default): the model's
        order alone. They are timed as :func:`pyspmv.benchmark` times (its noise checks and warnings
        included, results not checked against scipy), with at most :data:`VERIFY_WARMUP` untimed and
        :data:`VERIFY_REPEATS` timed runs each within :data:`VERIFY_BUDGET_S` seconds. On ``'cuda'`` each is
        converted on the GPU (:func:`pyspmv.devices.gpu.convert_on_device`) from a CSR there: a matrix that
        lives on the GPU read in place, any other uploaded once as CSR (CSR in a locality order is made on the
        host and uploaded). With ``n_calls`` the order is by measured time plus the measured conversion divided
        by ``n_calls``. The Ranking says what was done:
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

        ``'auto'``: with ``n_calls``, the k in 2..10 whose expected gain exceeds its cost by the most
        (:func:`~pyspmv.ranking.verify.choose_k`: the model's error read at the matrix's size, GPU conversions at
        their measured cost, fewer runs each), none where no k pays or without ``n_calls``; of the first with
        at most 3 of one kernel (:func:`~pyspmv.ranking.verify.auto_candidates`; ``benchmarks/verify_auto.py``).
    target : str, optional
        Rank with the shipped default of this machine (:data:`pyspmv.ranking.targets.TARGETS`: ``'h200'``, ``'h100'``,
        ``'cpu'``), not a calibrated one; with a model, a check that it was measured there. None: the GPU present's.

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
        another device, a ``libraries`` of which it has no configuration, an unknown ``target``, a model of another GPU.
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
    return _rank(A, model, device, dtype, n_calls, deterministic, estimate, libraries, verify, target, None)


def rank_uploaded(M: Matrix, uploaded: gpu.DeviceMatrix, *, model: Any = None, device: str | None = None,
                  dtype: Any = None, n_calls: int | None = None, deterministic: bool = False,
                  verify: int | str | None = None) -> Ranking:
    """:func:`rank` of the host matrix ``M`` whose CSR copy ``uploaded`` is on the GPU already (an Operator's):
    ``verify`` converts its candidates from that copy instead of uploading ``M`` again. Ranked from a sample of
    its rows from :data:`DEVICE_ESTIMATE_MIN_NNZ` entries, as a matrix that lives on the GPU is: the same ranking
    whichever side of the host link the matrix was given on."""
    estimate = True if M.nnz >= DEVICE_ESTIMATE_MIN_NNZ else None
    return _rank(M, model, device, dtype, n_calls, deterministic, estimate, None, verify, None, uploaded)


def _rank(A: Any, model: Any, device: str | None, dtype: Any, n_calls: Any, deterministic: Any, estimate: Any,
          libraries: Any, verify: Any, target: str | None, uploaded: gpu.DeviceMatrix | None) -> Ranking:
    """rank()'s body; ``uploaded``: :func:`rank_uploaded`'s."""
    device = device if target is None else TARGET_DEVICE[check_target(target, device, "rank()")]
    M, dtype, on_gpu, k = _arguments(A, device, dtype, n_calls, verify, estimate)
    rm = _model(model, device, dtype, target)
    p = _prepared(rm, dtype)
    r = _order(p, rm, M, dtype, n_calls, estimate, deterministic, libraries)
    if k:
        verify_first(r, k, M, on_gpu if on_gpu is not None else uploaded, p, n_calls)
    return r


#: rank()'s declared constraints (n_calls and dtype say more than "must be", and stay written out below),
#: made once: rank() runs in microseconds.
_NONE = OneOf((None,), "or")
_DEVICE = AnyOf((OneOf(DEVICES), _NONE))
_ESTIMATE = Satisfies(lambda v: v is None or isinstance(v, bool | np.bool_), "True, False or None")
_VERIFY = AnyOf((Interval("int", 0, note=" (how many of the first configurations to time; 0: none)"),
                 OneOf(("auto",), "or"), _NONE))


def _arguments(A: Any, device: str | None, dtype: Any, n_calls: Any, verify: Any,
               estimate: Any = None) -> tuple[Matrix | SampledRows, str, arrays.DeviceCSR | None, int | str]:
    """rank()'s matrix and the arguments checked before it is read: ``(A as a Matrix, or as its sampled rows where
    it lives on the GPU and is estimated, the value type, A where it lives on the GPU or None, verify's count)``."""
    validate("rank()", {"device": _DEVICE}, {"device": device})
    if n_calls is not None and (isinstance(n_calls, bool) or not isinstance(n_calls, int | np.integer)
                                or not 1 <= n_calls <= N_CALLS_MAX):
        raise ValueError(f"The 'n_calls' parameter of rank() must be an int in [1, {N_CALLS_MAX}] (2**63 - 1) or "
                         f"None. Got {_short(n_calls)} instead.")
    validate("rank()", {"estimate": _ESTIMATE}, {"estimate": estimate})
    on_gpu = None
    k = 0 if verify is None else _verify_arg(verify)
    M: Matrix | SampledRows | None = None
    if isinstance(A, arrays.DeviceCSR) or arrays.is_device_matrix(A):     # a DeviceCSR: Operator's read of one
        on_gpu = A if isinstance(A, arrays.DeviceCSR) else arrays.device_csr(A, None)
        if on_gpu.nnz >= DEVICE_ESTIMATE_MIN_NNZ if estimate is None else estimate:
            M = sample_on_device(on_gpu, ESTIMATE_ROWS, ESTIMATE_NNZ)
        if M is None:                       # exact: the whole structure read to the host
            A = on_gpu.to_host()
    if M is None:
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
    return M, dtype, on_gpu, k


def _model(model: Any, device: str | None, dtype: str, target: str | None = None) -> RankModel:
    """The model rank() ranks with (given, or :func:`model_in_use`), checked against ``device`` and ``target``; it
    warns where the model was measured on another machine."""
    if model is not None and isinstance(model, (str, os.PathLike)):
        model = load_model(model)
    rm = model_in_use(device or "cuda", dtype, target) if model is None else portable(model, device)
    if model is not None and target is not None:
        _same_gpu(rm, target)
    if rm.features is not None:
        raise ValueError("The 'model' parameter of rank() takes its own features, not a matrix's: rank its "
                         "configurations with pyspmv.portable(model).rank_features(features).")
    if device is not None and rm.device != device:
        raise ValueError(f"The model ranks {rm.device!r} configurations; rank() was asked for device {device!r}.")
    warn_other_machine(rm)
    return rm


def _same_gpu(rm: RankModel, target: str) -> None:
    """Refuse a model measured on another GPU than ``target``'s (a model that records none is taken as it is)."""
    want = target_gpu(target)
    fp = model_fingerprint(rm)
    have = None if fp is None else fp.get("gpu_name")
    if want is not None and have is not None and have != want.name:
        raise ValueError(f"The model was measured on the {have}; target={target!r} ranks for the {want.name}. Give "
                         "the model without target, or target without the model (its shipped default).")


def _order(p: _Ranked, rm: RankModel, M: Matrix | SampledRows, dtype: str, n_calls: int | None, estimate: Any, deterministic: Any,
           libraries: Any) -> Ranking:
    """The model's ranking of ``M`` (one C call), with rank()'s ``n_calls``, ``estimate``, ``deterministic`` and
    ``libraries``."""
    add = None
    if n_calls is not None:
        if p.convert is None:
            raise ValueError("The 'n_calls' parameter of rank() needs the model's conversion-cost fit "
                             "(model.meta['convert_ms'], made by pyspmv train-default); this model has none.")
        a, b = p.convert
        add = np.nan_to_num((a + b * M.nnz) / n_calls, nan=0.0)
    sampled = isinstance(M, SampledRows)
    sample = ESTIMATE_ROWS if sampled or (M.nnz >= ESTIMATE_MIN_NNZ if estimate is None else estimate) else 0
    coarse = M.coarse if sampled else None
    det = bool(deterministic)
    score = "predicted_ms" if rm.score == "ms" else "score"
    if libraries is None and not det:
        pairs = _core.rank(p.capsule, M.nrows, M.ncols, M.indptr, M.indices, VALUE_BYTES[dtype], add, sample,
                           p.id_tuple, p.keep[False], ESTIMATE_NNZ, False, coarse)
        return Ranking._of(pairs, rm.device, dtype, score, M.name, p)
    if libraries is not None:
        libraries = _libraries(libraries, rm.device, p)
    keep = p.keep[True] if libraries is None else p.keep_of(det, libraries)
    pairs, i, ms = _core.rank(p.capsule, M.nrows, M.ncols, M.indptr, M.indices, VALUE_BYTES[dtype], add,
                              sample, p.id_tuple, keep, ESTIMATE_NNZ, True, coarse)
    best = (p.id_tuple[i], ms) if keep is not None and i >= 0 else None
    return Ranking._of(pairs, rm.device, dtype, score, M.name, p, libraries, det, best)


def _verify_arg(verify: Any) -> int | str:
    """rank()'s ``verify``, checked: an int >= 0 or 'auto'."""
    validate("rank()", {"verify": _VERIFY}, {"verify": verify})
    return "auto" if isinstance(verify, str) else int(verify)
