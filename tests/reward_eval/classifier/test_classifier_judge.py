"""Each judge tool on the classifier set-up trains (issue 38's positive control): one reward server
with ``--backend resnet --self-test`` (so it serves only once it passed the shipped self-test), the
shipped set's held-out episodes (initial states never trained on, tasks 0, 1 and 7) re-scored
through it, audited through it, and replayed through the live watch."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from reward_eval.classifier import setup_checkpoint
from reward_eval.classifier.labelled_run import write_run
from reward_eval.classifier.labelled_set import load_set
from reward_eval.classifier.watch_replay import replays
from tests.reward_eval.conftest import run_reward_eval
from tests.support.server import ServerProcess

pytestmark = pytest.mark.slow

AUROC_FLOOR = 0.95  # the bound on the held-out episodes; docs/evaluate/classifier.md has the value


@pytest.fixture(scope="module")
def checkpoint() -> Path:
    """The checkpoint scripts/setup.sh trained (trained here, a few minutes, where set-up did not)."""
    assert setup_checkpoint.ensure() == 0
    return setup_checkpoint.CHECKPOINT


@pytest.fixture(scope="module")
def server(checkpoint: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    root = tmp_path_factory.mktemp("classifier-server")
    args = ["--backend", "resnet", "--model", str(checkpoint), "--self-test", "--video-root", str(root)]
    process = ServerProcess(args, root / "server.log", plugins=()).wait_ready(timeout=300)
    yield process
    process.stop()


@pytest.fixture(scope="module")
def rescored(server: ServerProcess, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("classifier-judged")
    write_run(load_set(), "held_out", root / "labelled")
    judge = ("--endpoint", server.endpoint, "--send-video-inline")
    result = run_reward_eval("rescore", str(root / "labelled"), *judge, "--out", str(root / "rescored"))
    assert result.returncode == 0, result.stderr
    result = run_reward_eval("audit", str(root / "rescored"), *judge)
    assert result.returncode == 0, result.stderr
    return root / "rescored"


def test_the_server_passed_the_shipped_self_test(server: ServerProcess) -> None:
    assert "self-test: misjudged" in server.log()
    misjudged = server.log().split("self-test: misjudged ")[1].split(" of ")[0]
    assert int(misjudged) <= 2, server.log()  # the default tolerance allows a quarter of 10


def test_held_out_auroc_is_at_least_the_floor_with_every_task_measured(rescored: Path) -> None:
    summary = json.loads((rescored / "summary.json").read_text())
    assert summary["overall"]["auroc"] >= AUROC_FLOOR
    assert {"0", "1", "7"} <= set(summary["per_task"])
    assert summary["judges"][0]["judge"].startswith("resnet on libero_basket_resnet [mean P(success)")


def test_audit_is_what_a_frame_classifier_sees(rescored: Path) -> None:
    audit = json.loads((rescored / "audit" / "audit.json").read_text())
    rows = {name: block["positive_rate"] for name, block in audit["rows"].items()}
    wrong = [c for c in audit["cases"] if c["perturbation"] == "wrong_task"]
    assert wrong and all(c["score"] == pytest.approx(c["original_score"], abs=1e-6) for c in wrong)
    assert rows["wrong_task"] == rows["original"] >= 0.8  # the text is not seen
    assert rows["frozen"] == rows["reversed"] == 0.0  # both end on the first frame
    assert rows["failure"] <= 0.1
    assert rows["clipped"] <= 0.1  # cut before the goal holds
    # shuffled: the last frame is a random one of the success's; mostly not its end (19% measured)
    assert 0.0 < rows["shuffled"] <= 0.35


def test_watch_replay_keeps_the_guard_quiet_and_catches_the_constant_judges(rescored: Path) -> None:
    rows = {r.judge: r for r in replays(rescored, min_episodes=10)}
    classifier, yes, no = rows["resnet"], rows["always-yes"], rows["always-no"]
    assert classifier.tripped_at is None and classifier.false_positive_rate <= 0.2
    assert classifier.success_recall >= 0.8
    assert yes.false_positive_rate == 1.0 and yes.tripped_at is not None
    assert no.success_recall == 0.0 and no.tripped_at is None
