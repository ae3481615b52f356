"""pyspmv.Operator: products against scipy's, alpha/beta/out, errors naming the argument, threads, closing,
the ranked pick, rmatvec, scipy's LinearOperator and solvers, the repr; the GPU path where a GPU is."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import inspect
import pickle
import subprocess
import sys
import threading

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla

import pyspmv
from pyspmv import _core

TOL = {np.float32: 1e-5, np.float64: 1e-12}
CPU_IDS = [c.id for c in pyspmv.configs("cpu")]


def shapes() -> dict[str, sp.csr_array]:
    """Random and real-shaped matrices: empty rows, one row, one column, rectangular both ways, a long row,
    explicit zeros and duplicates (summed by Matrix)."""
    rng = np.random.default_rng(3)
    out = {"random": sp.random_array((300, 300), density=0.03, format="csr", rng=rng),
           "wide": sp.random_array((40, 500), density=0.05, format="csr", rng=rng),
           "tall": sp.random_array((500, 40), density=0.05, format="csr", rng=rng),
           "one_row": sp.csr_array(rng.uniform(-1, 1, (1, 50))),
           "one_col": sp.csr_array(rng.uniform(-1, 1, (50, 1))),
           "poisson": pyspmv.generate("poisson2d", 15).to_scipy()}
    E = sp.random_array((200, 150), density=0.04, format="lil", rng=rng)
    E[10:60, :] = 0                                   # empty rows
    E[5, :] = rng.uniform(-1, 1, 150)                 # a long row
    out["empty_rows"] = sp.csr_array(E)
    r = np.array([0, 0, 1, 3, 3, 3])
    c = np.array([1, 1, 2, 0, 0, 4])
    v = np.array([1.0, 2.0, 0.0, -1.0, 4.0, 0.0])     # duplicates and explicit zeros
    out["dups_zeros"] = sp.csr_array(sp.coo_array((v, (r, c)), shape=(5, 6)))
    return out


SHAPES = shapes()


def reference(A, x):
    return np.asarray(A.astype(np.float64) @ x.astype(np.float64))


def close(y, ref, dtype):
    scale = max(1.0, float(np.abs(ref).max(initial=0.0)))
    np.testing.assert_allclose(y, ref, rtol=TOL[dtype] * 10, atol=TOL[dtype] * 10 * scale)


@pytest.mark.parametrize("name", sorted(SHAPES))
@pytest.mark.parametrize("cid", CPU_IDS)
def test_products_against_scipy(name, cid):
    A = SHAPES[name]
    try:
        op = pyspmv.Operator(A, config=cid)
    except pyspmv.NotApplicableError:
        pytest.skip(f"{cid} cannot serve {name}")
    x = np.random.default_rng(0).uniform(-1, 1, A.shape[1])
    close(op @ x, reference(A, x), np.float64)
    y = np.full(A.shape[0], np.nan)                   # beta == 0: out is not read
    assert op.matvec(x, out=y) is y
    close(y, reference(A, x), np.float64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cid", ["cpu/csr/rows", "cpu/coo", "cpu/sell/c=8/sigma=64", "cpu/dia", "cpu/jad"])
def test_alpha_beta_out(dtype, cid):
    A = SHAPES["poisson"]
    op = pyspmv.Operator(A, config=cid, dtype=dtype)
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, A.shape[1]).astype(dtype)
    y0 = rng.uniform(-1, 1, A.shape[0]).astype(dtype)
    ax = reference(A, x)
    for alpha, beta in [(1, 0), (2.5, 0), (0, 0), (0, -3), (1, 1), (-0.5, 2), (3, 1)]:
        y = y0.copy()
        assert op.matvec(x, out=y, alpha=alpha, beta=beta) is y
        close(y, alpha * ax + beta * y0.astype(np.float64), dtype)
    y = np.full(A.shape[0], np.nan, dtype=dtype)
    op.matvec(x, out=y, alpha=2.0)                    # beta == 0: NaN in out does not propagate
    close(y, 2 * ax, dtype)
    xn = x.copy()
    xn[0] = np.nan
    if op.config.format not in ("dia",):              # alpha == 0: A x is not computed (BLAS)
        y = y0.copy()
        op.matvec(xn, out=y, alpha=0.0, beta=2.0)
        close(y, 2 * y0.astype(np.float64), dtype)
    close(op.matvec(x, alpha=-1.0), -ax, dtype)       # alpha without out: a new array


def test_new_array_each_product_and_inputs_untouched():
    A = SHAPES["random"]
    op = pyspmv.Operator(A, config="cpu/csr/rows")
    x = np.random.default_rng(2).uniform(-1, 1, A.shape[1])
    x0 = x.copy()
    y1, y2 = op @ x, op @ x
    assert y1 is not y2 and y1.dtype == np.float64 and y1.shape == (A.shape[0],)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(y1, y2)


def test_sources_matrix_scipy_path_and_formatmatrix(tmp_path):
    A = SHAPES["empty_rows"]
    x = np.random.default_rng(4).uniform(-1, 1, A.shape[1])
    ref = reference(A, x)
    path = tmp_path / "a.mtx"
    import scipy.io
    scipy.io.mmwrite(path, A)
    F = pyspmv.convert(A, "coo")
    for src, kw in [(pyspmv.Matrix(A), {}), (A, {}), (sp.csr_matrix(A), {}), (str(path), {}), (path, {}),
                    (F, {"config": "cpu/coo"}), (A.tocoo(), {"config": "cpu/hyb"})]:
        op = pyspmv.Operator(src, **{"config": "cpu/csr/rows", **kw})
        close(op @ x, ref, np.float64)
    with pytest.raises(ValueError, match="FormatMatrix is .*coo.* which configuration 'cpu/csr/rows' cannot run"):
        pyspmv.Operator(F, config="cpu/csr/rows")
    with pytest.raises(ValueError, match="Operator\\(\\) of a FormatMatrix needs 'config'"):
        pyspmv.Operator(F)


def test_keeps_its_own_conversion():
    A = sp.csr_array(SHAPES["random"])
    op = pyspmv.Operator(A, config="cpu/csr/rows")
    x = np.ones(A.shape[1])
    ref = reference(A, x)
    A.data[:] = 0.0                                   # the source changes later: the operator does not
    close(op @ x, ref, np.float64)


def test_ranked_pick():
    A = SHAPES["poisson"]
    op = pyspmv.Operator(A, n_calls=50)
    r = pyspmv.rank(A, device="cpu", n_calls=50)
    assert op.device == "cpu" and op.config.id == r.best and op.ranking == r
    d = pyspmv.Operator(A, deterministic=True, dtype="float32")
    assert d.config.deterministic and d.dtype == np.float32
    assert d.config.id == pyspmv.rank(A, device="cpu", dtype="float32", deterministic=True).best
    m = pyspmv.Operator(A, model=pyspmv.default_model("cpu"))
    assert m.config.id == pyspmv.rank(A, device="cpu").best
    x = np.ones(A.shape[1])
    close(op @ x, reference(A, x), np.float64)


def test_attributes_and_repr():
    A = SHAPES["wide"]
    op = pyspmv.Operator(A, config="cpu/sell/c=8/sigma=64", dtype="float32")
    assert op.config == pyspmv.config("cpu/sell/c=8/sigma=64") and op.device == "cpu"
    assert op.dtype == np.float32 and op.shape == A.shape and op.ranking is None
    assert op.nbytes == pyspmv.convert(A, "sell", c=8, sigma=64, dtype="float32").nbytes
    assert repr(op) == (f"<pyspmv.Operator 40x500 float32 on cpu: cpu/sell/c=8/sigma=64 (given), "
                        f"{op.nbytes} bytes>")
    t = pyspmv.Operator(A, n_calls=10, rmatvec=True)
    assert f"{t.config.id} (ranked first), with A.T," in repr(t)
    assert t.nbytes == 2 * pyspmv.Operator(A, config=t.config).nbytes or t.nbytes > 0
    t.close()
    assert repr(t).endswith("closed>") and t.closed and t.nbytes == 0


@pytest.mark.parametrize("cid", ["cpu/csr/rows", "cpu/coo", "cpu/ell"])
def test_rmatvec(cid):
    A = SHAPES["tall"]
    op = pyspmv.Operator(A, config=cid, rmatvec=True)
    u = np.random.default_rng(5).uniform(-1, 1, A.shape[0])
    close(op.rmatvec(u), reference(A.T, u), np.float64)
    y = np.ones(A.shape[1])
    op.rmatvec(u, out=y, alpha=2.0, beta=-1.0)
    close(y, 2 * reference(A.T, u) - 1.0, np.float64)
    with pytest.raises(ValueError, match="rmatvec\\(\\) needs the transpose converted: build the Operator with "
                                         "rmatvec=True"):
        pyspmv.Operator(A, config=cid).rmatvec(u)
    with pytest.raises(ValueError, match="'x' parameter of rmatvec\\(\\) has shape \\(40,\\); it must be \\(500,\\)"):
        op.rmatvec(np.ones(40))


def test_bad_input_names_the_argument():
    A = SHAPES["random"]
    op = pyspmv.Operator(A, config="cpu/csr/rows")
    n = A.shape[1]
    x = np.ones(n)
    with pytest.raises(ValueError, match="'x' parameter of matvec\\(\\) has shape \\(3,\\); it must be \\(300,\\), or "
                                         "\\(300, k\\) for a block"):
        op @ np.ones(3)
    with pytest.raises(ValueError, match="'x' .* has shape \\(299, 2\\); a vector has 300 entries and a block"):
        op.matvec(np.ones((n - 1, 2)))
    with pytest.raises(TypeError, match="'x' .* has dtype int64; this operator computes in float64 and takes float "
                                        "vectors only \\(pass x.astype\\(np.float64\\)\\)"):
        op @ np.ones(n, dtype=np.int64)
    with pytest.raises(TypeError, match="'x' .* must be a NumPy array. Got list"):
        op @ [1.0] * n
    with pytest.raises(ValueError, match="'out' .* has shape \\(299,\\)"):
        op.matvec(x, out=np.ones(299))
    with pytest.raises(TypeError, match="'out' .* has dtype float32"):
        op.matvec(x, out=np.ones(300, dtype=np.float32))
    with pytest.raises(ValueError, match="'out' .* is not contiguous"):
        op.matvec(x, out=np.ones(600)[::2])
    ro = np.ones(300)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="'out' .* is read-only"):
        op.matvec(x, out=ro)
    with pytest.raises(ValueError, match="'out' .* overlaps 'x'"):
        op.matvec(x, out=x)
    buf = np.ones(400)
    with pytest.raises(ValueError, match="'out' .* overlaps 'x'"):
        op.matvec(buf[:300], out=buf[100:])
    with pytest.raises(ValueError, match="'beta' parameter of matvec\\(\\) is 0.5: y = alpha A x \\+ beta y needs "
                                         "'out'"):
        op.matvec(x, beta=0.5)
    with pytest.raises(TypeError, match="'alpha' parameter of matvec\\(\\) must be a real number. Got 'a'"):
        op.matvec(x, out=np.ones(300), alpha="a")
    with pytest.raises(TypeError, match="'beta' .* must be a real number. Got 1j"):
        op.matvec(x, out=np.ones(300), beta=1j)


def test_gpu_arrays_on_a_cpu_operator_are_refused():
    class FakeCupy:                                   # what CuPy, PyTorch CUDA tensors and Numba arrays offer
        @property
        def __cuda_array_interface__(self):
            return {"shape": (300,), "typestr": "<f8", "data": (0, False), "version": 3}

    op = pyspmv.Operator(SHAPES["random"], config="cpu/csr/rows")
    with pytest.raises(TypeError, match="'x' parameter of matvec\\(\\) is a .*FakeCupy, which may live on a GPU; "
                                        "this operator runs on the CPU"):
        op @ FakeCupy()


def test_non_finite_x_where_padding_multiplies_it():
    A = SHAPES["poisson"]
    x = np.ones(A.shape[1])
    x[7] = np.inf
    with pytest.raises(ValueError, match="x\\[7\\] is inf: the dia format multiplies its padding zeros"):
        pyspmv.Operator(A, config="cpu/dia") @ x
    np.testing.assert_array_equal(pyspmv.Operator(A, config="cpu/csr/rows") @ x, A @ x)


def test_constructor_errors():
    A = SHAPES["random"]
    with pytest.raises(ValueError, match="'device' parameter of Operator\\(\\) must be 'cpu', 'cuda' or None"):
        pyspmv.Operator(A, "tpu")
    with pytest.raises(ValueError, match="takes 'config', or 'n_calls', 'deterministic' and 'model'"):
        pyspmv.Operator(A, config="cpu/csr/rows", n_calls=3)
    with pytest.raises(ValueError, match="names 'cpu/csr/rows', which runs on cpu, not on device 'cuda'"):
        pyspmv.Operator(A, "cuda", config="cpu/csr/rows")
    with pytest.raises(TypeError, match="'config' parameter of Operator\\(\\) must be a Config"):
        pyspmv.Operator(A, config=3)
    with pytest.raises(ValueError, match="Unknown configuration id"):
        pyspmv.Operator(A, config="cpu/nope")
    with pytest.raises(TypeError, match="'rmatvec' parameter of Operator\\(\\) must be True or False"):
        pyspmv.Operator(A, config="cpu/csr/rows", rmatvec="yes")
    with pytest.raises(pyspmv.NotApplicableError):
        pyspmv.Operator(A, config="cpu/dia")
    with pytest.raises(ValueError, match="n_calls"):
        pyspmv.Operator(A, n_calls=0)


def test_cuda_without_a_gpu_says_why():
    from pyspmv.devices import gpu
    if gpu.available():
        pytest.skip("a GPU is usable here")
    with pytest.raises(pyspmv.DeviceUnavailableError):
        pyspmv.Operator(SHAPES["random"], "cuda")


def test_threads_share_one_operator():
    """Concurrent products on one operator (the core releases the GIL from 50,000 entries) give each thread its
    own right answer, alpha/beta's work vectors included."""
    A = pyspmv.generate("poisson2d", 120)             # 71,520 entries: past the GIL threshold
    S = A.to_scipy()
    op = pyspmv.Operator(A, config="cpu/csr/rows")
    errors = []

    def work(seed):
        rng = np.random.default_rng(seed)
        for _ in range(20):
            x = rng.uniform(-1, 1, A.ncols)
            y0 = rng.uniform(-1, 1, A.nrows)
            y = y0.copy()
            op.matvec(x, out=y, alpha=2.0, beta=-1.0)
            if not (np.allclose(op @ x, S @ x) and np.allclose(y, 2 * (S @ x) - y0)):
                errors.append(seed)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_close_is_an_error_never_a_crash():
    A = pyspmv.generate("poisson2d", 120)
    op = pyspmv.Operator(A, config="cpu/csr/rows", rmatvec=True)
    x = np.ones(A.ncols)
    stop = threading.Event()
    seen = []

    def products():
        while not stop.is_set():
            try:
                y = op @ x
                seen.append(bool(np.allclose(y, A.to_scipy() @ x)))
            except ValueError as exc:
                assert "closed" in str(exc)
                return

    threads = [threading.Thread(target=products) for _ in range(3)]
    for t in threads:
        t.start()
    op.close()
    stop.set()
    for t in threads:
        t.join()
    assert all(seen)
    for call in (lambda: op @ x, lambda: op.matvec(x, out=np.ones(A.nrows), beta=1.0), lambda: op.rmatvec(x)):
        with pytest.raises(ValueError, match="This Operator has been closed"):
            call()
    op.close()                                        # twice is fine
    with pyspmv.Operator(A, config="cpu/coo") as op2:
        op2 @ x
    with pytest.raises(ValueError, match="closed"):
        op2 @ x


