"""rank(verify=k): the model's first k configurations timed on the device and re-ordered by measurement, the
rule that weighs measuring against its gain when n_calls is given, the Operator's and the CLI's verify; on the
GPU (marker gpu) a scipy matrix uploaded once as CSR and a CuPy matrix, both converted on the device."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import json
import math

import numpy as np
import pytest
import scipy.sparse as sp

import pyspmv
from pyspmv.cli import main
from pyspmv.devices import benchmark as benchmark_module
from pyspmv.ranking import verify as verify_module
from pyspmv.ranking.rank import VERIFY_BUDGET_S, VERIFY_REPEATS, VERIFY_WARMUP, Measured, verify_runs, weigh_verify

A = pyspmv.generate("poisson2d", 30)
RANDOM = sp.random_array((400, 400), density=0.02, format="csr", rng=np.random.default_rng(1))


class FakeTimer:
    """benchmark()'s runner with made-up times (ms by configuration id; `default` for the others): the conversions
    are real, the timings deterministic. Records what it timed."""

    def __init__(self, times: dict[str, float], default: float = 10.0):
        self.times, self.default = times, default
        self.calls: list[tuple[str, np.dtype, int, int, float]] = []

    def bench(self, runner, x, warmup, repeats, budget_s, back_to_back=1):
        self.calls.append((runner.c.id, runner.F.dtype, warmup, repeats, budget_s))
        t = self.times.get(runner.c.id, self.default)
        return t, t * 0.99, t * 1.01, t * 0.98, repeats

    @property
    def timed(self) -> list[str]:
        return [c[0] for c in self.calls]


@pytest.fixture
def fake(monkeypatch):
    """Install a FakeTimer: ``fake(times)`` returns it."""
    def install(times: dict[str, float], default: float = 10.0) -> FakeTimer:
        t = FakeTimer(times, default)
        monkeypatch.setattr(benchmark_module._Runner, "bench", lambda self, *a: t.bench(self, *a))
        return t
    return install


def ids(r, n=None):
    return [c for c, _ in (r if n is None else r[:n])]


def test_first_k_come_in_measured_order_the_rest_as_the_model_ranked(fake):
    """The model's first 3 timed, each once, with the verify settings; re-ordered by the made-up times (which
    differ from the model's order, so an unverified ranking fails this test); the predictions travel with their
    configurations; the rest unchanged; what was done said in verified, measured, to_frame, notes and order."""
    r0 = pyspmv.rank(A, device="cpu")
    top = ids(r0, 3)
    t = fake({top[0]: 2.0, top[1]: 3.0, top[2]: 1.0})
    r = pyspmv.rank(A, device="cpu", verify=3)
    assert ids(r, 3) == [top[2], top[0], top[1]]
    assert sorted(t.timed) == sorted(top)
    assert all(c[2:] == (VERIFY_WARMUP, VERIFY_REPEATS, VERIFY_BUDGET_S) for c in t.calls)
    assert list(r[3:]) == list(r0[3:]) and dict(r) == dict(r0) and len(r) == len(r0)
    assert [m.config for m in r.verified] == ids(r, 3) and [m.median_ms for m in r.verified] == [1.0, 2.0, 3.0]
    assert all(m.status == "ok" and m.q25_ms < m.median_ms < m.q75_ms and m.convert_ms >= 0 for m in r.verified)
    assert r.measured == {top[2]: 1.0, top[0]: 2.0, top[1]: 3.0} and r.best == top[2]
    df = r.to_frame()
    assert list(df.columns) == ["config", "predicted_ms", "measured_ms"]
    assert df["measured_ms"].iloc[:3].tolist() == [1.0, 2.0, 3.0] and df["measured_ms"].iloc[3:].isna().all()
    note = r.verify_note
    assert note in r.notes() and note.startswith("verify=3: the model's first 3 configurations timed on cpu")
    assert f"{top[2]} fastest at 1000.000 µs, the model's 3rd" in note and "the model's pick measured 100.0% slower" in note
    assert r.order.startswith("the first 3 by measured time") and r.verify_weighed is None
    html = r._repr_html_()
    assert "<th>measured_us</th>" in html and "<td>1000.000</td>" in html


def test_without_verify_nothing_changes():
    """verify None or 0: the ranking, its frame and its notes are those of rank() without it."""
    r0 = pyspmv.rank(A, device="cpu")
    for v in (None, 0):
        r = pyspmv.rank(A, device="cpu", verify=v)
        assert r == r0 and r.verified is None and r.verify_note is None and r.measured == {}
        assert list(r.to_frame().columns) == ["config", "predicted_ms"] and r.notes() == r0.notes()
        assert r.order == r0.order and "measured_us" not in r._repr_html_()


def test_verify_past_the_usable_configurations(fake):
    """verify larger than what can serve the matrix times those that can (not the inf rows, which stay last)."""
    r0 = pyspmv.rank(RANDOM, device="cpu")
    usable = [c for c, v in r0 if math.isfinite(v)]
    assert 0 < len(usable) < len(r0)            # cpu/dia and cpu/bsr cannot serve it
    t = fake({c: 1.0 + i for i, c in enumerate(reversed(usable))})
    r = pyspmv.rank(RANDOM, device="cpu", verify=len(r0) + 5)
    assert sorted(t.timed) == sorted(usable)
    assert ids(r, len(usable)) == list(reversed(usable)) and list(r[len(usable):]) == list(r0[len(usable):])
    assert f"(only {len(usable)} can serve the matrix)" in r.verify_note


@pytest.mark.parametrize("bad", [-1, 1.5, "3", True, np.float64(2.0), [3]])
def test_bad_verify_is_refused_naming_it(bad):
    with pytest.raises(ValueError, match="'verify' parameter of rank"):
        pyspmv.rank(A, device="cpu", verify=bad)
    with pytest.raises(ValueError, match="'verify'"):
        pyspmv.Operator(A, verify=bad)


def test_operator_takes_config_or_verify_not_both():
    with pytest.raises(ValueError, match="'verify'.*not both"):
        pyspmv.Operator(A, config="cpu/csr/rows", verify=3)


def test_n_calls_too_few_measures_nothing_and_says_why(fake):
    """n_calls=1 cannot pay for three conversions and ~100 timed products: nothing timed, the model's order, and a
    note with both numbers; a huge n_calls pays: all three timed and re-ordered."""
    r0 = pyspmv.rank(A, device="cpu", n_calls=1)
    t = fake({c: 3.0 - i for i, c in enumerate(ids(r0, 3))})
    r = pyspmv.rank(A, device="cpu", n_calls=1, verify=3)
    assert t.calls == [] and r == r0 and r.verified == () and r.measured == {}
    cost, gain = r.verify_weighed
    assert gain < cost and "nothing measured" in r.verify_note and "does not pay" in r.verify_note
    assert f"cost {cost:.3g} products" in r.verify_note and f"gain of {gain:.3g} over 1 product " in r.verify_note
    assert r.to_frame()["measured_ms"].isna().all() and r.verify_note in r.notes()
    big = 10**9
    rb0 = pyspmv.rank(A, device="cpu", n_calls=big)
    t = fake({c: 3.0 - i for i, c in enumerate(ids(rb0, 3))})
    rb = pyspmv.rank(A, device="cpu", n_calls=big, verify=3)
    cost, gain = rb.verify_weighed
    assert gain > cost and sorted(t.timed) == sorted(ids(rb0, 3))
    assert ids(rb, 3) == ids(rb0, 3)[::-1] and "plus measured conversion / n_calls" in rb.verify_note


def _expected_saving(K: float, t: float, s: float) -> float:
    """E[(K - t e^x)+] for x ~ N(0, s^2), by quadrature (not by the closed form the code uses)."""
    x = np.linspace(-12 * s, 12 * s, 200001)
    pdf = np.exp(-0.5 * (x / s) ** 2) / (s * math.sqrt(2 * math.pi))
    return float(np.sum(np.maximum(K - t * np.exp(x), 0.0) * pdf) * (x[1] - x[0]))


def test_weigh_rule_on_both_sides_of_its_boundary():
    """Same conversion for every candidate: the gain is n_calls times a fixed saving per product (the pick's time
    to beat), so the boundary is cost / saving; one call fewer does not pay, one more does."""
    t, conv, tol = [1.0, 1.01, 1.2], [5.0, 5.0, 5.0], 0.05
    s = tol / 0.6744897501960817
    saving = sum(_expected_saving(1.0, ti, s) for ti in t[1:])
    cost = 15.0 + sum(verify_runs(ti) * ti for ti in t)
    assert verify_runs(1.0) == VERIFY_WARMUP + VERIFY_REPEATS and verify_runs(1e9) == 2.0
    n = int(cost / saving)
    c0, g0 = weigh_verify(t, conv, n, tol)
    c1, g1 = weigh_verify(t, conv, n + 1, tol)
    assert c0 == pytest.approx(cost) and g0 == pytest.approx(n * saving, rel=1e-6)
    assert g0 <= c0 and g1 > c1
    # a candidate predicted faster than the pick (a bytes-weighted order) gains more than a tie; one far slower
    # almost nothing; one whose conversion alone costs more than the pick per call, nothing
    assert weigh_verify([1.0, 0.98], [0, 0], 100, tol)[1] > weigh_verify([1.0, 1.0], [0, 0], 100, tol)[1]
    assert weigh_verify([1.0, 2.0], [0, 0], 100, tol)[1] < 1e-9
    assert weigh_verify([1.0, 0.5], [0.0, 200.0], 100, tol)[1] == 0.0


def test_rank_decides_as_it_weighs_on_both_sides(fake):
    """Through rank(): the smallest n_calls that measures (found by bisection) and the one before it straddle
    the boundary, and every decision follows gain > cost."""
    fake({})

    def measured(n: int) -> bool:
        r = pyspmv.rank(A, device="cpu", n_calls=n, verify=3)
        cost, gain = r.verify_weighed
        assert bool(r.verified) == (gain > cost)
        return bool(r.verified)

    lo, hi = 1, 10**9
    assert not measured(lo) and measured(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if measured(mid) else (mid, hi)
    assert not measured(hi - 1) and measured(hi)


def test_a_model_without_a_measured_error_is_measured_without_weighing(fake, monkeypatch):
    """No precision (a model other than the default recipe): the gain cannot be weighed, so verify measures and
    says why."""
    r0 = pyspmv.rank(A, device="cpu", n_calls=1)
    cached = pyspmv.default_model("cpu").__dict__
    monkeypatch.setitem(cached, "precision", None)
    monkeypatch.setitem(cached, "_ranked", {})          # made again without precision, and put back after
    t = fake({c: 3.0 - i for i, c in enumerate(ids(r0, 3))})
    r = pyspmv.rank(A, device="cpu", n_calls=1, verify=3)
    assert r.precision is None and r.verify_weighed is None and sorted(t.timed) == sorted(ids(r0, 3))
    assert "measured without weighing its cost: this model's error was not measured" in r.verify_note
    assert ids(r, 3) == ids(r0, 3)[::-1]


def test_operator_runs_the_measured_best(fake):
    """Operator(verify=3) multiplies with the configuration measured fastest (the model's third here)."""
    r0 = pyspmv.rank(A, device="cpu")
    top = ids(r0, 3)
    fake({top[0]: 2.0, top[1]: 3.0, top[2]: 1.0})
    op = pyspmv.Operator(A, verify=3)
    assert op.config.id == top[2] and op.ranking.best == top[2] and len(op.ranking.verified) == 3
    x = np.random.default_rng(0).uniform(-1, 1, A.ncols)
    np.testing.assert_allclose(op @ x, A.to_scipy() @ x, rtol=1e-12, atol=1e-12)
    assert pyspmv.Operator(A).config.id == top[0]           # without verify: the model's pick


def test_deterministic_and_libraries_with_verify_on_the_cpu(fake):
    r0 = pyspmv.rank(A, device="cpu", deterministic=True, libraries="cpu")
    t = fake({c: 3.0 - i for i, c in enumerate(ids(r0, 2))})
    r = pyspmv.rank(A, device="cpu", deterministic=True, libraries="cpu", verify=2)
    assert r.deterministic and r.libraries == ("cpu",) and sorted(t.timed) == sorted(ids(r0, 2))
    assert ids(r, 2) == ids(r0, 2)[::-1] and list(r[2:]) == list(r0[2:])
    assert r.notes()[0].startswith("only the deterministic cpu configurations") and r.notes()[1] == r.verify_note


def test_restricted_cuda_ranking_times_only_what_it_kept(monkeypatch):
    """libraries=('cusparse',) and deterministic=True with verify: the candidates are the first of the restricted
    ranking (the device and the timer stand in: no GPU here), best_of_all and the restriction's note kept."""
    seen = []

    def measure(M, on_gpu, cands, device, dtype, auto=False):
        seen.append((list(cands), device, dtype, on_gpu))
        return [Measured(c, 1.0 + len(cands) - i, 0.9, 1.1, 0.5, "ok", "") for i, c in enumerate(cands)]

    monkeypatch.setattr(verify_module, "require_device", lambda device: None)
    monkeypatch.setattr(verify_module, "_measure", measure)
    for kw in ({"libraries": ("cusparse",)}, {"deterministic": True}, {"libraries": "pyspmv", "deterministic": True}):
        r0 = pyspmv.rank(RANDOM, device="cuda", dtype="float32", **kw)
        r = pyspmv.rank(RANDOM, device="cuda", dtype="float32", verify=3, **kw)
        assert seen[-1] == (ids(r0, 3), "cuda", "float32", None)
        assert ids(r, 3) == ids(r0, 3)[::-1] and list(r[3:]) == list(r0[3:])
        assert r.best_of_all == r0.best_of_all and r.notes()[0].startswith("only the")
        assert "converted on the GPU" in r.verify_note
        if "libraries" in kw:
            assert all(c.startswith(kw["libraries"] if isinstance(kw["libraries"], str) else "cusparse/")
                       for c in seen[-1][0])


class _OnGPU:
    """Stands in for a CuPy array: ``get()`` gives the host copy."""

    def __init__(self, a):
        self.a = a

    def get(self):
        return self.a


def test_matrix_on_the_gpu_is_converted_there(monkeypatch):
    """The path of a matrix that lives on the GPU, its GPU parts standing in (no GPU here): wrapped in place once,
    each candidate converted by prepare_on_device (the Operator's conversion) and timed by benchmark()'s runner
    with the verify settings, unchecked; never benchmark()'s host conversion. The GPU tests below run it for real."""
    B = RANDOM.astype(np.float32)
    D = pyspmv.devices.arrays.DeviceCSR(B.shape, B.nnz, _OnGPU(B.indptr), _OnGPU(B.indices), _OnGPU(B.data),
                                        np.dtype(np.float32), None)
    wrapped, converted, timed = [], [], []

    class Converted:
        def __init__(self, c):
            self.format, self.shape, self.dtype = c.format, B.shape, np.dtype(np.float32)

    def wrap(csr):
        wrapped.append(csr)
        return "DM"

    def prepare(DM, c):
        converted.append((DM, c.id))
        if c.format == "ell":
            raise MemoryError("out of GPU memory")
        return c, Converted(c)

    def one(run, c, F, on, convert_ms, warmup, repeats, budget_s, check):
        if isinstance(F, Exception):             # as benchmark()'s: not timed
            return {"config": c.id, "median_ms": math.nan, "q25_ms": math.nan, "q75_ms": math.nan,
                    "convert_ms": math.nan, "status": "not_applicable", "note": str(F)}
        assert run.x is None and run.ref is None             # no host x: each plan makes its own on the device
        timed.append((c.id, F is on, run.dt, warmup, repeats, budget_s, check))
        t = 1.0 + len(timed)
        return {"config": c.id, "median_ms": t, "q25_ms": t, "q75_ms": t, "convert_ms": convert_ms, "status": "ok",
                "note": ""}

    def host_path(*a, **kw):
        raise AssertionError("benchmark()'s host conversion used for a matrix on the GPU")

    monkeypatch.setattr(verify_module, "require_device", lambda device: None)
    monkeypatch.setattr(verify_module.gpu.DeviceMatrix, "wrap_csr", staticmethod(wrap))
    monkeypatch.setattr(verify_module, "prepare_on_device", prepare)
    monkeypatch.setattr(verify_module._DtypeRun, "one", one)
    monkeypatch.setattr(verify_module, "benchmark", host_path)
    r0 = pyspmv.rank(B, device="cuda")
    r = pyspmv.rank(D, device="cuda", verify=3)
    assert list(r[3:]) == list(r0[3:]) and ids(r, 3) == ids(r0, 3)       # the made-up times keep the order
    first = {}
    for c in ids(r0, 3):                         # one conversion per format and parameters
        first.setdefault((pyspmv.config(c).format, str(pyspmv.config(c).format_kwargs)), c)
    assert wrapped == [D] and converted == [("DM", c) for c in first.values()]
    assert timed == [(c, True, np.float32, VERIFY_WARMUP, VERIFY_REPEATS, VERIFY_BUDGET_S, False) for c in ids(r0, 3)]
    assert "timed on cuda converted on the GPU" in r.verify_note and r.measured == dict(zip(ids(r0, 3), [2., 3., 4.]))
    # configurations of one format and parameters share one conversion, as in benchmark(); a format the GPU has
    # no memory for is an 'error' row, placed after those timed, and the others are still timed
    cands = ["pyspmv/ell/bs=128", "pyspmv/sell/c=32/sigma=1/bs=128", "pyspmv/sell/c=32/sigma=1/bs=256",
             "pyspmv/csr/scalar/bs=128"]
    converted.clear()
    timed.clear()
    rows = verify_module._time_on_device(pyspmv.Matrix(B), D, cands, "float32")
    assert [c for _, c in converted] == cands[:2] + cands[3:]
    assert [x["status"] for x in rows] == ["error", "ok", "ok", "ok"] and "out of GPU memory" in rows[0]["note"]
    assert rows[1]["convert_ms"] == rows[2]["convert_ms"] and [t[0] for t in timed] == cands[1:]


@pytest.mark.filterwarnings("ignore::pyspmv.NoisyTimingWarning")     # a shared machine may be busy
def test_float32_matrix_timed_in_float32(fake):
    A32 = pyspmv.Matrix(A.to_scipy().astype(np.float32))
    t = fake({})
    r = pyspmv.rank(A32, device="cpu", verify=2)
    assert r.dtype == "float32" and len(t.calls) == 2 and all(c[1] == np.float32 for c in t.calls)
    t = fake({})
    r = pyspmv.rank(A, device="cpu", dtype="float32", verify=2)
    assert r.dtype == "float32" and all(c[1] == np.float32 for c in t.calls)


@pytest.mark.filterwarnings("ignore::pyspmv.NoisyTimingWarning")     # a shared machine may be busy
def test_real_cpu_timings():
    """Timed for real: three statuses ok, quartiles around the median, the first three in measured order."""
    r = pyspmv.rank(RANDOM, device="cpu", verify=3, dtype="float32")
    assert len(r.verified) == 3 and all(m.status == "ok" for m in r.verified)
    assert all(0 < m.q25_ms <= m.median_ms <= m.q75_ms and m.convert_ms > 0 for m in r.verified)
    med = [r.measured[c] for c in ids(r, 3)]
    assert med == sorted(med)


@pytest.mark.skipif(pyspmv.devices.gpu.available(), reason="a GPU is usable here")
def test_cuda_verify_without_a_gpu_says_why():
    """No GPU: verify on cuda is an error, whether or not n_calls would have it measure."""
    for kw in ({}, {"n_calls": 1}):
        with pytest.raises(pyspmv.DeviceUnavailableError):
            pyspmv.rank(A, device="cuda", verify=2, **kw)
    assert pyspmv.rank(A, device="cuda") == pyspmv.rank(A, device="cuda", verify=0)


def test_cli_verify(fake, capsys):
    r0 = pyspmv.rank(A, device="cpu")
    fake({c: 3.0 - i for i, c in enumerate(ids(r0, 3))})
    assert main(["rank", "--generate", "poisson2d:30", "--device", "cpu", "--verify", "3", "--top", "4"]) == 0
    out = capsys.readouterr().out.splitlines()
    rows = [ln.split() for ln in out if not ln.startswith("#")]
    assert rows[0] == ["rank", "config", "predicted_us", "vs_pick", "measured_us", "mark"]
    assert [x[1] for x in rows[1:4]] == ids(r0, 3)[::-1]
    assert [x[4] for x in rows[1:5]] == ["1000.000", "2000.000", "3000.000", "-"]
    assert any(ln.startswith("# verify=3: the model's first 3") for ln in out)
    assert main(["rank", "--generate", "poisson2d:30", "--device", "cpu", "--verify", "3", "--json"]) == 0
    (o,) = json.loads(capsys.readouterr().out)
    assert o["verify"] == 3 and o["verify_note"].startswith("verify=3") and o["verify_weighed"] is None
    assert [e["measured_us"] for e in o["ranking"][:4]] == [1000.0, 2000.0, 3000.0, None]
    assert main(["rank", "--generate", "poisson2d:30", "--device", "cpu", "--json"]) == 0
    assert "measured_us" not in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["rank", "--generate", "poisson2d:30", "--device", "cpu", "--verify", "0"])
    assert "--verify: must be a positive integer" in capsys.readouterr().err


