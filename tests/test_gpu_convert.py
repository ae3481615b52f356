"""Conversion on the GPU from a CSR that lives there (gpu.convert_on_device): for every format and every
parameter value of the registry's configurations, the device's arrays are the host conversion's bit for
bit, its refusals the host's (type and message), and every CUDA configuration of the format multiplies
correctly on the result.  The argument checks at the end need no GPU.

Real matrices come from PYSPMV_TEST_MATRICES (a folder of .mtx.gz), else from the shared folder conftest
knows (PYSPMV_MATRICES or ../shared/matrices); skipped where neither exists.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import SHARED

import pyspmv
from pyspmv.devices import arrays, gpu
from pyspmv.matrices.formats import format_arguments, format_code

TOL = {"float32": 1e-5, "float64": 1e-12}
DTYPES = ["float32", "float64"]


# ---- what is converted ----

def format_params() -> list[tuple[str, dict[str, int]]]:
    """Every (format, parameters) of the registry's CUDA and CPU configurations, and a few more values
    the registry does not use (HYB's fixed widths, BRO-ELL's 8 and 16 bits, BSR's b = 3, SELL's c = 1)."""
    keys = {(c.format, tuple(sorted(c.format_kwargs.items())))
            for dev in ("cuda", "cpu") for c in pyspmv.configs(dev)}
    keys |= {("hyb", (("k", 0),)), ("hyb", (("k", 3),)), ("hyb", (("k", 1000),)),
             ("bro_ell", (("bits", 8), ("h", 32))), ("bro_ell", (("bits", 16), ("h", 1))),
             ("bsr", (("b", 3),)), ("sell", (("c", 1), ("sigma", 1))), ("sell", (("c", 4), ("sigma", 4)))}
    return [(f, dict(kw)) for f, kw in sorted(keys)]


def host_only(fmt: str, kw: dict[str, int]) -> bool:
    """Layouts made on the host only for now (CSR in a locality order, with or without a value table: the order is
    computed by csrc/order.c on the host): the device refuses them, saying so, instead of copying the matrix back."""
    return fmt == "csr" and kw.get("order", 0) == 1


def refuses_on_device(on: gpu.DeviceMatrix, fmt: str, kw: dict[str, int]) -> str:
    """'' when the device refuses the host-only layout (fmt, kw) with a NotApplicableError naming the host."""
    try:
        gpu.convert_on_device(on, fmt, **kw)
    except pyspmv.NotApplicableError as exc:
        return "" if "host" in str(exc) else f"{fmt}{kw}: the device's refusal does not name the host: {exc}"
    return f"{fmt}{kw}: converted on the device, which host_only() says it does not do"


def _with_empty_rows(m: int, n: int, density: float, seed: int) -> sp.csr_array:
    rng = np.random.default_rng(seed)
    A = sp.random_array((m, n), density=density, format="lil", random_state=rng)
    for i in rng.choice(m, m // 5, replace=False):  # a fifth of the rows empty
        A.rows[i], A.data[i] = [], []
    A = A.tocsr()
    A.data[::7] = 0.0  # explicit zeros
    return A


def _huge_row(n: int, long: int, seed: int) -> sp.csr_array:
    """Rows of 0 to 5 entries and one of `long` entries, with empty rows."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 6, n)
    lengths[n // 3] = long
    rows = np.repeat(np.arange(n), lengths)
    A = sp.csr_array((rng.uniform(-1, 1, rows.size), (rows, rng.integers(0, n, rows.size))), shape=(n, n))
    A.sum_duplicates()
    return A


def _few_values(A: sp.csr_array, step: float) -> sp.csr_array:
    """A with its values rounded to multiples of step: few distinct ones (-0.0 among them where a negative
    value rounds to 0), what JAD's value tables (vals=8, 16) hold."""
    A = A.copy()
    A.data = np.round(A.data / step) * step
    return A


def matrices() -> dict[str, object]:
    rng = np.random.default_rng(7)
    dup_r = rng.integers(0, 400, 6_000)
    dup_c = rng.integers(0, 300, 6_000)
    return {
        "random_empty_rows": _with_empty_rows(2_000, 2_000, 0.01, 1),
        "wide": _with_empty_rows(300, 9_000, 0.02, 2),
        "tall": _with_empty_rows(9_000, 300, 0.02, 3),
        "one_row": sp.random_array((1, 5_000), density=0.3, format="csr", random_state=4),
        "one_column": sp.random_array((5_000, 1), density=0.3, format="csr", random_state=5),
        "one_by_one": sp.csr_array(np.array([[2.5]])),
        "no_entries": sp.csr_array((100, 70)),
        "duplicates_summed": sp.csr_array((rng.uniform(-1, 1, 6_000), (dup_r, dup_c)), shape=(400, 300)),
        "huge_row": _huge_row(20_000, 15_000, 8),
        "wide_deltas": sp.csr_array((np.arange(1.0, 7.0), ([0, 0, 0, 2, 2, 2], [0, 300, 90_000, 5, 70_000, 99_999])),
                                    shape=(3, 100_000)),
        "poisson2d": pyspmv.generate("poisson2d", 120),
        "banded": pyspmv.generate("banded", 30_000),
        "powerlaw": pyspmv.generate("powerlaw", 50_000),  # above 1e5 entries
        "few_values_empty_rows": _few_values(_with_empty_rows(2_000, 1_500, 0.01, 11), 0.25),
        "few_values_huge_row": _few_values(_huge_row(20_000, 15_000, 12), 0.125),
        "four_hundred_values": _few_values(_with_empty_rows(500, 500, 0.05, 13), 1 / 400),
    }


MATRICES = matrices()


def real_matrices() -> list:
    folder = Path(os.environ["PYSPMV_TEST_MATRICES"]) if os.environ.get("PYSPMV_TEST_MATRICES") else SHARED
    files = sorted(folder.glob("*.mtx.gz"), key=lambda p: p.stat().st_size) if folder.is_dir() else []
    if not files:
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"{folder} holds no .mtx.gz"), id="none")]
    return [pytest.param(p, id=p.name.split(".")[0]) for p in files]


