"""pyspmv.solvers' M (preconditioner) against scipy on the CPU, its checks, device='cuda' where no GPU is,
and the GPU solve's Python driver (policies, chunks, callbacks, switch failures) over a stand-in for the
CUDA module that iterates in NumPy, so that it runs everywhere."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import ctypes
import math
import threading
import time
from typing import ClassVar

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from waits import set_on_return

import pyspmv
import pyspmv.solvers as S
from pyspmv.devices import gpu
from pyspmv.solvers import device as D
from pyspmv.solvers import switching

#: the GPU's estimate of a switch's cost, before the stand-in's fixture makes switches free
REAL_SWITCH_COST = D.Plans.switch_cost_s
SOLVERS = {"cg": (S.cg, spla.cg), "bicgstab": (S.bicgstab, spla.bicgstab), "gmres": (S.gmres, spla.gmres)}
RTOL = {"float64": 1e-8, "float32": 1e-4}


def spd(m: int = 20) -> pyspmv.Matrix:
    """Poisson with a varying diagonal, so that Jacobi is not a multiple of the identity."""
    A = pyspmv.generate("poisson2d", m).to_scipy()
    n = A.shape[0]
    return pyspmv.Matrix(A + sp.diags_array(np.linspace(0.0, 6.0, n)))


def unsymmetric(m: int = 20) -> pyspmv.Matrix:
    A = spd(m).to_scipy()
    n = A.shape[0]
    return pyspmv.Matrix(A + 0.7 * (sp.eye_array(n, k=1) - sp.eye_array(n, k=-1)) + 0.2 * sp.eye_array(n, k=7))


def rhs(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(n)


def preconditioners(A: pyspmv.Matrix) -> dict:
    """Each way to give M, with scipy's equivalent: all Jacobi, so that they must agree."""
    inv = 1.0 / A.to_scipy().diagonal()
    lin = spla.LinearOperator(A.shape, matvec=lambda r: inv * np.ravel(r), dtype=np.float64)
    return {"jacobi": ("jacobi", lin), "callable": (lambda r: inv * r, lin), "matrix": (sp.diags_array(inv), lin),
            "linear_operator": (lin, lin)}


