"""The command line that re-scores a run dir at another threshold, for the report to print.

The calibration part of a report names the best-F1 and best-Youden thresholds; the reader's
next step is the full report at one of them. This builds that ``rescore`` command from the
run's ``settings.json``: the same judge (the ``--endpoint``, or ``--backend`` with its
``--model``, plugins and server kwargs; none for the tiny random checkpoint, which
``rescore`` rebuilds with the same seeded weights), the same per-request options, and
``--threshold`` written exactly (``repr``: the observed score itself, so ``score >= t``
selects the same episodes).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from examples.embodiment.reward_eval.commands.options import ENDPOINT_MODEL

SCRIPT = "examples/embodiment/scripts/evaluate_reward_model.sh"


def judge_options(settings: Mapping[str, Any]) -> list[str]:
    """The ``rescore`` options that select the judge a run was scored by."""
    if settings.get("model") == ENDPOINT_MODEL and settings.get("endpoint"):
        options = ["--endpoint", str(settings["endpoint"])]
    else:
        options = [opt for plugin in settings.get("plugin") or () for opt in ("--plugin", str(plugin))]
        if settings.get("model") and not settings.get("random_model"):
            options += ["--model", str(settings["model"])]
        if settings.get("server_kwargs"):
            options += ["--server-kwargs", json.dumps(settings["server_kwargs"])]
    if settings.get("backend"):
        options += ["--backend", str(settings["backend"])]
    if settings.get("score_mode"):
        options += ["--score-mode", str(settings["score_mode"])]
    if settings.get("backend_kwargs"):
        options += ["--backend-kwargs", json.dumps(settings["backend_kwargs"])]
    if settings.get("send_video_inline"):
        options.append("--send-video-inline")
    return options


def rescore_command(run_dir: Path, settings: Mapping[str, Any], threshold: float) -> str:
    """``bash <script> rescore RUN_DIR <judge options> --threshold T``, shell-quoted."""
    argv = ["bash", SCRIPT, "rescore", str(run_dir), *judge_options(settings)]
    return shlex.join([*argv, "--threshold", repr(float(threshold))])


def add_rescore_hints(calibration: dict[str, Any], run_dir: Path, settings: Mapping[str, Any]) -> None:
    """Set ``rescore_at_best_f1`` and ``rescore_at_best_youden`` (``None`` where that threshold
    is undefined) in a summary's ``calibration`` block."""
    for key in ("best_f1", "best_youden"):
        best = calibration.get(key)
        calibration[f"rescore_at_{key}"] = (
            rescore_command(run_dir, settings, best["threshold"]) if best is not None else None
        )
