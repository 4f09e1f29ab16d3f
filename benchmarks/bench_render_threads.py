"""Benchmark (issue 42): software GL's rasterizer threads for the judge's 128-px frames.

Without a GPU, EGL renders with Mesa's llvmpipe, which by default rasterizes on helper threads,
one per core (``LP_NUM_THREADS`` unset); ``LP_NUM_THREADS=0`` rasterizes in the calling thread.
The learning runs render the judge's frames in the simulator processes while the other process
steps its envs, so the CPU a frame costs is what the rollout pays. This renders libero_10 task 0's
initial states as the judge sees them (``reward_eval.classifier.simulation.LabelledScene``: the
agentview camera at 128 px, the classifier's size) in a fresh process per contender, alone and
beside a process that keeps one core busy, and checks that both settings give the same pixels.
The workload reports its own seconds (imports and the scene's build left out). Interleaved,
rotating order; ratios per repetition.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_render_threads.py [--repeats 3] [--frames 20]
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable

from benchmarks import harness
from benchmarks.harness import REPO, Row, Stats, header, interleave, parse_args, print_table, ratios

SETTINGS = ("unset", "0")  # LP_NUM_THREADS: llvmpipe's default (a thread per core), or none
TIMEOUT_S = 900

WORKLOAD = """
import hashlib, json, sys, time
import numpy as np
from reward_eval.classifier.simulation import LabelledScene
from reward_eval.libero_task import reset_to
scene = LabelledScene("libero_10", 0, 128)
frames = int(sys.argv[1])
states = []
for trial in range(frames):
    reset_to(scene.physics, scene.states[trial % len(scene.states)])
    states.append(np.asarray(scene.physics.env.sim.get_state().flatten()).copy())
scene.render(states[0])  # the first frame builds the GL context
wall, cpu = time.perf_counter(), time.process_time()
images = [scene.render(state) for state in states]
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
digest = hashlib.sha256(np.stack(images).tobytes()).hexdigest()
print(json.dumps({"wall_ms": 1000 * wall / frames, "cpu_ms": 1000 * cpu / frames, "digest": digest}))
"""

BUSY = "while True: pass"

DIGESTS: set[str] = set()  # one per distinct set of pixels seen
CPU_MS: dict[str, list[float]] = {}  # contender -> the CPU milliseconds per frame of each repetition


def _env(setting: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "LP_NUM_THREADS"}
    if setting != "unset":
        env["LP_NUM_THREADS"] = setting
    env.setdefault("MUJOCO_GL", "egl")
    env.setdefault("PYOPENGL_PLATFORM", "egl")
    config = REPO / ".venv" / "libero-config"
    if config.is_dir():
        env.setdefault("LIBERO_CONFIG_PATH", str(config))
    return {**env, "PYTHONPATH": str(REPO)}


def measure(name: str, setting: str, beside: bool, frames: int) -> Callable[[], float]:
    """Wall milliseconds per frame under ``setting`` (the CPU's go to ``CPU_MS[name]``)."""

    def run() -> float:
        line = harness.run_script(WORKLOAD, [str(frames)], _env(setting), BUSY if beside else None, TIMEOUT_S)
        result = json.loads(line)
        DIGESTS.add(result["digest"])
        CPU_MS.setdefault(name, []).append(float(result["cpu_ms"]))
        return float(result["wall_ms"])

    return run


def main() -> None:
    args = parse_args(
        __doc__.splitlines()[0], repeats=3, add=lambda p: p.add_argument("--frames", type=int, default=20)
    )
    header("llvmpipe's rasterizer threads: the judge's 128-px frames, alone and beside a busy core")
    names = {
        (where, setting): f"{where} LP_NUM_THREADS={setting}"
        for where in ("alone", "beside")
        for setting in SETTINGS
    }
    measures = {
        name: measure(name, setting, where == "beside", args.frames)
        for (where, setting), name in names.items()
    }
    samples = interleave(measures, args.repeats)
    cpu = {name: values[-args.repeats :] for name, values in CPU_MS.items()}  # the warm-up's left out
    for title, table in (("wall", samples), ("CPU", cpu)):
        print_table(f"{title} per frame (ms)", [Row(name, Stats.of(table[name]), "ms") for name in measures])
        rows = [
            Row(
                f"{where}: unset / 0",
                Stats.of(ratios(table[names[where, "unset"]], table[names[where, "0"]])),
                "x",
            )
            for where in ("alone", "beside")
        ]
        print_table(f"{title} ratios (per repetition)", rows)
    same = "the same pixels" if len(DIGESTS) == 1 else f"{len(DIGESTS)} different sets of pixels"
    print(f"pixels: every contender rendered {same}")


if __name__ == "__main__":
    main()
