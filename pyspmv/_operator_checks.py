"""What is wrong with the arguments of an :class:`pyspmv.Operator` product, said by name: the checks the
product runs only once the core has refused its arguments (the fast path checks nothing twice), and the
two it runs first (the scalars, ``beta`` without ``out``)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

from numbers import Real
from typing import Any

import numpy as np

from . import _core
from .devices import arrays


def needs_out(beta: Any, what: str) -> None:
    """A product without ``out`` has no y to update: ``beta`` must be 0."""
    if beta != 0.0:
        raise ValueError(f"The 'beta' parameter of {what}() is {beta!r}: y = alpha A x + beta y needs 'out' "
                         "(the y to update).")


def diagnose(side: Any, x: Any, out: Any, alpha: Any, beta: Any, what: str) -> None:
    """Raise the error that names what is wrong with the arguments of a product the core refused (``side``:
    the operator's ``_Side``); return when nothing is (the core's own error then stands)."""
    if not side.live:
        raise ValueError("This Operator has been closed.")
    scalars(alpha, beta, what)
    _check_vector(x, "x", side.xshape[0], side, what)
    if out is not None:
        _check_vector(out, "out", side.nrows, side, what)
        if out.flags.writeable is False:
            raise ValueError(f"The 'out' parameter of {what}() is read-only; pass a writeable array.")
        if np.may_share_memory(x, out):
            raise ValueError(f"The 'out' parameter of {what}() overlaps 'x'; the product would read what it "
                             "writes. Pass another array.")
    if side.finite_x:
        bad = _core.finite_check(x)
        if bad is not None:
            raise ValueError(f"x[{bad}] is {x[bad]}: the {side.format} format multiplies its padding zeros "
                             "by x, which would turn them into NaN. Use a finite x or another format.")


def scalars(alpha: Any, beta: Any, what: str) -> None:
    """Refuse an ``alpha`` or ``beta`` that is not a real number, or past float64's range."""
    for name, v in (("alpha", alpha), ("beta", beta)):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (Real, np.floating, np.integer)):
            raise TypeError(f"The '{name}' parameter of {what}() must be a real number. Got {v!r} instead.")
        try:
            float(v)
        except OverflowError:
            raise ValueError(f"The '{name}' parameter of {what}() is past float64's range (|{name}| <= "
                             f"{np.finfo(np.float64).max:.4g}); the product computes in float64 at most. Got an "
                             f"int of {int(v).bit_length()} bits.") from None


def _check_vector(v: Any, name: str, n: int, side: Any, what: str) -> None:
    """Raise the error that says what is wrong with vector ``v`` (``x`` or ``out``), if anything is."""
    dt = side.dtype
    where = f"The '{name}' parameter of {what}()"
    if not isinstance(v, np.ndarray):
        if arrays.is_device_array(v):
            raise TypeError(f"{where} is a {type(v).__module__}.{type(v).__name__}, which may live on a GPU; "
                            "this operator runs on the CPU: pass a NumPy array, or build it with device='cuda'.")
        raise TypeError(f"{where} must be a NumPy array. Got {type(v).__name__} instead (np.asarray() it).")
    if v.shape != (n,):
        raise ValueError(f"{where} has shape {v.shape}; it must be ({n},), or ({n}, k) for a block of k vectors.")
    if name == "out" and v.dtype != dt and v.dtype.newbyteorder("=") == dt:
        raise TypeError(f"{where} has dtype {v.dtype.str!r}: {dt} in the other byte order, which this operator "
                        f"would write as other numbers: it writes {dt} in place (pass an array of dtype {dt}).")
    if v.dtype.kind != "f":
        raise TypeError(f"{where} has dtype {v.dtype}; this operator computes in {dt} and takes float vectors only "
                        f"(pass {name}.astype(np.{dt})).")
    if name == "out" and v.dtype != dt:
        raise TypeError(f"{where} has dtype {v.dtype}; the product writes {dt} in place (pass an array of dtype "
                        f"{dt}, or build the Operator with dtype={v.dtype.name!r}).")
    if v.dtype != dt and not np.can_cast(v.dtype, dt, "safe"):
        raise TypeError(f"{where} has dtype {v.dtype}; this operator computes in {dt} and casts x only where no "
                        f"precision is lost (pass {name}.astype(np.{dt}), or build the Operator with "
                        f"dtype={v.dtype.name!r}).")
    if not v.flags.c_contiguous:
        raise ValueError(f"{where} is not contiguous (strides {v.strides}); pass np.ascontiguousarray({name}).")