# ---- on the GPU (python3 -P -m pytest -m gpu) ----


def _check_verified(r, r0, k, where):
    """r is r0 with its first k re-ordered by measurement: every one timed, ok, in measured order."""
    assert r.verified is not None and len(r.verified) == k, f"expected {k} timed, got {r.verified}"
    bad = [m for m in r.verified if m.status != "ok"]
    assert not bad, f"configurations that could not be timed: {bad}"
    assert sorted(ids(r, k)) == sorted(ids(r0, k)) and list(r[k:]) == list(r0[k:]), "rows past k moved"
    med = [r.measured[c] for c in ids(r, k)]
    assert med == sorted(med) and all(m > 0 for m in med), f"not in measured order: {med}"
    assert where in r.verify_note, r.verify_note


@pytest.mark.gpu
@pytest.mark.filterwarnings("ignore::pyspmv.NoisyTimingWarning")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gpu_verify_scipy_matrix(dtype):
    """A host matrix on cuda: uploaded once as CSR, each candidate converted on the GPU, timed between CUDA
    events."""
    B = pyspmv.generate("poisson2d", 200).to_scipy()
    r0 = pyspmv.rank(B, device="cuda", dtype=dtype)
    r = pyspmv.rank(B, device="cuda", dtype=dtype, verify=3)
    _check_verified(r, r0, 3, "timed on cuda converted on the GPU")
    op = pyspmv.Operator(B, device="cuda", dtype=dtype, verify=3)
    assert op.config.id == op.ranking.best and op.ranking.verified, op.ranking.verify_note


