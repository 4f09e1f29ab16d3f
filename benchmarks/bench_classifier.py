"""Benchmark (issue 38): what training RLinf's ResNet classifier costs here, and what judging an
episode with it costs against the tiny VLM on the same reward server.

1. **Training** (``--part train``): one optimizer step of RLinf's ``ResNetRewardModel`` (built
   through its config, ``pretrained: False``, its own loss, AdamW) on a batch of 64 frames, per
   architecture and input size, interleaved (rotating order) in one process; seconds per frame,
   and what an epoch of the shipped set's training frames costs at each ``--frames-per-episode``.
2. **Judging** (``--part serve``): two reward servers, one after the other, on this machine:
   ``resnet`` on a classifier checkpoint (``--model``) and ``qwen_vl_hf`` on the tiny Qwen2.5-VL
   (``python -m vlm_reward.tools.tiny_checkpoint``); the same held-out 16-frame episodes of the
   shipped set sent one at a time and 8 at a time; seconds per episode (client wall time).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_classifier.py --part train
    PYTHONPATH=. .venv/bin/python benchmarks/bench_classifier.py --part serve --model DIR
"""

from __future__ import annotations

import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from benchmarks.harness import RewardServer, Row, Stats, header, interleave, parse_args, print_table

SIZES = (64, 96, 128)
ARCHS = ("resnet18", "resnet34")
BATCH = 64


def step_measure(arch: str, size: int) -> Any:
    """A measure (seconds per frame of one training step) of ``arch`` at ``size`` px."""
    import torch

    from vlm_reward.backends.resnet_checkpoint import ClassifierConfig, build_model

    model = build_model(ClassifierConfig(arch=arch, image_size=size)).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    images = torch.rand(BATCH, 3, size, size)
    labels = (torch.arange(BATCH) % 2).float()

    def measure() -> float:
        start = time.perf_counter()
        loss = model(images, labels)["loss"]
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return (time.perf_counter() - start) / BATCH

    return measure


def training_frames(frames_per_episode: int | None) -> int:
    """The shipped set's training frames at ``frames_per_episode`` (see ``frame_data``)."""
    from reward_eval.classifier.frame_data import training_picks
    from reward_eval.classifier.labelled_set import load_set

    episodes = load_set().split("train")
    return sum(len(i) for e in episodes for _, i in training_picks(e, frames_per_episode))


def bench_training(repeats: int) -> None:
    import torch

    from vlm_reward.backends.hf_generation import limit_cpu_threads

    limit_cpu_threads(torch)
    measures = {f"{arch} {size} px": step_measure(arch, size) for arch in ARCHS for size in SIZES}
    samples = interleave(measures, repeats)
    print_table(
        f"one training step, batch {BATCH}",
        [Row(k, Stats.of(v), "ms/frame", 1e3) for k, v in samples.items()],
    )
    print("\nan epoch of the shipped set's training frames (median step cost):")
    for fpe in (4, 8, 16):
        n = training_frames(fpe)
        cells = ", ".join(f"{k}: {Stats.of(v).median * n:.0f} s" for k, v in samples.items())
        print(f"  {fpe:2d} frames/episode ({n} frames): {cells}")


def episodes(count: int) -> list[tuple[str, str]]:
    """(task text, served MP4) of the first ``count`` held-out episodes of the shipped set."""
    from reward_eval.classifier.labelled_set import load_set

    shipped = load_set()
    return [(e.task_text, str(shipped.path(e.served))) for e in shipped.split("held_out")[:count]]


def per_episode(server: RewardServer, calls: list[tuple[str, str]], concurrency: int) -> float:
    """Wall seconds per episode for ``calls`` sent ``concurrency`` at a time."""
    import requests

    def one(call: tuple[str, str]) -> None:
        body = {"task_text": call[0], "video_path": call[1], "nframes": 16}
        response = requests.post(server.endpoint, json=body, timeout=300)
        response.raise_for_status()

    start = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, calls))
    return (time.perf_counter() - start) / len(calls)


def bench_serving(model: str, repeats: int) -> None:
    from reward_eval.classifier.labelled_set import DEFAULT_DATA_DIR
    from vlm_reward.tools.tiny_checkpoint import build_tiny_qwen2_5_vl

    calls = episodes(16)
    with tempfile.TemporaryDirectory() as tmp:
        tiny = Path(tmp) / "tiny-qwen2.5-vl"
        build_tiny_qwen2_5_vl(tiny)
        judges = {"resnet": model, "qwen_vl_hf (tiny)": str(tiny)}
        rows = []
        for name, path in judges.items():
            backend = name.split()[0]
            args = ["--backend", backend, "--model", path, "--video-root", str(DEFAULT_DATA_DIR)]
            with RewardServer(args, Path(tmp) / f"{backend}.log") as server:  # waits for /health
                per_episode(server, calls[:2], 1)  # warm-up
                for concurrency in (1, 8):
                    runs = [per_episode(server, calls, concurrency) for _ in range(repeats)]
                    rows.append(Row(f"{name}, {concurrency} at a time", Stats.of(runs), "s/episode"))
        print_table(f"judging a 16-frame held-out episode ({len(calls)} episodes per run)", rows)


def main() -> int:
    def add(p: Any) -> None:
        p.add_argument("--part", choices=("train", "serve"), required=True)
        p.add_argument("--model", help="classifier checkpoint directory (--part serve)")

    args = parse_args(__doc__.split("\n\n")[0], repeats=3, add=add)
    header(f"bench_classifier --part {args.part}")
    if args.part == "train":
        bench_training(args.repeats)
    else:
        bench_serving(args.model, args.repeats)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