def test_core_mv_refuses_overlapping_vectors():
    F = pyspmv.convert(SHAPES["random"], "csr")
    buf = np.zeros(300)
    with pytest.raises(ValueError, match="x and y overlap in memory"):
        _core.mv(F.state, 0, buf, buf)
    with pytest.raises(ValueError, match="work and y overlap|y and work overlap"):
        _core.mv_scaled(F.state, 0, 1.0, np.ones(300), 1.0, buf, buf)
    with pytest.raises(ValueError, match="beta != 0 needs work"):
        _core.mv_scaled(F.state, 0, 1.0, np.ones(300), 1.0, buf, None)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_linear_operator_with_scipy_solvers(dtype):
    A = pyspmv.generate("poisson2d", 20).to_scipy()   # SPD
    b = np.random.default_rng(6).uniform(-1, 1, A.shape[0])
    op = pyspmv.Operator(A, config="cpu/csr/rows", dtype=dtype, rmatvec=True)
    L = op.aslinearoperator()
    assert isinstance(L, sla.LinearOperator) and L.shape == A.shape and L.dtype == dtype
    tol = 1e-8 if dtype == np.float64 else 1e-4
    for solver in (sla.cg, sla.gmres):
        x, info = solver(L, b, rtol=tol, maxiter=2000)
        assert info == 0
        assert np.linalg.norm(A @ x - b) <= 10 * tol * np.linalg.norm(b)
    np.testing.assert_allclose(L.rmatvec(b), A.T @ b, rtol=1e-5)
    np.testing.assert_allclose(L @ b, A @ b, rtol=1e-5)    # (n, 1) columns: scipy 1.18 deprecates them in matvec
    if dtype == np.float64:                           # scipy's own adapter, through matvec/rmatvec/shape/dtype
        S = sla.aslinearoperator(op)
        for solver in (sla.cg, sla.gmres):
            x, info = solver(S, b, rtol=1e-8, maxiter=2000)
            assert info == 0 and np.linalg.norm(A @ x - b) <= 1e-6 * np.linalg.norm(b)
        np.testing.assert_allclose(S.rmatvec(b), A.T @ b)
    assert op.aslinearoperator().shape == A.shape
    no_t = pyspmv.Operator(A, config="cpu/csr/rows").aslinearoperator()
    with pytest.raises(NotImplementedError):
        no_t.rmatvec(b)