@pytest.mark.gpu
@pytest.mark.filterwarnings("ignore::pyspmv.NoisyTimingWarning")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gpu_verify_cupy_matrix_converts_on_the_device(dtype, monkeypatch):
    """A CuPy CSR matrix: every candidate converted on the GPU (convert_on_device for each non-CSR one, never
    the host path of benchmark()); the Operator of it runs the measured best."""
    cp = pytest.importorskip("cupy")
    csp = pytest.importorskip("cupyx.scipy.sparse")
    B = pyspmv.generate("banded", 20000).to_scipy().astype(dtype)
    D = csp.csr_matrix(B)
    converted = []
    real = pyspmv.devices.gpu.convert_on_device

    def spy(M, fmt, **kw):
        converted.append(fmt)
        return real(M, fmt, **kw)

    def host_path(*a, **kw):
        raise AssertionError("rank(verify=) of a CuPy matrix used benchmark()'s host conversion")

    monkeypatch.setattr(pyspmv.devices.gpu, "convert_on_device", spy)
    monkeypatch.setattr(verify_module, "benchmark", host_path)
    r0 = pyspmv.rank(B, device="cuda")
    k = 8
    r = pyspmv.rank(D, device="cuda", verify=k)
    assert r.dtype == np.dtype(dtype).name
    _check_verified(r, r0, k, "timed on cuda converted on the GPU")
    keys = {(pyspmv.config(c).format, str(pyspmv.config(c).format_kwargs)) for c in ids(r0, k)}
    assert sorted(converted) == sorted(f for f, _ in keys if f != "csr"), (converted, keys)   # once per format key
    op = pyspmv.Operator(D, verify=3)
    assert op.config.id == op.ranking.best and len(op.ranking.verified) == 3, op.ranking.verify_note
    x = np.random.default_rng(1).uniform(-1, 1, B.shape[1]).astype(dtype)
    y = cp.asnumpy(op @ cp.asarray(x))
    ref = B.astype(np.float64) @ x.astype(np.float64)
    np.testing.assert_allclose(y, ref, rtol=1e-4 if dtype == np.float32 else 1e-12,
                               atol=1e-4 * float(np.abs(ref).max()))
    r32 = pyspmv.rank(D, device="cuda", dtype="float32" if dtype == np.float64 else "float64", verify=2)
    assert len(r32.verified) == 2 and all(m.status == "ok" for m in r32.verified), r32.verified