# -- M on the CPU against scipy ------------------------------------------------------------------
@pytest.mark.parametrize("how", ["jacobi", "callable", "matrix", "linear_operator"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", list(SOLVERS))
def test_preconditioned_matches_scipy(name, dtype, how):
    ours, ref = SOLVERS[name]
    A = (spd() if name == "cg" else unsymmetric()).astype(dtype)
    b = rhs(A.nrows).astype(dtype)
    M, Ms = preconditioners(A)[how]
    rtol = RTOL[dtype]
    x, info, rec = ours(A, b, rtol=rtol, policy="fixed", M=M)
    xs, infos = ref(A.to_scipy().astype(np.float64), b.astype(np.float64), rtol=rtol, M=Ms)
    assert info == 0 and infos == 0, (info, infos)
    assert x.dtype == np.dtype(dtype)
    Af = A.to_scipy().astype(np.float64)
    assert np.linalg.norm(b - Af @ x) / np.linalg.norm(b) <= rtol * (1.5 if dtype == "float64" else 20)
    assert np.linalg.norm(x - xs) / np.linalg.norm(xs) <= 800 * rtol
    _x, _info, plain = ours(A, b, rtol=rtol, policy="fixed")
    if name != "gmres":                                    # Jacobi helps on this varying diagonal
        assert rec.iterations <= plain.iterations


def test_no_preconditioner_is_unchanged():
    """M=None runs exactly the operations it ran before M existed: the same bits as scipy's CG iterates."""
    A, b = pyspmv.generate("poisson2d", 12), rhs(144)
    ours, theirs = [], []
    S.cg(A, b, rtol=1e-10, maxiter=30, policy="fixed", M=None, callback=lambda x: ours.append(x.copy()))
    spla.cg(A.to_scipy(), b, rtol=1e-10, maxiter=30, callback=lambda x: theirs.append(x.copy()))
    np.testing.assert_allclose(np.array(ours), np.array(theirs), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", list(SOLVERS))
def test_bad_preconditioner(name):
    f = SOLVERS[name][0]
    A, b = spd(5), rhs(25)
    with pytest.raises(ValueError, match="'M' parameter.*'jacobi'.*Got 'ilu'"):
        f(A, b, M="ilu")
    with pytest.raises(TypeError, match="'M' parameter.*Got int"):
        f(A, b, M=3)
    with pytest.raises(ValueError, match="'M' parameter.*shape \\(25, 25\\).*\\(24, 24\\)"):
        f(A, b, M=sp.eye_array(24))
    with pytest.raises(ValueError, match="'M' parameter.*LinearOperator.*\\(3, 3\\)"):
        f(A, b, M=spla.aslinearoperator(np.eye(3)))
    with pytest.raises(ValueError, match="'M' parameter.*M\\(r\\) must return shape \\(25,\\)"):
        f(A, b, M=lambda r: r[:3])
    Z = A.to_scipy().tolil()
    Z[4, 4] = 0
    with pytest.raises(ValueError, match="'M'.*nonzero diagonal.*A\\[4, 4\\]"):
        f(pyspmv.Matrix(Z.tocsr()), b, M="jacobi")


def test_preconditioner_exception_propagates():
    def boom(r):
        raise KeyError("from M")
    with pytest.raises(KeyError, match="from M"):
        S.cg(spd(5), rhs(25), M=boom, policy="fixed")


@pytest.mark.parametrize("name", list(SOLVERS))
def test_cuda_without_a_gpu_says_why(name):
    if gpu.available():
        pytest.skip("a GPU is usable here: device='cuda' runs (tests/test_gpu_solvers.py)")
    with pytest.raises(pyspmv.DeviceUnavailableError, match=f"{name}\\(device='cuda'\\) needs a usable CUDA GPU: .+"):
        SOLVERS[name][0](spd(5), rhs(25), device="cuda")
    with pytest.raises(ValueError, match="'device'.*'cpu' or 'cuda'"):
        SOLVERS[name][0](spd(5), rhs(25), device="gpu")
    with pytest.raises(ValueError, match="'config'.*'cuda' configuration"):
        SOLVERS[name][0](spd(5), rhs(25), device="cuda", config="cpu/csr/rows")


class FakeDeviceVector:
    """Something that says it is a GPU vector (the CUDA array interface), never read."""

    def __init__(self, n):
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": "<f8", "data": (0, False), "version": 3}


@pytest.mark.parametrize("name", list(SOLVERS))
def test_gpu_vectors_need_device_cuda(name):
    A, b = spd(5), rhs(25)
    with pytest.raises(TypeError, match="'b' parameter.*GPU array.*device='cuda'"):
        SOLVERS[name][0](A, FakeDeviceVector(25))
    with pytest.raises(TypeError, match="'x0' parameter.*GPU array.*device='cuda'"):
        SOLVERS[name][0](A, b, x0=FakeDeviceVector(25))


# -- the GPU driver over a NumPy stand-in for pyspmv._cuda ---------------------------------------
class FakePlan:
    """A plan of the stand-in: products by the test's matrix; fails its trial product when asked to."""

    fail_ids: ClassVar[set] = set()
    made: ClassVar[list] = []

    def __init__(self, src, index, slots):
        self.A = FakeCuda.A
        self.closed = False
        self.id = pyspmv.config(index).id if isinstance(index, str) else None
        FakePlan.made.append(self)

    def mv(self, v):
        assert not self.closed, "a closed plan was used"
        return self.A @ v

    def close(self):
        self.closed = True


class FakeKrylov:
    """CG and GMRES as kernels/krylov.cu runs them, one Python generator step an iteration."""

    gate: ClassVar[threading.Event | None] = None

    def __init__(self, method, n, elem_size, restart):
        assert method in (0, 2), "the stand-in does CG and GMRES"
        self.method, self.m = method, restart
        self.dt = np.float32 if elem_size == 4 else np.float64
        self.b, self.x = np.zeros(n, self.dt), np.zeros(n, self.dt)
        self.M = None
        self.closed = False

    def load(self, which, a):
        (self.b if which == 0 else self.x)[:] = a

    def read_x(self, dst):
        dst[:] = self.x

    def set_graphs(self, on):
        return True

    def set_l2(self, on):
        return True

    def set_wake(self, address):
        self.wake = ctypes.c_int.from_address(address) if address else None

    def set_precond(self, M):
        self.M = M

    def _pre(self, v):
        if self.M is None:
            return v
        if isinstance(self.M, np.ndarray):
            return self.M * v
        if isinstance(self.M, FakePlan):
            return self.M.mv(v)
        return self.M(v.copy())

    def _mv(self, v):
        self.products += 1
        return self.plan.mv(v).astype(self.dt)

    def start(self, plan, tol, x_zero):
        self.plan, self.tol = plan, tol
        if x_zero:                                  # as the solver: a zero start is set, not loaded
            self.x[:] = 0
        self.it = self.products = self.cycles = self.state = 0
        self.estimate = math.nan
        self.r = self.b - (0 if x_zero else self._mv(self.x))
        self.residual = float(np.linalg.norm(self.r))
        self.state = 1 if self.residual <= tol else 0
        self.j = 0
        self.gen = self._cg() if self.method == 0 else self._gmres()

    def _cg(self):
        z = self._pre(self.r)
        rho, p = float(self.r @ z), z.copy()
        while True:
            q = self._mv(p)
            alpha = rho / float(p @ q)
            self.x += alpha * p
            self.r -= alpha * q
            z = self._pre(self.r)
            rho, rho_prev = float(self.r @ z), rho
            p = z + rho / rho_prev * p
            self.it += 1
            self.residual = float(np.linalg.norm(self.r))
            if self.residual <= self.tol:
                self.state = 1
            yield

    def _gmres(self):
        n, m = self.b.shape[0], self.m
        while True:
            beta = self.residual
            V = np.zeros((n, m + 1))
            V[:, 0] = self.r / beta
            H = np.zeros((m + 1, m))
            for j in range(m):
                self.j = j
                w = self._mv(self._pre(V[:, j]))
                for _ in range(2):
                    h = V[:, :j + 1].T @ w
                    w = w - V[:, :j + 1] @ h
                    H[:j + 1, j] += h
                H[j + 1, j] = np.linalg.norm(w)
                V[:, j + 1] = w / H[j + 1, j]
                e = np.zeros(j + 2)
                e[0] = beta
                y = np.linalg.lstsq(H[:j + 2, :j + 1], e, rcond=None)[0]
                self.estimate = float(np.linalg.norm(e - H[:j + 2, :j + 1] @ y))
                self.it += 1
                if self.estimate <= self.tol or j + 1 == m:
                    break
                yield
            self.x += self._pre(V[:, :j + 1] @ y).astype(self.dt)
            self.r = self.b - self._mv(self.x)
            self.residual = float(np.linalg.norm(self.r))
            self.cycles += 1
            self.j = 0
            if self.residual <= self.tol:
                self.state = 1
            yield

    def status(self):
        return (self.it, self.products, self.cycles, self.state, self.residual, self.estimate)

    def iterate(self, plan, max_iters, max_cycles):
        gate, FakeKrylov.gate = FakeKrylov.gate, None
        if gate is not None and gate.wait(5):   # the first chunk waits for the selection to land
            time.sleep(0.05)                     # and for its future to say so
        self.plan = plan
        for _ in range(max_iters):
            if self.state != 0 or (self.method == 2 and self.j == 0 and self.cycles >= max_cycles):
                break
            if getattr(self, "wake", None) is not None and self.wake.value:
                break
            next(self.gen)
        return self.status()

    def prepare(self, plan):
        if plan.closed or plan.id in FakePlan.fail_ids:
            raise RuntimeError("trial product: an injected failure")
        plan.mv(self.x)

    def close(self):
        self.closed = True


class FakeMatrix:
    """A matrix on the stand-in's device: uploaded once as CSR, converted there (recorded); the plans multiply
    by the test's matrix."""

    converted: ClassVar[list] = []
    uploads: ClassVar[list] = []

    def __init__(self, state=None):
        self.format = "csr" if state is None else state.format_name

    def convert(self, fmt, p0, p1, max_fill):
        FakeMatrix.converted.append(fmt)
        return FakeMatrix()


def fake_upload_csr(nrows, ncols, indptr, indices, values):
    """The stand-in's upload of a host CSR from its own arrays (recorded by their dtype)."""
    FakeMatrix.uploads.append(values.dtype.name)
    return FakeMatrix()


class FakeCuda:
    A = None
    Plan = FakePlan
    Krylov = FakeKrylov
    Matrix = FakeMatrix
    upload_csr = staticmethod(fake_upload_csr)

    @staticmethod
    def device_count():
        return 1

    @staticmethod
    def info():
        """An H200's facts (the default model the solve ranks with is chosen by them, run alone or not)."""
        return {"name": "NVIDIA H200", "sm_count": 132, "mem_clock_khz": 2619000, "mem_bus_bits": 6144,
                "driver_version": 13000, "runtime_version": 13000, "cusparse_version": 12603}


@pytest.fixture
def fake_gpu(monkeypatch):
    """pyspmv's GPU module replaced by the NumPy stand-in (plans keep their configuration id)."""
    monkeypatch.setattr(gpu, "cuda", lambda: FakeCuda)
    real_init = gpu.Plan.__init__

    def init(self, F, cfg):
        real_init(self, F, cfg)
        self._plan.id = cfg.id
    monkeypatch.setattr(gpu.Plan, "__init__", init)
    FakePlan.made, FakePlan.fail_ids, FakeMatrix.converted, FakeMatrix.uploads = [], set(), [], []
    FakeKrylov.gate = None
    # the stand-in's switches cost nothing, so these small solves switch (the real cost's gate: below)
    monkeypatch.setattr(D.Plans, "switch_cost_s", lambda self, pick_ms: 0.0)
    monkeypatch.setattr(D, "PROBE_MIN_S", 0.0)      # probes of probe_iters iterations (the stand-in's are slow)
    monkeypatch.setattr(D, "FIRST_LOOK_S", 0.0)     # first looks of probe_iters too
    return FakeCuda


def selection_lands_first(monkeypatch):
    """Make the solve's first chunk wait until the helper thread's selection has returned."""
    FakeKrylov.gate = set_on_return(monkeypatch, D, "select_device")


def fake_rank(ids):
    def rank(A, model=None, device="cpu", dtype="float64", n_calls=None, deterministic=False, estimate=None):
        assert device == "cuda"
        return [(c, 0.01 * (k + 1)) for k, c in enumerate(ids)]
    return rank


def test_driver_converts_the_pick_on_the_device(fake_gpu, monkeypatch):
    """The matrix goes up once as CSR; the pick is converted there, not on the host and uploaded again."""
    A = spd()
    fake_gpu.A = A.to_scipy()
    monkeypatch.setattr(switching, "rank", fake_rank(["pyspmv/ell/bs=128", "cusparse/csr/default"]))
    selection_lands_first(monkeypatch)
    _x, info, rec = S.cg(A, rhs(A.nrows), rtol=1e-8, device="cuda", policy="async", select_min_nnz=0,
                         select_patience=0, probe_iters=0)
    assert info == 0 and rec.schedule[-1][1] == "pyspmv/ell/bs=128", rec
    assert FakeMatrix.converted == ["ell"] and FakeMatrix.uploads == ["float64"]


def test_device_selection_ranks_by_the_product(fake_gpu, monkeypatch):
    """A GPU solve ranks by the time a product (``rank(n_calls=None)``): it converts its pick on the GPU, a cost the
    gate weighs, and its start's conversion is paid. Ranked by the call (``n_calls``, the model's host conversion
    added), the start came behind a pick with a slower product (on the H200: ``polblogs_x26kron_r4_lap``)."""
    A = spd()
    fake_gpu.A = A.to_scipy()
    asked = []

    def rank(A, model=None, device="cpu", dtype="float64", n_calls=None, deterministic=False, estimate=None):
        asked.append(n_calls)
        if n_calls is None:
            return [("cusparse/csr/default", 0.024), ("pyspmv/jad/bs=64", 0.039)]
        return [("pyspmv/jad/bs=64", 0.114), ("cusparse/csr/default", 0.157)]
    monkeypatch.setattr(switching, "rank", rank)
    selection_lands_first(monkeypatch)
    _x, info, rec = S.cg(A, rhs(A.nrows), rtol=1e-8, device="cuda", policy="async", select_min_nnz=0,
                         select_patience=0)
    assert info == 0 and asked == [None], asked
    assert rec.schedule == [(0, "cusparse/csr/default")] and FakeMatrix.converted == [], rec
    assert any("ranking keeps cusparse/csr/default" in e for _, e in rec.events), rec.events


def test_driver_stays_where_a_switch_cannot_pay(fake_gpu, monkeypatch):
    """With the GPU's estimated switch cost, a solve of a few dozen iterations is not worth a conversion: the
    record says so, and nothing is converted."""
    monkeypatch.setattr(D.Plans, "switch_cost_s", REAL_SWITCH_COST)
    A = spd()
    fake_gpu.A = A.to_scipy()
    monkeypatch.setattr(switching, "rank", fake_rank(["pyspmv/ell/bs=128", "cusparse/csr/default"]))
    selection_lands_first(monkeypatch)
    _x, info, rec = S.cg(A, rhs(A.nrows), rtol=1e-8, device="cuda", policy="async", select_min_nnz=0,
                         select_patience=0)
    assert info == 0 and rec.schedule == [(0, "cusparse/csr/default")], rec
    assert FakeMatrix.converted == []
    held = [e for _, e in rec.events if e.startswith("ranking picks pyspmv/ell/bs=128; staying on")]
    assert held and "not 2x the switch's" in held[0], rec.events


@pytest.mark.parametrize("M", [None, "jacobi", "callable", "matrix"])
@pytest.mark.parametrize("policy", ["fixed", "serial", "async", "online"])
@pytest.mark.parametrize("name", ["cg", "gmres"])
def test_driver_solves(fake_gpu, monkeypatch, name, policy, M):
    A = spd() if name == "cg" else unsymmetric()
    fake_gpu.A = A.to_scipy()
    monkeypatch.setattr(switching, "rank", fake_rank(["pyspmv/csr/vector/tpv=4/bs=128", "cusparse/csr/alg2",
                                                      "cusparse/csr/default"]))
    if policy in ("async", "online"):
        selection_lands_first(monkeypatch)
    b = rhs(A.nrows)
    Mp = {"callable": preconditioners(A)["callable"][0], "matrix": preconditioners(A)["matrix"][0]}.get(M, M)
    x, info, rec = SOLVERS[name][0](A, b, rtol=1e-8, device="cuda", policy=policy, M=Mp, select_min_nnz=0,
                                    select_patience=0, probe_iters=2)
    assert info == 0, rec
    assert np.linalg.norm(b - A.to_scipy() @ x) <= 1.5e-8 * np.linalg.norm(b)
    assert rec.device == "cuda" and rec.schedule[0][0] == 0 and rec.iterations > 0
    assert rec.iteration_times.shape == (rec.iterations,)
    if policy == "fixed":
        assert rec.schedule == [(0, "cusparse/csr/default")]
    if policy == "online":
        assert len(rec.probes) == 3, rec
    assert all(p.closed for p in FakePlan.made), "a plan outlived the solve"


def test_driver_info_and_callbacks(fake_gpu):
    A = spd()
    fake_gpu.A = A.to_scipy()
    b = rhs(A.nrows)
    seen = []
    _x, info, rec = S.cg(A, b, rtol=1e-12, maxiter=3, device="cuda", policy="fixed",
                         callback=lambda x: seen.append(x.copy()))
    assert info == 3 and rec.iterations == 3 and len(seen) == 3
    _x, info, rec = S.gmres(A, b, rtol=1e-12, restart=5, maxiter=2, device="cuda", policy="fixed")
    assert info == 2 and rec.iterations == 10
    pr, xs = [], []
    S.gmres(A, b, rtol=1e-6, restart=5, device="cuda", policy="fixed", callback=pr.append)
    _x, _info, rec = S.gmres(A, b, rtol=1e-6, restart=5, device="cuda", policy="fixed", callback=xs.append,
                             callback_type="x")
    assert len(pr) == rec.iterations and len(xs) == math.ceil(rec.iterations / 5)
    x, info, rec = S.cg(A, np.zeros(A.nrows), device="cuda", policy="fixed")
    assert info == 0 and rec.iterations == 0 and not x.any()


@pytest.mark.parametrize("probe_iters", [0, 2])
def test_driver_switch_failure_stays(fake_gpu, monkeypatch, probe_iters):
    A = spd()
    fake_gpu.A = A.to_scipy()
    pick = "pyspmv/csr/vector/tpv=4/bs=128"
    monkeypatch.setattr(switching, "rank", fake_rank([pick]))
    FakePlan.fail_ids = {pick}
    selection_lands_first(monkeypatch)
    _x, info, rec = S.cg(A, rhs(A.nrows), rtol=1e-8, device="cuda", policy="async", select_min_nnz=0,
                         select_patience=0, probe_iters=probe_iters)
    assert info == 0
    assert rec.config == "cusparse/csr/default"
    assert any(f"switching to {pick} failed" in e and "staying on cusparse/csr/default" in e for _, e in rec.events), \
        rec.events


def test_driver_serial_trial_failure_runs_the_start(fake_gpu, monkeypatch):
    A = spd()
    fake_gpu.A = A.to_scipy()
    pick = "pyspmv/csr/vector/tpv=4/bs=128"
    monkeypatch.setattr(switching, "rank", fake_rank([pick]))
    FakePlan.fail_ids = {pick}
    _x, info, rec = S.cg(A, rhs(A.nrows), rtol=1e-8, device="cuda", policy="serial")
    assert info == 0 and rec.schedule == [(0, "cusparse/csr/default")], rec
    assert any(f"switching to {pick} failed" in e and "running cusparse/csr/default" in e for _, e in rec.events)


def test_driver_ranking_failure_stays(fake_gpu, monkeypatch):
    A = spd()
    fake_gpu.A = A.to_scipy()

    def rank(*args, **kwargs):
        raise MemoryError("no room to rank")
    monkeypatch.setattr(switching, "rank", rank)
    selection_lands_first(monkeypatch)
    _x, info, rec = S.cg(A, rhs(A.nrows), rtol=1e-8, device="cuda", policy="async", select_min_nnz=0,
                         select_patience=0)
    assert info == 0 and rec.config == "cusparse/csr/default"
    assert any("ranking failed (MemoryError: no room to rank)" in e for _, e in rec.events), rec.events


def test_driver_does_not_wait_for_a_late_selection(fake_gpu, monkeypatch):
    """A GPU solve that ends while its selection still ranks returns at once; the plans the selection
    makes afterwards are freed on its thread."""
    A = spd()
    fake_gpu.A = A.to_scipy()
    release, returned, ranking = threading.Event(), threading.Event(), threading.Event()
    pick = "pyspmv/csr/vector/tpv=4/bs=128"

    def rank(*args, **kwargs):
        ranking.set()
        release.wait(10)
        return [(pick, 0.01)]
    monkeypatch.setattr(switching, "rank", rank)
    # the selection starts once the iterations run (Plans.iterating), and one whose solve ended first never ranks:
    # the stand-in's iterations (which keep the GIL) wait until it ranks, so that the solve ends while it does
    monkeypatch.setattr(FakeKrylov, "gate", ranking)
    real = D.select_device

    def select_device(*args, **kwargs):
        try:
            return real(*args, **kwargs)
        finally:
            returned.set()
    monkeypatch.setattr(D, "select_device", select_device)
    t = time.perf_counter()
    _x, info, rec = S.cg(A, rhs(A.nrows), rtol=1e-8, device="cuda", policy="async", select_min_nnz=0)
    assert info == 0 and time.perf_counter() - t < 5
    assert any("left to end on its thread" in e for _, e in rec.events), rec.events
    release.set()
    assert returned.wait(10)
    time.sleep(0.1)
    assert all(p.closed for p in FakePlan.made), "a plan of the late selection was not freed"
