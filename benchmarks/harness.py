"""What every benchmark shares: interleaved timing, statistics, the table, a server, a LIBERO env.

This machine is shared and noisy (2 cores, other jobs come and go), so the benchmarks never
compare numbers taken at different times: :func:`interleave` runs the contenders in
alternation within one run (rotating which goes first), and ratios are taken per
repetition, pair by pair, before the median. Tables show the median and the min/max.

The reward server is :class:`vlm_reward.tools.server_process.RewardServerProcess`, as in the job
and the tests, reporting failures with ``RuntimeError`` instead of ``pytest.fail``: a
benchmark is a plain script.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from vlm_reward.tools.server_process import START_TIMEOUT_S, RewardServerProcess, ServerStartError

REPO = Path(__file__).resolve().parents[1]
ENV_CONFIG = REPO / "examples" / "embodiment" / "config" / "env" / "libero_10.yaml"
FAKE_BACKENDS = "tests.support.fake_backends"


# ---- statistics and the table ---------------------------------------------------------


@dataclass(frozen=True)
class Stats:
    """Median, min and max of repeated measurements."""

    median: float
    minimum: float
    maximum: float
    n: int

    @classmethod
    def of(cls, samples: Sequence[float]) -> Stats:
        """Summarise ``samples``; ``ValueError`` if there are none."""
        if not samples:
            raise ValueError("no samples to summarise.")
        return cls(statistics.median(samples), min(samples), max(samples), len(samples))


def ratios(numerators: Sequence[float], denominators: Sequence[float]) -> list[float]:
    """Pairwise ``a / b`` of measurements taken in the same repetition."""
    if len(numerators) != len(denominators):
        raise ValueError(f"cannot pair {len(numerators)} samples with {len(denominators)}.")
    return [a / b for a, b in zip(numerators, denominators, strict=True)]


@dataclass(frozen=True)
class Row:
    """One table line: ``stats`` are shown multiplied by ``scale`` in ``unit``."""

    label: str
    stats: Stats
    unit: str
    scale: float = 1.0


def print_table(title: str, rows: Sequence[Row]) -> None:
    """Print ``rows`` as an aligned table of median, min, max and sample count."""
    width = max(len(r.label) for r in rows)
    print(f"\n{title}")
    print(f"{'':{width}}  {'median':>10}  {'min':>10}  {'max':>10}  {'n':>4}  unit")
    for r in rows:
        s, k = r.stats, r.scale
        cells = "  ".join(f"{v * k:10.4g}" for v in (s.median, s.minimum, s.maximum))
        print(f"{r.label:{width}}  {cells}  {s.n:4d}  {r.unit}")


def verdict(name: str, value: float, target: str, met: bool) -> str:
    """One line saying whether a target is met, printed under the tables."""
    return f"{name}: {value:.4g} (target {target}) -> {'MET' if met else 'NOT MET'}"


# ---- running the contenders side by side ----------------------------------------------


def interleave(
    measures: Mapping[str, Callable[[], float]], repeats: int, warmup: int = 1
) -> dict[str, list[float]]:
    """Run each measure once per repetition, in rotating order; return the samples by name.

    A measure returns the quantity it measured (usually seconds), so it can leave set-up
    out of its own timing. ``warmup`` repetitions run first and are discarded (first calls
    pay for imports, connections and caches). Rotating the order keeps a slow phase of the
    machine from always hitting the same contender.
    """
    names = list(measures)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for rep in range(warmup + repeats):
        shift = rep % len(names)
        for name in names[shift:] + names[:shift]:
            value = measures[name]()
            if rep >= warmup:
                samples[name].append(value)
    return samples


def run_script(
    code: str, args: Sequence[str], env: Mapping[str, str], neighbour: str | None = None, timeout: float = 900
) -> str:
    """``python -c CODE ARGS`` in a fresh process (``neighbour``: another ``python -c`` running
    beside it, killed after); its last line of output. ``CalledProcessError`` if it fails."""
    beside = None if neighbour is None else subprocess.Popen([sys.executable, "-c", neighbour], env=dict(env))
    try:
        out = subprocess.run(
            [sys.executable, "-c", code, *args],
            env=dict(env),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=True,
            cwd=REPO,
        )
    finally:
        if beside is not None:
            beside.kill()
            beside.wait(timeout=60)
    return out.stdout.strip().splitlines()[-1]


def timed(fn: Callable[[], Any]) -> float:
    """Seconds ``fn()`` took (``time.perf_counter``)."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


# ---- command line and machine ---------------------------------------------------------


