"""The reward guard's ``stop`` in a real training run: the run ends after its checkpoint, says why,
exits with status 4 and leaves nothing behind (RLinf's driver would hang if a worker raised).

One ``run_embodiment.sh --cpu-smoke`` run (the same tiny setup as ``test_training_smoke.py``)
asked for two GRPO steps, against a reward server whose ``score_sequence`` backend answers 0.2
and 0.9: of the two native failures of step 1, one is judged a success, a false-positive rate
of 0.5 over 2 native failures, above the guard's 0.4. The guard trips in step 1, the run stops
after it: the checkpoint of step 1 is written although ``save_interval`` would not write one,
step 2 never runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.examples.test_training_smoke import SmokeRun, jsonl, prebuilt, run_smoke
from tests.support.server import ServerProcess
from vlm_reward.exit_statuses import EXIT_GUARD_STOP

pytestmark = [pytest.mark.libero, pytest.mark.slow]


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory: pytest.TempPathFactory, tiny_oft_checkpoint: str) -> Iterator[SmokeRun]:
    tmp = tmp_path_factory.mktemp("guard-stop")
    kwargs = json.dumps({"log_path": str(tmp / "jobs.jsonl"), "scores": "0.2,0.9"})
    server = ServerProcess(
        ["--backend", "score_sequence", "--model", "none", "--video-root", "/", "--backend-kwargs", kwargs],
        tmp / "server.log",
        plugins=("tests.support.training_backends",),
    ).wait_ready()
    rm = "env.train.reward_model"
    try:
        yield run_smoke(
            tmp,
            prebuilt(tiny_oft_checkpoint),
            "runner.max_steps=2",
            "runner.save_interval=100",  # RLinf itself would write no checkpoint at step 1
            f"{rm}.enable=True",
            f"{rm}.endpoint={server.endpoint}",
            f"{rm}.backend=score_sequence",
            f"{rm}.guard.enable=True",
            f"{rm}.guard.action=stop",
            f"{rm}.guard.max_false_positive_rate=0.4",
            f"{rm}.guard.min_episodes=2",
            f"{rm}.guard.window=10",
        )
    finally:
        server.stop()


def test_the_run_stops_after_the_checkpoint_of_the_step_that_tripped(stopped_run: SmokeRun) -> None:
    run = stopped_run
    assert run.returncode == EXIT_GUARD_STOP, run.output[-6000:]
    assert "[reward guard] the run stopped after training step 1: reward guard tripped after 2 judged" in (
        run.output
    )
    assert "false-positive rate 0.500 (1 of 2 native failures judged a success" in run.output
    assert "the reward guard stopped the run (exit status 4); see [reward guard] above" in run.output
    assert "--cpu-smoke FAILED" not in run.output and "[cpu-smoke] FAILED" not in run.output
    checkpoints = sorted(p.name for p in run.log_dir.glob("*/checkpoints/*"))
    assert checkpoints == ["global_step_1"], "the stop's checkpoint, and no step 2"
    assert run.checkpoint(), "a full checkpoint of the actor"


def test_the_step_that_tripped_is_in_tensorboard_and_the_log(stopped_run: SmokeRun) -> None:
    scalars = stopped_run.scalars()
    assert scalars["env/vlm_guard_tripped"] == {0: 1.0} and scalars["env/vlm_false_positive_rate"] == {0: 0.5}
    lines = jsonl(stopped_run.log_dir / "vlm_episodes_train_rank0.jsonl")
    # The tripping episode (the second one collected) and every later one trained on the native reward.
    assert [line["used_for_training"] for line in lines] == [True, False]
    assert Path(stopped_run.log_dir / "run_embodiment.log").read_text().count("reward guard tripped") >= 1