def test_cupy_linear_operator_needs_a_cuda_operator():
    op = pyspmv.Operator(pyspmv.generate("poisson2d", 5).to_scipy(), config="cpu/csr/rows")
    with pytest.raises(ValueError, match="needs a cuda operator"):
        op.aslinearoperator("cupy")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cupy_linear_operator_with_cupy_solvers(dtype):
    """aslinearoperator('cupy'): CuPy's LinearOperator over the operator's products, vectors of shape (n,) or
    (n, 1) of any float type cast on the GPU; its cg converges; the transpose where the operator has it."""
    cp = pytest.importorskip("cupy")
    from cupyx.scipy.sparse.linalg import cg
    A = pyspmv.generate("poisson2d", 20).to_scipy()
    b = np.random.default_rng(7).uniform(-1, 1, A.shape[0])
    op = pyspmv.Operator(A, "cuda", config="pyspmv/csr/vector/tpv=4/bs=128", dtype=dtype, rmatvec=True)
    L = op.aslinearoperator("cupy")
    assert L.shape == A.shape and L.dtype == dtype
    close(cp.asnumpy(L.matvec(cp.asarray(b))), reference(A, b.astype(dtype)), dtype)
    close(cp.asnumpy(L.matvec(cp.asarray(b).reshape(-1, 1))).ravel(), reference(A, b.astype(dtype)), dtype)
    close(cp.asnumpy(L.rmatvec(cp.asarray(b))), reference(A.T.tocsr(), b.astype(dtype)), dtype)
    x, info = cg(L, cp.asarray(b, dtype=dtype), maxiter=2000)      # CuPy's default tolerance, 1e-5
    assert info == 0
    assert np.linalg.norm(A @ cp.asnumpy(x) - b) <= 1e-3 * np.linalg.norm(b)