# ---- verify="auto" ----


def test_choose_k_grows_with_the_margin_and_stays_in_bounds():
    """choose_k: nothing where no k pays (few calls), k in [2, AUTO_MAX] where some does, never fewer with more
    calls or a larger error; the k it gives is the best net gain of all k it weighs."""
    t = [1.0 + 0.01 * i for i in range(15)]
    conv = [verify_module.DEVICE_CONVERT_MS + verify_module.DEVICE_CONVERT_PRODUCTS * x for x in t]
    assert verify_module.choose_k(t, conv, 10, 0.05)[0] == 0
    ks = [verify_module.choose_k(t, conv, n, 0.05)[0] for n in (10**3, 10**4, 10**5, 10**7)]
    assert ks == sorted(ks) and ks[-1] == verify_module.AUTO_MAX and all(k == 0 or k >= 2 for k in ks)
    assert verify_module.choose_k(t, conv, 10**4, 0.02)[0] <= verify_module.choose_k(t, conv, 10**4, 0.08)[0]
    k, cost, gain = verify_module.choose_k(t, conv, 10**4, 0.05)
    nets = {j: (lambda c, g: g - c)(*verify_module.weigh_verify(t[:j], conv[:j], 10**4, 0.05, auto=True))
            for j in range(2, verify_module.AUTO_MAX + 1)}
    assert k == max(nets, key=nets.get) and gain - cost == pytest.approx(nets[k])
    assert verify_module.choose_k([1.0], [0.0], 10**9, 0.05)[0] == 0          # one candidate: nothing to compare
    assert verify_runs(1e-3, auto=True) == verify_module.AUTO_WARMUP + verify_module.AUTO_REPEATS


