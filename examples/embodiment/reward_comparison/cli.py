"""``compare_rewards.sh --out DIR [--seed S] [--steps N] [--runs native,...] [--start rare] [--judge-only]
[--reuse-stale]``.

Runs ``run_embodiment.sh --cpu-learn`` once per reward setting (:mod:`.runs`), one after another:

- **resumable**: a run that finished (``DIR/<run>/finished.json``; a reward-guard stop counts) is
  not run again; one that ran with other settings, or was made otherwise than a run would be now
  (its judge's model, the files that decide training: :mod:`.provenance`), stops the comparison
  with a line naming what differs, unless ``--reuse-stale`` reuses a run made otherwise anyway,
  saying so; an unfinished one starts over;
- **a timeout per run** that grows with ``--steps`` (:func:`run_timeout_s`), unless
  ``CPU_LEARN_TIMEOUT`` is set;
- **a line per GRPO step**, read from the run's TensorBoard log while it trains;
- **its judge** started with it (loading while the run starts up) and stopped after it, also
  when it fails or is interrupted
  (:mod:`.judges`); nothing is left running;
- then ``reward-eval compare`` over every finished run of ``--runs`` (``DIR/compare.png``,
  ``DIR/compare.md``) and ``DIR/learning.json`` (:mod:`.results`), with a summary line per run.

Exit status 0, 2 for bad options or a finished run that cannot be reused, 1 when a judge could
not be made ready or started, 130 when interrupted (Ctrl-C, SIGTERM), or the failed run's own
status (the comparison stops there; the same command resumes it).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from examples.embodiment.reward_comparison import judges, provenance, results
from examples.embodiment.reward_comparison.runs import (
    DEFAULT_RUNS,
    STARTS,
    RunSpec,
    mode_overrides,
    overrides,
    parse_runs,
    start_overrides,
)
from reward_eval.analysis.learning import SUCCESS_TAG
from reward_eval.analysis.training_runs import read_scalars
from vlm_reward.exit_statuses import (
    EXIT_BAD_OPTIONS,
    EXIT_FAILED,
    EXIT_GUARD_STOP,
    EXIT_INTERRUPTED,
    EXIT_OK,
)
from vlm_reward.tools.server_process import RewardServerProcess, ServerStartError

REPO = Path(__file__).resolve().parents[3]
RUN_SCRIPT = REPO / "examples" / "embodiment" / "scripts" / "run_embodiment.sh"
CONFIG = "libero_10_grpo_openvlaoft"
LEARN_CONFIG = REPO / "examples" / "embodiment" / "config" / "cpu_learn" / "expert.yaml"  # --cpu-learn's
FINISHED = "finished.json"
PREFIX = "[compare]"
POLL_S = 10.0
# A run's timeout (CPU_LEARN_TIMEOUT): measured here, start-up 105-355 s (a judge's first load
# included) and a GRPO step 120-230 s; a judge-only step (every episode to 400 steps) up to 1.5x that.
START_UP_S = 900
STEP_S = 600
JUDGE_ONLY_FACTOR = 1.5


def default_steps() -> int:
    """The learning config's ``runner.max_steps``: each run of the comparison is a ``--cpu-learn`` run."""
    from omegaconf import OmegaConf

    return int(OmegaConf.load(LEARN_CONFIG).runner.max_steps)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="compare_rewards.sh",
        description="Train the --cpu-learn policy once per reward setting and compare the runs.",
    )
    p.add_argument(
        "--out", type=Path, required=True, help="the comparison's directory (resumed if it exists)"
    )
    p.add_argument("--seed", type=int, default=0, help="env and actor seed of every run (default 0)")
    p.add_argument(
        "--steps",
        type=int,
        default=default_steps(),
        help="GRPO steps per run (default: %(default)s, --cpu-learn's)",
    )
    p.add_argument(
        "--runs", default=",".join(DEFAULT_RUNS), help=f"runs, in order (default {','.join(DEFAULT_RUNS)})"
    )
    p.add_argument(
        "--start",
        default="default",
        choices=STARTS,
        help="where the release Gaussians start: the config's, or where successes are rare "
        "(default %(default)s)",
    )
    p.add_argument(
        "--judge-only",
        action="store_true",
        help="the judge alone decides: every episode runs to the horizon and is scored there; the "
        "simulator's success is recorded, never trained on (cpu_learn.judge_only)",
    )
    p.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="MODULE",
        help="a module that registers more runs and judges (runs.register_run, judges.register_judge)",
    )
    p.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Hydra override for every run (repeatable), e.g. env.train.total_num_envs=2",
    )
    p.add_argument(
        "--reuse-stale",
        action="store_true",
        help="reuse a finished run even if its judge's model or the files that decide training "
        "changed since it ran (by default the comparison stops, naming them)",
    )
    return p


