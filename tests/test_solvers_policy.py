"""The switching policy that both devices' solves share (pyspmv/solvers/_policy.py), driven over a stand-in
device that records what it is asked: which configurations are tried, used, timed and freed, in which order."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import concurrent.futures
from types import SimpleNamespace

import pytest

from pyspmv.solvers._policy import Policy
from pyspmv.solvers.record import SolveRecord
from pyspmv.solvers.switching import Selection


def cand(cid):
    return SimpleNamespace(config=SimpleNamespace(id=cid))


class Recorder:
    """A Device whose selection lands the candidates ``picks``; ``failing``: ids whose trial fails."""

    def __init__(self, picks, failing=(), cost=None, predicted=None, back=None):
        self.picks, self.failing, self.calls, self.cost, self.back = picks, set(failing), [], cost, back
        self.predicted = predicted or {}

    def prepare(self, cfg):
        self.calls.append(("prepare", cfg.id))
        return cand(cfg.id)

    def select(self, k, current, cancel, beside, gate):
        ranking = [(c, self.predicted.get(c, 0.01)) for c in self.picks]
        if gate is not None and current is not None and current.config.id in self.predicted:
            held = gate(ranking[0][1], self.predicted[current.config.id])
            if held is not None:
                return Selection(ranking, held=held)
        return Selection(ranking, candidates=[current if current is not None and c == current.config.id else cand(c)
                                              for c in self.picks[:k]])   # as select(): what runs is reused

    def switch_cost_s(self, pick_ms):
        return self.cost

    def return_cost_s(self):
        return self.back

    def trial(self, p):
        self.calls.append(("trial", p.config.id))
        if p.config.id in self.failing:
            raise RuntimeError("injected")

    def use(self, p):
        self.calls.append(("use", p.config.id))

    def selecting(self, on):
        self.calls.append(("selecting", on))

    def time_probe(self, on):
        self.calls.append(("time_probe", on))

    def probe_time(self):
        return None

    def release(self, ps, solving):
        self.calls.append(("release", [p.config.id for p in ps], solving))

    def late(self, future):
        return None

    def landed(self):
        self.calls.append(("landed",))


def start(dev, policy="online", probe_iters=2, **more):
    args = {"config": SimpleNamespace(id="a"), "top_k": 2, "probe_iters": probe_iters, "select_min_nnz": 0,
            "select_patience": 0, **more}
    rec = SolveRecord("cg", policy, "cpu", "float64")
    pol = Policy(dev, 100, policy, args, rec, 0.0)
    if pol._future is not None:
        concurrent.futures.wait([pol._future])
    return pol, rec


def test_online_probes_each_candidate_and_keeps_the_fastest():
    dev = Recorder(["b", "c"])
    pol, rec = start(dev)
    pol.boundary(0)
    for it, seconds in ((2, 0.006), (4, 0.004), (6, 0.002)):     # a (the start), b, then c: c is fastest
        pol.ran(it, 2, seconds)
    pol.close(6, 10)
    assert rec.probes == {"a": 0.003, "b": 0.002, "c": 0.001}
    assert rec.schedule == [(0, "a"), (2, "b"), (4, "c")]          # the probe ends on c, kept where it runs
    assert rec.events[-1] == (6, "probed 3 configurations; kept c") and rec.products == 10
    assert dev.calls == [
        ("prepare", "a"), ("use", "a"), ("selecting", True), ("landed",), ("selecting", False),
        ("time_probe", True), ("trial", "b"), ("use", "b"), ("time_probe", True), ("trial", "c"), ("use", "c"),
        ("time_probe", True), ("time_probe", False), ("use", "c"),
        ("release", ["a", "b"], True), ("selecting", False), ("release", ["c"], False)]


def test_a_failed_trial_drops_the_candidate_and_says_so():
    dev = Recorder(["b"], failing={"b"})
    pol, rec = start(dev, policy="async", probe_iters=0)
    pol.boundary(0)
    pol.close(3, 4)
    assert rec.schedule == [(0, "a")]
    assert (0, "switching to b failed (RuntimeError: injected); staying on a") in rec.events
    assert ("release", ["b"], True) in dev.calls and dev.calls[-1] == ("release", ["a"], False)


def test_a_pick_that_cannot_repay_its_switch_is_not_converted_and_the_record_says_why():
    # 100 iterations expected, 0.01 ms saved a product: 1 ms saved, against a 1 ms switch (2 ms needed)
    dev = Recorder(["b"], cost=1e-3, predicted={"b": 0.09, "a": 0.10})
    pol, rec = start(dev, policy="async", probe_iters=3, n_calls=100, products_per_iteration=1, limit=1000)
    pol.boundary(0)
    pol.close(100, 100)
    assert rec.schedule == [(0, "a")] and not any(c[0] == "trial" for c in dev.calls)
    assert rec.events[0][1].startswith("ranking picks b; staying on a: the pick would save 0.001 s") and \
        "not 2x the switch's 0.001 s" in rec.events[0][1]


def test_a_pick_that_repays_its_switch_is_probed():
    dev = Recorder(["b"], cost=1e-3, predicted={"b": 0.05, "a": 0.10})    # 100 x 0.05 ms = 5 ms saved
    pol, rec = start(dev, policy="async", probe_iters=3, n_calls=100, products_per_iteration=1, limit=1000)
    pol.boundary(0)
    assert pol.probing and ("trial", "b") not in dev.calls      # the start first
    pol.ran(3, 3, 3e-3)
    assert ("trial", "b") in dev.calls and pol.probing
    pol.close(6, 6)


def test_the_residuals_trend_projects_the_iterations_left():
    pol, _ = start(Recorder(["a"]), policy="fixed", n_calls=5000, products_per_iteration=1, limit=3000, tol=1e-8)
    assert pol.remaining(0) == 3000                    # the prior, capped at the limit
    for it, res in ((10, 1e-1), (20, 1e-2), (30, 1e-3)):
        pol.ran(it, 10, 1e-3, res)
    assert abs(pol.remaining(30) - 50) < 1e-6          # a decade every 10 iterations, 5 decades to go
    pol.ran(40, 10, 1e-3, 1e-3)                        # no progress since: 2 decades in 30 iterations
    assert abs(pol.remaining(40) - 75) < 1e-6          # 5 decades to go at 15 iterations each
    pol._args["n_calls"] = 100                         # a prior of 100 iterations: 60 left, fewer than projected
    assert abs(pol.remaining(40) - 60) < 1e-6
    assert abs(pol.remaining(140) - 75) < 1e-6         # past its prior: the projection alone


@pytest.mark.parametrize("b_s, config, last", [
    (0.99e-3, "b", "probed 2 configurations; kept b"),          # b 1 % faster, within the 2 % noise: it runs, kept
    # b 1 % slower, within the noise: a's saving not worth the switch back, b stays
    (1.01e-3, "b", "probed 2 configurations; kept b (a measured 0.990x b's time, within the 2% noise)"),
    (1.2e-3, "a", "probed 2 configurations; kept a"),           # b clearly slower: back to a
])
def test_a_probe_ends_on_its_candidate_and_leaves_it_only_where_that_pays(b_s, config, last):
    dev = Recorder(["b"], cost=1e-3, predicted={"b": 0.05, "a": 0.10})
    pol, rec = start(dev, policy="async", probe_iters=3, n_calls=10_000, products_per_iteration=1, limit=10_000)
    pol.boundary(0)
    pol.ran(3, 3, 3 * 1.0e-3)        # a, the start, first
    pol.ran(6, 3, 3 * b_s)           # then b
    pol.close(6, 6)
    assert rec.schedule == [(0, "a"), (3, "b")] + ([(6, "a")] if config == "a" else []) and rec.config == config
    assert rec.events[-1] == (6, last)


@pytest.mark.parametrize("back, config", [(4e-4, "a"), (1e-2, "b")])
def test_going_back_is_weighed_at_its_own_cost(back, config):
    """At a probe's end the start, made and tried before, measured 5 % faster than the candidate that runs: the solve
    goes back where the saving over the iterations left (100 x 0.05 ms) exceeds twice what going back costs
    (Device.return_cost_s), not the cost of a switch that converts."""
    dev = Recorder(["b"], cost=1e-3, predicted={"b": 0.05, "a": 0.10}, back=back)
    pol, rec = start(dev, policy="async", probe_iters=3, n_calls=106, products_per_iteration=1, limit=10_000)
    pol.boundary(0)
    pol.ran(3, 3, 3 * 1.0e-3)
    pol.ran(6, 3, 3 * 1.05e-3)
    pol.close(6, 6)
    assert rec.config == config, rec.events
    if config == "b":
        assert rec.events[-1][1].endswith(f"not 2x going back's {back:.3g} s)"), rec.events


def test_only_a_selection_that_acts_wakes_the_iterations():
    """A held pick (or one that keeps what runs) does not wake the iterations (on the GPU a wake drains the queued
    iterations): it lands at the next boundary, or at the end, where the record says why the solve stayed."""
    dev = Recorder(["b"], cost=1e-3, predicted={"b": 0.09, "a": 0.10})
    pol, rec = start(dev, policy="async", probe_iters=3, n_calls=100, products_per_iteration=1, limit=1000)
    assert ("landed",) not in dev.calls
    pol.close(100, 100)                                   # the solve ended without another boundary
    assert rec.events[-1][0] == 100 and rec.events[-1][1].startswith("ranking picks b; staying on a: the pick would")
    dev = Recorder(["a"])
    pol, rec = start(dev, policy="async", probe_iters=3)
    assert ("landed",) not in dev.calls
    pol.close(50, 50)
    assert rec.events[-1] == (50, "ranking keeps a")
    dev = Recorder(["b"], cost=1e-3, predicted={"b": 0.05, "a": 0.10})
    pol, rec = start(dev, policy="async", probe_iters=3, n_calls=100, products_per_iteration=1, limit=1000)
    assert ("landed",) in dev.calls                       # a pick to probe wakes them
    pol.boundary(0)
    assert pol.probing
    pol.close(3, 3)


def test_the_gpu_selection_waits_for_the_iterations():
    """On the GPU a selection beside the iterations starts only once they run (the GIL released in the solve's C
    loop), and one whose solve ended first returns empty at once (its solve freed, nothing ranked)."""
    import threading

    import numpy as np

    import pyspmv
    from pyspmv.solvers.device import Plans

    K = SimpleNamespace(set_wake=lambda address: None)
    M = pyspmv.generate("poisson2d", 10)
    plans = Plans(K, M, np.dtype(np.float64), {"model": None, "n_calls": 10, "probe_iters": 3})
    cancel = threading.Event()
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        fut = pool.submit(plans.select, 1, None, cancel, True, None)
        assert not concurrent.futures.wait([fut], timeout=0.2).done   # no iteration yet: it waits
        cancel.set()
        plans.selecting(False)                                         # the solve ended
        sel = fut.result(timeout=5)
    assert sel.ranking == [] and sel.candidates == []


def test_a_first_look_drops_a_candidate_clearly_slower_and_probes_the_others_whole():
    """Where chunks are timed, a probed candidate's first chunk is a short look against the pace before the probe:
    clearly slower (past FIRST_LOOK_SLOWER) ends its probe there, said in the record; else a whole probe follows."""
    from pyspmv.solvers._policy import FIRST_LOOK_SLOWER
    dev = Recorder(["b", "c"], cost=1e-4, predicted={"b": 0.05, "c": 0.06, "a": 0.10})
    pol, rec = start(dev, policy="online", probe_iters=3, n_calls=10_000, products_per_iteration=1, limit=10_000)
    pol.ran(0, 10, 10 * 1e-3)                # a, before the selection lands: 1 ms an iteration
    assert pol.first_look is None            # nothing probed yet
    pol.boundary(10)
    assert pol.probing and pol.first_look == 1e-3
    pol.ran(13, 3, 3 * 1e-3)                 # a's look (the start first), then its probe
    pol.ran(23, 10, 10 * 1e-3)
    assert rec.probes["a"] == pytest.approx(1e-3) and pol.glance == 1e-3 and pol.first_look is None
    pol.ran(24, 1, 1.2e-3)                   # b's glance: within the bound and the return's allowance
    assert pol.glance is None and pol.first_look == 1e-3
    pol.ran(27, 3, 3 * FIRST_LOOK_SLOWER * 1.1e-3)     # b's look: past the bound, dropped
    assert rec.probes["b"] == pytest.approx(FIRST_LOOK_SLOWER * 1.1e-3)
    assert (27, f"b took {FIRST_LOOK_SLOWER * 1.1:.2f}x an iteration's time at its first look; not probed further") \
        in rec.events
    assert pol.glance == 1e-3                # c's glance next
    pol.ran(28, 1, 1e-3)
    assert pol.first_look == 1e-3
    pol.ran(31, 3, 3 * 1.2e-3)               # c's look: slower, within the bound: no verdict yet
    assert "c" not in rec.probes and pol.first_look is None and pol.glance is None
    pol.ran(41, 10, 10 * 0.5e-3)             # c's whole probe
    assert rec.probes["c"] == pytest.approx(0.5e-3)
    pol.close(41, 41)
    assert rec.config == "c" and rec.events[-1] == (41, "probed 3 configurations; kept c"), rec


def test_a_glance_and_a_look_are_held_against_the_starts_probe_not_the_slowed_pace_before_it():
    """The chunk before a probe ran beside the selection's conversion; the start's own probe, timed first, is the
    pace a candidate's glance and look are held against (a look 1.6x it is dropped, though 0.8x the pace before)."""
    from pyspmv.solvers._policy import FIRST_LOOK_SLOWER
    dev = Recorder(["b"], cost=1e-4, predicted={"b": 0.05, "a": 0.10})
    pol, rec = start(dev, policy="online", probe_iters=3, n_calls=10_000, products_per_iteration=1, limit=10_000)
    pol.ran(0, 10, 10 * 2e-3)                # a beside the selection: 2 ms an iteration
    pol.boundary(10)
    assert pol.first_look == 2e-3            # the start's look: nothing better known yet
    pol.ran(13, 3, 3e-3)
    pol.ran(23, 10, 10e-3)                   # the start's probe: 1 ms an iteration
    assert pol.glance == pytest.approx(1e-3)
    pol.ran(24, 1, 1.6e-3)                   # b's glance: within 1.5x + the return's allowance
    assert pol.first_look == pytest.approx(1e-3)
    pol.ran(27, 3, 3 * 1.6e-3)               # b's look: 1.6x the start's probe, past FIRST_LOOK_SLOWER
    assert 1.6 > FIRST_LOOK_SLOWER and rec.probes["b"] == pytest.approx(1.6e-3)
    assert (27, "b took 1.60x an iteration's time at its first look; not probed further") in rec.events
    assert not pol.probing and rec.config == "a"
    pol.close(27, 27)


