"""A shipped default per GPU (issue 48): target= and --target, the choice by the GPU present, the refusals."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import json
import warnings
from importlib import resources

import pytest

import pyspmv
from pyspmv.cli import main
from pyspmv.devices import gpu
from pyspmv.ranking import targets
from pyspmv.ranking.modelfile import read_meta
from pyspmv.ranking.shipped import default_model
from pyspmv.ranking.targets import TARGETS, nearest, target_for, target_gpu

H100, H200 = "NVIDIA H100 80GB HBM3", "NVIDIA H200"


def test_each_shipped_target_names_its_gpu():
    """Every GPU target ships a model whose file records the GPU it was measured on, newest first."""
    assert TARGETS["cuda"][:2] == ("h200", "h100")
    assert target_gpu("h200").name == H200 and target_gpu("h100").name == H100
    assert target_gpu("h200").bandwidth > target_gpu("h100").bandwidth         # 4.8 against 3.35 TB/s
    for t in TARGETS["cuda"]:
        rm = default_model(target=t)
        assert rm.device == "cuda" and rm.meta["device_info"]["gpu_name"] == target_gpu(t).name
        assert rm.meta["dataset"].split("/")[-1] == t


def test_training_data_is_what_each_shipped_file_records():
    """The datasets a default was trained on are read from its file (what judges the recipe reads them there):
    its own target's dataset first, every one loadable, the device's; an unknown target is refused."""
    for device, names in TARGETS.items():
        for t in names:
            data = targets.training_data(t)
            assert data[0] == t and len(set(data)) == len(data)
            with resources.as_file(targets.default_file(t)) as path:
                meta = read_meta(path)["meta"]
            assert list(data[1:]) == [e[0] for e in meta.get("extra") or []]
            for name in data:
                ds = pyspmv.datasets.load(name, dtype="float64")
                assert set(ds.table["device"]) == {device}
    assert "h200_scaled_seed4" in targets.training_data("h200")
    with pytest.raises(ValueError, match="'target' parameter of training_data"):
        targets.training_data("a100")


def test_the_gpu_present_chooses_by_name_else_the_nearest():
    h100, h200 = target_gpu("h100"), target_gpu("h200")
    assert nearest(H200, 1, 1.0).target == "h200"                         # the name wins over the figures
    assert nearest(H100, h200.sm_count, h200.bandwidth).target == "h100"
    c = nearest("NVIDIA H100 NVL", 132, 3.9e12)                            # nearer the H100's 3.35 TB/s
    assert c.target == "h100" and "nearest by memory bandwidth and SM count" in c.why and H100 in c.why
    assert nearest("NVIDIA B200", 148, 8.0e12).target == "h200"
    assert nearest("NVIDIA A100-SXM4-40GB", 108, 1.55e12).target == "h100"


def test_an_unknown_gpu_warns_naming_the_choice(monkeypatch):
    fake = {"name": "NVIDIA H100 PCIe", "sm_count": 114, "mem_clock_khz": 1593000, "mem_bus_bits": 5120}
    monkeypatch.setattr(targets, "_CHOICES", {})
    monkeypatch.setattr(gpu, "unavailable_reason", lambda: None)
    monkeypatch.setattr(gpu, "device_info", lambda: fake)
    with pytest.warns(pyspmv.OtherMachineWarning, match="ranks for the h100 default: no shipped default was measured "
                      "on this machine's GPU \\(NVIDIA H100 PCIe: 2.0 TB/s, 114 SMs\\)"):
        assert target_for("cuda").target == "h100"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert target_for("cuda").target == "h100"                      # once per process
    monkeypatch.setattr(targets, "_CHOICES", {})
    monkeypatch.setattr(gpu, "device_info", lambda: {**fake, "name": H200})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c = target_for("cuda")
    assert c.target == "h200" and c.why == f"measured on this machine's GPU, the {H200}"


@pytest.mark.skipif(gpu.available(), reason="the choice without a GPU")
def test_without_a_gpu_the_newest_and_the_ranking_says_for_which():
    c = target_for("cuda")
    assert c.target == TARGETS["cuda"][0] and c.why.startswith("no usable GPU here")
    r = pyspmv.rank(pyspmv.generate("poisson2d", 30))
    assert r.measured_on == H200 and "default_h200.pyspmv" in r.model
    assert r.here.startswith("no usable GPU here") and H200 in r.here


@pytest.mark.gpu
def test_on_a_shipped_gpu_its_own_default():
    name = gpu.device_info()["name"]
    c = target_for("cuda")
    if name in (target_gpu(t).name for t in TARGETS["cuda"]):
        assert target_gpu(c.target).name == name and c.why.startswith("measured on")
    else:
        assert "nearest" in c.why


def test_target_ranks_with_that_default():
    A = pyspmv.generate("banded", 2000)
    r1, r2 = pyspmv.rank(A, target="h100"), pyspmv.rank(A, target="h200")
    assert r1.measured_on == H100 and r2.measured_on == H200 and r1.device == r2.device == "cuda"
    assert pyspmv.rank(A, target="cpu").device == "cpu"
    assert pyspmv.rank(A, default_model(target="h100"), target="h100").measured_on == H100


@pytest.mark.parametrize("kwargs, match", [
    ({"target": "a100"}, r"'target' parameter of rank\(\) must be a shipped default's target: 'h200' \(cuda\), "
                         r"'h100' \(cuda\), 'cpu' \(cpu\)\. Got 'a100'"),
    ({"target": 7}, "Got 7 instead"),
    ({"target": "h200", "device": "cpu"}, "names 'h200', a cuda target; device 'cpu' has 'cpu'"),
])
def test_bad_targets_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        pyspmv.rank(pyspmv.generate("banded", 50), **kwargs)
    if "device" not in kwargs:
        with pytest.raises(ValueError, match=match.replace("rank\\(\\)", "default_model\\(\\)")):
            default_model(target=kwargs["target"])


def test_a_model_of_another_gpu_with_target_says_so():
    with pytest.raises(ValueError, match=f"measured on the {H100}; target='h200' ranks for the {H200}"):
        pyspmv.rank(pyspmv.generate("banded", 50), default_model(target="h100"), target="h200")


def test_read_meta_reads_the_header_alone(tmp_path):
    path = tmp_path / "not_a_model.pyspmv"
    path.write_bytes(b"PK\x03\x04 nothing")
    with pytest.raises(ValueError, match="is not a pyspmv model file or is corrupt"):
        read_meta(path)
    with pytest.raises(FileNotFoundError):
        read_meta(tmp_path / "missing.pyspmv")


def test_cli_target(capsys):
    assert main(["rank", "--generate", "banded:500", "--target", "h100", "--top", "2"]) == 0
    assert f"as measured on {H100}" in capsys.readouterr().out
    h100 = resources.files("pyspmv") / "data" / "default_h100.pyspmv"
    assert main(["rank", "--generate", "banded:500", "--target", "h200", "--model", str(h100)]) == 2
    assert f"measured on the {H100}; target='h200'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["rank", "--generate", "banded:500", "--target", "a100"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'a100'" in err and "'h200'" in err and "'h100'" in err


def test_info_names_every_shipped_gpu_model(capsys):
    assert main(["info", "--json"]) == 0
    cuda = json.loads(capsys.readouterr().out)["models"]["cuda"]
    assert [(t["target"], t["measured_on"]) for t in cuda["targets"]] == [("h200", H200), ("h100", H100)]
    assert cuda["target"] == target_for("cuda").target and cuda["target_why"] == target_for("cuda").why
    assert main(["info"]) == 0
    assert (f"shipped defaults: h200 ({H200}), h100 ({H100}); this machine would use {cuda['target']}: "
            in capsys.readouterr().out)