# ---- checks ----

def rel_err(A64: sp.csr_array, x: np.ndarray, y: np.ndarray) -> float:
    """max |y - A x| over max (|A| |x|), in float64."""
    x64 = x.astype(np.float64)
    ref = A64 @ x64
    scale = float(np.max(abs(A64) @ np.abs(x64), initial=0.0))
    err = float(np.max(np.abs(y.astype(np.float64) - ref), initial=0.0))
    return err / scale if scale > 0 else err


def first_difference(got: np.ndarray, want: np.ndarray) -> str:
    """Where two arrays differ bit for bit (-0.0 and 0.0, NaN payloads included)."""
    if got.dtype != want.dtype or got.size != want.size:
        return f"{got.size} entries of {got.dtype}; the host has {want.size} of {want.dtype}"
    g = got.view(np.uint8).reshape(got.size, -1)
    w = want.view(np.uint8).reshape(want.size, -1)
    diff = np.flatnonzero((g != w).any(axis=1))
    i = int(diff[0])
    return f"{diff.size} entries differ, the first at {i}: device {got[i]!r}, host {want[i]!r}"


def compare_arrays(label: str, dev: tuple, host: pyspmv.FormatMatrix) -> list[str]:
    """Differences between the device's arrays (``_cuda.Matrix.arrays()``) and the host's state."""
    fmt, nrows, ncols, nnz, params, scalars, idx, val = dev
    st = host.state
    out = []
    if (fmt, nrows, ncols, nnz) != (st.format_name, st.nrows, st.ncols, st.nnz):
        out.append(f"{label}: header {(fmt, nrows, ncols, nnz)}, host {(st.format_name, st.nrows, st.ncols, st.nnz)}")
    if tuple(params) != tuple(st.params):
        out.append(f"{label}: params {params}, host {st.params}")
    if tuple(scalars) != tuple(st.scalars):
        out.append(f"{label}: scalars {scalars}, host {st.scalars}")
    for kind, got, want in (("idx", idx, st.index_arrays), ("val", val, st.value_arrays)):
        for k, (g, w) in enumerate(zip(got, want)):
            if g.dtype != w.dtype or g.tobytes() != w.tobytes():
                out.append(f"{label}: {kind}[{k}]: {first_difference(np.asarray(g), np.asarray(w))}")
    return out


