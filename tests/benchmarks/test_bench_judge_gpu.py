"""benchmarks/bench_judge_gpu.py on this CPU: its offline bundle is built (wheels left out) and its
``measure`` runs from the bundle's own copy of the project, on the tiny sizes."""

from __future__ import annotations

import ast
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


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("judge-bundle") / "bundle"
    bench_judge_gpu.bundle(out, wheels=False, python_version=None)
    return out


def _project_imports(path: Path) -> set[str]:
    """The project modules (``vlm_reward``, ``benchmarks``) a file imports, at any depth."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        found |= {name for name in names if name.split(".")[0] in ("vlm_reward", "benchmarks")}
    return found


def test_the_bundle_holds_everything_its_scripts_import_and_its_clips(bundle: Path) -> None:
    """Self-contained: every project module imported by a file of the bundle is in the bundle."""
    repo = bundle / "repo"
    imported = set().union(*(_project_imports(p) for p in repo.rglob("*.py")))
    missing = [
        name
        for name in sorted(imported)
        if not (repo / (name.replace(".", "/") + ".py")).is_file()
        and not (repo / name.replace(".", "/") / "__init__.py").is_file()
        and not (repo / name.replace(".", "/")).is_dir()
    ]
    assert not missing, missing
    assert (bundle / "run.sh").stat().st_mode & 0o111
    assert len(list((bundle / "clips").glob("*.mp4"))) == max(bench_judge_gpu.BATCHES)
    assert (repo / "vlm_reward" / "self_test_data" / "manifest.json").is_file()
    pins = (bundle / "wheels" / "requirements.txt").read_text().split()
    assert pins == bench_judge_gpu.pinned(
        bench_judge_gpu.WHEELS, bench_judge_gpu.REPO / "requirements" / "constraints.txt"
    )


def test_measure_runs_the_stages_on_the_tiny_sizes(bundle: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    command = ["measure", str(bundle), "--device", "cpu", "--dtype", "float32", "--tiny", "--families"]
    command += ["qwen2_5_vl", "--batches", "1", "--repeats", "1", "--warmups", "0", "--workers", "1"]
    command += ["--peak-tflops", "1"]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the tiny sizes gain nothing from more; OpenMP spinning on a busy CPU costs
    try:
        bench_judge_gpu.main(command)
    finally:
        torch.set_num_threads(threads)
    out = capsys.readouterr().out
    for needle in (
        "shipped encoder, batch 1",
        "project encoder, batch 1",
        "vision encoder: share of 1 TFLOPS",
    ):
        assert needle in out
    assert "one request's whole forward (s)" in out
