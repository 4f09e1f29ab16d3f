"""Each judge tool on the classifier set-up trains (issue 38's positive control): one reward server
with ``--backend resnet --self-test`` (so it serves only once it passed the shipped self-test), the
shipped set's held-out episodes (initial states never trained on, tasks 0, 1 and 7) re-scored
through it, audited through it, and replayed through the live watch.

The checkpoint is trained on the CPU the test runs on, so its exact judgements differ between CPUs
(another CPU's kernels take another training path): every bound is either derived from what a frame
classifier sees (``wrong_task`` is the original's frames; a shuffled success whose seed puts its own
end frame last is judged like the original) or a margin that held with room on this CPU and with
``ATEN_CPU_CAPABILITY=avx2 DNNL_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2`` (docs/evaluate/classifier.md
has both measurements)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from reward_eval.classifier import setup_checkpoint
from reward_eval.classifier.labelled_run import write_run
from reward_eval.classifier.labelled_set import load_set
from reward_eval.classifier.watch_replay import replays
from tests.reward_eval.conftest import run_reward_eval
from tests.support.server import ServerProcess
from tests.support.setup_steps import CLASSIFIER, WAITING_TEST_TIMEOUT_S, wait_for
from vlm_reward.video_io import probe_video

pytestmark = [pytest.mark.slow, pytest.mark.timeout(WAITING_TEST_TIMEOUT_S)]

AUROC_FLOOR = 0.95  # the bound on the held-out episodes; docs/evaluate/classifier.md has the value
# Margins on the audit's judged-success rates: each held with room on both CPUs measured.
AT_MOST = {"frozen": 0.1, "reversed": 0.1, "clipped": 0.1, "failure": 0.15, "shuffled": 0.5}
CLEAR = 0.2  # an original this far from the threshold keeps its verdict through the re-encode
# The watch's guard judges once it has seen this many native failures: the held-out split has 9
# (the test split's 8 are carved out of issue 38's 17), so always-yes trips it at the 5th.
GUARD_MIN_FAILURES = 5


@pytest.fixture(scope="module")
def checkpoint() -> Path:
    """The checkpoint scripts/setup.sh trained (trained here, a few minutes, where set-up did not)."""
    wait_for(CLASSIFIER)  # scripts/test.sh trains it beside the tests
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
    assert "target success]" in summary["judges"][0]["judge"]


def shuffled_ends_on_its_end(case: dict) -> bool:
    """Whether the shuffled counterfactual's last frame is its success's own end frame (the order
    is drawn from the case's seed, as :func:`vlm_reward.perturbations.shuffled_frames` draws it)."""
    frames = probe_video(case["video_path"]).num_frames
    return int(np.random.default_rng(list(case["seed"])).permutation(frames)[-1]) == frames - 1


def test_audit_is_what_a_frame_classifier_sees(rescored: Path) -> None:
    audit = json.loads((rescored / "audit" / "audit.json").read_text())
    rows = {name: block["positive_rate"] for name, block in audit["rows"].items()}
    wrong = [c for c in audit["cases"] if c["perturbation"] == "wrong_task"]
    assert wrong and all(c["score"] == pytest.approx(c["original_score"], abs=1e-6) for c in wrong)
    assert rows["wrong_task"] == rows["original"] >= 0.8  # the text is not seen
    # frozen, reversed: end on the first frame; clipped: before the goal holds; failure: native failures
    for name, bound in AT_MOST.items():
        assert rows[name] <= bound, (name, rows[name])
    # shuffled is judged by whichever frame its seed puts last: where that is the success's own end,
    # like the original (the same frame, re-encoded), so the rate is at least their share
    shuffled = [c for c in audit["cases"] if c["perturbation"] == "shuffled"]
    on_end = [c for c in shuffled if shuffled_ends_on_its_end(c) and abs(c["original_score"] - 0.5) > CLEAR]
    assert all((c["score"] >= 0.5) == (c["original_score"] >= 0.5) for c in on_end)
    assert rows["shuffled"] >= sum(c["original_score"] >= 0.5 for c in on_end) / len(shuffled)


def test_watch_replay_keeps_the_guard_quiet_and_catches_the_constant_judges(rescored: Path) -> None:
    rows = {r.judge: r for r in replays(rescored, min_episodes=GUARD_MIN_FAILURES)}
    classifier, yes, no = rows["resnet"], rows["always-yes"], rows["always-no"]
    assert classifier.tripped_at is None and classifier.false_positive_rate <= 0.2
    assert classifier.success_recall >= 0.8
    assert yes.false_positive_rate == 1.0 and yes.tripped_at is not None
    assert no.success_recall == 0.0 and no.tripped_at is None
