"""The switching policy that both devices' solves share (pyspmv/solvers/_policy.py), driven over a stand-in
device that records what it is asked: which configurations are tried, used, timed and freed, in which order."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import concurrent.futures
from types import SimpleNamespace

from pyspmv.solvers._policy import Policy
from pyspmv.solvers.record import SolveRecord
from pyspmv.solvers.switching import Selection


def cand(cid):
    return SimpleNamespace(config=SimpleNamespace(id=cid))


class Recorder:
    """A Device whose selection lands the candidates ``picks``; ``failing``: ids whose trial fails."""

    def __init__(self, picks, failing=()):
        self.picks, self.failing, self.calls = picks, set(failing), []

    def prepare(self, cfg):
        self.calls.append(("prepare", cfg.id))
        return cand(cfg.id)

    def select(self, k, current, cancel, beside):
        return Selection([(c, 0.01) for c in self.picks], candidates=[cand(c) for c in self.picks[:k]])

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


def start(dev, policy="online", probe_iters=2):
    args = {"config": SimpleNamespace(id="a"), "top_k": 2, "probe_iters": probe_iters, "select_min_nnz": 0,
            "select_patience": 0}
    rec = SolveRecord("cg", policy, "cpu", "float64")
    pol = Policy(dev, 100, policy, args, rec, 0.0)
    if pol._future is not None:
        concurrent.futures.wait([pol._future])
    return pol, rec


def test_online_probes_each_candidate_and_keeps_the_fastest():
    dev = Recorder(["b", "c"])
    pol, rec = start(dev)
    pol.boundary(0)
    for it, seconds in ((2, 0.004), (4, 0.002), (6, 0.006)):     # b, c, then a (the start): c is fastest
        pol.ran(it, 2, seconds)
    pol.close(6, 10)
    assert rec.probes == {"b": 0.002, "c": 0.001, "a": 0.003}
    assert rec.schedule == [(0, "b"), (2, "c"), (4, "a"), (6, "c")]
    assert rec.events[-1] == (6, "probed 3 configurations; kept c") and rec.products == 10
    assert dev.calls == [
        ("prepare", "a"), ("use", "a"), ("selecting", True), ("selecting", False),
        ("trial", "b"), ("use", "b"), ("time_probe", True), ("trial", "c"), ("use", "c"), ("time_probe", True),
        ("trial", "a"), ("use", "a"), ("time_probe", True), ("time_probe", False), ("use", "c"),
        ("release", ["a", "b"], True), ("selecting", False), ("release", ["c"], False)]


def test_a_failed_trial_drops_the_candidate_and_says_so():
    dev = Recorder(["b"], failing={"b"})
    pol, rec = start(dev, policy="async", probe_iters=0)
    pol.boundary(0)
    pol.close(3, 4)
    assert rec.schedule == [(0, "a")]
    assert (0, "switching to b failed (RuntimeError: injected); staying on a") in rec.events
    assert ("release", ["b"], True) in dev.calls and dev.calls[-1] == ("release", ["a"], False)