def configs_of(fmt: str, kw: dict[str, int]) -> list:
    """The CUDA configurations that run on a `fmt` matrix converted with `kw` (HYB's kernel reads its
    width from the matrix, so every HYB configuration runs on every width)."""
    return [c for c in pyspmv.configs("cuda") if c.format == fmt and (c.format_kwargs == kw or fmt == "hyb")]


def check_matrix(M: pyspmv.Matrix, dtype: str) -> tuple[list[str], int]:
    """Convert M on the device to every format and parameter set; compare with the host; multiply."""
    A64 = M.astype(np.float64).to_scipy()
    x = np.random.default_rng(0).uniform(-1, 1, M.ncols).astype(dtype)
    x[x == 0] = 0.5
    on = gpu.DeviceMatrix(pyspmv.convert(M, "csr", dtype=dtype))  # the CSR resident on the GPU
    failures, compared = [], 0
    for fmt, kw in format_params():
        label = f"{fmt}{kw} {dtype}"
        if host_only(fmt, kw):
            failures += [w for w in [refuses_on_device(on, fmt, kw)] if w]
            continue
        host = dev = None
        try:
            host = pyspmv.convert(M, fmt, dtype=dtype, **kw)
        except (pyspmv.NotApplicableError, ValueError) as exc:
            host = exc
        try:
            dev = gpu.convert_on_device(on, fmt, **kw)
        except (pyspmv.NotApplicableError, ValueError) as exc:
            dev = exc
        except Exception as exc:  # noqa: BLE001 (every failure of every format is reported, not the first)
            failures.append(f"{label}: device conversion raised {type(exc).__name__}: {exc}")
            continue
        if isinstance(host, Exception) or isinstance(dev, Exception):
            if type(host) is not type(dev) or str(host) != str(dev):
                failures.append(f"{label}: host gave {type(host).__name__}: {host}; device gave "
                                f"{type(dev).__name__}: {dev}")
            continue
        diffs = compare_arrays(label, dev._matrix.arrays(), host)
        failures += diffs
        compared += 1
        if diffs:
            continue
        for c in configs_of(fmt, kw):
            try:
                with gpu.Plan(dev, c) as plan:
                    y = plan.mv(x)
            except pyspmv.NotApplicableError:
                continue
            except Exception as exc:  # noqa: BLE001
                failures.append(f"{label} {c.id}: {type(exc).__name__}: {exc}")
                continue
            err = rel_err(A64, x, y)
            if not err <= TOL[dtype]:  # also catches NaN left by the poison
                failures.append(f"{label} {c.id}: relative error {err:.3g} > {TOL[dtype]:g}")
    return failures, compared


# ---- on the GPU ----

@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(MATRICES))
def test_device_conversion_matches_host(name, dtype):
    failures, compared = check_matrix(pyspmv.Matrix(MATRICES[name], name=name), dtype)
    assert not failures, "\n".join(failures)
    assert compared >= 9  # at least csr, coo, jad and some padded formats converted on both sides


@pytest.mark.gpu
@pytest.mark.shared
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("path", real_matrices())
def test_device_conversion_of_real_matrices(path, dtype):
    M = pyspmv.load(path)
    if M.dtype == np.float64 and dtype == "float32" and np.max(np.abs(M.data), initial=0) > 3e38:
        pytest.skip("values beyond float32's range")
    failures, compared = check_matrix(M, dtype)
    assert not failures, "\n".join(failures)
    assert compared >= 5


