"""Benchmark (issue 43, CI time): OpenMP's wait policy when two torch processes share the CPU.

The suite runs its two parts side by side, set-up trains the classifier beside the vLLM venv's
install, and the main job runs its judge beside LIBERO. torch's wheels use GNU OpenMP, whose idle
threads spin for a while before they sleep (``OMP_WAIT_POLICY`` unset: GNU's default);
``scripts/openmp.sh`` sets ``PASSIVE`` for all three. This measures why: a training workload
(RLinf's ResNet classifier, the network ``train-classifier`` trains, a few AdamW steps) in a
process of its own, alone and beside a busy neighbour (a torch process multiplying matrices),
under each policy, both processes with torch's default threads. Each contender starts fresh
processes; the workload reports its own seconds (imports and model building left out).
Interleaved, rotating order; ratios per repetition.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_openmp_wait.py [--repeats 3] [--steps 20]
"""

from __future__ import annotations

import os
from collections.abc import Callable

from benchmarks import harness
from benchmarks.harness import REPO, Row, Stats, header, interleave, parse_args, print_table, ratios

POLICIES = ("unset", "PASSIVE")  # unset: GNU OpenMP's default, what a process gets without the script
TIMEOUT_S = 900

WORKLOAD = """
import sys, time, torch
from vlm_reward.backends.resnet_checkpoint import ClassifierConfig, build_model
torch.manual_seed(0)
model = build_model(ClassifierConfig(image_size=64)).train()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
images, labels = torch.rand(16, 3, 64, 64), (torch.arange(16) % 2).float()
start = time.perf_counter()
for _ in range(int(sys.argv[1])):
    loss = model(images, labels)["loss"]
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(time.perf_counter() - start)
"""

NEIGHBOUR = """
import torch
x = torch.randn(256, 256)
while True:
    torch.relu(x @ x * 1e-3)
"""


def _env(policy: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if policy != "unset":
        env["OMP_WAIT_POLICY"] = policy
    return {**env, "PYTHONPATH": str(REPO)}


def measure(policy: str, beside: bool, steps: int) -> Callable[[], float]:
    """Seconds of ``steps`` training steps under ``policy``, alone or beside the busy neighbour."""

    def run() -> float:
        return float(
            harness.run_script(WORKLOAD, [str(steps)], _env(policy), NEIGHBOUR if beside else None, TIMEOUT_S)
        )

    return run


def main() -> None:
    args = parse_args(
        __doc__.splitlines()[0], repeats=3, add=lambda p: p.add_argument("--steps", type=int, default=20)
    )
    header("OpenMP's wait policy: a training workload alone and beside a busy torch process")
    measures = {
        f"{'beside' if beside else 'alone'} {policy}": measure(policy, beside, args.steps)
        for beside in (False, True)
        for policy in POLICIES
    }
    samples = interleave(measures, args.repeats)
    print_table(
        f"{args.steps} training steps (s)", [Row(name, Stats.of(s), "s") for name, s in samples.items()]
    )
    pairs = {
        "beside: unset / PASSIVE": ("beside unset", "beside PASSIVE"),
        "alone: PASSIVE / unset": ("alone PASSIVE", "alone unset"),
        "PASSIVE: beside / alone": ("beside PASSIVE", "alone PASSIVE"),
        "unset: beside / alone": ("beside unset", "alone unset"),
    }
    rows = [Row(label, Stats.of(ratios(samples[a], samples[b])), "x") for label, (a, b) in pairs.items()]
    print_table("ratios (per repetition)", rows)


if __name__ == "__main__":
    main()
