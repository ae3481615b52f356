"""kernels/gpu_arch.py, the choice of the CUDA kernels' architectures (meson options cuda and gpu_arch; README's
set-up): ``auto`` gives machine code for the GPUs nvidia-smi reports and, without a GPU, no CUDA build unless
``-Dcuda=enabled`` (then PTX of 8.0 alone); a list gives machine code for each plus PTX of the highest. Run with
a fake nvidia-smi and nvcc on PATH, so that it needs no GPU and no CUDA toolkit; then meson's configure with that
nvidia-smi, where nvcc and meson are found."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "kernels" / "gpu_arch.py"
#: What nvcc 13.0 lists with --list-gpu-code.
NVCC_13 = "sm_75 sm_80 sm_86 sm_87 sm_88 sm_89 sm_90 sm_100 sm_110 sm_103 sm_120 sm_121"


def _exe(path: Path, stdout: str, status: int = 0) -> Path:
    """A program printing ``stdout`` and exiting with ``status``, by shell builtins alone (PATH holds only fakes)."""
    lines = "".join(f"printf '%s\\n' {shlex.quote(ln)}\n" for ln in stdout.split("\n"))
    path.write_text(f"#!/bin/sh\n{lines}exit {status}\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def machine(tmp_path):
    """``machine(smi=..., query=...)``: a folder on PATH holding a fake nvcc (nvcc 13.0's architectures), a fake
    nvidia-smi printing ``smi`` (none where None; ``status`` its exit status), and beside nvcc a fake
    ``__nvcc_device_query`` printing ``query`` (none where None). Returns the script's run for given values of
    gpu_arch, with the option cuda ``enabled`` unless told."""
    def make(smi: str | None = None, status: int = 0, query: str | None = None, nvcc_codes: str = NVCC_13):
        bin_ = tmp_path / "bin"
        bin_.mkdir(exist_ok=True)
        nvcc = _exe(bin_ / "nvcc", "\n".join(nvcc_codes.split()))
        if smi is not None:
            _exe(bin_ / "nvidia-smi", smi, status)
        if query is not None:
            _exe(bin_ / "__nvcc_device_query", query)
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}     # not ASan into the fakes
        env["PATH"] = str(bin_)                       # the fakes only: a real nvidia-smi stays out of sight

        def run(*values: str, cuda: str = "enabled") -> subprocess.CompletedProcess:
            return subprocess.run([sys.executable, str(SCRIPT), str(nvcc), cuda, *values], capture_output=True,
                                  text=True, env=env, check=False)
        return run
    return make


def _chosen(p: subprocess.CompletedProcess) -> tuple[str, list[str]]:
    assert p.returncode == 0, p.stderr
    first, *args = p.stdout.strip().split("\n")
    return first, args


def test_auto_without_a_gpu_builds_nothing_unless_cuda_is_enabled(machine):
    """No nvidia-smi, or one that cannot reach a driver: no CUDA build with -Dcuda=auto (the default), PTX of
    compute_80 and no machine code with -Dcuda=enabled."""
    assert _chosen(machine()("auto", cuda="auto")) == ("none", [])
    assert _chosen(machine()("auto")) == ("compute_80", ["-gencode", "arch=compute_80,code=compute_80"])
    no_driver = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    run = machine(smi=no_driver, status=9)
    assert _chosen(run("auto"))[0] == "compute_80" and _chosen(run("auto", cuda="auto"))[0] == "none"
    assert _chosen(run("90", cuda="auto"))[0] == "90 compute_90"     # architectures named: built without a GPU


def test_auto_with_gpus_is_their_machine_code(machine):
    """An H200 (nvidia-smi says 9.0): sm_90 and PTX of 9.0; two kinds of GPU: machine code for each, once."""
    assert _chosen(machine(smi="9.0")("auto", cuda="auto")) == (
        "90 compute_90", ["-gencode", "arch=compute_90,code=sm_90", "-gencode", "arch=compute_90,code=compute_90"])
    assert _chosen(machine(smi="8.6\n9.0\n9.0\n8.6")("auto"))[0] == "86 90 compute_90"


def test_auto_asks_nvccs_device_query_where_nvidia_smi_cannot_say(machine):
    """A driver too old for nvidia-smi's compute_cap field: __nvcc_device_query beside nvcc."""
    old = 'Field "compute_cap" is not a valid field to query.'
    assert _chosen(machine(smi=old, status=2, query="86")("auto"))[0] == "86 compute_86"


def test_auto_with_a_gpu_newer_or_older_than_nvcc(machine):
    """Newer than every architecture nvcc builds: the newest PTX it writes, compiled by the driver. Older: left
    out, saying so; with nothing left, the choice of a machine without a GPU."""
    assert _chosen(machine(smi="12.0", nvcc_codes="sm_80 sm_90")("auto"))[0] == "compute_90"
    p = machine(smi="7.0\n9.0", nvcc_codes="sm_80 sm_90")("auto")
    assert _chosen(p)[0] == "90 compute_90" and "compute capability 7.0 is older" in p.stderr
    assert _chosen(machine(smi="7.0", nvcc_codes="sm_80 sm_90")("auto"))[0] == "compute_80"
    assert _chosen(machine(smi="7.0", nvcc_codes="sm_80 sm_90")("auto", cuda="auto"))[0] == "none"


def test_a_list_is_machine_code_for_each_plus_ptx_of_the_highest(machine):
    run = machine(smi="9.0")      # a GPU on the machine changes nothing
    assert _chosen(run("90", "80")) == ("90 80 compute_90", [
        "-gencode", "arch=compute_90,code=sm_90", "-gencode", "arch=compute_80,code=sm_80",
        "-gencode", "arch=compute_90,code=compute_90"])
    assert _chosen(run("compute_80"))[0] == "compute_80"
    assert _chosen(run("86", "compute_80"))[0] == "86 compute_80 compute_86"


@pytest.mark.parametrize(("values", "message"), [
    (("9.0",), "9.0 is not auto, a compute capability such as 90"),
    (("auto", "90"), "auto stands alone"),
    (("sm_90",), "sm_90 is not auto"),
])
def test_a_value_it_does_not_read_is_refused(machine, values, message):
    p = machine()(*values)
    assert p.returncode == 1 and message in p.stderr and p.stdout == ""


NVCC = shutil.which("nvcc")
MESON = shutil.which("meson", path=str(Path(sys.executable).parent)) or shutil.which("meson")


@pytest.mark.skipif(NVCC is None or MESON is None, reason="needs nvcc and meson on PATH")
@pytest.mark.parametrize(("option", "smi", "recorded"), [
    ([], "8.6", "86 compute_86"),
    ([], None, ""),
    (["-Dcuda=enabled"], None, "compute_80"),
    (["-Dgpu_arch=80,90"], "8.6", "80 90 compute_90"),
])
def test_meson_configure_passes_the_choice_to_nvcc(tmp_path, option, smi, recorded):
    """`meson setup` of this tree (what pip install runs first) with a fake nvidia-smi first on PATH: the CUDA
    kernels' compile arguments and the architectures the build records for `pyspmv info`; none without a GPU."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    if smi is None and shutil.which("nvidia-smi"):
        pytest.skip("a machine with a driver: nvcc's own device query, beside the real nvcc, would find its GPUs")
    _exe(bin_ / "nvidia-smi", smi or "NVIDIA-SMI has failed", 0 if smi else 9)
    # CI's sanitized run preloads ASan into this process; nvcc and its tools must not inherit it (nvcc "cannot
    # compile programs" then).
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS")}
    env["PATH"] = f"{bin_}:{Path(sys.executable).parent}:{os.environ['PATH']}"
    build = tmp_path / "build"
    p = subprocess.run([MESON, "setup", str(build), str(ROOT), *option], capture_output=True, text=True, env=env,
                       check=False)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert f'#define SPMV_GPU_ARCH "{recorded}"' in (build / "spmv_config.h").read_text()
    commands = json.loads((build / "compile_commands.json").read_text())
    cu = [shlex.split(c["command"]) for c in commands if c["file"].endswith(".cu")]
    if not recorded:
        assert "No NVIDIA GPU found: the CUDA kernels are not built" in p.stdout and not cu
        assert "#define SPMV_HAVE_NVCC 0" in (build / "spmv_config.h").read_text()
        return
    assert "CUDA kernels for gpu_arch" in p.stdout and f": {recorded}" in p.stdout
    assert len(cu) >= 10
    gencode = {tuple(argv[i + 1] for i, a in enumerate(argv) if a == "-gencode") for argv in cu}
    assert len(gencode) == 1, gencode      # every .cu file alike
    gencode = list(gencode.pop())
    expected = [f"arch=compute_{a},code=sm_{a}" for a in recorded.split() if a.isdigit()] + \
               [f"arch={a},code={a}" for a in recorded.split() if a.startswith("compute_")]
    assert gencode == expected