def test_the_error_read_grows_with_size():
    """tie_tol_at reads the cuda band of the matrix's size, never below the model's own error; the cpu has no
    bands."""
    from pyspmv.ranking.precision import SIZE_TIE_TOL, Precision, tie_tol_at
    p = Precision(0.001, 1.5, "test")
    bands = SIZE_TIE_TOL["cuda"]
    assert [tie_tol_at(p, "cuda", n) for n in (10, 10**5, 10**8)] == [tol for _, tol in bands]
    assert tie_tol_at(Precision(0.5, 1.5, "test"), "cuda", 10) == 0.5 and tie_tol_at(p, "cpu", 10**8) == 0.001


def test_auto_without_n_calls_measures_nothing(fake):
    t = fake({})
    r0 = pyspmv.rank(A, device="cpu")
    r = pyspmv.rank(A, device="cpu", verify="auto")
    assert t.calls == [] and r == r0 and r.verified == ()
    assert "verify='auto': nothing measured: without n_calls" in r.verify_note


def test_auto_times_the_k_its_rule_chooses_with_fewer_runs(fake):
    """With few calls nothing pays: nothing timed, the note gives the best k's numbers; with many, the k of
    choose_k (ranked times, the model's fit for conversions on the CPU) is timed with the auto settings."""
    t = fake({})
    r = pyspmv.rank(A, device="cpu", n_calls=1, verify="auto")
    assert t.calls == [] and "nothing measured: timing the first 2 to" in r.verify_note
    big = 10**9
    r0 = pyspmv.rank(A, device="cpu", n_calls=big)
    usable = [c for c, ms in r0 if np.isfinite(ms)]
    cand = [usable[i] for i in verify_module.auto_candidates(usable)]
    t = fake({c: 3.0 - 0.1 * i for i, c in enumerate(cand)})
    r = pyspmv.rank(A, device="cpu", n_calls=big, verify="auto")
    k = len(t.calls)
    assert 2 <= k <= verify_module.AUTO_MAX and sorted(t.timed) == sorted(cand[:k])
    assert all(c[2] <= verify_module.AUTO_WARMUP and c[3] == verify_module.AUTO_REPEATS for c in t.calls)
    assert ids(r, k) == cand[:k][::-1] and f"k={k}, where the expected gain over the cost is largest" in \
        r.verify_note
    assert ids(r)[k:] == [c for c in ids(r0) if c not in cand[:k]]        # the rest as the model ranked it
    assert dict(r) == dict(r0)                                              # predictions travel with their ids


