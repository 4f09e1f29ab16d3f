"""``reward_eval compare``: two training log dirs -> native success and agreement plot + table.

The log dirs are synthetic but real: TensorBoard event files written by torch's
``SummaryWriter`` (what RLinf's tensorboard logger uses) under ``tensorboard/`` as in a
run dir, and JSONL episode logs in the env's record format.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from reward_eval.analysis import training_runs
from reward_eval.commands import compare

NATIVE_SUCCESS = [0.10, 0.30, 0.25, 0.50, 0.40]  # best 0.50 at step 3, final 0.40 at step 4
VLM_SUCCESS = [0.05, 0.20, 0.45, 0.35, 0.60]  # best = final = 0.60 at step 4
VLM_AGREE = [0.50, 0.75, 0.80, 0.70, 0.90]


def _write_scalars(log_dir: Path, series: Mapping[str, Sequence[float]], first_step: int = 0) -> None:
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(log_dir / "tensorboard"))
    for tag, values in series.items():
        for step, value in enumerate(values, start=first_step):
            writer.add_scalar(tag, value, step)
    writer.close()


def _episode(episode: int, env: int, native: bool, vlm: bool, fallback: bool = False) -> dict:
    return {
        "split": "train", "rank": 0, "env": env, "episode": episode, "task_id": 0, "task_text": "t",
        "native_success": native, "vlm_score": float(vlm), "vlm_success": vlm, "fallback": fallback,
    }  # fmt: skip


def _write_jsonl(log_dir: Path, records: Sequence[dict]) -> None:
    lines = "".join(json.dumps(r) + "\n" for r in records)
    (log_dir / "vlm_episodes_train_rank0.jsonl").write_text(lines)


def _compare(tmp_path: Path, *extra: str) -> int:
    return compare.main(
        [str(tmp_path / "native"), str(tmp_path / "vlm"), "--out", str(tmp_path / "out"), *extra]
    )


def _assert_png_with_content(path: Path) -> None:
    with Image.open(path) as image:
        image.verify()
    with Image.open(path) as image:
        pixels = np.asarray(image.convert("L"), dtype=float)
    assert pixels.std() > 5


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    _write_scalars(tmp_path / "native", {"env/success_once": NATIVE_SUCCESS, "env/return": [1, 2, 3, 4, 5]})
    _write_scalars(tmp_path / "vlm", {"env/success_once": VLM_SUCCESS, "env/vlm_native_agree": VLM_AGREE})
    return tmp_path


def test_table_has_final_and_best_native_success_and_mean_agreement(runs: Path, capsys) -> None:
    assert _compare(runs) == 0
    text = (runs / "out" / "compare.md").read_text()
    assert text in capsys.readouterr().out
    rows = {line.split(" | ")[0].strip("| "): line for line in text.splitlines() if line.startswith("| ")}
    assert "0.400 (step 4)" in rows["native reward"] and "0.500 (step 3)" in rows["native reward"]
    assert "n/a (no scored episodes)" in rows["native reward"]
    assert rows["VLM reward"].count("0.600 (step 4)") == 2
    assert f"{np.mean(VLM_AGREE):.3f} (scalar env/vlm_native_agree)" in rows["VLM reward"]
    assert "![native success and agreement](compare.png)" in text
    _assert_png_with_content(runs / "out" / "compare.png")


def test_any_number_of_runs_each_a_row_and_a_curve_labelled_by_its_dir(runs: Path, capsys) -> None:
    _write_scalars(runs / "lenient", {"env/success_once": [0.2, 0.2, 0.3, 0.3, 0.3]})
    three = [str(runs / name) for name in ("native", "vlm", "lenient")]
    assert compare.main([*three, "--out", str(runs / "out")]) == 0
    rows = [line for line in (runs / "out" / "compare.md").read_text().splitlines() if line.startswith("| ")]
    assert [row.split(" | ")[0].strip("| ") for row in rows[2:]] == ["native", "vlm", "lenient"]
    assert "0.300 (step 4)" in rows[4] and "0.300 (step 2)" in rows[4], "final, then best (the first at it)"
    _assert_png_with_content(runs / "out" / "compare.png")
    assert compare.main([three[0], "--out", str(runs / "one"), "--labels", "alone"]) == 0


def test_agreement_comes_from_the_jsonl_in_windows_when_the_scalar_is_missing(tmp_path: Path) -> None:
    _write_scalars(tmp_path / "native", {"env/success_once": NATIVE_SUCCESS})
    _write_scalars(tmp_path / "vlm", {"env/success_once": VLM_SUCCESS})
    # Played order is (episode, rank, env): agree, disagree | agree, agree | disagree; the
    # fallback episode is no judgement and is left out.
    _write_jsonl(
        tmp_path / "vlm",
        [
            _episode(1, 0, native=True, vlm=True),
            _episode(0, 1, native=False, vlm=True),
            _episode(0, 0, native=False, vlm=False),
            _episode(1, 1, native=False, vlm=True, fallback=True),
            _episode(2, 0, native=True, vlm=True),
            _episode(2, 1, native=True, vlm=False),
        ],
    )
    curves = training_runs.load_run(
        "vlm", tmp_path / "vlm", training_runs.NATIVE_TAG, training_runs.AGREE_TAG, 2
    )
    assert curves.agreement is not None
    np.testing.assert_array_equal(curves.agreement.x, [2, 4, 5])
    np.testing.assert_allclose(curves.agreement.y, [0.5, 1.0, 0.0])
    assert curves.agreement.unit == "judged episode (windows of 2)"
    assert _compare(tmp_path, "--window", "2") == 0
    assert "0.500 (JSONL episode log, windows of 2)" in (tmp_path / "out" / "compare.md").read_text()
    _assert_png_with_content(tmp_path / "out" / "compare.png")


# A hacking curve: the judge's false-positive rate climbs (task 3 first), the canaries are fooled,
# and the guard trips at step 3; task 5 never had a false positive, so it is not drawn.
HACKED = {
    "env/success_once": VLM_SUCCESS,
    "env/vlm_false_positive_rate": [0.05, 0.10, 0.30, 0.55, 0.60],
    "env/vlm_false_negative_rate": [0.20, 0.20, 0.10, 0.10, 0.05],
    "env/vlm_canary_false_positive_rate": [0.0, 0.0, 0.5, 1.0, 1.0],
    "env/vlm_canaries": [0, 0, 2, 4, 6],
    "env/vlm_guard_tripped": [0, 0, 0, 1, 1],
    "env/vlm_task_false_positive_rate/3": [0.1, 0.2, 0.6, 0.9, 1.0],
    "env/vlm_task_false_positive_rate/5": [0.0] * 5,
}


def test_the_judges_live_health_is_drawn_and_tabled(tmp_path: Path) -> None:
    _write_scalars(tmp_path / "native", {"env/success_once": NATIVE_SUCCESS})
    _write_scalars(tmp_path / "vlm", HACKED)
    curves = training_runs.load_run(
        "vlm", tmp_path / "vlm", training_runs.NATIVE_TAG, training_runs.AGREE_TAG, 5
    )
    health = curves.health
    assert health is not None and health.guard_tripped_at == 3 and list(health.per_task) == [3]
    np.testing.assert_allclose(health.canary_false_positive.y, HACKED["env/vlm_canary_false_positive_rate"])
    np.testing.assert_allclose(health.false_negative.y, HACKED["env/vlm_false_negative_rate"])
    assert _compare(tmp_path) == 0
    rows = {
        line.split(" | ")[0].strip("| "): line
        for line in (tmp_path / "out" / "compare.md").read_text().splitlines()
        if line.startswith("| ")
    }
    assert "| 0.600 / 0.050 (step 4) | tripped at step 3 |" in rows["VLM reward"]
    assert "| n/a (not logged) | n/a |" in rows["native reward"]
    _assert_png_with_content(tmp_path / "out" / "compare.png")


def test_a_run_without_canaries_a_guard_or_native_successes_shows_none_of_them() -> None:
    scalars = {tag: dict(enumerate(values)) for tag, values in HACKED.items()}
    scalars["env/vlm_canaries"] = dict.fromkeys(range(5), 0.0)
    scalars["env/vlm_window_native_successes"] = dict.fromkeys(range(5), 0.0)  # no rate to draw
    del scalars["env/vlm_guard_tripped"]
    health = training_runs.health_curves(scalars)
    assert health.canary_false_positive is None and health.guard_tripped_at is None
    assert health.false_negative is None
    assert training_runs.health_curves({"env/success_once": {0: 0.1}}) is None


def test_custom_tag_labels_and_event_files_of_a_resumed_run(tmp_path: Path) -> None:
    _write_scalars(tmp_path / "native", {"eval/success": [0.2, 0.4]})
    _write_scalars(tmp_path / "native" / "resumed", {"eval/success": [0.9, 0.3]}, first_step=1)
    _write_scalars(tmp_path / "vlm", {"eval/success": [0.1, 0.2, 0.3]})
    assert _compare(tmp_path, "--native-tag", "eval/success", "--labels", "A,B") == 0
    text = (tmp_path / "out" / "compare.md").read_text()
    # Step 1 was logged twice: the resumed run's (later) value wins; steps 0..2 merged.
    assert "| A |" in text and "0.300 (step 2)" in text and "0.900 (step 1)" in text
    assert "| B |" in text


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda d: _write_scalars(d, {"env/return": [1.0]}),
            "has no scalar 'env/success_once'; its scalars: env/return",
        ),
        (lambda d: d.mkdir(parents=True), "its scalars: none \\(no TensorBoard event files found\\)"),
        (lambda d: None, "is not a directory"),
    ],
    ids=["tag-missing", "no-event-files", "no-dir"],
)
def test_a_run_without_the_native_tag_fails_with_its_tags(tmp_path: Path, make, message: str, capsys) -> None:
    _write_scalars(tmp_path / "native", {"env/success_once": NATIVE_SUCCESS})
    make(tmp_path / "vlm")
    assert _compare(tmp_path) == 1
    assert re.search(message, capsys.readouterr().err)
    assert not (tmp_path / "out").exists()


def test_labels_must_be_one_per_run(runs: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        _compare(runs, "--labels", "only-one")
    assert exc.value.code == 2
    assert "--labels needs 2 non-empty comma-separated labels, one per run" in capsys.readouterr().err


def test_a_broken_episode_log_line_is_named(tmp_path: Path, capsys) -> None:
    _write_scalars(tmp_path / "native", {"env/success_once": NATIVE_SUCCESS})
    _write_scalars(tmp_path / "vlm", {"env/success_once": VLM_SUCCESS})
    _write_jsonl(tmp_path / "vlm", [_episode(0, 0, native=True, vlm=True)])
    with (tmp_path / "vlm" / "vlm_episodes_train_rank0.jsonl").open("a") as log:
        log.write('{"episode": 1, "native_suc')  # a crashed run's last line
    assert _compare(tmp_path) == 1
    assert "vlm_episodes_train_rank0.jsonl, line 2: not valid JSON" in capsys.readouterr().err


@pytest.mark.parametrize("window", [0, -1, 1.5, True], ids=["zero", "negative", "float", "bool"])
def test_agreement_window_must_be_a_positive_integer(window: object) -> None:
    with pytest.raises(ValueError, match=f"window must be an integer >= 1, got {window!r}"):
        training_runs.windowed_agreement([_episode(0, 0, native=True, vlm=True)], window)  # type: ignore[arg-type]
