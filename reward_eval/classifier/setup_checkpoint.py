"""The main job's classifier: trained once on the shipped set by set-up, then reused.

    .venv/bin/python -m reward_eval.classifier.setup_checkpoint

``scripts/setup.sh`` runs this after the venvs; ``scripts/run.sh`` and the tests use
:data:`CHECKPOINT`. Like the venvs it carries a stamp (:data:`STAMP_FILE`: a hash of its set's
manifest, the shipped one here, and of the code a trained classifier depends on): when the stamp
matches, nothing is done in milliseconds; otherwise ``reward-eval train-classifier`` trains it
with its defaults (``--overwrite``). ``SETUP_FORCE=1`` retrains.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from reward_eval.classifier.labelled_set import DEFAULT_DATA_DIR, MANIFEST
from reward_eval.job.paths import REPO

CHECKPOINT = REPO / "runs" / "classifier" / "libero_basket_resnet"
STAMP_FILE = ".setup-stamp"
TRAIN_TIMEOUT_S = 1800  # about a minute quiet, five under load: a hung training still ends set-up
PACKAGE = Path(__file__).resolve().parent
# What a trained classifier depends on besides its data: how frames are read, trained and saved.
SOURCES = (
    PACKAGE / "frame_data.py",
    PACKAGE / "training.py",
    REPO / "reward_eval" / "commands" / "train_classifier.py",
    REPO / "vlm_reward" / "backends" / "resnet_checkpoint.py",
    REPO / "vlm_reward" / "backends" / "classifier_targets.py",
)


def stamp(options: Sequence[str] = (), data: Path = DEFAULT_DATA_DIR) -> str:
    """The hash of ``data``'s manifest, :data:`SOURCES` and the training ``options``: a
    checkpoint trained from other ones is stale."""
    digest = hashlib.sha256()
    for path in (data / MANIFEST, *SOURCES):
        digest.update(path.read_bytes())
    digest.update("\0".join(options).encode())
    return digest.hexdigest()


def up_to_date(
    checkpoint: Path = CHECKPOINT, options: Sequence[str] = (), data: Path = DEFAULT_DATA_DIR
) -> bool:
    """Whether ``checkpoint`` was trained from the current sources and ``data`` with ``options``
    (and ``SETUP_FORCE`` is unset)."""
    path = checkpoint / STAMP_FILE
    if os.environ.get("SETUP_FORCE") or not path.is_file():
        return False
    return path.read_text().strip() == stamp(options, data)


def ensure(checkpoint: Path = CHECKPOINT, options: Sequence[str] = (), data: Path = DEFAULT_DATA_DIR) -> int:
    """Train ``checkpoint`` on ``data`` unless it is up to date; the command's exit status (0 when
    it was).

    The training is the ``reward-eval train-classifier`` command itself, run as a user runs it
    (a child process, so set-up shows its progress bar and its one-sentence errors), with its
    defaults and ``options`` (the learning comparison's lenient judge: ``--target half_goal``)."""
    if up_to_date(checkpoint, options, data):
        print(f"[setup] classifier up to date ({checkpoint})", file=sys.stderr)
        return 0
    print(f"[setup] training the classifier {checkpoint}", file=sys.stderr)
    start = time.perf_counter()
    command = [sys.executable, "-m", "reward_eval", "train-classifier", str(data)]
    command += ["--out", str(checkpoint), "--overwrite", *options]
    status = subprocess.run(command, timeout=TRAIN_TIMEOUT_S, check=False).returncode
    if status == 0:
        (checkpoint / STAMP_FILE).write_text(stamp(options, data) + "\n")
        print(f"[setup] classifier trained in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(ensure())