def test_auto_candidates_take_at_most_a_few_of_one_kernel():
    """verify='auto''s candidates: the ranking's order, at most AUTO_PER_KERNEL configurations of one kernel
    (Config.kernel_id; its parameters apart), at most ``most``."""
    sell = [c.id for c in pyspmv.configs("cuda") if c.id.startswith("pyspmv/sell/")]
    jad = [c.id for c in pyspmv.configs("cuda") if c.id.startswith("pyspmv/jad/")]
    ranked = sell[:6] + jad[:2] + ["cusparse/sell/alg1/c=32", "cusparse/csr/default"] + sell[6:8] + jad[2:5]
    pos = verify_module.auto_candidates(ranked)
    cap = verify_module.AUTO_PER_KERNEL
    assert pos == sorted(pos) and pos[:cap] == list(range(cap))
    assert [ranked[i] for i in pos] == sell[:cap] + jad[:2] + ranked[8:10] + jad[2:2 + cap - 2]
    assert verify_module.auto_candidates(ranked, most=4) == pos[:4]
    assert verify_module.auto_candidates([]) == []


def test_auto_says_when_it_skipped_configurations_of_one_kernel(fake, monkeypatch):
    """With every candidate of one kernel past the cap, the ranking's measured head skips them, and the note
    says so; what it skipped stays in the model's order after what was measured."""
    r0 = pyspmv.rank(A, device="cpu", n_calls=10**9)
    usable = [c for c, ms in r0 if np.isfinite(ms)]
    monkeypatch.setattr(verify_module, "AUTO_PER_KERNEL", 1)
    cand = [usable[i] for i in verify_module.auto_candidates(usable)]
    if cand == usable[:len(cand)]:
        pytest.skip("the CPU ranking of A has no kernel twice in its head")
    fake({c: 1.0 + i for i, c in enumerate(cand)})
    r = pyspmv.rank(A, device="cpu", n_calls=10**9, verify="auto")
    k = len(r.verified)
    assert ids(r, k) == cand[:k] and "(at most 1 of one kernel)" in r.verify_note
    assert ids(r)[k:] == [c for c in ids(r0) if c not in cand[:k]]