@pytest.mark.gpu
def test_refusals_match_the_host():
    """Parameters out of range, padding past max_fill, deltas past fixed bits: as pyspmv.convert."""
    M = pyspmv.Matrix(MATRICES["wide_deltas"])
    on = gpu.DeviceMatrix(pyspmv.convert(M, "csr"))
    cases = [("sell", {"c": 3}, {}), ("sell", {"c": 8, "sigma": 12}, {}), ("bro_ell", {"h": 6}, {}),
             ("bro_ell", {"bits": 12}, {}), ("bro_ell", {"h": 32, "bits": 8}, {}),
             ("bro_ell", {"h": 1, "bits": 16}, {}), ("hyb", {"k": -2}, {}), ("bsr", {"b": 40}, {}),
             ("bsr", {"b": 0}, {}), ("dia", {}, {"max_fill": 0.5}), ("ell", {}, {"max_fill": 0.3}),
             ("hyb", {"k": 1000}, {}), ("bsr", {"b": 32}, {}), ("cidx", {"bits": 12}, {})]
    for fmt, kw, extra in cases:
        with pytest.raises((ValueError, pyspmv.NotApplicableError)) as host:
            pyspmv.convert(M, fmt, **kw, **extra)
        with pytest.raises((ValueError, pyspmv.NotApplicableError)) as dev:
            gpu.convert_on_device(on, fmt, **kw, **extra)
        assert type(dev.value) is type(host.value), (fmt, kw, str(host.value), str(dev.value))
        assert str(dev.value) == str(host.value), (fmt, kw)


@pytest.mark.gpu
def test_result_outlives_its_source():
    M = pyspmv.Matrix(MATRICES["poisson2d"])
    on = gpu.DeviceMatrix(pyspmv.convert(M, "csr"))
    D = gpu.convert_on_device(on, "sell", c=32, sigma=256)
    del on
    x = np.linspace(-1, 1, M.ncols)
    cfg = next(c for c in pyspmv.configs("cuda") if c.id.startswith("pyspmv/sell/c=32/sigma=256"))
    with gpu.Plan(D, cfg) as plan:
        np.testing.assert_allclose(plan.mv(x), M.to_scipy() @ x, rtol=1e-12, atol=1e-12)
    F = gpu.download(D)
    assert F.format == "sell" and F.params == {"c": 32, "sigma": 256}
    np.testing.assert_array_equal(F.to_csr().to_scipy().toarray(), M.to_scipy().toarray())


@pytest.mark.gpu
def test_a_converted_matrix_is_not_a_source():
    M = pyspmv.Matrix(MATRICES["poisson2d"])
    ell = gpu.convert_on_device(gpu.DeviceMatrix(pyspmv.convert(M, "csr")), "ell")
    with pytest.raises(ValueError, match="reads a CSR matrix"):
        gpu.convert_on_device(ell, "coo")
    # a CSR whose values are a table, or in a locality order, is not one a conversion can read either
    for kw in ({"vals": 8}, {"order": 1}):
        other = gpu.DeviceMatrix(pyspmv.convert(M, "csr", **kw))
        with pytest.raises(ValueError, match=r"in its own order with its values as they are"):
            gpu.convert_on_device(other, "coo")


