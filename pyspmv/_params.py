"""Declared parameter constraints and the one validator that checks them, in scikit-learn's wording.

A function declares what each parameter must be as a table of constraints, once, beside it, and calls
:func:`validate` at its door::

    _PARAMS = {"device": OneOf(DEVICES), "repeats": Interval("int", 1), "warmup": Interval("int", 0)}

    def benchmark(A, device="cpu", repeats=50, warmup=5):
        validate("benchmark()", _PARAMS, locals())

:func:`validate` checks the parameters in the table's order and raises at the first that fails, with
"The 'repeats' parameter of benchmark() must be an int >= 1. Got 0 instead." (the constraint's
:meth:`~Constraint.describe` after "must be"; its ``error`` class, ValueError unless it says otherwise).
``values`` is any mapping from names to values: ``locals()`` at the top of a function, ``vars(self)``
in an estimator. The constraints:

- :class:`OneOf`: a value among given options (``style`` says how the message lists them);
- :class:`Interval`: a number in a range, of a kind (an int, a float, a number, or any comparable);
- :class:`InstanceOf`: an instance of given types (TypeError);
- :class:`Satisfies`: any test, with its own words;
- :class:`AnyOf`: one of several constraints ("an int >= 1 or 'auto'").

A check that needs more than one parameter, or a message that says more than "must be ... Got ...",
stays a few lines of its own where it is used, written once.

Adopting it where checks are still written by hand (``pyspmv/solvers/``, ``pyspmv/ranking/rank.py``): a
function whose caller is named at run time passes that name as ``fn`` (``validate(f"{fn}()", ...)``);
``positive_int(v, name, fn, minimum=m)`` is ``Interval("int", m)``; a finite real ``>= 0`` is
``Interval("number", 0)`` (NaN fails every bound; a TypeError there is :class:`InstanceOf` first, since a
table stops at its first failure); ``x not in (...)`` with "must be 'a' or 'b'" is ``OneOf((...), "or")``
and "must be one of ('a', 'b')" is ``OneOf((...))``. Keep the table beside the function, in the order the
checks ran, so that the first parameter named stays the same.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["AnyOf", "Constraint", "InstanceOf", "Interval", "OneOf", "Satisfies", "either", "message", "validate"]


def either(options: Any) -> str:
    """``options`` as prose: ``'cpu', 'cuda' or None``."""
    shown = [repr(o) for o in options]
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"


class Constraint:
    """What a parameter must be: a test (:meth:`holds`), the words after "must be" (:meth:`describe`), how
    the value is shown after "Got" (:meth:`shown`), and the exception class raised when it fails."""

    error: type[Exception] = ValueError

    def holds(self, value: Any) -> bool:
        """Whether ``value`` meets the constraint (a TypeError from a comparison counts as no)."""
        raise NotImplementedError

    def describe(self) -> str:
        """The words after "must be"."""
        raise NotImplementedError

    def shown(self, value: Any) -> str:
        """``value`` as the message shows it after "Got"."""
        return repr(value)


@dataclass(frozen=True)
class OneOf(Constraint):
    """One of ``options``. ``style``: ``"tuple"`` says "one of ('cpu', 'cuda')" (the options as given),
    ``"or"`` says "'cpu' or 'cuda'", ``"list"`` says "one of 'cpu', 'cuda'", ``"names"`` says
    "one of cpu, cuda"."""

    options: Any
    style: str = "tuple"

    def holds(self, value: Any) -> bool:
        try:
            return bool(value in self.options)
        except (TypeError, ValueError):      # an unhashable value, an array's ambiguous truth
            return False

    def describe(self) -> str:
        if self.style == "or":
            return either(self.options)
        if self.style == "list":
            return f"one of {', '.join(map(repr, self.options))}"
        if self.style == "names":
            return f"one of {', '.join(map(str, self.options))}"
        return f"one of {self.options}"


#: The words before an interval's bounds, by kind.
_KINDS = {"int": "an int ", "float": "a float ", "number": "a number ", None: ""}


@dataclass(frozen=True)
class Interval(Constraint):
    """A number from ``low`` to ``high`` (either None: unbounded), ``closed`` ``"left"``, ``"right"``,
    ``"both"`` or ``"neither"``. ``kind``: ``"int"`` (an integral number, NumPy's too; a bool only with
    ``bools``), ``"number"`` or ``"float"`` (a real number, NumPy's too, no bool: the two differ only in
    the message's words) or None (the value compared as it is). ``note`` follows the bounds in the message
    (" s", " (a q75/q25 ratio)")."""

    kind: str | None
    low: float | None = None
    high: float | None = None
    closed: str = "left"
    note: str = ""
    bools: bool = False

    def holds(self, value: Any) -> bool:
        if self.kind is not None and isinstance(value, bool | np.bool_) and not (self.bools and self.kind == "int"):
            return False
        if self.kind == "int" and not isinstance(value, numbers.Integral):
            return False
        if self.kind in ("number", "float") and not isinstance(value, numbers.Real):
            return False
        left, right = self.closed in ("left", "both"), self.closed in ("right", "both")
        if self.low is not None and not (value >= self.low if left else value > self.low):
            return False
        return self.high is None or bool(value <= self.high if right else value < self.high)

    def describe(self) -> str:
        left, right = self.closed in ("left", "both"), self.closed in ("right", "both")
        if self.low is not None and self.high is not None:
            bounds = f"in {'[' if left else '('}{self.low}, {self.high}{']' if right else ')'}"
        elif self.low is not None:
            bounds = f"{'>=' if left else '>'} {self.low}"
        else:
            bounds = f"{'<=' if right else '<'} {self.high}"
        return f"{_KINDS[self.kind]}{bounds}{self.note}"


@dataclass(frozen=True)
class InstanceOf(Constraint):
    """An instance of ``types``, described by ``text``; TypeError. ``by_type``: the message shows the
    value's type name rather than the value."""

    types: type | tuple[type, ...]
    text: str
    by_type: bool = False
    error: type[Exception] = TypeError

    def holds(self, value: Any) -> bool:
        return isinstance(value, self.types)

    def describe(self) -> str:
        return self.text

    def shown(self, value: Any) -> str:
        return type(value).__name__ if self.by_type else repr(value)


@dataclass(frozen=True)
class Satisfies(Constraint):
    """Whatever ``test`` accepts, described by ``text``."""

    test: Callable[[Any], bool]
    text: str
    error: type[Exception] = ValueError

    def holds(self, value: Any) -> bool:
        return bool(self.test(value))

    def describe(self) -> str:
        return self.text


@dataclass(frozen=True)
class AnyOf(Constraint):
    """Any one of ``constraints`` ("an int >= 1 or 'auto'"); the first one's error class."""

    constraints: tuple[Constraint, ...]

    def holds(self, value: Any) -> bool:
        return any(c.holds(value) for c in self.constraints)

    def describe(self) -> str:
        return " or ".join(c.describe() for c in self.constraints)

    @property
    def error(self) -> type[Exception]:  # type: ignore[override]
        return self.constraints[0].error


def message(name: str, fn: str | None, c: Constraint, value: Any) -> str:
    """The message for parameter ``name`` of ``fn`` (``"calibrate()"``, ``"KNNModel"``; None: no owner
    named) whose ``value`` fails ``c``."""
    of = f" of {fn}" if fn else ""
    return f"The '{name}' parameter{of} must be {c.describe()}. Got {c.shown(value)} instead."


def validate(fn: str | None, table: Mapping[str, Constraint], values: Mapping[str, Any]) -> None:
    """Check ``values[name]`` against each constraint of ``table``, in order; raise the first failure's
    error with :func:`message`. A value that cannot even be compared raises TypeError with the same
    message."""
    for name, c in table.items():
        v = values[name]
        try:
            ok = c.holds(v)
        except TypeError:
            raise TypeError(message(name, fn, c, v)) from None
        if not ok:
            raise c.error(message(name, fn, c, v))
