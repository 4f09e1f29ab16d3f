"""Compare a native-reward and a VLM-reward training run from their log dirs.

``python -m reward_eval compare NATIVE_RUN VLM_RUN [options]`` (see
``--help``). Each run is a log dir as ``run_embodiment.sh`` writes it (see
:mod:`..analysis.training_runs` for what is read and how agreement is computed without the
scalar). Writes ``compare.png`` and ``compare.md`` (:mod:`..report.comparison`) to ``--out``
and prints the table.
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


def build_parser() -> argparse.ArgumentParser:
    """The ``compare`` command line."""
    p = argparse.ArgumentParser(
        prog="python -m reward_eval compare",
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
