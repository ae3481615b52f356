"""The record of one solve: which configuration ran from which iteration, and where the time went."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: info of a breakdown: a scalar the recurrence divides by vanished or stopped being finite.
BREAKDOWN = -10
#: info of BiCGSTAB's omega breakdown (scipy's code).
BREAKDOWN_OMEGA = -11


@dataclass
class SolveRecord:
    """What a solver of :mod:`pyspmv.solvers` did, returned third by ``cg``, ``bicgstab`` and ``gmres``.

    Attributes
    ----------
    solver : str
        ``'cg'``, ``'bicgstab'`` or ``'gmres'``.
    policy : str
        The selection policy (see :data:`pyspmv.solvers.POLICIES`).
    device, dtype : str
    info : int
        The solver's info code: 0 converged, > 0 iterations (GMRES: restart cycles) without
        convergence, < 0 breakdown.
    iterations : int
        Iterations run (GMRES: inner iterations over all cycles).
    products : int
        SpMV products computed, initial and restart residuals included.
    residual : float
        Last residual norm the solver computed (CG and BiCGSTAB: the recurrence's; GMRES: the true
        residual at the last restart, or the least-squares estimate where it stopped inside a cycle).
    n_calls : int or None
        Products the set-up expects: the CPU's ranking's ``rank(n_calls=...)`` (the GPU's ranks by the time a
        product, its conversions weighed by the switch's gate) and both policies' prior of the iterations left;
        None where no ranking can run (``fixed``, and ``async`` or ``online`` on at most ``select_min_nnz`` entries).
    schedule : list of (int, str)
        ``(first iteration, configuration id)``: each configuration ran from that iteration until
        the next entry's.
    ranking : list of (str, float)
        The model's first candidates, ``(configuration id, predicted ms)``, fastest first.
    probes : dict of str to float
        ``online`` (and ``async``'s pick against the start): the fastest product of each probed
        configuration, seconds; on the GPU, seconds per iteration over its ``probe_iters`` iterations
        (products and vector work, timed from the host between chunks).
    events : list of (int, str)
        ``(iteration, what happened)``: switches, probe results, and every failure that left the
        solve on its configuration (ranking, conversion, memory).
    wall_s : float
        The whole call.
    iterate_s : float
        Spent in the iteration loop (probing iterations included).
    rank_s, convert_s : float
        Spent ranking and converting. Under ``async`` and ``online`` this ran on a helper thread
        beside the iterations (overlapping ``iterate_s``); under ``serial`` and ``fixed`` before them.
    probe_s : float
        Part of ``iterate_s`` spent in ``online``'s probing iterations.
    rank_window : (float, float) or None
        Start and end of ranking and conversion, seconds since the call began.
    start_time : float
        ``time.perf_counter()`` when the call began.
    iteration_times : ndarray
        Seconds since the call began at the start of each iteration (on the GPU, where the host sees
        only the ends of chunks of iterations, interpolated within each chunk).
    """

    solver: str
    policy: str
    device: str
    dtype: str
    info: int = 0
    iterations: int = 0
    products: int = 0
    residual: float = float("nan")
    n_calls: int | None = None
    schedule: list[tuple[int, str]] = field(default_factory=list)
    ranking: list[tuple[str, float]] = field(default_factory=list)
    probes: dict[str, float] = field(default_factory=dict)
    events: list[tuple[int, str]] = field(default_factory=list)
    wall_s: float = 0.0
    iterate_s: float = 0.0
    rank_s: float = 0.0
    convert_s: float = 0.0
    probe_s: float = 0.0
    rank_window: tuple[float, float] | None = None
    start_time: float = 0.0
    iteration_times: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False)

    def switched(self, it: int, config_id: str) -> None:
        """The solve runs ``config_id`` from iteration ``it`` on: a schedule entry, replacing one that ran no
        iteration, none where the configuration does not change."""
        if self.schedule and self.schedule[-1][0] == it:       # the one before ran no iteration
            self.schedule.pop()
        if not self.schedule or self.schedule[-1][1] != config_id:
            self.schedule.append((it, config_id))

    @property
    def config(self) -> str:
        """The configuration the solve ended on."""
        return self.schedule[-1][1] if self.schedule else ""

    def iterations_during_ranking(self) -> int:
        """Iterations that began inside :attr:`rank_window` (0 when there was none)."""
        if self.rank_window is None:
            return 0
        t = self.iteration_times
        return int(np.count_nonzero((t >= self.rank_window[0]) & (t <= self.rank_window[1])))

    def to_dict(self) -> dict[str, Any]:
        """One flat dict of scalars and strings, e.g. a row of a ``pandas.DataFrame``."""
        return {
            "solver": self.solver, "policy": self.policy, "device": self.device, "dtype": self.dtype,
            "info": self.info, "iterations": self.iterations, "products": self.products,
            "residual": self.residual, "n_calls": self.n_calls, "config": self.config,
            "schedule": "; ".join(f"{i}:{c}" for i, c in self.schedule),
            "wall_s": self.wall_s, "iterate_s": self.iterate_s, "rank_s": self.rank_s,
            "convert_s": self.convert_s, "probe_s": self.probe_s,
            "iterations_during_ranking": self.iterations_during_ranking(),
            "events": "; ".join(f"{i}: {e}" for i, e in self.events),
        }

    def to_frame(self) -> Any:
        """A ``pandas.DataFrame`` with one row per :attr:`schedule` entry: ``config``, ``first``,
        ``last`` (iterations, inclusive) and ``seconds`` spent in them."""
        import pandas as pd
        t = self.iteration_times
        end_t = self.iterate_s + (float(t[0]) if t.size else 0.0)
        rows = []
        for k, (first, cfg) in enumerate(self.schedule):
            nxt = self.schedule[k + 1][0] if k + 1 < len(self.schedule) else self.iterations
            t0 = float(t[first]) if first < t.size else end_t
            t1 = float(t[nxt]) if nxt < t.size else end_t
            rows.append({"config": cfg, "first": first, "last": nxt - 1, "seconds": t1 - t0})
        return pd.DataFrame(rows, columns=["config", "first", "last", "seconds"])

    def __repr__(self) -> str:
        state = ("converged" if self.info == 0 else
                 f"not converged (info {self.info})" if self.info > 0 else f"breakdown (info {self.info})")
        ran = ", ".join(f"{c} from {i}" for i, c in self.schedule)
        beside = " beside the iterations" if self.policy in ("async", "online") else ""
        lines = [(f"SolveRecord({self.solver}, policy={self.policy!r}, {self.device}, {self.dtype}: {state} after "
                  f"{self.iterations} iterations, {self.products} products, residual {self.residual:.3g}"),
                 f"  ran: {ran}",
                 (f"  wall {1e3 * self.wall_s:.3f} ms; iterating {1e3 * self.iterate_s:.3f} ms "
                  f"(probing {1e3 * self.probe_s:.3f} ms); ranking {1e3 * self.rank_s:.3f} ms and converting "
                  f"{1e3 * self.convert_s:.3f} ms{beside}")]
        lines += [f"  at {i}: {e}" for i, e in self.events]
        return "\n".join(lines) + ")"
