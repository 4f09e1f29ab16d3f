"""The server as a real process with ``qwen_vl_hf`` on each tiny checkpoint, over HTTP.

One server per family (Qwen2.5-VL, Qwen3-VL): the backend picks the model class from the
checkpoint's config.json. The model's weights are random but seeded, and decoding is
greedy, so what it says is pinned: in the default ``probability`` mode, P(yes) for each
prompt layout; in a text mode, the answer it writes (no score can be read from it: a clean
502 that quotes it). Both go the full path: the video read once by the server, the
processor, the model, the answer.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.support.server import ServerProcess, token_counts
from tests.support.video_frames import count_frames

pytestmark = pytest.mark.slow


FAMILIES = {"qwen2_5_vl": "tiny_qwen_checkpoint", "qwen3_vl": "tiny_qwen3_checkpoint"}


@pytest.fixture(scope="module", params=list(FAMILIES), ids=list(FAMILIES))
def family(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="module")
def served(
    family: str, request: pytest.FixtureRequest, sample_mp4: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator:
    tiny_qwen_checkpoint = request.getfixturevalue(FAMILIES[family])
    root = tmp_path_factory.mktemp("hf-root")
    video = root / "episode.mp4"
    shutil.copy(sample_mp4, video)
    server = ServerProcess(
        ["--backend", "qwen_vl_hf", "--model", tiny_qwen_checkpoint, "--video-root", str(root)],
        root / "server.log",
        plugins=(),
    ).wait_ready(timeout=120)
    yield server, video
    server.stop()


# P(yes) of each seeded tiny model for the fixture clip, per prompt layout.
PINNED_PROBABILITY = {
    "qwen2_5_vl": {"qwen": 0.47709, "primo": 0.46774},
    "qwen3_vl": {"qwen": 0.52746, "primo": 0.51873},
}
# Its greedy 6-token answer in a text mode (unreadable as a score).
PINNED_TEXT = {"qwen2_5_vl": "\ufffd\ufffd3II", "qwen3_vl": " t\ufffd\ufffdr"}


def _request(video: Path, **fields: object) -> dict[str, object]:
    body = {"task_text": "move the red square to the right", "video_path": str(video), "nframes": 16}
    return {**body, **fields}


@pytest.mark.parametrize("prompt", ["qwen", "primo"], ids=["video_only", "primo_first_video_last"])
def test_probability_of_a_16_frame_mp4_is_pinned(served, family: str, prompt: str) -> None:
    server, video = served
    assert count_frames(video) == 16
    response = requests.post(
        server.endpoint, json=_request(video, backend_kwargs={"prompt": prompt}), timeout=120
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["probability"] == pytest.approx(PINNED_PROBABILITY[family][prompt], abs=1e-4)
    assert body["score"] == body["raw_value"] == body["probability"]
    assert body["answer"] == ("yes" if body["probability"] >= 0.5 else "no") and body["think"] is None
    assert "frame_scores" not in body  # a VLM judges the video as a whole: no per-frame values
    assert (body["backend"], body["model"]) == ("qwen_vl_hf", Path(body["model"]).name)


def test_text_mode_answer_is_pinned_and_unreadable_as_a_score(served, family: str) -> None:
    server, video = served
    body = _request(video, score_mode="auto", backend_kwargs={"max_new_tokens": 6})
    response = requests.post(server.endpoint, json=body, timeout=120)
    error = response.json()["error"]
    assert (response.status_code, error["type"]) == (502, "parse_error"), error
    assert error["message"].endswith(f"full answer: {PINNED_TEXT[family]!r}"), error["message"]


def test_health_and_backends_report_the_loaded_model(served) -> None:
    server, _ = served
    assert requests.get(server.url("/health"), timeout=5).status_code == 200
    backends = requests.get(server.url("/backends"), timeout=5).json()
    assert backends["default"] == "qwen_vl_hf" and "qwen_vl_hf" in backends["loaded"]
    # The name from before Qwen3-VL stays an alias, so existing YAMLs keep working.
    assert backends["aliases"]["qwen_vl_hf"] == ["qwen2_5_vl_hf"]


# The "roboreward" preset in probability mode: the expected 1-5 level after "ANSWER: ",
# mapped by (n - 1) / 4, and the likeliest level.
PINNED_RUBRIC = {"qwen2_5_vl": (0.47159, "1"), "qwen3_vl": (0.48558, "1")}  # the reproducible encoder's MP4


def test_roboreward_preset_reads_the_five_levels_after_answer(served, family: str) -> None:
    server, video = served
    body = _request(video, backend_kwargs={"prompt": "roboreward"})
    response = requests.post(server.endpoint, json=body, timeout=120)
    assert response.status_code == 200, response.text
    reply = response.json()
    assert (reply["score"], reply["answer"]) == (pytest.approx(PINNED_RUBRIC[family][0], abs=1e-4), "1")
    assert reply["score"] == reply["probability"]


def test_roboreward_preset_refuses_a_text_mode_that_would_misread_it(served) -> None:
    server, video = served
    body = _request(video, score_mode="auto", backend_kwargs={"prompt": "roboreward"})
    response = requests.post(server.endpoint, json=body, timeout=120)
    assert response.status_code == 400, response.text
    assert "read in score_mode 'rubric' or 'probability', not 'auto'" in response.json()["error"]["message"]


# Prompt tokens of the fixture clip (16 frames, "qwen" layout: no answer prefix, so both
# modes read the same prompt), vision included, as the backend counts them for /metrics.
PINNED_PROMPT_TOKENS = {"qwen2_5_vl": 1525, "qwen3_vl": 1643}


@pytest.mark.parametrize(
    ("score_mode", "generated"), [("probability", 1), ("auto", 6)], ids=["probability", "text"]
)
def test_metrics_count_the_tokens_the_model_read_and_wrote(
    served, family: str, score_mode: str, generated: int
) -> None:
    server, video = served
    before = token_counts(server.url(""), "qwen_vl_hf")
    body = _request(video, score_mode=score_mode, backend_kwargs={"prompt": "qwen", "max_new_tokens": 6})
    requests.post(server.endpoint, json=body, timeout=120)
    after = token_counts(server.url(""), "qwen_vl_hf")
    assert (after[0] - before[0], after[1] - before[1]) == (PINNED_PROMPT_TOKENS[family], generated)
