"""benchmarks/bench_judge_gpu.py on this CPU: its offline bundle is built (wheels left out) and its
``measure`` runs from the bundle's own copy of the project, on the tiny sizes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import bench_judge_gpu


@pytest.mark.parametrize(
    ("text", "names", "expected"),
    [
        ("a==1\nb_c==2.0  # why\n# c==3\n", ("a", "b-c"), ["a==1", "b-c==2.0"]),
        ("A==1\n", ("a",), ["a==1"]),
    ],
    ids=["comments-and-underscores", "case"],
)
def test_pins_come_from_the_constraints_file(tmp_path: Path, text: str, names: tuple, expected: list) -> None:
    path = tmp_path / "constraints.txt"
    path.write_text(text)
    assert bench_judge_gpu.pinned(names, path) == expected


def test_a_wheel_the_constraints_do_not_pin_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "constraints.txt"
    path.write_text("a==1\n")
    with pytest.raises(ValueError, match=r"pins none of \['b'\]"):
        bench_judge_gpu.pinned(("a", "b"), path)


def test_the_project_pins_every_wheel_the_bundle_needs() -> None:
    pins = bench_judge_gpu.pinned(
        bench_judge_gpu.WHEELS, bench_judge_gpu.REPO / "requirements" / "constraints.txt"
    )
    assert "transformers==4.57.6" in pins and any(p.startswith("opentelemetry-api==") for p in pins)


def test_the_bundle_measures_from_its_own_copy(tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    bench_judge_gpu.bundle(out, wheels=False, python_version=None)
    assert (out / "run.sh").stat().st_mode & 0o111
    assert len(list((out / "clips").glob("*.mp4"))) == max(bench_judge_gpu.BATCHES)
    assert (out / "repo" / "vlm_reward" / "self_test_data" / "manifest.json").is_file()
    command = [sys.executable, str(out / "repo" / "benchmarks" / "bench_judge_gpu.py"), "measure", str(out)]
    command += ["--device", "cpu", "--dtype", "float32", "--tiny", "--families", "qwen2_5_vl"]
    command += ["--batches", "1", "--repeats", "1", "--workers", "1", "--peak-tflops", "1"]
    result = subprocess.run(
        command, cwd=tmp_path, env={"PYTHONPATH": str(out / "repo"), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    for needle in (
        "shipped encoder, batch 1",
        "project encoder, batch 1",
        "vision encoder: share of 1 TFLOPS",
    ):
        assert needle in result.stdout
    assert "one request's whole forward (s)" in result.stdout
