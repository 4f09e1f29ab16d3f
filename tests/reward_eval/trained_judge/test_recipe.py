"""The trained VLM judge's recipe: the shipped judge is the recipe's, its stamp moves with what made
it, and every place that serves it asks the request it was trained at (milliseconds)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from examples.embodiment.reward_comparison import judges
from examples.embodiment.reward_comparison.judges import JUDGES
from examples.embodiment.reward_comparison.runs import RUNS
from reward_eval.classifier.labelled_set import DEFAULT_DATA_DIR, MANIFEST
from reward_eval.job.env_config import load_env_config
from reward_eval.job.paths import ENV_CONFIG
from reward_eval.trained_judge import recipe
from tests.support.vllm_venv import fake_venv
from vlm_reward.backends import video_positions


def test_the_shipped_judge_is_what_its_recipe_makes_now() -> None:
    assert recipe.shipped_stamp() == recipe.stamp(), (
        "the shipped judge was made from other data or another recipe: "
        "run `python -m reward_eval.trained_judge.recipe make` and commit its checkpoint dir"
    )
    assert (recipe.CHECKPOINT / "model.safetensors").is_file()
    summary = json.loads((recipe.CHECKPOINT / "finetune.json").read_text())
    assert summary["outcome"] == "done" and summary["hyper_parameters"]["request"]["max_pixels"] == 19600


@pytest.mark.parametrize(
    "change",
    ["data", "options", "request", "size", "positions"],
    ids=["a-new-manifest", "other-fine-tune-options", "another-request", "another-size", "other-positions"],
)
def test_the_stamp_moves_with_everything_that_made_the_judge(
    change: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = recipe.stamp()
    data = recipe.DATA
    if change == "data":
        changed = tmp_path / "set"
        changed.mkdir()
        shutil.copyfile(recipe.JUDGE_DATA / MANIFEST, changed / MANIFEST)
        (changed / MANIFEST).write_text((changed / MANIFEST).read_text() + " ")
        data = (DEFAULT_DATA_DIR, changed)
    elif change == "options":
        monkeypatch.setattr(recipe, "FINETUNE_OPTIONS", (*recipe.FINETUNE_OPTIONS, "--grad-accum", "4"))
    elif change == "request":
        monkeypatch.setattr(recipe, "REQUEST", {**recipe.REQUEST, "max_pixels": 12544})
    elif change == "size":
        monkeypatch.setattr(recipe, "SIZE", "small")
    else:
        monkeypatch.setattr(video_positions, "LAYOUT", "transformers 4.57's: whole seconds per frame pair")
    assert recipe.stamp(data) != before


def test_the_env_config_is_the_missions_with_the_judges_request(tmp_path: Path) -> None:
    written = load_env_config(recipe.env_config(tmp_path / "judge_env.yaml"))
    mission = load_env_config(ENV_CONFIG)
    for key, value in recipe.REQUEST.items():
        assert written.reward_model[key] == value
    assert {k: v for k, v in written.reward_model.items() if k not in recipe.REQUEST} == {
        k: v for k, v in mission.reward_model.items() if k not in recipe.REQUEST
    }
    assert written.init_params == mission.init_params, "only the request changes"


def test_the_learning_comparisons_vlm_run_serves_the_judge_as_it_was_trained() -> None:
    block = RUNS["vlm"].block("http://127.0.0.1:1/score")
    assert {k: block[k] for k in recipe.REQUEST} == dict(recipe.REQUEST)
    assert block["backend"] == JUDGES["vlm"].backend == recipe.BACKEND
    assert block["binary_reward"] is True and block["success_threshold"] == 0.5


def test_a_made_judge_is_installed_with_its_files_and_stamp_only(tmp_path: Path) -> None:
    judge = tmp_path / "judge"
    (judge / "finetune" / "videos").mkdir(parents=True)
    for name in ("model.safetensors", "config.json", "finetune.json"):
        (judge / name).write_text(name)
    target = tmp_path / "checkpoint"
    (target).mkdir()
    (target / "old.bin").write_text("stale")
    recipe.install(judge, target)
    assert sorted(p.name for p in target.iterdir()) == sorted(
        ["model.safetensors", "config.json", "finetune.json", recipe.STAMP_FILE]
    )
    assert recipe.shipped_stamp(target) == recipe.stamp()


def test_another_training_seed_changes_only_the_seed_and_needs_a_place_of_its_own(
    capsys: pytest.CaptureFixture[str],
) -> None:
    options = recipe.with_seed(1)
    at = options.index("--seed")
    assert options[at + 1] == "1" and options[:at] + options[at + 2 :] == tuple(
        o for i, o in enumerate(recipe.FINETUNE_OPTIONS) if i not in (at, at + 1)
    )
    assert recipe.with_seed(None) == recipe.FINETUNE_OPTIONS
    assert recipe.stamp(options=options) != recipe.stamp()
    with pytest.raises(SystemExit) as exit_info:
        recipe.main(["make", "--seed", "1"])
    assert exit_info.value.code == 2 and "give --out DIR too" in capsys.readouterr().err


def test_the_comparisons_vlm_judge_runs_on_the_vllm_venv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    venv = fake_venv(tmp_path / "venv")
    monkeypatch.setenv("VLLM_VENV", str(venv))
    started: dict[str, object] = {}

    class Recorder:
        def __init__(self, args: list[str], log_path: Path, *, python: str, plugins: tuple[str, ...]) -> None:
            started.update(args=args, python=python)

        def stop(self) -> None:
            started["stopped"] = True

    monkeypatch.setattr(judges, "RewardServerProcess", Recorder)
    with judges.serving("vlm", tmp_path / "judges", tmp_path / "server.log"):
        pass
    assert started["python"] == str(venv / "bin" / "python") and started["stopped"]
    assert recipe.BACKEND in started["args"] and str(recipe.CHECKPOINT) in started["args"]
