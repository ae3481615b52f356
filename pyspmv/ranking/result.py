"""What :func:`pyspmv.rank` returns: :class:`Ranking` (the ranked pairs, with what they are for, how far their
times can be read, their tables, repr and HTML), its rows (:class:`RankRow`), the baseline it places
(:class:`Baseline`) and what ``rank(verify=k)`` timed (:class:`Measured`)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import math
from collections.abc import Iterable
from html import escape
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, Protocol

from ..devices.machine import on_this_machine
from .precision import Precision

if TYPE_CHECKING:                       # imported where a table is made: pandas costs 0.4 s to import
    import pandas as pd


class _Prepared(Protocol):
    """What :meth:`Ranking._of` reads of a model prepared for ranking (:class:`pyspmv.ranking.rank._Ranked`)."""

    #: the model's :class:`Precision` (None: its error was not measured)
    precision: Precision | None
    #: its spec's ``rank_bytes_pow``
    bytes_pow: float
    #: (the model in words, the machine it was measured on, its fingerprint)
    about: tuple[str, str, dict[str, Any] | None]


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
    device (with ``verify="auto"``, those it measured, then the rest in the model's order), with their
    predictions (ties and marks then count from the measured best): :attr:`verified`,
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
    BASELINES: ClassVar[dict[str, str]] = {"cuda": "cusparse/csr/default", "cpu": "cpu/csr/rows"}

    def __init__(self, pairs: Iterable[tuple[str, float]] = (), *, device: str | None = None, dtype: str | None = None,
                 score: str = "predicted_ms", matrix: str | None = None, precision: Precision | None = None,
                 bytes_pow: float = 0.0, libraries: tuple[str, ...] | None = None, deterministic: bool = False,
                 best_of_all: tuple[str, float] | None = None):
        super().__init__(pairs)
        self.device, self.dtype, self.score, self.matrix = device, dtype, score, matrix
        self.precision, self.bytes_pow = precision, bytes_pow
        self.libraries, self.deterministic, self.best_of_all = libraries, deterministic, best_of_all

    @classmethod
    def _of(cls, pairs: list, device: str, dtype: str, score: str, matrix: str | None, p: _Prepared,
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
