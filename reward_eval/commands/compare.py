"""Compare training runs from their log dirs: a native-reward and a VLM-reward run, or any number.

``python -m reward_eval compare RUN [RUN ...] [options]`` (see ``--help``); the usual pair is
``NATIVE_RUN VLM_RUN``, the learning comparison passes one per reward setting. Each run is a log
dir as ``run_embodiment.sh`` writes it (see :mod:`..analysis.training_runs` for what is read and
how agreement is computed without the scalar). Writes ``compare.png`` and ``compare.md``
(:mod:`..report.comparison`) to ``--out`` and prints the table.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from reward_eval.analysis.training_runs import AGREE_TAG, NATIVE_TAG, load_run
from reward_eval.exit_statuses import EXIT_UNREADABLE_RUN
from reward_eval.job.run_dir import default_run_dir
from reward_eval.report.comparison import markdown, plot
from vlm_reward.argtypes import positive_int
from vlm_reward.exit_statuses import EXIT_OK

DEFAULT_PAIR_LABELS = ("native reward", "VLM reward")


def build_parser() -> argparse.ArgumentParser:
    """The ``compare`` command line."""
    p = argparse.ArgumentParser(
        prog="python -m reward_eval compare",
        description="Plot native success over training for training runs (a native-reward and a "
        "VLM-reward run, or more), with the VLM/native agreement, and write a short Markdown table.",
    )
    p.add_argument("runs", type=Path, nargs="+", metavar="RUN", help="log dirs, e.g. NATIVE_RUN VLM_RUN")
    p.add_argument("--native-tag", default=NATIVE_TAG, help="scalar of native success (default %(default)s)")
    p.add_argument("--agree-tag", default=AGREE_TAG, help="scalar of agreement (default %(default)s)")
    p.add_argument("--window", type=positive_int, default=50, help="episodes per JSONL agreement window")
    p.add_argument(
        "--labels",
        default=None,
        help="comma-separated run labels, one per run (default: 'native reward,VLM reward' for two runs, "
        "else the log dirs' names)",
    )
    p.add_argument("--out", type=Path, help="output dir (default: runs/reward_eval/compare-<timestamp>)")
    return p


def run_labels(text: str | None, runs: Sequence[Path]) -> list[str]:
    """The labels ``--labels`` gives, else the pair's usual ones, else the log dirs' names."""
    if text is not None:
        return [label.strip() for label in text.split(",")]
    return list(DEFAULT_PAIR_LABELS) if len(runs) == 2 else [path.name for path in runs]


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point: exit status 0, or 1 with a message when a run cannot be read."""
    parser = build_parser()
    args = parser.parse_args(argv)
    labels = run_labels(args.labels, args.runs)
    if len(labels) != len(args.runs) or not all(labels):
        count = len(args.runs)
        parser.error(
            f"--labels needs {count} non-empty comma-separated labels, one per run, got {args.labels!r}."
        )
    try:
        runs = [
            load_run(label, path, args.native_tag, args.agree_tag, args.window)
            for label, path in zip(labels, args.runs, strict=True)
        ]
    except ValueError as exc:
        print(f"[reward-eval] error: {exc}", file=sys.stderr)
        return EXIT_UNREADABLE_RUN
    out = (args.out or default_run_dir(prefix="compare-")).resolve()
    png = plot(runs, args.native_tag, out / "compare.png")
    text = markdown(runs, args.native_tag, png)
    (out / "compare.md").write_text(text, encoding="utf-8")
    print(text)
    print(f"[reward-eval] comparison: {out / 'compare.md'} (figure: {png})")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
