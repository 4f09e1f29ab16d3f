"""Benchmark 13 (issue 39): the judge's cost by stage on a GPU, and its share of the chip's peak.

``qwen_vl_hf``'s own steps (:mod:`benchmarks.judge_stages`) on Qwen2.5-VL-7B and Qwen3-VL-8B built
at their released sizes with random weights (as :mod:`benchmarks.bench_finetune_gpu` builds them:
time and memory do not depend on the weights' values), bf16, sdpa, the env's default request
(16 frames, ``max_pixels`` 200704, probability mode) on the shipped self-test clips, at batch 1 and
8 (8 distinct clips). Each batch runs twice in the same process: with transformers' own vision
encoder (``shipped``) and with the project's (:mod:`vlm_reward.backends.vision_encoder`,
``project``), so the before and after come from the same minutes of the same chip; ``--native``
adds the project's encoder on clips of LIBERO's 256 px renders, upscaled (the default request)
and at their own size (``native_frame_size``, issue 39 deliverable 4). The forward's floating-point
operations are counted once (``FlopCounterMode``) and divided by the median time and the chip's
dense bf16 peak (:data:`PEAK_TFLOPS` by device name, or ``--peak-tflops``).

The GPU machine reaches nothing outside it, so this runs from a self-contained bundle:

1. ``bundle OUT`` (here): the project's packages (``vlm_reward``, these scripts), the tiny
   checkpoints of both families (their processors are the real ones: the token counts are the
   released models'), 8 synthetic 16-frame clips of 256x256, the wheels of the project's pins
   the judge needs beyond torch (among them ``opentelemetry-api``, which fastapi 0.165 imports at
   import time, so the bundle also serves), and ``run.sh``, which installs those wheels into a
   folder ahead of the machine's packages (its torch stays) and measures.
   ``--no-wheels`` leaves the wheels out (a machine that has them, or a check of this script).
2. ``measure BUNDLE`` (there, or ``--device cpu --tiny`` here to check this script on the tiny sizes).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_judge_gpu.py bundle /tmp/judge-bundle
    bash /tmp/judge-bundle/run.sh            # on the GPU machine: measure BUNDLE --device cuda
    PYTHONPATH=. .venv/bin/python benchmarks/bench_judge_gpu.py measure /tmp/judge-bundle --device cpu --tiny
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
FAMILIES = ("qwen2_5_vl", "qwen3_vl")
# Distributions the judge imports beyond torch (and what fastapi 0.165 imports at import time);
# their versions, and their dependencies', come from requirements/constraints.txt.
WHEELS = (
    "transformers", "tokenizers", "huggingface-hub", "safetensors", "qwen-vl-utils", "av", "pydantic",
    "numpy", "psutil", "fastapi", "hypercorn", "prometheus-client", "opentelemetry-api", "requests",
)  # fmt: skip
# Dense bf16 tensor-core peak (TFLOPS, no sparsity) by a substring of torch.cuda.get_device_name().
PEAK_TFLOPS = (("H100 PCIe", 756.0), ("H100", 989.4), ("H200", 989.4), ("A100", 312.0), ("L40S", 362.0))
BATCHES = (1, 8)
# Wheel tags pip may pick for another Python (av's wheels are manylinux_2_28 only).
PLATFORMS = (
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
)
# (label, vision encoder, clips, native_frame_size): before/after on the shipped clips; with
# --native, the project's encoder on 256 px clips upscaled (the default) and at their own size.
MODES = (
    ("shipped", "shipped", "self-test", False),
    ("project", "project", "self-test", False),
    ("project, 256 px clips", "project", "256", False),
    ("project, 256 px clips, native", "project", "256", True),
)
NFRAMES, MAX_PIXELS, FPS = 16, 200704, 4.0
RUN_SH = """#!/usr/bin/env bash
# Measure the judge by stage on this machine's GPU, offline: the wheels beside this script go into a
# folder put ahead of the machine's packages (a venv would not see a torch that itself lives in a
# venv); nothing is fetched.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
python3 -m pip install -q --no-index --no-deps --target "$here/site" "$here"/wheels/*.whl
export PYTHONPATH="$here/site:$here/repo"
python3 "$here/repo/benchmarks/bench_judge_gpu.py" measure "$here" "$@"
"""


def pinned(names: tuple[str, ...], constraints: Path) -> list[str]:
    """``name==version`` for each of ``names`` from a pip constraints file; ``ValueError`` for one
    the file does not pin (the bundle must install the versions the project runs with)."""
    versions = {}
    for line in constraints.read_text(encoding="utf-8").splitlines():
        name, sep, version = line.split("#", 1)[0].strip().partition("==")
        if sep:
            versions[name.strip().lower().replace("_", "-")] = version.strip()
    missing = [name for name in names if name not in versions]
    if missing:
        raise ValueError(f"{constraints} pins none of {missing}; pin them or drop them from WHEELS.")
    return [f"{name}=={versions[name]}" for name in names]


def bundle(out: Path, wheels: bool, python_version: str | None) -> None:
    """Write the bundle (see the module docstring) into ``out``."""
    from benchmarks.harness import synthetic_frames
    from vlm_reward.tools.tiny_checkpoint import build_tiny_checkpoint
    from vlm_reward.video_io import encode_mp4

    if out.exists() and any(out.iterdir()):
        raise ValueError(f"{out} exists and is not empty; give a new directory.")
    repo = out / "repo"
    shutil.copytree(REPO / "vlm_reward", repo / "vlm_reward", ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "benchmarks").mkdir(parents=True)
    for script in (
        "__init__.py",
        "harness.py",
        "judge_stages.py",
        "bench_finetune_gpu.py",
        Path(__file__).name,
    ):
        source = REPO / "benchmarks" / script
        (repo / "benchmarks" / script).write_bytes(source.read_bytes() if source.exists() else b"")
    for family in FAMILIES:
        build_tiny_checkpoint(out / "checkpoints" / family, family)
    (out / "clips").mkdir()
    for seed in range(max(BATCHES)):
        encode_mp4(
            synthetic_frames(NFRAMES, 256, seed=seed), out / "clips" / f"libero_size_{seed}.mp4", fps=FPS
        )
    (out / "wheels").mkdir()
    requirements = pinned(WHEELS, REPO / "requirements" / "constraints.txt")
    (out / "wheels" / "requirements.txt").write_text("\n".join(requirements) + "\n", encoding="utf-8")
    if wheels:
        command = [sys.executable, "-m", "pip", "download", "--only-binary=:all:", "-d", str(out / "wheels")]
        command += ["-c", str(REPO / "requirements" / "constraints.txt"), *requirements]
        if python_version:
            command += ["--python-version", python_version, "--implementation", "cp"]
            for platform in PLATFORMS:
                command += ["--platform", platform]
        subprocess.run(command, check=True, timeout=1800)
        # torch is the machine's own; a wheel of it pulled in as a dependency would replace it.
        for wheel in (out / "wheels").glob("torch-*.whl"):
            wheel.unlink()
    (out / "run.sh").write_text(RUN_SH, encoding="utf-8")
    (out / "run.sh").chmod(0o755)
    print(f"bundle in {out}: {len(list((out / 'wheels').glob('*.whl')))} wheels; run: bash {out / 'run.sh'}")


def load_judge(root: Path, family: str, args: argparse.Namespace) -> Any:
    """The family's model (released size unless ``--tiny``), its processor, prompt and answer tokens."""
    import torch
    import transformers

    from benchmarks.bench_finetune_gpu import build_model, full_size_config
    from benchmarks.judge_stages import Judge
    from vlm_reward.backends.qwen_vl_hf import QwenHFBackend
    from vlm_reward.judging.model_family import FAMILIES as MODEL_FAMILIES
    from vlm_reward.judging.probability import AnswerTokens
    from vlm_reward.judging.prompts import ServerPrompts

    path = root / "checkpoints" / family
    config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    model = build_model(config if args.tiny else full_size_config(config, family), family, args.device)
    model = model.to(getattr(torch, args.dtype)).eval()
    model.config._attn_implementation = "sdpa"  # the backend's default on every device
    for sub in (model.config.vision_config, model.config.text_config):
        sub._attn_implementation = "sdpa"
    processor = transformers.AutoProcessor.from_pretrained(path)
    processor.tokenizer.padding_side = "left"
    spec = ServerPrompts(QwenHFBackend.default_preset, {}).for_job("probability", {})
    tokens = AnswerTokens.from_tokenizer(processor.tokenizer, spec.answer_scale)
    return Judge(model, processor, MODEL_FAMILIES[family], spec, tokens)


def clips(root: Path, which: str) -> list[Path]:
    """``self-test``: the shipped self-test clips (128 px renders, the bundle's copy of
    ``vlm_reward/self_test_data``); ``256``: the bundle's 16-frame clips at LIBERO's render size."""
    folder = root / "repo" / "vlm_reward" / "self_test_data" if which == "self-test" else root / "clips"
    found = sorted(folder.glob("*.mp4"))
    if len(found) < max(BATCHES):
        raise ValueError(f"need {max(BATCHES)} clips in {folder}, found {len(found)}.")
    return found


def peak_tflops(args: argparse.Namespace) -> float | None:
    """The chip's dense bf16 peak: ``--peak-tflops``, else by its name; ``None`` when unknown."""
    import torch

    if args.peak_tflops is not None or not args.device.startswith("cuda"):
        return args.peak_tflops
    name = torch.cuda.get_device_name()
    return next((peak for key, peak in PEAK_TFLOPS if key in name), None)


def time_mode(judge: Any, videos: list[Path], batch: int, native: bool, args: argparse.Namespace) -> dict:
    """One encoder and batch size: each stage's seconds over ``--repeats`` runs after ``--warmups``,
    the forward's operations and the prompt length."""
    from benchmarks.judge_stages import model_flops, prompt_tokens, time_batch
    from vlm_reward.backends.base import ScoreJob

    jobs = [
        ScoreJob("put the bowl on the plate", str(v), NFRAMES, MAX_PIXELS, FPS, native_frame_size=native)
        for v in videos[:batch]
    ]
    samples: dict[str, list[float]] = {}
    for rep in range(args.warmups + args.repeats):
        times, _ = time_batch(judge, jobs, workers=args.workers)
        for stage, seconds in times.items():
            if rep >= args.warmups:
                samples.setdefault(stage, []).append(seconds)
    return {"samples": samples, "flops": model_flops(judge, jobs), "tokens": prompt_tokens(judge, jobs[0])}


def stage_rows(measured: dict, peak: float | None) -> list[Any]:
    """The table of one measurement: every stage's seconds, the device stages' share of the peak."""
    from benchmarks.harness import Row, Stats
    from benchmarks.judge_stages import CPU_STAGES, DEVICE_STAGES, POOL

    samples, flops = measured["samples"], measured["flops"]
    order = [stage for stage in (*CPU_STAGES, POOL, *DEVICE_STAGES) if stage in samples]
    rows = [Row(stage, Stats.of(samples[stage]), "s") for stage in order]
    for stage in DEVICE_STAGES if peak is not None else ():
        share = flops[stage] / Stats.of(samples[stage]).median / (peak * 1e12)
        rows.append(Row(f"{stage}: share of {peak:g} TFLOPS", Stats.of([share]), "%", 100.0))
    return rows


def measure_family(root: Path, family: str, args: argparse.Namespace) -> None:
    """Per encoder (transformers' own, the project's) and batch size, the stages' table."""
    from benchmarks.harness import Stats, print_table
    from vlm_reward.backends import vision_encoder

    judge = load_judge(root, family, args)
    peak = peak_tflops(args)
    size = "tiny" if args.tiny else "released size"
    print(f"\n{family} ({size}, {sum(p.numel() for p in judge.model.parameters()) / 1e6:.1f} M parameters)")
    medians: dict[tuple[str, int], dict[str, float]] = {}
    for mode, encoder, which, native in MODES[: 4 if args.native else 2]:
        (vision_encoder.install if encoder == "project" else vision_encoder.uninstall)(judge.model)
        for batch in args.batches:
            measured = time_mode(judge, clips(root, which), batch, native, args)
            medians[(mode, batch)] = {k: Stats.of(v).median for k, v in measured["samples"].items()}
            title = (
                f"{family}, {mode} encoder, batch {batch}: {measured['tokens']} prompt tokens a request, "
                f"{measured['flops']['whole forward'] / 1e12:.3g} TFLOP a forward"
            )
            print_table(title, stage_rows(measured, peak))
    verdicts(medians, "project")


def request_cost(stages: dict[str, float]) -> float:
    """Seconds a batch costs end to end: its CPU stages as the backend runs them (on its pool, else
    one after another), then the forward and readout."""
    from benchmarks.judge_stages import CPU_STAGES, POOL

    cpu = stages[POOL] if POOL in stages else sum(stages[stage] for stage in CPU_STAGES)
    return cpu + stages["whole forward"]


def verdicts(results: dict[tuple[str, int], dict[str, float]], mode: str) -> None:
    """Issue 39's GPU targets on ``mode``'s encoder: one request's forward, a batch of 8 against one."""
    from benchmarks.harness import verdict

    if (mode, 1) not in results:
        return
    forward = results[(mode, 1)]["whole forward"]
    print(verdict("one request's whole forward (s)", forward, "<= 0.10 s", forward <= 0.10))
    if (mode, 8) in results:
        ratio = request_cost(results[(mode, 8)]) / request_cost(results[(mode, 1)])
        print(verdict("a batch of 8 / one request (CPU on the pool + forward)", ratio, "<= 4x", ratio <= 4))


def measure(args: argparse.Namespace) -> None:
    import torch
    import transformers

    from benchmarks.harness import header

    header("Benchmark 13: the judge by stage" + (" (tiny sizes)" if args.tiny else ""))
    where = torch.cuda.get_device_name() if args.device.startswith("cuda") else "CPU"
    print(f"# on {where}, torch {torch.__version__}, transformers {transformers.__version__}, {args.dtype}")
    for family in args.families:
        measure_family(args.bundle, family, args)
        if args.device.startswith("cuda"):
            torch.cuda.empty_cache()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="step", required=True)
    make = sub.add_parser("bundle", help="build the offline bundle here")
    make.add_argument("out", type=Path)
    make.add_argument("--no-wheels", action="store_true", help="leave the wheels out")
    make.add_argument("--python-version", default=None, help="the GPU machine's Python, e.g. 3.12")
    run = sub.add_parser("measure", help="time the stages (on the GPU machine)")
    run.add_argument("bundle", type=Path)
    run.add_argument("--device", default="cuda")
    run.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float32"))
    run.add_argument("--families", nargs="+", choices=FAMILIES, default=list(FAMILIES))
    run.add_argument("--batches", nargs="+", type=int, default=list(BATCHES))
    run.add_argument("--repeats", type=int, default=5)
    run.add_argument("--warmups", type=int, default=2, help="untimed runs first (default %(default)s)")
    run.add_argument("--workers", type=int, default=8, help="threads for the CPU stages (the backend's pool)")
    run.add_argument(
        "--peak-tflops", type=float, default=None, help="the chip's dense peak (default: by name)"
    )
    run.add_argument("--native", action="store_true", help="also measure native_frame_size requests")
    run.add_argument("--tiny", action="store_true", help="keep the tiny sizes (checks this script on a CPU)")
    args = parser.parse_args(argv)
    if args.step == "bundle":
        bundle(args.out, not args.no_wheels, args.python_version)
    else:
        measure(args)


if __name__ == "__main__":
    main()