@pytest.mark.gpu
@pytest.mark.filterwarnings("ignore::UserWarning")     # PyTorch's own about its sparse tensors (beta, checks)
@pytest.mark.parametrize("lib", ["cupy", "torch"])
def test_library_csr_read_in_place(lib):
    """A CuPy or PyTorch CSR matrix read in place (DeviceMatrix.wrap_csr) and converted on the device, as
    the host converts it."""
    M = pyspmv.Matrix(MATRICES["random_empty_rows"])
    S = M.to_scipy()
    for dtype in DTYPES:
        if lib == "cupy":
            cpx = pytest.importorskip("cupyx.scipy.sparse")
            G = cpx.csr_matrix(S.astype(dtype))
        else:
            torch = pytest.importorskip("torch")
            G = torch.sparse_csr_tensor(torch.from_numpy(S.indptr.astype(np.int32)).cuda(),
                                        torch.from_numpy(S.indices.astype(np.int32)).cuda(),
                                        torch.from_numpy(S.data.astype(dtype)).cuda(), size=S.shape)
        on = gpu.DeviceMatrix.wrap_csr(arrays.device_csr(G, dtype))
        for fmt, kw in format_params():
            if host_only(fmt, kw):
                assert not refuses_on_device(on, fmt, kw)
                continue
            try:
                host = pyspmv.convert(M, fmt, dtype=dtype, **kw)
            except pyspmv.NotApplicableError as exc:     # the device must refuse it the same way
                with pytest.raises(pyspmv.NotApplicableError) as dev:
                    gpu.convert_on_device(on, fmt, **kw)
                assert str(dev.value) == str(exc)
                continue
            diffs = compare_arrays(f"{lib} {fmt}{kw} {dtype}", gpu.convert_on_device(on, fmt, **kw)._matrix.arrays(),
                                   host)
            assert not diffs, "\n".join(diffs)


@pytest.mark.gpu
def test_unsorted_or_duplicate_columns_refused():
    """The host refuses a CSR whose columns do not increase within a row; so does the device."""
    cp = pytest.importorskip("cupy")
    for cols, msg in (([3, 1], "row 1 has column 1 after column 3"), ([2, 2], "row 1 has column 2 after column 2")):
        ptr = cp.asarray(np.array([0, 1, 3, 3], dtype=np.int32))
        col = cp.asarray(np.array([0, *cols], dtype=np.int32))
        val = cp.asarray(np.ones(3))
        A = arrays.DeviceCSR((3, 4), 3, ptr, col, val, np.dtype(np.float64), (ptr, col, val))
        on = gpu.DeviceMatrix.wrap_csr(A)
        with pytest.raises(ValueError, match=msg):
            gpu.convert_on_device(on, "ell")


@pytest.mark.gpu
@pytest.mark.parametrize("fmt, kw", [
    ("csr", {}), ("coo", {}), ("ell", {}), ("jad", {}), ("dia", {}), ("hyb", {}), ("hyb", {"k": 1}),
    ("sell", {"c": 2, "sigma": 4}), ("sell", {"c": 1, "sigma": 1}), ("bro_ell", {"h": 2, "bits": 0}),
    ("bro_ell", {"h": 2, "bits": 8}), ("bsr", {"b": 2}),
    # a parameter the format refuses: the host checks the CSR first
    ("sell", {"c": 3}), ("bro_ell", {"h": 6}), ("hyb", {"k": -2}), ("bsr", {"b": 0})])
def test_unsorted_columns_refused_by_every_format(fmt, kw):
    """Each format's own passes run before the device's answer about the CSR comes back (one read for
    both); an unsorted row is still refused as the host refuses it, before any parameter or padding."""
    cp = pytest.importorskip("cupy")
    ptr = cp.asarray(np.array([0, 1, 3, 3], dtype=np.int32))
    col = cp.asarray(np.array([0, 3, 1], dtype=np.int32))
    val = cp.asarray(np.ones(3))
    A = arrays.DeviceCSR((3, 4), 3, ptr, col, val, np.dtype(np.float64), (ptr, col, val))
    on = gpu.DeviceMatrix.wrap_csr(A)
    with pytest.raises(ValueError, match="row 1 has column 1 after column 3"):
        gpu.convert_on_device(on, fmt, **kw)
    # and the device is still usable afterwards: a sorted CSR converts
    ok = gpu.DeviceMatrix(pyspmv.convert(pyspmv.Matrix(MATRICES["poisson2d"]), "csr"))
    try:
        gpu.convert_on_device(ok, fmt, **kw)
    except pyspmv.NotApplicableError as exc:            # this matrix does not fit the format: as the host says
        with pytest.raises(pyspmv.NotApplicableError) as host:
            pyspmv.convert(pyspmv.Matrix(MATRICES["poisson2d"]), fmt, **kw)
        assert str(exc) == str(host.value)
    except ValueError as exc:
        assert "parameter of" in str(exc), str(exc)  # the refused parameter, now named


