"""The public API, listed once (scipy's test_public_api.py does the same): the public modules of pyspmv (no part
of the dotted path starts with an underscore) and the names that pyspmv and each public subpackage export (their
``__all__``). A module or an exported name that appears or disappears fails here until the lists below say so:
adding to the public API, or taking from it, is then a visible decision (and a line in CHANGELOG.md).

Research code (benchmarks/, studies/) reaches pyspmv through these exported names, or through the one module
that names, with its reason, each deeper name it needs (benchmarks/_internal.py)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import ast
import importlib
import pkgutil
import types
from pathlib import Path

import pytest

import pyspmv

#: Every public module: pyspmv and those below it with no part of the path starting with an underscore.
PUBLIC_MODULES = [
    "pyspmv",
    "pyspmv.cli",
    "pyspmv.cli.about",
    "pyspmv.cli.bench",
    "pyspmv.cli.calibrate",
    "pyspmv.cli.clib",
    "pyspmv.cli.collect",
    "pyspmv.cli.common",
    "pyspmv.cli.configs",
    "pyspmv.cli.export",
    "pyspmv.cli.features",
    "pyspmv.cli.info",
    "pyspmv.cli.parser",
    "pyspmv.cli.rank",
    "pyspmv.cli.train",
    "pyspmv.cli.train_default",
    "pyspmv.datasets",
    "pyspmv.datasets.collect",
    "pyspmv.datasets.corpus",
    "pyspmv.datasets.load",
    "pyspmv.devices",
    "pyspmv.devices.arrays",
    "pyspmv.devices.benchmark",
    "pyspmv.devices.gpu",
    "pyspmv.devices.machine",
    "pyspmv.devices.run",
    "pyspmv.devices.spmv",
    "pyspmv.evaluate",
    "pyspmv.matrices",
    "pyspmv.matrices.configs",
    "pyspmv.matrices.features",
    "pyspmv.matrices.formats",
    "pyspmv.matrices.generators",
    "pyspmv.matrices.matrix",
    "pyspmv.matrices.mmio",
    "pyspmv.models",
    "pyspmv.models.analytic",
    "pyspmv.models.boosted",
    "pyspmv.models.classifiers",
    "pyspmv.models.forest",
    "pyspmv.models.knn",
    "pyspmv.models.linear",
    "pyspmv.operator",
    "pyspmv.plot",
    "pyspmv.ranking",
    "pyspmv.ranking.checks",
    "pyspmv.ranking.export",
    "pyspmv.ranking.layout",
    "pyspmv.ranking.modelfile",
    "pyspmv.ranking.portable",
    "pyspmv.ranking.precision",
    "pyspmv.ranking.rank",
    "pyspmv.ranking.rankmodel",
    "pyspmv.ranking.result",
    "pyspmv.ranking.sampled",
    "pyspmv.ranking.schema",
    "pyspmv.ranking.shipped",
    "pyspmv.ranking.spec",
    "pyspmv.ranking.tables",
    "pyspmv.ranking.targets",
    "pyspmv.ranking.verify",
    "pyspmv.solvers",
    "pyspmv.solvers.device",
    "pyspmv.solvers.krylov",
    "pyspmv.solvers.record",
    "pyspmv.solvers.setup",
    "pyspmv.solvers.switching",
    "pyspmv.training",
    "pyspmv.training.adapt",
    "pyspmv.training.calibrate",
    "pyspmv.training.defaults",
    "pyspmv.training.rounds",
    "pyspmv.training.train_default",
]

#: What pyspmv and each public subpackage export (``__all__``; a subpackage without one exports nothing: its
#: modules are reached by their path), and any other public module that declares an ``__all__``.
PUBLIC_NAMES = {
    "pyspmv": [
        "BusyMachineError", "BusyMachineWarning", "CONFIG_FEATURE_NAMES", "CalibratedModelWarning", "Calibration",
        "Config", "DeviceUnavailableError", "FEATURE_NAMES", "FORMATS", "FormatMatrix", "Matrix", "NoisyTimingWarning",
        "NotApplicableError", "Operator", "OtherMachineWarning", "RankModel", "Ranking", "benchmark", "calibrate",
        "calibrated_model", "collect", "config", "config_features", "configs", "convert", "datasets", "default_model",
        "device_info", "export_c", "features", "generate", "load", "load_model", "portable", "rank", "save_model",
        "spmv",
    ],
    "pyspmv.cli": ["EXIT_BROKEN_PIPE", "MODEL_SUFFIX", "SAID", "TOP_DEFAULT", "USER_ERRORS", "main", "say_warning"],
    "pyspmv.datasets": [
        "CorpusEntry", "DamagedPartWarning", "Dataset", "X_COLUMNS", "available", "collect", "combine", "consolidate",
        "design_rows", "folder_corpus", "load", "real_corpus", "scaled_corpus", "standard_corpus", "suitesparse",
    ],
    "pyspmv.devices": [],
    "pyspmv.matrices": [],
    "pyspmv.models": [
        "BoostedModel", "CascadeModel", "FeatureTransform", "ForestModel", "GuoModel", "KNNModel", "LinearModel",
        "MODELS", "SVMModel", "Schema", "WangModel",
    ],
    "pyspmv.plot": ["benchmark", "predicted_vs_measured", "ranking", "ranking_quality", "spy"],
    "pyspmv.ranking": [],
    "pyspmv.solvers": [
        "BREAKDOWN", "BREAKDOWN_OMEGA", "DEFAULT_CONFIG", "POLICIES", "SolveRecord", "bicgstab", "cg",
        "expected_iterations", "gmres",
    ],
    "pyspmv.training": [],
}

#: The modules that ``import pyspmv`` makes reachable as its attributes (on first use), beside ``__all__``.
LAZY_MODULES = ["datasets", "evaluate", "models", "plot", "solvers"]


def _public(name: str) -> bool:
    return not any(part.startswith("_") for part in name.split("."))


def found_modules() -> list[str]:
    """The public modules of the installed package, found by walking it (subpackages are imported to be walked)."""
    names = [m.name for m in pkgutil.walk_packages(pyspmv.__path__, "pyspmv.")]
    return sorted(n for n in ["pyspmv", *names] if _public(n))


def test_public_modules_are_listed():
    found = found_modules()
    assert sorted(set(found) - set(PUBLIC_MODULES)) == [], "new public modules: list them in PUBLIC_MODULES (or " \
        "give them a leading underscore)"
    assert sorted(set(PUBLIC_MODULES) - set(found)) == [], "public modules gone: take them out of PUBLIC_MODULES"
    assert PUBLIC_MODULES == sorted(PUBLIC_MODULES)


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_public_module_imports(name):
    assert isinstance(importlib.import_module(name), types.ModuleType)


def exported(module: types.ModuleType) -> list[str] | None:
    """A module's ``__all__``, or, for a package without one, its own public names that are not modules (none is
    expected: a subpackage's modules are reached by path), or None for a module without ``__all__``."""
    if hasattr(module, "__all__"):
        return sorted(module.__all__)
    if not hasattr(module, "__path__"):
        return None
    return sorted(n for n, v in vars(module).items() if _public(n) and not isinstance(v, types.ModuleType))