def say(text: str) -> None:
    print(f"{PREFIX} {text}", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        for module in args.plugin:
            importlib.import_module(module)
    except ImportError as exc:
        parser.error(f"--plugin: {exc}")
    try:
        specs = parse_runs(args.runs)
    except ValueError as exc:
        parser.error(str(exc))
    if args.steps < 1:
        parser.error(f"--steps must be >= 1, got {args.steps}.")
    args.out.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, _interrupt)  # stop the run and its judge as Ctrl-C does
    for spec in specs:
        try:
            status = run_once(spec, args)
        except (judges.JudgeError, ServerStartError) as exc:
            say(f"{spec.name}: its judge could not start: {exc}")
            return EXIT_FAILED
        except provenance.NotReusable as exc:
            say(f"{spec.name}: {exc}")
            return EXIT_BAD_OPTIONS
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the run and its judge are stopped by now
            say(f"{spec.name} interrupted; rerun the same command to resume.")
            return EXIT_INTERRUPTED
        if status not in (EXIT_OK, EXIT_GUARD_STOP):
            say(f"{spec.name} failed with exit status {status}; rerun the same command to resume.")
            return status
    return compare(specs, args)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def settings_of(args: argparse.Namespace) -> dict[str, Any]:
    """What every run of one comparison shares: a finished run is reused only under the same."""
    return {
        "seed": args.seed,
        "steps": args.steps,
        "start": args.start,
        "judge_only": args.judge_only,
        "overrides": list(args.override),
    }


def made_with(spec: RunSpec, args: argparse.Namespace) -> provenance.Provenance:
    """What a run of ``spec`` is made with now: its judge's stamp and the training files."""
    judge = None if spec.judge is None else judges.JUDGES[spec.judge]
    return provenance.made_with(None if judge is None else judge.stamp(args.out / "judges"))


def run_once(spec: RunSpec, args: argparse.Namespace) -> int:
    """Run ``spec`` unless it finished before; its exit status. ``provenance.NotReusable`` for a
    finished run that ran otherwise than a run would now."""
    run_dir = args.out / spec.name
    if (run_dir / FINISHED).is_file():
        now = made_with(spec, args)
        say(f"{spec.name}: {provenance.reused(run_dir / FINISHED, settings_of(args), now, args.reuse_stale)}")
        return EXIT_OK
    shutil.rmtree(run_dir, ignore_errors=True)  # an unfinished run starts over
    run_dir.mkdir(parents=True)
    say(f"{spec.name}: {spec.description}")
    started = time.monotonic()
    if spec.judge is None:
        made = made_with(spec, args)
        status, log_dir = train(spec, spec.block(None), run_dir, args)
    else:
        # The judge loads while the run starts Ray and builds its envs: a run's first scoring call
        # comes at its first episode's end, minutes later; a judge that never gets ready stops the run.
        log = run_dir / "reward_server.log"
        with judges.serving(spec.judge, args.out / "judges", log) as server:
            made = made_with(spec, args)  # its model made ready by now
            status, log_dir = train(spec, spec.block(server.endpoint), run_dir, args, judge=server)
    if status in (EXIT_OK, EXIT_GUARD_STOP):
        finished = {"status": status, "wall_s": time.monotonic() - started, "log_dir": str(log_dir)}
        finished["settings"] = settings_of(args)
        finished["reward_model"] = spec.block("http://127.0.0.1:<port>/score" if spec.judge else None)
        finished["provenance"] = made.to_json()
        (run_dir / FINISHED).write_text(json.dumps(finished, indent=1) + "\n")
    return status


