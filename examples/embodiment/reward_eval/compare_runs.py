"""Compare a native-reward and a VLM-reward training run from their log dirs.

``python -m examples.embodiment.reward_eval compare NATIVE_RUN VLM_RUN [options]`` (see
``--help``). Each run is a log dir as ``run_embodiment.sh`` writes it: TensorBoard event
files somewhere below it and, with the reward model on, ``vlm_episodes_train_rank*.jsonl``.

- **Native success over training** (``--native-tag``, default ``env/success_once``): the
  simulator's success, the one number comparable across both runs.
- **VLM/native agreement** (``--agree-tag``, default ``env/vlm_native_agree``) of every run
  that scored episodes (the VLM run, and the native run in shadow mode). Without that scalar
  it is computed from the JSONL episode log in windows of ``--window`` episodes, leaving
  fallback episodes out (they carry the fallback score, not a judgement), as the evaluation
  report does; the scalar, as the env logs it, counts them.

Writes ``compare.png`` (one panel for native success, one per x unit of agreement: training
steps for scalars, scored episodes for JSONL windows) and ``compare.md`` (final and best
native success of each run, mean agreement), and prints the table.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from examples.embodiment.reward_eval.rollout import positive_int
from examples.embodiment.reward_eval.run_output import default_run_dir

NATIVE_TAG = "env/success_once"
AGREE_TAG = "env/vlm_native_agree"
STEP_UNIT = "training step"
COLORS = ("#264653", "#e76f51")  # native run, VLM run


@dataclass(frozen=True)
class Series:
    """A curve: ``y`` over ``x``, with the unit of ``x`` and where it came from."""

    x: np.ndarray
    y: np.ndarray
    unit: str
    source: str


@dataclass(frozen=True)
class RunCurves:
    """What one run contributes to the comparison."""

    label: str
    log_dir: Path
    native: Series
    agreement: Series | None


def read_scalars(log_dir: Path) -> dict[str, dict[int, float]]:
    """Every scalar of every event file below ``log_dir``: ``{tag: {step: value}}``.

    Files are read in name order (their names start with the creation time), so when a
    resumed run logs a step twice the later value wins.
    """
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    scalars: dict[str, dict[int, float]] = {}
    for path in sorted(log_dir.rglob("events.out.tfevents.*"), key=lambda p: p.name):
        accumulator = EventAccumulator(str(path), size_guidance={"scalars": 0})  # 0: keep all
        accumulator.Reload()
        for tag in accumulator.Tags()["scalars"]:
            scalars.setdefault(tag, {}).update({e.step: e.value for e in accumulator.Scalars(tag)})
    return scalars


def scalar_series(scalars: Mapping[str, Mapping[int, float]], tag: str) -> Series | None:
    """The scalar ``tag`` by training step, or ``None`` when the run never logged it."""
    if not scalars.get(tag):
        return None
    steps = sorted(scalars[tag])
    values = [scalars[tag][s] for s in steps]
    return Series(np.array(steps), np.array(values, dtype=float), STEP_UNIT, f"scalar {tag}")


def jsonl_agreement(log_dir: Path, window: int) -> Series | None:
    """Agreement of the judged episodes of the run's train episode logs, per window of episodes.

    Episodes are ordered by (episode counter, rank, env), i.e. by when they were played, as
    all envs advance in lockstep. ``None`` without any judged episode.
    """
    records = []
    for path in sorted(log_dir.rglob("vlm_episodes_train_*.jsonl")):
        records += [
            json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
        ]
    records.sort(key=lambda r: (r.get("episode", 0), r.get("rank", 0), r.get("env", 0)))
    agree = [bool(r["vlm_success"]) == bool(r["native_success"]) for r in records if not r.get("fallback")]
    if not agree:
        return None
    windows = [agree[start : start + window] for start in range(0, len(agree), window)]
    ends = np.cumsum([len(w) for w in windows])  # x: judged episodes so far, at the window's end
    means = np.array([np.mean(w) for w in windows], dtype=float)
    unit = f"judged episode (windows of {window})"
    return Series(ends, means, unit, f"JSONL episode log, windows of {window}")


def load_run(label: str, log_dir: Path, native_tag: str, agree_tag: str, window: int) -> RunCurves:
    """Read one run; ``ValueError`` naming the tags it has when ``native_tag`` is missing."""
    if not log_dir.is_dir():
        raise ValueError(f"{label} run: {log_dir} is not a directory.")
    scalars = read_scalars(log_dir)
    native = scalar_series(scalars, native_tag)
    if native is None:
        known = ", ".join(sorted(scalars)) or "none (no TensorBoard event files found)"
        raise ValueError(f"{label} run {log_dir} has no scalar {native_tag!r}; its scalars: {known}.")
    agreement = scalar_series(scalars, agree_tag) or jsonl_agreement(log_dir, window)
    return RunCurves(label, log_dir, native, agreement)


def plot(runs: Sequence[RunCurves], native_tag: str, path: Path) -> Path:
    """Native success of every run over steps, then one agreement panel per x unit."""
    units = list(dict.fromkeys(r.agreement.unit for r in runs if r.agreement is not None))
    fig = Figure(figsize=(8, 3.2 * (1 + len(units))))
    axes = fig.subplots(1 + len(units), 1, squeeze=False)[:, 0]
    for run, color in zip(runs, COLORS, strict=False):
        axes[0].plot(run.native.x, run.native.y, color=color, marker=".", label=run.label)
        for ax, unit in zip(axes[1:], units, strict=True):
            if run.agreement is not None and run.agreement.unit == unit:
                ax.plot(run.agreement.x, run.agreement.y, color=color, marker=".", label=run.label)
    axes[0].set(title=f"Native success ({native_tag})", xlabel=STEP_UNIT, ylabel="success rate")
    for ax, unit in zip(axes[1:], units, strict=True):
        ax.set(title="VLM / native agreement", xlabel=unit, ylabel="agreement")
    for ax in axes:
        ax.set_ylim(-0.02, 1.02)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps and episodes are counts
        ax.grid(alpha=0.3)
        ax.legend(loc="best")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, facecolor="white")
    return path


def table_rows(runs: Sequence[RunCurves]) -> list[tuple[str, ...]]:
    """One row per run: final and best native success (with their steps), mean agreement."""
    rows = []
    for run in runs:
        final_step, final = int(run.native.x[-1]), float(run.native.y[-1])
        best_i = int(np.argmax(run.native.y))
        best_step, best = int(run.native.x[best_i]), float(run.native.y[best_i])
        if run.agreement is None:
            agree = "n/a (no scored episodes)"
        else:
            agree = f"{float(np.mean(run.agreement.y)):.3f} ({run.agreement.source})"
        rows.append(
            (
                run.label,
                str(run.log_dir),
                f"{final:.3f} (step {final_step})",
                f"{best:.3f} (step {best_step})",
                agree,
            )
        )
    return rows


def markdown(runs: Sequence[RunCurves], native_tag: str, png: Path) -> str:
    """The short comparison in Markdown: the table and the figure."""
    header = ("run", "log dir", f"final {native_tag}", f"best {native_tag}", "mean VLM/native agreement")
    lines = [
        "# Native vs VLM reward: training runs",
        "",
        "| " + " | ".join(header) + " |",
        "| " + " | ".join("---" for _ in header) + " |",
    ]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in table_rows(runs)]
    lines += ["", f"![native success and agreement]({png.name})", ""]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """The ``compare`` command line."""
    p = argparse.ArgumentParser(
        prog="python -m examples.embodiment.reward_eval compare",
        description="Plot native success over training for a native-reward and a VLM-reward run, "
        "with the VLM/native agreement, and write a short Markdown table.",
    )
    p.add_argument("native_run", type=Path, help="log dir of the native-reward run")
    p.add_argument("vlm_run", type=Path, help="log dir of the VLM-reward run")
    p.add_argument("--native-tag", default=NATIVE_TAG, help="scalar of native success (default %(default)s)")
    p.add_argument("--agree-tag", default=AGREE_TAG, help="scalar of agreement (default %(default)s)")
    p.add_argument("--window", type=positive_int, default=50, help="episodes per JSONL agreement window")
    p.add_argument("--labels", default="native reward,VLM reward", help="two comma-separated run labels")
    p.add_argument("--out", type=Path, help="output dir (default: runs/reward_eval/compare-<timestamp>)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point: exit status 0, or 1 with a message when a run cannot be read."""
    parser = build_parser()
    args = parser.parse_args(argv)
    labels = [label.strip() for label in args.labels.split(",")]
    if len(labels) != 2 or not all(labels):
        parser.error(f"--labels needs two non-empty comma-separated labels, got {args.labels!r}.")
    try:
        runs = [
            load_run(label, path, args.native_tag, args.agree_tag, args.window)
            for label, path in zip(labels, (args.native_run, args.vlm_run), strict=True)
        ]
    except ValueError as exc:
        print(f"[reward-eval] error: {exc}", file=sys.stderr)
        return 1
    out = (args.out or default_run_dir(prefix="compare-")).resolve()
    png = plot(runs, args.native_tag, out / "compare.png")
    text = markdown(runs, args.native_tag, png)
    (out / "compare.md").write_text(text, encoding="utf-8")
    print(text)
    print(f"[reward-eval] comparison: {out / 'compare.md'} (figure: {png})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