def test_exported_names_are_listed():
    """pyspmv's and each public subpackage's exports, and every public module that declares ``__all__``."""
    for name in PUBLIC_MODULES:
        names = exported(importlib.import_module(name))
        if names is None:
            assert name not in PUBLIC_NAMES, f"{name} declares no __all__: take it out of PUBLIC_NAMES"
            continue
        assert name in PUBLIC_NAMES, f"{name} exports {names}: list them in PUBLIC_NAMES"
        listed = PUBLIC_NAMES[name]
        assert sorted(set(names) - set(listed)) == [], f"new names exported by {name}: list them in PUBLIC_NAMES"
        assert sorted(set(listed) - set(names)) == [], f"names {name} no longer exports: take them out of PUBLIC_NAMES"
        assert len(names) == len(set(names)), f"{name}.__all__ names one twice"


def test_exported_names_exist():
    """Each name resolves (pyspmv's lazy ones included, on first use) and ``dir()`` shows it."""
    for name, names in PUBLIC_NAMES.items():
        module = importlib.import_module(name)
        for n in names:
            assert getattr(module, n) is not None, f"{name}.{n}"
        assert set(names) <= set(dir(module)), name
    for n in LAZY_MODULES:
        assert isinstance(getattr(pyspmv, n), types.ModuleType) and n in dir(pyspmv)


# ---- research code reaches pyspmv through the exported names, or benchmarks/_internal.py ------------------------

ROOT = Path(__file__).resolve().parents[1]
INTERNAL = ROOT / "benchmarks" / "_internal.py"
RESEARCH = sorted([*ROOT.glob("benchmarks/*.py"), *ROOT.glob("studies/*.py"), *ROOT.glob("studies/*/*.py")])


def _allowed(dotted: str) -> bool:
    """``pyspmv`` or one of its listed packages and modules itself (``pyspmv.solvers``), a name one of them
    exports (``pyspmv.rank``, ``pyspmv.datasets.load``), or ``pyspmv.__version__``."""
    if dotted in PUBLIC_NAMES or dotted == "pyspmv.__version__":
        return True
    module, _, name = dotted.rpartition(".")
    return name in PUBLIC_NAMES.get(module, ())


def reached(tree: ast.Module) -> set[str]:
    """What a script reaches of pyspmv: each name it imports from it, each module it imports, and each chain of
    attributes on ``pyspmv`` two deep or more (``pyspmv.datasets.load``)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "pyspmv":
            out |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "pyspmv"}
        elif isinstance(node, ast.Attribute):
            parts = []
            inner: ast.expr = node
            while isinstance(inner, ast.Attribute):
                parts.append(inner.attr)
                inner = inner.value
            if isinstance(inner, ast.Name) and inner.id == "pyspmv" and len(parts) >= 2:
                out.add(".".join(["pyspmv", *reversed(parts)][:3]))
    return out


def test_reached_finds_deep_names():
    tree = ast.parse("import pyspmv\nimport pyspmv.solvers as S\nfrom pyspmv.evaluate import ranking\n"
                     "from pyspmv import rank, datasets\npyspmv.datasets.load('cpu')\npyspmv.devices.gpu.Plan\n")
    assert {n for n in reached(tree) if not _allowed(n)} == {"pyspmv.evaluate.ranking", "pyspmv.devices.gpu"}


@pytest.mark.skipif(not INTERNAL.is_file(), reason="no benchmarks/ (an installed package)")
@pytest.mark.parametrize("script", [p for p in RESEARCH if p != INTERNAL], ids=lambda p: str(p.relative_to(ROOT)))
def test_research_reaches_pyspmv_through_the_list(script):
    beyond = sorted(n for n in reached(ast.parse(script.read_text(encoding="utf-8"))) if not _allowed(n))
    assert beyond == [], (f"{script.relative_to(ROOT)} reaches {beyond}, which pyspmv's packages do not export: "
                          "use the public API, or import it from benchmarks/_internal.py, saying there why")
