"""``compare_rewards.sh --out DIR [--seed S] [--steps N] [--runs native,classifier,...] [--start rare]``.

Runs ``run_embodiment.sh --cpu-learn`` once per reward setting (:mod:`.runs`), one after another:

- **resumable**: a run that finished (``DIR/<run>/finished.json``; a reward-guard stop counts) is
  not run again; an unfinished one starts over;
- **a line per GRPO step**, read from the run's TensorBoard log while it trains;
- **its judge** started with it (loading while the run starts up) and stopped after it, also
  when it fails or is interrupted
  (:mod:`.judges`); nothing is left running;
- then ``reward-eval compare`` over every finished run of ``--runs`` (``DIR/compare.png``,
  ``DIR/compare.md``) and ``DIR/learning.json`` (:mod:`.results`), with a summary line per run.

Exit status 0, 2 for bad options, 1 when a judge could not be made ready or started, 130 when
interrupted (Ctrl-C, SIGTERM), or the failed run's own status (the comparison stops there; the
same command resumes it).
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

from examples.embodiment.reward_comparison import judges, results
from examples.embodiment.reward_comparison.runs import (
    DEFAULT_RUNS,
    STARTS,
    RunSpec,
    overrides,
    parse_runs,
    start_overrides,
)
from reward_eval.analysis.learning import EPISODES_TAG, GROUPS_TAG, JUDGED_TAG, SUCCESS_TAG
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
    return {"seed": args.seed, "steps": args.steps, "start": args.start, "overrides": list(args.override)}


def run_once(spec: RunSpec, args: argparse.Namespace) -> int:
    """Run ``spec`` unless it finished before; its exit status."""
    run_dir = args.out / spec.name
    if (run_dir / FINISHED).is_file():
        before = json.loads((run_dir / FINISHED).read_text()).get("settings")
        if before != settings_of(args):
            now = settings_of(args)
            say(f"{spec.name}: {run_dir / FINISHED} ran with {before}, not {now}; use another --out.")
            return EXIT_BAD_OPTIONS
        say(f"{spec.name}: finished before ({run_dir / FINISHED}); not run again.")
        return EXIT_OK
    shutil.rmtree(run_dir, ignore_errors=True)  # an unfinished run starts over
    run_dir.mkdir(parents=True)
    say(f"{spec.name}: {spec.description}")
    started = time.monotonic()
    if spec.judge is None:
        status, log_dir = train(spec, spec.block(None), run_dir, args)
    else:
        # The judge loads while the run starts Ray and builds its envs: a run's first scoring call
        # comes at its first episode's end, minutes later; a judge that never gets ready stops the run.
        log = run_dir / "reward_server.log"
        with judges.serving(spec.judge, args.out / "judges", log) as server:
            status, log_dir = train(spec, spec.block(server.endpoint), run_dir, args, judge=server)
    if status in (EXIT_OK, EXIT_GUARD_STOP):
        finished = {"status": status, "wall_s": time.monotonic() - started, "log_dir": str(log_dir)}
        finished["settings"] = settings_of(args)
        finished["reward_model"] = spec.block("http://127.0.0.1:<port>/score" if spec.judge else None)
        (run_dir / FINISHED).write_text(json.dumps(finished, indent=1) + "\n")
    return status


def run_command(block: dict[str, Any], args: argparse.Namespace) -> list[str]:
    """The ``run_embodiment.sh --cpu-learn`` command of one run: its reward settings, then what
    every run shares (the seed, the step count, ``--start``'s release means, each ``--override``)."""
    shared = [*start_overrides(args.start), *args.override]
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
    env = {**os.environ, "LOG_ROOT": str(run_dir / "logs")}
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
                say(f"{name} step {step + 1}/{steps} ({elapsed:.0f} s): {_step_text(scalars, step)}")
                shown = step
        if done:
            return


def _wait(proc: subprocess.Popen, seconds: float) -> bool:
    try:
        proc.wait(timeout=seconds)
        return True
    except subprocess.TimeoutExpired:
        return False


def _step_text(scalars: dict[str, dict[int, float]], step: int) -> str:
    parts = [f"success {scalars[SUCCESS_TAG][step]:.2f} of {scalars.get(EPISODES_TAG, {}).get(step, 0):.0f}"]
    if step in scalars.get(JUDGED_TAG, {}):
        parts.append(f"judged {scalars[JUDGED_TAG][step]:.2f}")
    if step in scalars.get(GROUPS_TAG, {}):
        parts.append(f"groups with a gradient {scalars[GROUPS_TAG][step]:.2f}")
    return ", ".join(parts)


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
    records = {name: results.run_record(read_scalars(Path(f["log_dir"])), f) for name, f in finished.items()}
    path = results.write_learning(args.out, records, settings_of(args))
    for line in results.summary_lines(records):
        say(line)
    say(f"per step: {path}")
    return status


if __name__ == "__main__":
    sys.exit(main())