@pytest.mark.gpu
def test_repeated_conversions_reuse_memory():
    """Conversions take their memory from a pool kept across calls: many in a row give the same arrays
    each time and do not eat the device's memory (what a freed result held is reused)."""
    cp = pytest.importorskip("cupy")
    M = pyspmv.Matrix(MATRICES["poisson2d"])
    on = gpu.DeviceMatrix(pyspmv.convert(M, "csr"))
    cases = [("ell", {}), ("sell", {"c": 32, "sigma": 256}), ("bro_ell", {"h": 32, "bits": 0}), ("hyb", {}),
             ("dia", {}), ("jad", {}), ("coo", {})]
    first = {fmt: gpu.convert_on_device(on, fmt, **kw)._matrix.arrays() for fmt, kw in cases}
    free0 = cp.cuda.runtime.memGetInfo()[0]
    for _ in range(20):
        for fmt, kw in cases:
            D = gpu.convert_on_device(on, fmt, **kw)
            again = D._matrix.arrays()
            del D
            for a, b in zip(first[fmt][6] + first[fmt][7], again[6] + again[7]):
                np.testing.assert_array_equal(a, b, err_msg=fmt)
            assert first[fmt][:6] == again[:6], fmt
    free1 = cp.cuda.runtime.memGetInfo()[0]
    assert free0 - free1 < 64 << 20, f"{(free0 - free1) / 2**20:.1f} MiB more in use after 140 conversions"


@pytest.mark.gpu
def test_conversions_from_several_threads():
    """The pool and the pinned slots the sizes are read into are shared: conversions running at once in
    several threads each get the host's arrays."""
    from concurrent.futures import ThreadPoolExecutor
    M = pyspmv.Matrix(MATRICES["poisson2d"])
    on = gpu.DeviceMatrix(pyspmv.convert(M, "csr"))
    cases = [("ell", {}), ("sell", {"c": 32, "sigma": 4096}), ("bro_ell", {"h": 128, "bits": 32}), ("hyb", {}),
             ("dia", {}), ("jad", {}), ("coo", {}), ("csr", {})]
    host = {fmt: pyspmv.convert(M, fmt, dtype="float64", **kw) for fmt, kw in cases}

    def work(k: int) -> list[str]:
        fmt, kw = cases[k % len(cases)]
        return compare_arrays(f"thread {k} {fmt}", gpu.convert_on_device(on, fmt, **kw)._matrix.arrays(),
                              host[fmt])

    with ThreadPoolExecutor(max_workers=6) as ex:
        failures = [d for diffs in ex.map(work, range(48)) for d in diffs]
    assert not failures, "\n".join(failures)


# ---- argument checks (no GPU needed) ----

def test_unknown_format_refused_before_the_device():
    with pytest.raises(ValueError, match="'fmt' parameter"):
        gpu.convert_on_device(None, "csc")


def test_unknown_parameter_refused():
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) \['k'\] for format 'sell'"):
        gpu.convert_on_device(None, "sell", k=3)
    with pytest.raises(ValueError, match="takes none"):
        gpu.convert_on_device(None, "ell", c=3)


@pytest.mark.parametrize("value", [True, 2.0, "8", None])
def test_parameter_must_be_an_integer(value):
    with pytest.raises(TypeError, match="'c' parameter of convert_on_device"):
        gpu.convert_on_device(None, "sell", c=value)