def test_import_stays_light():
    """``pyspmv.Operator`` is imported on first use: ``import pyspmv`` does not load its module."""
    code = "import sys, pyspmv; print('pyspmv.operator' in sys.modules); print(pyspmv.Operator.__module__)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True,
                       cwd="/")
    assert r.stdout.split() == ["False", "pyspmv.operator"]


# ---- GPU (skipped without a usable GPU) ----

@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gpu_operator_numpy_vectors(dtype):
    A = SHAPES["empty_rows"]
    op = pyspmv.Operator(A, "cuda", config="pyspmv/csr/vector/tpv=8/bs=256", dtype=dtype, rmatvec=True)
    assert op.device == "cuda" and op.nbytes > 0
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, A.shape[1]).astype(dtype)
    close(op @ x, reference(A, x), dtype)
    y0 = rng.uniform(-1, 1, A.shape[0]).astype(dtype)
    y = y0.copy()
    op.matvec(x, out=y, alpha=2.0, beta=-1.0)
    close(y, 2 * reference(A, x) - y0.astype(np.float64), dtype)
    close(op.rmatvec(y0), reference(A.T, y0), dtype)
    r = pyspmv.Operator(A, "cuda", n_calls=100)
    assert r.config.device == "cuda"
    close(r @ x.astype(r.dtype), reference(A, x), dtype)
    op.close()
    with pytest.raises(ValueError, match="closed"):
        op @ x


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gpu_operator_of_a_host_matrix_converts_on_the_device(dtype, monkeypatch):
    """A scipy matrix for the GPU: uploaded once as CSR and the pick converted there; verify='auto' by default,
    which with many calls times candidates converted on the GPU (the ranking says so), with one call measures
    nothing, and verify=0 keeps the model's pick; pickled from its host copy."""
    A = (sp.random_array((3000, 3000), density=0.002, format="csr", rng=np.random.default_rng(3))
         + sp.eye_array(3000, format="csr")).tocsr()
    made = []
    real = pyspmv.devices.gpu.convert_on_device

    def spy(M, fmt, **kw):
        made.append(fmt)
        return real(M, fmt, **kw)

    monkeypatch.setattr(pyspmv.devices.gpu, "convert_on_device", spy)
    x = np.random.default_rng(4).uniform(-1, 1, 3000).astype(dtype)
    op = pyspmv.Operator(A, "cuda", dtype=dtype, n_calls=10**7)
    r = op.ranking
    assert r.verified and "verify='auto' with n_calls=10000000" in r.verify_note, r.verify_note
    assert "converted on the GPU" in r.verify_note and op.config.id == r[0][0]
    close(op @ x, reference(A, x), dtype)
    plain_csr = op.config.format == "csr" and not any(op.config.format_params)
    assert plain_csr or op.config.format in made
    close(pickle.loads(pickle.dumps(op)) @ x, reference(A, x), dtype)
    one = pyspmv.Operator(A, "cuda", dtype=dtype, n_calls=1)
    assert one.ranking.verified == () and "nothing measured" in one.ranking.verify_note
    close(one @ x, reference(A, x), dtype)
    assert pyspmv.Operator(A, "cuda", dtype=dtype, n_calls=10**7, verify=0).ranking.verified is None


@pytest.mark.gpu
def test_gpu_operator_threads_take_turns():
    A = pyspmv.generate("poisson2d", 60)
    op = pyspmv.Operator(A, "cuda", config="cusparse/csr/default")
    errors = []

    def work(seed):
        x = np.random.default_rng(seed).uniform(-1, 1, A.ncols)
        for _ in range(10):
            if not np.allclose(op @ x, A.to_scipy() @ x):
                errors.append(seed)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


GPU_CONFIGS = ["cusparse/csr/default", "cusparse/csr/alg2", "pyspmv/csr/vector/tpv=8/bs=256",
               "pyspmv/csr/adaptive/bs=256", "pyspmv/coo/bs=256", "pyspmv/sell/c=32/sigma=1/bs=128",
               "cusparse/bsr/b=2", "pyspmv/cidx/vector/bits=8/tpv=8/bs=256", "pyspmv/csr/merge/bs=128",
               "pyspmv/csr/wide/tpv=16/bs=256", "pyspmv/csr/merge/order=1/bs=256",
               "pyspmv/csr/adaptive/order=1/bs=128"]


def _gpu_configs():
    """The GPU configurations the device-vector tests run: a few per kernel family, those of the registry."""
    have = {c.id for c in pyspmv.configs("cuda")}
    return [c for c in GPU_CONFIGS if c in have]