def test_auto_with_only_the_pick_usable_measures_nothing(fake, monkeypatch):
    """One configuration can serve the matrix: nothing to compare it with, so nothing is timed, and the note
    says why."""
    t = fake({})
    r0 = pyspmv.rank(A, device="cpu", n_calls=10**9)
    monkeypatch.setattr(verify_module, "AUTO_MAX", 1)
    r = pyspmv.rank(A, device="cpu", n_calls=10**9, verify="auto")
    assert t.calls == [] and r == r0 and "only the pick can serve the matrix" in r.verify_note


@pytest.mark.parametrize("bad", ["Auto", "all", -1, 1.5, True])
def test_verify_refuses_what_is_neither_a_count_nor_auto(bad):
    with pytest.raises((ValueError, TypeError), match="verify"):
        pyspmv.rank(A, device="cpu", verify=bad)


def test_host_matrix_on_the_gpu_is_uploaded_once_and_converted_there(monkeypatch):
    """verify on cuda of a host matrix: uploaded once as CSR (upload_csr), each candidate converted from it by
    prepare_on_device, never benchmark()'s host conversion; a locality-ordered CSR, which the device refuses, made
    on the host (the GPU parts stand in: no GPU here)."""
    B = RANDOM.astype(np.float32)
    uploads, converted, host_made = [], [], []

    class Up:
        dtype = np.dtype(np.float32)

    def upload(M, dtype):
        uploads.append((M.shape, np.dtype(dtype)))
        return Up()

    def prepare(DM, c):
        converted.append(c.id)
        if c.format == "csr" and any(c.format_params):
            raise pyspmv.NotApplicableError("converted on the host, not on the device")
        return c, "F"

    def host_prepare(M, c, dt):
        host_made.append(c.id)
        return c, "H"

    def one(run, c, F, on, convert_ms, warmup, repeats, budget_s, check):
        return {"config": c.id, "median_ms": 1.0, "q25_ms": 1.0, "q75_ms": 1.0, "convert_ms": convert_ms,
                "status": "ok", "note": ""}

    monkeypatch.setattr(verify_module, "upload_csr", upload)
    monkeypatch.setattr(verify_module, "prepare_on_device", prepare)
    monkeypatch.setattr(verify_module, "prepare", host_prepare)
    monkeypatch.setattr(verify_module._DtypeRun, "one", one)
    monkeypatch.setattr(verify_module, "benchmark", lambda *a, **k: pytest.fail("host conversion used"))
    cands = ["pyspmv/ell/bs=128", "pyspmv/csr/adaptive/order=1/bs=256", "pyspmv/csr/scalar/bs=128"]
    rows = verify_module._time_on_device(pyspmv.Matrix(B), None, cands, "float32", 2, 8)
    assert uploads == [(B.shape, np.dtype(np.float32))] and converted == cands
    assert host_made == [cands[1]] and [x["status"] for x in rows] == ["ok"] * 3