def test_parameter_must_be_int32():
    with pytest.raises(ValueError, match=r"int32 in \[-2147483648, 2147483647\]"):
        gpu.convert_on_device(None, "bsr", b=2**31)


@pytest.mark.parametrize("fill", [0, -1.0, True, "20", float("nan")])
def test_max_fill_must_be_positive(fill):
    with pytest.raises(ValueError, match="'max_fill' parameter of convert_on_device"):
        gpu.convert_on_device(None, "ell", max_fill=fill)


def test_source_must_be_a_device_matrix():
    M = pyspmv.convert(pyspmv.generate("poisson2d", 5), "csr")
    with pytest.raises(TypeError, match="DeviceMatrix holding a CSR"):
        gpu.convert_on_device(M, "ell")


def test_parameters_take_the_format_defaults():
    code, full, p = format_arguments("bro_ell", 20.0, {"H": 64}, "convert_on_device()")
    assert full == {"h": 64, "bits": 0} and p[:2] == [64, 0] and code == format_code("bro_ell")
    _, full, p = format_arguments("dia", 1.5, {}, "convert_on_device()")
    assert full == {} and p[:2] == [0, 0]


def test_every_format_has_a_device_conversion():
    """kernels/convert.cu's table names spmv_conv_<name> for every format of csrc/formats.def; each is defined
    beside the format's kernels in kernels/<name>.cu (a format without one would not link)."""
    root = Path(__file__).resolve().parents[1]
    if not (root / "kernels").is_dir():
        pytest.skip("no kernels/ folder beside the tests")
    for name in pyspmv.FORMATS:
        src = root / "kernels" / f"{name}.cu"
        assert src.is_file() and f"int spmv_conv_{name}(spmv_conv *C, spmv_err *err)" in src.read_text(), name


# ---- a host Matrix uploaded from its own arrays ----

@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(MATRICES))
def test_upload_from_the_matrix_arrays_matches_the_host_csr(name, dtype):
    """DeviceMatrix.upload_csr (no host copy first) holds exactly the CSR that convert() makes, and converts on
    the device as that one does."""
    M = pyspmv.Matrix(MATRICES[name], name=name, dtype=dtype)
    D = gpu.DeviceMatrix.upload_csr(M)
    assert D.dtype == M.dtype and D.shape == M.shape and D.format == "csr"
    back, host = gpu.download(D).state, pyspmv.convert(M, "csr").state
    for a, b in zip((*back.index_arrays, *back.value_arrays), (*host.index_arrays, *host.value_arrays)):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    jad = gpu.download(gpu.convert_on_device(D, "jad")).state
    want = pyspmv.convert(M, "jad").state
    assert all(np.array_equal(a, b) for a, b in zip((*jad.index_arrays, *jad.value_arrays),
                                                    (*want.index_arrays, *want.value_arrays)))


@pytest.mark.gpu
@pytest.mark.parametrize("ptr, col, val, msg", [
    ([0, 2, 3], [1, 0, 2], [1.0, 2.0, 3.0], "column"),                  # unsorted in row 0
    ([0, 1, 3], [0, 1, 9], [1.0, 2.0, 3.0], "column"),                  # column 9 of 4
    ([0, 1, 3], [0, 1, 2], [1.0, 2.0], "as many values as columns"),     # lengths differ
    ([0, 1], [0], [1.0], "nrows \\+ 1 row pointers"),                    # too few row pointers
    ([0, 3, 1], [0, 1, 2], [1.0, 2.0, 3.0], "indptr")])                  # row pointers that go back
def test_upload_csr_refuses_a_bad_csr(ptr, col, val, msg):
    """The raw upload checks the arrays as a State is checked, before anything is uploaded."""
    with pytest.raises(ValueError, match=msg):
        gpu.cuda().upload_csr(2, 4, np.array(ptr, np.int32), np.array(col, np.int32), np.array(val))