@pytest.mark.gpu
@pytest.mark.parametrize("cid", _gpu_configs())
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["random", "empty_rows", "wide", "one_row", "dups_zeros"])
def test_gpu_cupy_vectors_in_place(cid, dtype, name):
    """CuPy vectors are used in place: the result is a CuPy array equal to scipy's float64 product; alpha,
    beta and out= update a CuPy y in place, with beta == 0 not reading y (NaN there does not propagate)."""
    cp = pytest.importorskip("cupy")
    A = SHAPES[name]
    try:
        op = pyspmv.Operator(A, "cuda", config=cid, dtype=dtype)
    except pyspmv.NotApplicableError:
        pytest.skip(f"{cid} does not serve {name}")
    rng = np.random.default_rng(11)
    x = rng.uniform(-1, 1, A.shape[1]).astype(dtype)
    y0 = rng.uniform(-1, 1, A.shape[0]).astype(dtype)
    xd = cp.asarray(x)
    y = op @ xd
    assert isinstance(y, cp.ndarray) and y.dtype == dtype and y.shape == (A.shape[0],)
    close(cp.asnumpy(y), reference(A, x), dtype)
    yd = cp.asarray(y0)
    assert op.matvec(xd, out=yd, alpha=2.0, beta=-0.5) is yd
    close(cp.asnumpy(yd), 2 * reference(A, x) - 0.5 * y0.astype(np.float64), dtype)
    yd[...] = cp.nan
    op.matvec(xd, out=yd, alpha=-1.0, beta=0.0)
    close(cp.asnumpy(yd), -reference(A, x), dtype)
    yd = cp.asarray(y0)
    op.matvec(xd, out=yd, alpha=0.0, beta=3.0)
    close(cp.asnumpy(yd), 3 * y0.astype(np.float64), dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gpu_torch_and_dlpack_vectors(dtype):
    """PyTorch tensors (CUDA array interface) and a DLPack-only view of them give the same product; the result
    is a tensor on the same device."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no GPU")
    A = SHAPES["random"]
    x = np.random.default_rng(12).uniform(-1, 1, A.shape[1]).astype(dtype)
    for cid in ("cusparse/csr/default", "pyspmv/csr/vector/tpv=4/bs=128"):
        op = pyspmv.Operator(A, "cuda", config=cid, dtype=dtype)
        xt = torch.from_numpy(x).cuda()
        y = op @ xt
        assert isinstance(y, torch.Tensor) and y.is_cuda and y.dtype == getattr(torch, np.dtype(dtype).name)
        close(y.cpu().numpy(), reference(A, x), dtype)

        class DLPackOnly:                          # a producer that offers DLPack alone
            def __init__(self, t):
                self.t = t

            def __dlpack__(self, stream=None):
                return self.t.__dlpack__(stream=stream)

            def __dlpack_device__(self):
                return self.t.__dlpack_device__()

        out = torch.empty(A.shape[0], dtype=xt.dtype, device="cuda")
        op.matvec(DLPackOnly(xt), out=DLPackOnly(out))
        torch.cuda.synchronize()
        close(out.cpu().numpy(), reference(A, x), dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cid", ["cusparse/csr/default", "pyspmv/sell/c=32/sigma=1/bs=256"])
def test_gpu_blocks_of_vectors(cid, dtype):
    """Issue 51: a block of vectors on the GPU (CuPy in either order, PyTorch) or from NumPy, one product per
    column, equal to scipy's float64 product; out= updates a block in place."""
    cp = pytest.importorskip("cupy")
    A = SHAPES["empty_rows"]
    try:
        op = pyspmv.Operator(A, "cuda", config=cid, dtype=dtype)
    except pyspmv.NotApplicableError:
        pytest.skip(f"{cid} does not serve empty_rows")
    X = np.random.default_rng(7).uniform(-1, 1, (A.shape[1], 3)).astype(dtype)
    ref = reference(A, X.astype(np.float64))
    close(op @ X, ref, dtype)
    for order in ("C", "F"):
        Xd = cp.asarray(X, order=order)
        Y = op @ Xd
        assert isinstance(Y, cp.ndarray) and Y.shape == ref.shape and Y.dtype == dtype
        close(cp.asnumpy(Y), ref, dtype)
        out = cp.ones(ref.shape, dtype=dtype, order=order)
        assert op.matvec(Xd, out=out, alpha=2.0, beta=1.0) is out
        close(cp.asnumpy(out), 2 * ref + 1, dtype)
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        Yt = op @ torch.from_numpy(X).cuda()
        assert isinstance(Yt, torch.Tensor) and tuple(Yt.shape) == ref.shape
        close(Yt.cpu().numpy(), ref, dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gpu_new_results_of_the_same_x(dtype):
    """op @ x again with the CuPy x of the last product (its short path): a new CuPy array each call, each
    equal to scipy's product of what x holds then, the results held apart; on the stream current at the
    call; after out= products of the same x; refused once the operator is closed."""
    cp = pytest.importorskip("cupy")
    A = SHAPES["empty_rows"]
    op = pyspmv.Operator(A, "cuda", config="pyspmv/csr/vector/tpv=4/bs=128", dtype=dtype)
    rng = np.random.default_rng(5)
    xs = [rng.uniform(-1, 1, A.shape[1]).astype(dtype) for _ in range(3)]
    xd = cp.asarray(xs[0])
    held = []
    for x in xs:
        xd[...] = cp.asarray(x)                 # in place: the same array, new values
        held.append(op @ xd)
    assert len({int(y.data.ptr) for y in held}) == 3
    for y, x in zip(held, xs):
        assert isinstance(y, cp.ndarray) and y.dtype == dtype and y.shape == (A.shape[0],)
        close(cp.asnumpy(y), reference(A, x), dtype)
    out = cp.empty(A.shape[0], dtype=dtype)
    op.matvec(xd, out=out)
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        z = (op @ xd) * 2                       # the product and the doubling both on s
    s.synchronize()
    close(cp.asnumpy(z), 2 * reference(A, xs[-1]), dtype)
    close(cp.asnumpy(op @ xd), cp.asnumpy(out), dtype)
    op.close()
    with pytest.raises(ValueError, match="closed"):
        op @ xd


@pytest.mark.gpu
@pytest.mark.parametrize("hold", ["array", "view", "dlpack", "pointer", "pointer_copy", "torch"])
def test_gpu_new_results_kept_apart_while_reachable(hold):
    """op @ x hands out a result again once nothing reaches it (``y = op @ x`` cycles between two), and never one
    that a view, a DLPack capsule, a tensor, an array over ``y.data`` or a pointer ``y.data + 0`` still
    reaches: what those hold keeps its values through later products, on the same x and on a new one."""
    cp = pytest.importorskip("cupy")
    A = SHAPES["empty_rows"]
    op = pyspmv.Operator(A, "cuda", config="pyspmv/csr/vector/tpv=4/bs=128")
    rng = np.random.default_rng(9)
    x0, x1 = rng.uniform(-1, 1, A.shape[1]), rng.uniform(-1, 1, A.shape[1])
    xd = cp.asarray(x0)
    addresses = set()
    for _ in range(6):
        y = op @ xd
        addresses.add(int(y.data.ptr))
    assert len(addresses) <= 2                               # y = op @ x: the results handed out again
    close(cp.asnumpy(y), reference(A, x0), np.float64)
    y = op @ xd
    if hold == "torch":
        torch = pytest.importorskip("torch")
        keep = torch.from_dlpack(y)
        values = lambda: keep.cpu().numpy()                  # noqa: E731
    else:
        keep = {"array": lambda: y, "view": lambda: y[::1], "dlpack": lambda: cp.from_dlpack(y),
                "pointer": lambda: cp.ndarray(y.shape, y.dtype, y.data),
                "pointer_copy": lambda: cp.ndarray(y.shape, y.dtype, y.data + 0)}[hold]()
        values = lambda: cp.asnumpy(keep)                    # noqa: E731
    ya = int(y.data.ptr)
    del y
    later = [op @ xd for _ in range(3)] + [op @ cp.asarray(x1) for _ in range(3)]
    assert ya not in {int(z.data.ptr) for z in later}
    close(values(), reference(A, x0), np.float64)
    close(cp.asnumpy(later[-1]), reference(A, x1), np.float64)
    op.close()


@pytest.mark.gpu
def test_gpu_vectors_on_the_callers_stream():
    """The product runs on the stream given (or CuPy's current one): work queued after it on that stream sees
    its result without a device-wide synchronisation."""
    cp = pytest.importorskip("cupy")
    A = pyspmv.generate("poisson2d", 300).to_scipy()
    op = pyspmv.Operator(A, "cuda", config="pyspmv/csr/vector/tpv=4/bs=128")
    x = cp.random.default_rng(1).uniform(-1, 1, A.shape[1])
    ref = reference(A, cp.asnumpy(x))
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        y = op @ x                                    # CuPy's current stream: s
        z = y * 2                                     # queued behind it on s
    s.synchronize()
    close(cp.asnumpy(z), 2 * ref, np.float64)
    s2 = cp.cuda.Stream(non_blocking=True)
    y2 = cp.empty_like(y)
    op.matvec(x, out=y2, stream=s2)
    s2.synchronize()
    close(cp.asnumpy(y2), ref, np.float64)
    op.matvec(x, out=y2, stream=s2.ptr)
    s2.synchronize()
    close(cp.asnumpy(y2), ref, np.float64)


@pytest.mark.gpu
def test_gpu_device_vector_errors_name_the_argument():
    cp = pytest.importorskip("cupy")
    A = SHAPES["random"]
    op = pyspmv.Operator(A, "cuda", config="cusparse/csr/default")
    with pytest.raises(ValueError, match="'x'.*300 entries"):
        op @ cp.ones(299)
    ref = reference(A, np.ones(300))
    close(cp.asnumpy(op @ cp.ones(300, dtype=cp.float32)), ref, np.float64)   # cast by the rule (issue 51)
    close(cp.asnumpy(op @ cp.ones(600)[::2]), ref, np.float64)                # a strided x copied
    with pytest.raises(TypeError, match="'x'.*casts x only where no precision is lost"):
        pyspmv.Operator(A, "cuda", config="cusparse/csr/default", dtype=np.float32) @ cp.ones(300)
    with pytest.raises(TypeError, match="'x'.*'<i8'"):
        op @ cp.ones(300, dtype=cp.int64)
    with pytest.raises(TypeError, match="'out'.*which it writes in place"):
        op.matvec(cp.ones(300), out=cp.empty(300, dtype=cp.float32))
    with pytest.raises(TypeError, match="'out'.*NumPy"):
        op.matvec(cp.ones(300), out=np.empty(300))
    with pytest.raises(TypeError, match="'out'.*GPU"):
        op.matvec(np.ones(300), out=cp.empty(300))
    with pytest.raises(ValueError, match="overlap"):
        v = cp.ones(300)
        op.matvec(v, out=v)
    with pytest.raises(ValueError, match="'beta'.*'out'"):
        op.matvec(cp.ones(300), beta=1.0)
    with pytest.raises(TypeError, match="'stream'"):
        op.matvec(cp.ones(300), stream="fast")
    op.close()
    with pytest.raises(ValueError, match="closed"):
        op @ cp.ones(300)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gpu_cupy_matrix_read_in_place(dtype):
    """A CuPy CSR matrix is read in place (CSR configurations), duplicates summed on the device without
    touching the caller's matrix; a bad one is refused before any product; the ranked pick is a CSR one."""
    cp = pytest.importorskip("cupy")
    csp = pytest.importorskip("cupyx.scipy.sparse")
    for name in ("random", "empty_rows", "wide", "dups_zeros"):
        A = SHAPES[name]
        Ad = csp.csr_matrix(sp.csr_matrix(A).astype(dtype))
        x = np.random.default_rng(2).uniform(-1, 1, A.shape[1]).astype(dtype)
        for cid in ("cusparse/csr/default", "pyspmv/csr/adaptive/bs=256", "pyspmv/csr/scalar/bs=128"):
            op = pyspmv.Operator(Ad, config=cid)
            assert op.device == "cuda" and op.dtype == dtype and op.shape == A.shape
            close(cp.asnumpy(op @ cp.asarray(x)), reference(A, x), dtype)
            close(op @ x, reference(A, x), dtype)           # NumPy vectors: uploaded
    coo = sp.coo_matrix((np.array([1.0, 2.0, 3.0]), (np.array([0, 0, 1]), np.array([1, 1, 0]))), shape=(2, 2))
    D = csp.coo_matrix(coo).tocsr()                         # duplicates: CuPy's tocsr may keep them
    op = pyspmv.Operator(D, config="pyspmv/csr/scalar/bs=128")
    close(cp.asnumpy(op @ cp.ones(2)), np.array([3.0, 3.0]), np.float64)
    picked = pyspmv.Operator(csp.csr_matrix(sp.csr_matrix(SHAPES["poisson"])))
    assert picked.config.format == "csr" and picked.ranking is not None
    on_gpu = pyspmv.rank(csp.csr_matrix(sp.csr_matrix(SHAPES["poisson"])), device="cuda")
    assert list(on_gpu) == list(pyspmv.rank(SHAPES["poisson"], device="cuda"))
    for cid in ("pyspmv/ell/bs=128", "pyspmv/sell/c=32/sigma=1/bs=128", "pyspmv/hyb/bs=256", "pyspmv/jad/bs=256",
                "pyspmv/coo/bs=256", "cusparse/coo/alg2"):
        if cid not in {c.id for c in pyspmv.configs("cuda")}:
            continue
        A = SHAPES["random"]
        op = pyspmv.Operator(csp.csr_matrix(sp.csr_matrix(A)), config=cid)      # converted on the device
        x = np.random.default_rng(4).uniform(-1, 1, A.shape[1])
        close(cp.asnumpy(op @ cp.asarray(x)), reference(A, x), np.float64)
    with pytest.raises(pyspmv.NotApplicableError, match="dia"):
        pyspmv.Operator(csp.csr_matrix(sp.csr_matrix(SHAPES["random"])), config="pyspmv/dia/bs=256")
    with pytest.raises(ValueError, match="host"):
        pyspmv.Operator(csp.csr_matrix(sp.csr_matrix(SHAPES["random"])), "cpu")
    bad = csp.csr_matrix(sp.csr_matrix(SHAPES["random"]))
    bad.indices[3] = 10_000                                 # a column past ncols
    with pytest.raises(ValueError, match="column index"):
        pyspmv.Operator(bad, config="cusparse/csr/default")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gpu_cupy_matrix_views_at_any_alignment(dtype):
    """A CuPy CSR whose indices and values are views starting mid-array (not 16-byte aligned) is read in
    place by the kernels whose loads want alignment (csr/wide falls back to one entry a lane) and by
    csr/merge, with the same products as on an aligned copy."""
    cp = pytest.importorskip("cupy")
    csp = pytest.importorskip("cupyx.scipy.sparse")
    A = sp.csr_matrix(SHAPES["random"]).astype(dtype)
    x = np.random.default_rng(5).uniform(-1, 1, A.shape[1]).astype(dtype)
    for shift in (0, 1, 3):
        data = cp.zeros(A.nnz + shift, dtype)
        data[shift:] = cp.asarray(A.data)
        idx = cp.zeros(A.nnz + shift, np.int32)
        idx[shift:] = cp.asarray(A.indices)
        Ad = csp.csr_matrix((data[shift:], idx[shift:], cp.asarray(A.indptr)), shape=A.shape)
        assert (Ad.data.data.ptr % 16 != 0) == (shift > 0)     # CuPy kept the views
        for cid in ("pyspmv/csr/wide/tpv=4/bs=128", "pyspmv/csr/wide/tpv=32/bs=256", "pyspmv/csr/merge/bs=256"):
            op = pyspmv.Operator(Ad, config=cid)
            close(cp.asnumpy(op @ cp.asarray(x)), reference(A, x), dtype)
    with pytest.raises(pyspmv.NotApplicableError, match="host"):      # a locality order is made on the host
        pyspmv.Operator(Ad, config="pyspmv/csr/merge/order=1/bs=256")


@pytest.mark.gpu
@pytest.mark.filterwarnings("ignore::UserWarning")     # PyTorch's own about its sparse tensors (beta, checks)
def test_gpu_torch_sparse_matrix_read_on_the_device():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no GPU")
    A = SHAPES["empty_rows"]
    At = torch.sparse_csr_tensor(torch.from_numpy(A.indptr.astype(np.int64)),
                                 torch.from_numpy(A.indices.astype(np.int64)),
                                 torch.from_numpy(A.data), size=A.shape, check_invariants=True).cuda()
    x = np.random.default_rng(3).uniform(-1, 1, A.shape[1])
    op = pyspmv.Operator(At, config="pyspmv/csr/vector/tpv=8/bs=256")     # int64 indices: int32 on the device
    close((op @ torch.from_numpy(x).cuda()).cpu().numpy(), reference(A, x), np.float64)


@pytest.mark.gpu
def test_gpu_cupy_linear_operator_with_cupy_solvers():
    cp = pytest.importorskip("cupy")
    cla = pytest.importorskip("cupyx.scipy.sparse.linalg")
    A = pyspmv.generate("poisson2d", 30).to_scipy()
    b = np.random.default_rng(6).uniform(-1, 1, A.shape[0])
    op = pyspmv.Operator(A, "cuda", config="pyspmv/csr/vector/tpv=4/bs=128")
    L = op.aslinearoperator("cupy")
    tol = "rtol" if "rtol" in inspect.signature(cla.cg).parameters else "tol"     # CuPy renamed it
    x, info = cla.cg(L, cp.asarray(b), maxiter=2000, **{tol: 1e-10})
    assert info == 0 and np.linalg.norm(A @ cp.asnumpy(x) - b) <= 1e-8 * np.linalg.norm(b)
    with pytest.raises(ValueError, match="cuda operator"):
        pyspmv.Operator(A, config="cpu/csr/rows").aslinearoperator("cupy")


@pytest.mark.gpu
def test_gpu_device_products_from_threads():
    cp = pytest.importorskip("cupy")
    A = pyspmv.generate("poisson2d", 60)
    op = pyspmv.Operator(A, "cuda", config="pyspmv/coo/bs=256")
    ref = A.to_scipy()
    errors = []

    def work(seed):
        with cp.cuda.Stream(non_blocking=True) as s:
            # x made on the thread's own stream: a non-blocking stream is not ordered after the legacy default
            # stream, so an x made there may still be in the making when the product reads it
            x = cp.random.default_rng(seed).uniform(-1, 1, A.ncols)
            for _ in range(20):
                y = op @ x
                s.synchronize()
                if not np.allclose(cp.asnumpy(y), ref @ cp.asnumpy(x)):
                    errors.append(seed)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_byte_swapped_vectors_are_refused_naming_them(dtype):
    """Issue 45 (1): a '>f8' x or out was read and written as native bytes (errors of 1e3 on x, 7e307 left in
    out). The core refuses both; the operator converts x (as spmv() does) and refuses out, naming it."""
    A = pyspmv.generate("poisson2d", 12)
    op = pyspmv.Operator(A, config="cpu/csr/rows", dtype=dtype)
    swapped = np.dtype(dtype).newbyteorder(">" if np.little_endian else "<")
    x = np.arange(A.ncols, dtype=swapped)
    out = np.zeros(A.nrows, dtype=swapped)
    close(op @ x, A.to_scipy() @ x.astype(np.float64), dtype)       # x is converted (issue 51's casting rule)
    with pytest.raises(TypeError, match="'out' parameter of matvec.*byte order"):
        op.matvec(np.ones(A.ncols, dtype), out=out)
    with pytest.raises(TypeError, match="'out' parameter of matvec.*byte order"):
        op.matvec(np.ones(A.ncols, dtype), out=out, alpha=2.0, beta=1.0)
    assert not out.any()                                  # nothing written
    with pytest.raises(TypeError, match="byte order"):
        _core.mv(op._fwd.state, op._fwd.variant, x, np.zeros(A.nrows, dtype))
    ref = A.to_scipy() @ x.astype(np.float64)
    close(pyspmv.spmv(A, x, config="cpu/csr/rows", dtype=dtype), ref, dtype)


def test_alpha_beta_past_float64_name_the_parameter():
    """Issue 45 (9): alpha=2**2000 ended in a bare OverflowError naming nothing."""
    A = pyspmv.generate("poisson2d", 8)
    op = pyspmv.Operator(A, config="cpu/csr/rows")
    x, y = np.ones(A.ncols), np.zeros(A.nrows)
    with pytest.raises(ValueError, match="'alpha' parameter of matvec.*float64's range"):
        op.matvec(x, out=y, alpha=2**2000)
    with pytest.raises(ValueError, match="'beta' parameter of matvec.*float64's range"):
        op.matvec(x, out=y, beta=10**400)
    with pytest.raises(ValueError, match="'n_calls' parameter.*int of 401 digits"):
        pyspmv.Operator(A, n_calls=10**400)
    with pytest.raises(ValueError, match="'n_calls' parameter"):
        pyspmv.rank(A, n_calls=2**63)
    assert pyspmv.rank(A, device="cpu", n_calls=2**63 - 1).best        # the bound itself ranks


def test_pickle_reconverts_or_says_why_not():
    """Issue 45 (9): pickling an Operator said "cannot pickle '_thread._local' object". It now pickles the
    matrix and the configuration and converts again on load; a closed one says so."""
    A = SHAPES["empty_rows"]
    op = pyspmv.Operator(A, config="cpu/sell/c=8/sigma=64", dtype=np.float32, rmatvec=True)
    back = pickle.loads(pickle.dumps(op))
    assert (back.config, back.dtype, back.shape) == (op.config, op.dtype, op.shape)
    x = np.random.default_rng(0).uniform(-1, 1, A.shape[1]).astype(np.float32)
    assert np.array_equal(back @ x, op @ x)
    xt = np.ones(A.shape[0], np.float32)
    assert np.array_equal(back.rmatvec(xt), op.rmatvec(xt))
    ranked = pyspmv.Operator(A)
    assert list(pickle.loads(pickle.dumps(ranked)).ranking) == list(ranked.ranking)
    op.close()
    with pytest.raises(TypeError, match="closed"):
        pickle.dumps(op)


@pytest.mark.parametrize("cid", ["cpu/csr/rows", "cpu/sell/c=8/sigma=64", "cpu/coo"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_blocks_of_vectors(cid, dtype):
    """Issue 51: a 2-D x of shape (n, k) is a block of k vectors, as scipy's LinearOperator takes it: op @ X,
    matvec(X, out=Y, alpha, beta) in either memory order, matmat, and through aslinearoperator()."""
    A = SHAPES["empty_rows"]
    op = pyspmv.Operator(A, config=cid, dtype=dtype, rmatvec=True)
    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 1, (A.shape[1], 4)).astype(dtype)
    ref = reference(A, X.astype(np.float64))
    Y = op @ X
    assert Y.shape == (A.shape[0], 4) and Y.dtype == dtype and Y.flags.f_contiguous
    close(Y, ref, dtype)
    for order in ("C", "F"):
        out = np.asarray(rng.uniform(-1, 1, Y.shape), dtype=dtype, order=order)
        want = 2.0 * ref + 0.5 * out.astype(np.float64)
        assert op.matvec(np.asarray(X, order=order), out=out, alpha=2.0, beta=0.5) is out
        close(out, want, dtype)
    close(op.matmat(X[:, :1]), ref[:, :1], dtype)
    L = op.aslinearoperator()
    close(L @ X, ref, dtype)
    close(L.rmatmat(np.ones((A.shape[0], 2))), reference(A.T, np.ones((A.shape[0], 2))), dtype)
    with pytest.raises(ValueError, match="'out' .* shape \\(200, 4\\)"):
        op.matvec(X, out=np.empty((200, 3), dtype))
    with pytest.raises(TypeError, match="'out' .* writes"):
        op.matvec(X, out=np.empty(Y.shape, np.float16))
    with pytest.raises(ValueError, match="'beta'"):
        op.matvec(X, beta=1.0)


def test_transpose_view_and_the_casting_rule():
    """Issue 51: op.T is the transpose as an operator (rmatvec's conversion), and x casts by one rule: a float
    type that widens (float16/float32 to float64, byte order swapped) or a strided x is copied; float64 to a
    float32 operator and integers are refused with an astype that works."""
    A = SHAPES["wide"]
    op = pyspmv.Operator(A, config="cpu/csr/rows", rmatvec=True)
    x = np.random.default_rng(1).uniform(-1, 1, A.shape[0])
    T = op.T
    assert T.shape == (A.shape[1], A.shape[0]) and T.config == op.config
    close(T @ x, reference(A.T, x), np.float64)
    close(T.T @ np.ones(A.shape[1]), reference(A, np.ones(A.shape[1])), np.float64)
    with pytest.raises(ValueError, match="rmatvec=True"):
        pyspmv.Operator(A, config="cpu/csr/rows").T
    v = np.random.default_rng(2).uniform(-1, 1, A.shape[1])
    for given in (v.astype(np.float32), v.astype(np.float16), v.astype(">f8"), np.repeat(v, 2)[::2]):
        close(op @ given, reference(A, given.astype(np.float64)), np.float64)
    op32 = pyspmv.Operator(A, config="cpu/csr/rows", dtype=np.float32)
    with pytest.raises(TypeError, match="casts x only where no precision is lost \\(pass x.astype\\(np.float32\\)"):
        op32 @ v
    for bad in (np.arange(A.shape[1]), np.ones(A.shape[1], bool), v.astype(complex)):
        with pytest.raises(TypeError, match="takes float vectors only \\(pass x.astype\\(np.float32\\)\\)"):
            op32 @ bad
        op32 @ bad.real.astype(np.float32)          # the advice works