@pytest.mark.parametrize("slower, dropped", [(20.0, True), (1.4, False)])
def test_a_glance_drops_a_candidate_an_order_slower_after_one_iteration(slower, dropped):
    """A candidate other than the start runs one iteration before its first look; one past FIRST_LOOK_SLOWER times
    the pace plus the return's allowance (GLANCE_RETURN_S) is dropped there, before a look of many iterations."""
    from pyspmv.solvers._policy import GLANCE_RETURN_S
    dev = Recorder(["b"], cost=1e-4, predicted={"b": 0.05, "a": 0.10})
    pol, rec = start(dev, policy="online", probe_iters=3, n_calls=10_000, products_per_iteration=1, limit=10_000)
    pol.ran(0, 10, 10 * 1e-4)                # a: 0.1 ms an iteration
    pol.boundary(10)
    assert pol.glance is None and pol.first_look == 1e-4      # the start is not glanced at
    pol.ran(13, 3, 3e-4)
    pol.ran(33, 20, 20e-4)
    assert pol.glance == 1e-4
    pol.ran(34, 1, slower * 1e-4 + GLANCE_RETURN_S)
    glanced = any("at a glance" in e for _, e in rec.events)
    assert glanced == dropped and ("b" in rec.probes) == dropped
    if dropped:
        assert not pol.probing and rec.config == "a", rec
    else:
        assert pol.first_look == 1e-4
    pol.close(34, 34)