def parse_args(
    description: str, repeats: int, add: Callable[[argparse.ArgumentParser], None] | None = None
) -> argparse.Namespace:
    """``--repeats`` (default ``repeats``) plus whatever ``add`` declares."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--repeats", type=_at_least_one, default=repeats, help="repetitions (default %(default)s)"
    )
    if add is not None:
        add(parser)
    return parser.parse_args()


def _at_least_one(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def machine_summary() -> str:
    """nproc, CPU model, RAM and load: what the numbers were measured on."""
    model = platform.processor() or "unknown CPU"
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    ram = psutil.virtual_memory().total / 2**30
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"{os.cpu_count()} CPUs ({model}), {ram:.1f} GiB RAM, load average {load}"


def header(title: str) -> None:
    """Print the benchmark's title, the date and the machine."""
    print(f"# {title}")
    print(f"# {time.strftime('%Y-%m-%d %H:%M:%S')}, {machine_summary()}")


# ---- the reward server ----------------------------------------------------------------


class RewardServer(RewardServerProcess):
    """``python -m vlm_reward.libero_reward_server`` on 127.0.0.1 as a child process.

    A thin adapter over :class:`vlm_reward.tools.server_process.RewardServerProcess` (the launcher
    of the evaluation job and the tests): the server logs at ``warning`` level, ``plugins``
    default to the test backends of ``tests.support.fake_backends``, ``repo`` is the
    checkout whose server runs (another one measures an older version side by side), and a
    server that never gets ready raises ``RuntimeError`` with the tail of its log.
    """

    def __init__(
        self,
        args: Sequence[str],
        log_path: Path,
        plugins: Sequence[str] = (FAKE_BACKENDS,),
        env: Mapping[str, str] | None = None,
        port: int | None = None,
        repo: Path = REPO,
    ) -> None:
        args = ["--log-level", "warning", *args]
        super().__init__(args, log_path, plugins=plugins, env=env, port=port, repo=repo)

    def rss_bytes(self) -> int:
        """Resident memory of the server process now."""
        return psutil.Process(self.pid).memory_info().rss

    def wait_ready(self, timeout: float = START_TIMEOUT_S) -> RewardServer:
        """Block until ``/health`` is 200; ``RuntimeError`` with the log tail if it never is."""
        try:
            super().wait_ready(timeout)
        except ServerStartError as exc:
            raise RuntimeError(f"{exc}:\n{self.log()[-3000:]}") from exc
        return self


# ---- LIBERO and frames ----------------------------------------------------------------


@contextmanager
def libero_env(
    max_episode_steps: int, reward_model: Mapping[str, Any] | None = None, num_envs: int = 1
) -> Iterator[Any]:
    """The project's LiberoEnv on libero_10 (reward model off unless ``reward_model``), closed after.

    ``reward_model`` entries are set on the YAML's ``reward_model`` block, e.g.
    ``{"enable": True, "endpoint": ...}``.
    """
    from reward_eval.job.env_config import load_env_config
    from rlinf.envs import get_env_cls

    cfg = load_env_config(ENV_CONFIG)
    cfg.max_episode_steps = max_episode_steps
    for key, value in (reward_model or {}).items():
        cfg.reward_model[key] = value
    env = get_env_cls("libero")(
        cfg, num_envs=num_envs, seed_offset=0, total_num_processes=1, worker_info=None
    )
    try:
        yield env
    finally:
        env.close()
        env.env.close()


def idle_actions(num_envs: int, chunk: int) -> np.ndarray:
    """Zero arm deltas, gripper open (-1): the robot holds still, shape ``(num_envs, chunk, 7)``."""
    actions = np.zeros((num_envs, chunk, 7), dtype=np.float32)
    actions[..., -1] = -1.0
    return actions


def synthetic_frames(n: int, size: int = 256, seed: int = 0) -> np.ndarray:
    """``n`` RGB frames: a fixed textured scene with a square moving across it.

    The texture makes H.264 work about as hard as on a LIBERO render (a flat image would
    encode unrealistically fast); the moving square makes frames differ.
    """
    rng = np.random.default_rng(seed)
    ramp = np.linspace(40, 200, size, dtype=np.float32)
    base = np.stack(np.broadcast_arrays(ramp[None, :], ramp[:, None], 120.0), axis=-1)
    scene = np.clip(base + rng.normal(0, 2, (size, size, 3)), 0, 255).astype(np.uint8)
    frames = np.repeat(scene[None], n, axis=0)
    side = size // 8
    for t in range(n):
        x = int(t * (size - side) / max(n - 1, 1))
        frames[t, size // 2 : size // 2 + side, x : x + side] = (220, 40, 40)
    return frames