def run_timeout_s(steps: int, judge_only: bool = False) -> int:
    """A run's timeout in seconds (``CPU_LEARN_TIMEOUT``) for ``steps`` GRPO steps: a start-up
    allowance and one per step, each some 2.5 times the slowest measured here (a judge-only step:
    1.5 times a step), so that a run of many steps is not cut short and a hung one still ends."""
    step_s = STEP_S * (JUDGE_ONLY_FACTOR if judge_only else 1.0)
    return int(START_UP_S + step_s * steps)


def run_command(block: dict[str, Any], args: argparse.Namespace) -> list[str]:
    """The ``run_embodiment.sh --cpu-learn`` command of one run: its reward settings, then what
    every run shares (the seed, the step count, ``--start``'s release means, ``--judge-only``, each
    ``--override``)."""
    shared = [*start_overrides(args.start), *mode_overrides(args.judge_only), *args.override]
    return ["bash", str(RUN_SCRIPT), "--cpu-learn", CONFIG, *overrides(block, args.seed, args.steps, shared)]


def train(
    spec: RunSpec,
    block: dict[str, Any],
    run_dir: Path,
    args: argparse.Namespace,
    judge: RewardServerProcess | None = None,
) -> tuple[int, Path]:
    """One ``--cpu-learn`` run with ``block``'s reward settings; (exit status, its log dir).
    ``judge``: its server, started; awaited once the run is launched."""
    # SIGINT's default restored in the run (GNU env): a comparison started as a shell's background
    # job has it ignored, which its run would inherit and then only die by _stop's SIGKILL.
    command = ["env", "--default-signal=INT", *run_command(block, args)]
    # Its timeout grows with its steps, unless the user set one.
    env = {"CPU_LEARN_TIMEOUT": str(run_timeout_s(args.steps, args.judge_only)), **os.environ}
    env["LOG_ROOT"] = str(run_dir / "logs")
    with open(run_dir / "run.log", "w") as log:
        proc = subprocess.Popen(
            command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            if judge is not None:
                judge.wait_ready()
                say(f"{spec.name}: judge {spec.judge} serving at {judge.endpoint}")
            watch(spec.name, proc, run_dir / "logs", args.steps)
        except BaseException:
            _stop(proc)
            raise
    logs = sorted((run_dir / "logs").glob(f"*-{CONFIG}"))
    return proc.returncode, logs[-1] if logs else run_dir / "logs"


def watch(name: str, proc: subprocess.Popen, logs: Path, steps: int) -> None:
    """Wait for the run, printing a line for each GRPO step its TensorBoard log gains."""
    started, shown = time.monotonic(), -1  # TensorBoard steps count from 0
    while True:
        done = proc.poll() is not None or _wait(proc, POLL_S)
        scalars = read_scalars(logs) if logs.is_dir() else {}
        for step in sorted(scalars.get(SUCCESS_TAG, {})):
            if step > shown:
                elapsed = time.monotonic() - started
                say(f"{name} step {step + 1}/{steps} ({elapsed:.0f} s): {results.step_line(scalars, step)}")
                shown = step
        if done:
            return


def _wait(proc: subprocess.Popen, seconds: float) -> bool:
    try:
        proc.wait(timeout=seconds)
        return True
    except subprocess.TimeoutExpired:
        return False


def _stop(proc: subprocess.Popen) -> None:
    """Interrupt the run's whole process group (its driver stops Ray), then kill what is left."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGINT)
    if not _wait(proc, 60):
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def compare(specs: Sequence[RunSpec], args: argparse.Namespace) -> int:
    """``reward-eval compare`` over the runs, then ``learning.json`` and the summary."""
    from reward_eval.commands import compare as compare_command

    finished = {spec.name: json.loads((args.out / spec.name / FINISHED).read_text()) for spec in specs}
    runs = [finished[spec.name]["log_dir"] for spec in specs]
    labels = ",".join(spec.name for spec in specs)
    status = compare_command.main([*runs, "--labels", labels, "--out", str(args.out)])
    for line in results.write_all(args.out, finished, settings_of(args)):
        say(line)
    say(f"per step: {args.out / 'learning.json'}")
    return status


if __name__ == "__main__":
    sys.exit(main())
