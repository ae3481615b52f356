"""pyspmv.solvers with device='cuda' (kernels/krylov.cu): every method, policy, dtype and preconditioner
against scipy's results to tolerance, info codes, callbacks, and failures at the switch. Skipped without a
usable GPU (marker gpu)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import math
import time

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from waits import set_on_return

import pyspmv
import pyspmv.solvers as S
from pyspmv.solvers import device as D
from pyspmv.solvers import switching
from pyspmv.solvers.switching import Selection

pytestmark = pytest.mark.gpu

SOLVERS = {"cg": (S.cg, spla.cg), "bicgstab": (S.bicgstab, spla.bicgstab), "gmres": (S.gmres, spla.gmres)}
RTOL = {"float64": 1e-8, "float32": 1e-4}


def spd(m: int = 20) -> pyspmv.Matrix:
    """A 2-D Poisson matrix plus a varying diagonal (Jacobi then differs from a scaled identity)."""
    A = pyspmv.generate("poisson2d", m).to_scipy()
    return pyspmv.Matrix(A + sp.diags_array(np.linspace(0.0, 6.0, A.shape[0])))


def unsymmetric(m: int = 20) -> pyspmv.Matrix:
    A = spd(m).to_scipy()
    n = A.shape[0]
    return pyspmv.Matrix(A + 0.7 * (sp.eye_array(n, k=1) - sp.eye_array(n, k=-1)) + 0.2 * sp.eye_array(n, k=7))


def rhs(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(n)


def preconditioner(how: str | None, A: pyspmv.Matrix):
    """(ours, scipy's): none, Jacobi by name, or Jacobi as a callable."""
    if how is None:
        return None, None
    inv = 1.0 / A.to_scipy().diagonal()
    lin = spla.LinearOperator(A.shape, matvec=lambda r: inv * np.ravel(r), dtype=np.float64)
    return ("jacobi" if how == "jacobi" else (lambda r: inv * r)), lin


def check_solution(what, A, b, x, xs, rtol, dtype, rec):
    Af = A.to_scipy().astype(np.float64)
    res = np.linalg.norm(b.astype(np.float64) - Af @ x) / np.linalg.norm(b)
    assert res <= rtol * (1.5 if dtype == "float64" else 20), f"{what}: relative residual {res:.3g}\n{rec!r}"
    err = np.linalg.norm(x - xs) / np.linalg.norm(xs)
    assert err <= 800 * rtol, f"{what}: differs from scipy's solution by {err:.3g}\n{rec!r}"


@pytest.mark.parametrize("M", [None, "jacobi", "callable"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("policy", list(S.POLICIES))
@pytest.mark.parametrize("name", list(SOLVERS))
def test_matches_scipy(name, policy, dtype, M):
    ours, ref = SOLVERS[name]
    A = (spd() if name == "cg" else unsymmetric()).astype(dtype)
    b = rhs(A.nrows).astype(dtype)
    rtol = RTOL[dtype]
    Mo, Ms = preconditioner(M, A)
    what = f"{name}(device='cuda', policy={policy!r}, {dtype}, M={M})"
    x, info, rec = ours(A, b, rtol=rtol, policy=policy, device="cuda", M=Mo, select_min_nnz=0, select_patience=0)
    kw = {"callback_type": "x"} if name == "gmres" else {}
    xs, infos = ref(A.to_scipy().astype(np.float64), b.astype(np.float64), rtol=rtol, M=Ms, **kw)
    assert info == 0 and infos == 0, f"{what}: info {info}, scipy's {infos}\n{rec!r}"
    assert isinstance(x, np.ndarray) and x.dtype == np.dtype(dtype) and x.shape == b.shape, what
    check_solution(what, A, b, x, xs, rtol, dtype, rec)
    assert rec.device == "cuda" and rec.info == 0 and rec.iterations > 0, rec
    assert rec.schedule[0][0] == 0 and all(c.split("/")[0] in ("cusparse", "pyspmv") for _, c in rec.schedule), rec
    assert rec.products >= rec.iterations, rec
    if policy == "fixed":
        assert rec.schedule == [(0, "cusparse/csr/default")], rec


@pytest.mark.parametrize("switch", ["USE_GRAPHS", "USE_L2"])
@pytest.mark.parametrize("M", [None, "jacobi", "matrix"])
@pytest.mark.parametrize("name", ["cg", "bicgstab", "gmres"])
def test_graphs_launches_and_the_l2_window_agree(monkeypatch, name, M, switch):
    """An iteration launched as a CUDA graph computes what its kernels launched one by one compute, and the
    vectors kept in L2 (a persisting window) what the default cache policy gives: the same bits with a
    deterministic product (GMRES: neither a graph nor a window, the same path twice)."""
    A = spd() if name == "cg" else unsymmetric()
    b = rhs(A.nrows)
    if M == "matrix":
        M = sp.diags_array(1.0 / A.to_scipy().diagonal())
    out = []
    for on in (True, False):
        monkeypatch.setattr(D, switch, on)
        x, info, rec = SOLVERS[name][0](A, b, rtol=1e-10, device="cuda", policy="fixed", config="cusparse/csr/alg2",
                                        M=M)
        assert info == 0, (switch, on, rec)
        out.append((x, rec.iterations))
    if isinstance(M, str) or M is None:
        assert out[0][1] == out[1][1]
        np.testing.assert_array_equal(out[0][0], out[1][0])
    else:               # M's product is cuSPARSE's default algorithm, which need not repeat its bits
        assert abs(out[0][1] - out[1][1]) <= 1
        np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-9, atol=1e-12)


def test_the_l2_window_is_on_by_default_and_says_its_last_setting():
    from pyspmv.devices import gpu
    K = gpu.cuda().Krylov(D.METHODS["cg"], 1000, 8, 1)
    try:
        assert K.set_l2(False) is True and K.set_l2(True) is False and K.set_l2(True) is True
    finally:
        K.close()


@pytest.mark.parametrize("name", ["cg", "bicgstab", "gmres"])
def test_a_zero_start_is_set_on_the_device_whatever_x_holds(name):
    """start(x_zero=True) sets x to zero itself (a solve with no x0 uploads none): an x loaded before, all ones,
    changes nothing, where a start from it would leave r = b inconsistent with x (fails where the zero is not set)."""
    from pyspmv.devices import gpu
    A = spd() if name == "cg" else unsymmetric()
    b, n = rhs(A.nrows), A.nrows
    K = gpu.cuda().Krylov(D.METHODS[name], n, 8, 10 if name == "gmres" else 1)
    plan = gpu.Plan(pyspmv.convert(A, "csr"), pyspmv.config("cusparse/csr/alg2"))
    try:
        K.load(0, b)
        K.load(1, np.ones(n))
        K.start(plan._plan, 1e-10 * np.linalg.norm(b), True)
        state = K.iterate(plan._plan, 2000, 200)[3]
        x = np.empty(n)
        K.read_x(x)
    finally:
        K.close()
        plan.close()
    assert state == D.CONVERGED, state
    np.testing.assert_allclose(A.to_scipy() @ x, b, rtol=0, atol=1e-8 * np.linalg.norm(b))


@pytest.mark.parametrize("name", ["cg", "bicgstab", "gmres"])
def test_a_solve_lets_its_plans_matrix_pass_through_the_l2(name):
    """A SELL plan whose matrix fits the L2 may keep its streams there for the next product; the solver sets
    them evict-first for the products it runs, the preconditioner's too (its vectors are what the L2 should hold:
    kernels/krylov.cu's take_plan)."""
    from pyspmv.devices import gpu
    A = spd() if name == "cg" else unsymmetric()
    b, n = rhs(A.nrows), A.nrows
    K = gpu.cuda().Krylov(D.METHODS[name], n, 8, 10 if name == "gmres" else 1)
    cfg = pyspmv.config("pyspmv/sell/c=16/sigma=256/bs=128")     # SELL's kernel keeps what fits
    plan, pre = (gpu.Plan(pyspmv.convert(A, cfg.format, **cfg.format_kwargs), cfg) for _ in range(2))
    try:
        assert plan._plan.keeps_matrix and pre._plan.keeps_matrix
        K.set_precond(pre._plan)
        assert not pre._plan.keeps_matrix
        K.load(0, b)
        K.start(plan._plan, 1e-10 * np.linalg.norm(b), True)
        assert not plan._plan.keeps_matrix
    finally:
        K.close()
        plan.close()
        pre.close()


def test_a_partial_l2_window_is_never_set():
    """Where CG's four vectors are larger than the device's largest L2 set-aside, the solve sets no window (a
    partial one slowed the H200's iterations up to 1.55x: kernels/krylov_l2.cu) and leaves the set-aside as it was;
    where they fit, it raises it (test_a_solve_gives_back_the_l2_set_aside_it_raised)."""
    cp = pytest.importorskip("cupy")
    limit, most = 0x06, cp.cuda.runtime.deviceGetAttribute(108, 0)   # the set-aside now, its largest
    if most == 0:
        pytest.skip("this GPU has no L2 set-aside")
    before = cp.cuda.runtime.deviceGetLimit(limit)
    n = most // (4 * 8) + 4096                    # four float64 vectors just past the largest set-aside
    A = pyspmv.Matrix(sp.diags_array(np.linspace(1.0, 2.0, n)).tocsr())
    seen = []
    _x, info, _rec = S.cg(A, np.ones(n), rtol=1e-10, maxiter=50, device="cuda", policy="fixed",
                          callback=lambda xk: seen.append(cp.cuda.runtime.deviceGetLimit(limit)))
    assert info == 0 and seen and max(seen) == before, (before, seen[:3])


def test_a_solve_gives_back_the_l2_set_aside_it_raised():
    """The solver raises the device's persisting-L2 limit to what its window needs while it lives, and sets it back
    when it is freed (read through CuPy's runtime: cudaLimitPersistingL2CacheSize)."""
    cp = pytest.importorskip("cupy")
    limit = 0x06                                  # cudaLimitPersistingL2CacheSize
    if cp.cuda.runtime.deviceGetAttribute(108, 0) == 0:   # cudaDevAttrMaxPersistingL2CacheSize
        pytest.skip("this GPU has no L2 set-aside")
    before = cp.cuda.runtime.deviceGetLimit(limit)
    seen = []
    A = spd(40)
    _x, info, _rec = S.cg(A, rhs(A.nrows), rtol=1e-10, device="cuda", policy="fixed",
                          callback=lambda xk: seen.append(cp.cuda.runtime.deviceGetLimit(limit)))
    assert info == 0 and seen and max(seen) >= min(4 * 8 * A.nrows, cp.cuda.runtime.deviceGetAttribute(108, 0))
    assert cp.cuda.runtime.deviceGetLimit(limit) == before


def test_iterations_follow_the_cpu():
    """Same recurrence, other rounding: the GPU's CG, BiCGSTAB and GMRES take about the CPU's iterations."""
    for name in SOLVERS:
        A = spd() if name == "cg" else unsymmetric()
        b = rhs(A.nrows)
        _x, _i, cpu = SOLVERS[name][0](A, b, rtol=1e-8, policy="fixed")
        _x, _i, dev = SOLVERS[name][0](A, b, rtol=1e-8, policy="fixed", device="cuda")
        assert abs(dev.iterations - cpu.iterations) <= max(2, cpu.iterations // 10), (name, cpu, dev)


def test_cg_iterates_follow_scipy():
    A, b = pyspmv.generate("poisson2d", 12), rhs(144)
    ours, theirs = [], []
    S.cg(A, b, rtol=1e-10, maxiter=30, policy="fixed", device="cuda", callback=lambda x: ours.append(x.copy()))
    spla.cg(A.to_scipy(), b, rtol=1e-10, maxiter=30, callback=lambda x: theirs.append(x.copy()))
    assert len(ours) == len(theirs)
    np.testing.assert_allclose(np.array(ours), np.array(theirs), rtol=1e-7, atol=1e-10)


def test_not_converged_returns_iterations():
    A, b = spd(), rhs(400)
    for f in (S.cg, S.bicgstab):
        _x, info, rec = f(A, b, rtol=1e-12, maxiter=3, policy="fixed", device="cuda")
        assert info == 3 and rec.iterations == 3, rec
    _x, info, rec = S.gmres(A, b, rtol=1e-12, restart=5, maxiter=2, policy="fixed", device="cuda")
    assert info == 2 and rec.iterations == 10, rec


def test_zero_rhs_and_x0():
    A = spd(10)
    for name in SOLVERS:
        x, info, rec = SOLVERS[name][0](A, np.zeros(100), policy="fixed", device="cuda")
        assert info == 0 and not x.any() and rec.iterations == 0, (name, rec)
    b = rhs(100)
    x1, _, _ = S.cg(A, b, rtol=1e-10, policy="fixed")
    x, info, rec = S.bicgstab(A, b, x0=x1, rtol=1e-6, policy="fixed", device="cuda")
    assert info == 0 and rec.iterations <= 1, rec


def test_callbacks():
    A, b = unsymmetric(), rhs(400)
    for name in ("cg", "bicgstab"):
        seen: list = []
        _x, info, rec = SOLVERS[name][0](spd() if name == "cg" else A, b, rtol=1e-8, device="cuda", policy="fixed",
                                         callback=lambda x, seen=seen: seen.append(x.copy()))
        assert info == 0 and len(seen) == rec.iterations, (name, len(seen), rec)
    pr, xs = [], []
    _x, _i, rec = S.gmres(A, b, rtol=1e-8, restart=10, device="cuda", policy="fixed", callback=pr.append)
    assert len(pr) == rec.iterations, (len(pr), rec)
    _x, _i, rec = S.gmres(A, b, rtol=1e-8, restart=10, device="cuda", policy="fixed", callback=xs.append,
                          callback_type="x")
    assert len(xs) == math.ceil(rec.iterations / 10), (len(xs), rec)


@pytest.mark.parametrize("name", list(SOLVERS))
def test_matrix_preconditioner_runs_on_the_device(name):
    """M as a matrix runs as a device product: the same answer as M='jacobi'."""
    A = spd() if name == "cg" else unsymmetric()
    b = rhs(A.nrows)
    inv = sp.diags_array(1.0 / A.to_scipy().diagonal())
    xj, ij, rj = SOLVERS[name][0](A, b, rtol=1e-10, device="cuda", policy="fixed", M="jacobi")
    xm, im, rm = SOLVERS[name][0](A, b, rtol=1e-10, device="cuda", policy="fixed", M=inv)
    assert ij == im == 0 and abs(rj.iterations - rm.iterations) <= 1, (rj, rm)
    np.testing.assert_allclose(xm, xj, rtol=1e-7, atol=1e-9)


def test_bigger_matrix_all_policies():
    """A matrix past select_min_nnz, the default patience: the selection runs beside the GPU's iterations."""
    A = pyspmv.generate("poisson2d", 160)               # 25,600 rows, 127k entries
    b = rhs(A.nrows)
    for policy in S.POLICIES:
        x, info, rec = S.cg(A, b, rtol=1e-6, device="cuda", policy=policy)
        assert info == 0, rec
        assert np.linalg.norm(b - A.to_scipy() @ x) <= 1.5e-6 * np.linalg.norm(b), rec


def wait_for_selection(monkeypatch):
    """A callback (chunks of one iteration) that holds the first iteration until the helper thread's
    selection has returned, so that it lands inside the solve however fast the GPU is."""
    done = set_on_return(monkeypatch, D, "select_device")
    slept = []

    def cb(*args):
        if not slept and done.wait(10):
            slept.append(time.sleep(0.05))
    return cb


def fake_rank(ids):
    def rank(A, model=None, device="cpu", dtype="float64", n_calls=None, deterministic=False, estimate=None):
        return [(c, 0.01 * (k + 1)) for k, c in enumerate(ids)]
    return rank


def test_online_probes_and_keeps_the_fastest(monkeypatch):
    ids = ["pyspmv/csr/vector/tpv=4/bs=128", "cusparse/csr/alg2", "pyspmv/ell/bs=256"]
    monkeypatch.setattr(switching, "rank", fake_rank(ids))
    monkeypatch.setattr(D, "PROBE_MIN_S", 0.0)      # probes of probe_iters: all four within this short solve
    monkeypatch.setattr(D, "FIRST_LOOK_S", 0.0)     # first looks of probe_iters too
    A, b = spd(), rhs(400)
    _x, info, rec = S.cg(A, b, rtol=1e-10, device="cuda", policy="online", select_min_nnz=0, select_patience=0,
                         probe_iters=2, callback=wait_for_selection(monkeypatch))
    assert info == 0, rec
    assert set(rec.probes) <= set(ids) | {"cusparse/csr/default"} and len(rec.probes) >= 2, rec
    best = min(rec.probes, key=rec.probes.__getitem__)
    # the fastest is kept, or the last probed (the one running) where the fastest beat it by no more than the noise
    # or by too little to repay a switch, said in the record
    assert rec.config == best or any(f"kept {rec.config} (" in e for _, e in rec.events), rec


def test_a_failed_switch_stays_and_says_so(monkeypatch):
    """A candidate whose trial product fails (here: a closed plan) leaves the solve where it is."""
    A, b = spd(), rhs(400)
    pick = pyspmv.config("cusparse/csr/alg2")

    def select_device(M, dtype, model, k, current, cancel, gate=None, csr=None, tables=False, tol=0.0):
        p = D.prepare(M, pick, dtype, csr)
        p.plan.close()
        return Selection([(pick.id, 0.01)], candidates=[p])
    monkeypatch.setattr(D, "select_device", select_device)
    for probe_iters in (0, 3):
        _x, info, rec = S.cg(A, b, rtol=1e-8, device="cuda", policy="async", select_min_nnz=0, select_patience=0,
                             probe_iters=probe_iters, callback=wait_for_selection(monkeypatch))
        assert info == 0 and rec.config == "cusparse/csr/default", rec
        assert any(f"switching to {pick.id} failed" in e and "staying on cusparse/csr/default" in e
                   for _, e in rec.events), rec.events


def test_ranking_and_conversion_failures_are_recorded(monkeypatch):
    A, b = spd(), rhs(400)

    def rank(*args, **kwargs):
        raise MemoryError("no room to rank")
    monkeypatch.setattr(switching, "rank", rank)
    _x, info, rec = S.bicgstab(unsymmetric(), b, rtol=1e-8, device="cuda", policy="async", select_min_nnz=0,
                               select_patience=0)
    assert info == 0 and rec.config == "cusparse/csr/default", rec
    assert any("ranking failed (MemoryError: no room to rank)" in e for _, e in rec.events), rec.events
    monkeypatch.setattr(switching, "rank", fake_rank(["pyspmv/dia/bs=256"]))
    real = D.prepare_on_device

    def no_room_for_dia(DM, cfg):      # the start (CSR) is still made
        if pyspmv.config(cfg).format == "dia":
            raise MemoryError("no room")
        return real(DM, cfg)
    monkeypatch.setattr(D, "prepare_on_device", no_room_for_dia)
    _x, info, rec = S.cg(A, b, rtol=1e-8, device="cuda", policy="serial")
    assert info == 0 and rec.config == "cusparse/csr/default", rec
    assert any("converting to pyspmv/dia/bs=256 failed (MemoryError: no room)" in e for _, e in rec.events), rec


def test_preconditioner_exception_propagates():
    def boom(r):
        raise KeyError("from M")
    for name in SOLVERS:
        with pytest.raises(KeyError, match="from M"):
            SOLVERS[name][0](spd(5), rhs(25), M=boom, device="cuda", policy="fixed")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", list(SOLVERS))
def test_cupy_vectors_in_place(name, dtype):
    """b and x0 as CuPy arrays: read in place, x a new CuPy array, x0 untouched, the same answer as NumPy's."""
    cp = pytest.importorskip("cupy")
    A = (spd() if name == "cg" else unsymmetric()).astype(dtype)
    b = rhs(A.nrows).astype(dtype)
    x_np, info_np, _ = SOLVERS[name][0](A, b, rtol=RTOL[dtype], device="cuda", policy="fixed")
    bd, x0 = cp.asarray(b), cp.zeros(A.nrows, dtype=dtype)
    seen = []
    x, info, rec = SOLVERS[name][0](A, bd, x0=x0, rtol=RTOL[dtype], device="cuda", policy="fixed",
                                    callback=(lambda xk: seen.append(type(xk))) if name != "gmres" else None)
    assert isinstance(x, cp.ndarray) and x.dtype == np.dtype(dtype) and x.shape == (A.nrows,), type(x)
    assert info == info_np == 0, rec
    assert not x0.any(), "x0 was written"
    np.testing.assert_allclose(cp.asnumpy(x), x_np, rtol=50 * RTOL[dtype], atol=50 * RTOL[dtype])
    assert all(t is cp.ndarray for t in seen), seen
    with pytest.raises(TypeError, match="'b'"):
        SOLVERS[name][0](A, cp.asarray(b, dtype=np.float16), device="cuda")
    with pytest.raises(ValueError, match="'x0'"):
        SOLVERS[name][0](A, bd, x0=cp.zeros(3, dtype=dtype), device="cuda")
    with pytest.raises(ValueError, match="'b'"):
        SOLVERS[name][0](A, bd[:-1], device="cuda")
    with pytest.raises(ValueError, match="'b'.*(stride|contiguous)"):
        SOLVERS[name][0](A, cp.repeat(bd, 2)[::2], device="cuda")
    with pytest.raises(TypeError, match="'b'.*GPU array.*device='cuda'"):
        SOLVERS[name][0](A, bd)


def test_torch_vectors_in_place():
    torch = pytest.importorskip("torch")
    A = spd()
    b = rhs(A.nrows)
    bt = torch.tensor(b, device="cuda")
    x, info, rec = S.cg(A, bt, rtol=1e-8, device="cuda", policy="async", select_min_nnz=0, select_patience=0)
    assert isinstance(x, torch.Tensor) and x.is_cuda and x.dtype == torch.float64, type(x)
    assert info == 0, rec
    xs, _ = spla.cg(A.to_scipy(), b, rtol=1e-8)
    np.testing.assert_allclose(x.cpu().numpy(), xs, rtol=1e-5, atol=1e-6)


#: CG configurations whose product makes p . q in its own pass (kernels/dot.cuh), and two whose dot is a pass of its
#: own (ELL: no fused variant; cuSPARSE).
FUSED = ("pyspmv/jad/bs=256", "pyspmv/csr/scalar/bs=128", "pyspmv/csr/vector/tpv=4/bs=64",
         "pyspmv/csr/vector/tpv=32/bs=1024")
SEPARATE = ("pyspmv/ell/bs=128", "cusparse/csr/default")


@pytest.mark.parametrize("M", [None, "jacobi"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cg_with_the_dot_in_the_product_follows_the_separate_pass(dtype, M):
    """p . q summed in the product's launch (many blocks: 3,600 rows) gives the iterations and the solution of the
    dot made by a reduction of its own, and scipy's to tolerance."""
    A = spd(60)
    b = rhs(A.nrows)
    rtol = RTOL[dtype]
    xs, _ = spla.cg(A.to_scipy(), b, rtol=rtol, maxiter=5000)
    runs = {c: S.cg(A, b, rtol=rtol, device="cuda", policy="fixed", config=c, dtype=dtype, M=M)
            for c in FUSED + SEPARATE}
    its = {c: rec.iterations for c, (_x, _i, rec) in runs.items()}
    for c, (x, info, rec) in runs.items():
        assert info == 0, rec
        check_solution(c, A, b, x, xs, rtol, dtype, rec)
    ref = its["pyspmv/ell/bs=128"]
    assert all(abs(i - ref) <= max(2, 0.02 * ref) for i in its.values()), its



@pytest.mark.parametrize("name", sorted(SOLVERS))
@pytest.mark.parametrize("scale", [1e19, 1e-25])
def test_float32_on_the_gpu_never_claims_convergence_where_norms_leave_the_type(name, scale):
    """Issue 49's bad input on the GPU: float32 entries whose squares leave float32 (1e19: b . b past its range;
    1e-25: below its smallest normal) must either converge for real or report failure; a non-finite b and a
    preconditioner of the wrong shape are refused naming the argument."""
    A = spd(6).to_scipy()
    b = np.full(A.shape[0], scale, np.float32)
    x, info, rec = SOLVERS[name][0](A, b, dtype="float32", rtol=1e-4, device="cuda", policy="fixed")
    residual = np.linalg.norm(b.astype(np.float64) - A @ x.astype(np.float64))
    if info == 0:
        assert x.any() and residual <= 1e-3 * np.linalg.norm(b.astype(np.float64)), rec
    with pytest.raises(ValueError, match="'b'.*non-finite"):
        SOLVERS[name][0](A, np.full(A.shape[0], np.nan), device="cuda")
    with pytest.raises(ValueError, match="'M'"):
        SOLVERS[name][0](A, b.astype(np.float64), M=sp.identity(A.shape[0] + 1, format="csr"), device="cuda")


def test_a_value_table_variant_is_made_on_the_device_and_probed(monkeypatch):
    """A few-valued matrix whose ranking picks JAD: the selection makes JAD's value-table variant on the GPU from the
    uploaded CSR (its product against scipy's), and the solve's probe times it before anything is kept."""
    import threading

    from pyspmv.ranking.verify import upload_csr
    monkeypatch.setattr(switching, "rank", fake_rank(["pyspmv/jad/bs=256"]))
    A = pyspmv.generate("poisson2d", 20)                  # two distinct values
    for dt in ("float64", "float32"):
        sel = D.select_device(A, np.dtype(dt), None, 1, None, threading.Event(), csr=upload_csr(A, np.dtype(dt)),
                              tables=True)
        assert [p.config.id for p in sel.candidates] == ["pyspmv/jad/vals=8/bs=256"], sel
        x = rhs(400, seed=3).astype(dt)
        y = sel.candidates[0].plan.mv(x)
        assert np.allclose(y, A.to_scipy() @ x.astype(np.float64), rtol=RTOL[dt], atol=RTOL[dt]), dt
        sel.candidates[0].plan.close()
    monkeypatch.setattr(D, "PROBE_MIN_S", 0.0)
    monkeypatch.setattr(D, "FIRST_LOOK_S", 0.0)     # first looks of probe_iters too
    b = rhs(400)
    x, info, rec = S.cg(A, b, rtol=1e-10, device="cuda", policy="async", select_min_nnz=0, select_patience=0,
                        probe_iters=2, callback=wait_for_selection(monkeypatch))
    assert info == 0, rec
    assert "pyspmv/jad/vals=8/bs=256" in rec.probes and "cusparse/csr/default" in rec.probes, rec
    assert np.linalg.norm(b - A.to_scipy() @ x) <= 2e-10 * np.linalg.norm(b), rec
