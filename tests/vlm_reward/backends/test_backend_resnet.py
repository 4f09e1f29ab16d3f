"""The ``resnet`` backend: RLinf's ResNet classifier from a checkpoint directory, in process and as a
real server over HTTP. The classifier here has random (seeded) weights: what is tested is the path
(checkpoint, frames, batch, aggregate, identity), not its judgement."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import requests

from tests.support.classifier_checkpoint import seeded_classifier
from tests.support.server import REPO, ServerProcess
from vlm_reward.backends import ScoreJob, resolve_backend
from vlm_reward.backends.resnet import ResNetBackend
from vlm_reward.backends.resnet_checkpoint import (
    CONFIG_FILE,
    INSTALL_HINT,
    WEIGHTS_FILE,
    ClassifierConfig,
    build_model,
    model_input,
    read_config,
    write_checkpoint,
)
from vlm_reward.frames import evenly_spaced
from vlm_reward.video_io import encode_mp4

CONFIG = ClassifierConfig(image_size=32, last_k=2)


@pytest.fixture(scope="module")
def classifier(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    """A seeded random ResNet-18 classifier checkpoint and the model it holds."""
    path = tmp_path_factory.mktemp("resnet") / "basket_resnet"
    return path, seeded_classifier(path, CONFIG)


def frames(seed: int, count: int = 16, size: int = 48) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=(count, size, size, 3), dtype=np.uint8)


def frame_probabilities(model, video: np.ndarray) -> list[float]:
    """P(success) of each frame by hand, one frame at a time, in order."""
    import torch

    with torch.inference_mode():
        return [float(model(model_input(frame[None], CONFIG.image_size))["probabilities"]) for frame in video]


def expected_score(model, video: np.ndarray) -> float:
    """The aggregate by hand: the mean P(success) of the last ``last_k`` frames."""
    return float(np.mean(frame_probabilities(model, video[-CONFIG.last_k :])))


@pytest.mark.parametrize(
    ("files", "problem"),
    [
        ({}, "is not a classifier checkpoint"),
        ({CONFIG_FILE: json.dumps({"classifier": {}})}, "is not a classifier checkpoint"),
        ({CONFIG_FILE: "{", WEIGHTS_FILE: ""}, "is not a classifier config"),
        ({CONFIG_FILE: json.dumps({"classifier": {"arch": "vgg16"}}), WEIGHTS_FILE: ""}, "arch 'vgg16'"),
    ],
    ids=["empty-dir", "no-weights", "unreadable-config", "unknown-arch"],
)
def test_a_directory_that_is_not_a_classifier_is_refused_in_one_sentence(tmp_path, files, problem) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(ValueError, match=problem):
        ResNetBackend(str(tmp_path)).check_model()


@pytest.mark.parametrize(
    ("kwargs", "problem"),
    [({"prompt": "qwen"}, "does not accept backend_kwargs"), ({"device": "tpu"}, "device must be")],
    ids=["prompt", "device"],
)
def test_bad_backend_kwargs_are_refused(kwargs, problem) -> None:
    with pytest.raises(ValueError, match=problem):
        resolve_backend("resnet")("unused", **kwargs)


def test_without_rlinf_loading_names_the_install(monkeypatch) -> None:
    """Also run for real in the vLLM venv, which has no RLinf."""
    monkeypatch.setitem(sys.modules, "rlinf.models.embodiment.reward.resnet_reward_model", None)
    with pytest.raises(ImportError, match="install rlinf"):
        build_model(CONFIG)
    assert "rlinf==0.3.0" in INSTALL_HINT


@pytest.mark.slow
def test_batched_scores_equal_each_job_alone_and_a_bad_job_fails_alone(classifier, tmp_path) -> None:
    path, _model = classifier
    backend = ResNetBackend(str(path))
    backend.check_model()
    backend.load()
    videos = [frames(seed) for seed in range(3)] + [frames(9, size=16)]  # the last is too small
    jobs = []
    for i, video in enumerate(videos):
        encode_mp4(video, tmp_path / f"{i}.mp4", fps=4)
        jobs.append(ScoreJob("any task", str(tmp_path / f"{i}.mp4"), 16, 0, 4.0, score_mode="probability"))
    batched = backend.generate(jobs)
    alone = [backend.generate([job])[0] for job in jobs[:3]]
    assert [a.probability for a in batched[:3]] == pytest.approx([a.probability for a in alone], abs=1e-5)
    assert [a.frame_scores for a in batched[:3]] == [pytest.approx(a.frame_scores, abs=1e-5) for a in alone]
    assert isinstance(batched[3], ValueError) and "smaller than the classifier's 32 px" in str(batched[3])
    assert backend.frame_indices(32, 16) == evenly_spaced(32, 16)  # every frame shown is scored


@pytest.fixture(scope="module")
def served(classifier, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, Path]]:
    path, _ = classifier
    root = tmp_path_factory.mktemp("resnet-root")
    server = ServerProcess(
        ["--backend", "resnet", "--model", str(path), "--video-root", str(root)],
        root / "server.log",
        plugins=(),
    ).wait_ready(timeout=180)
    yield server, root
    server.stop()


@pytest.mark.slow
def test_served_over_http_with_its_identity_and_the_aggregate(classifier, served) -> None:
    from vlm_reward.video_io import decode_clip, probe_video

    _, model = classifier
    server, root = served
    video = frames(5)
    encode_mp4(video, root / "episode.mp4", fps=4)
    probe = probe_video(root / "episode.mp4")
    decoded = decode_clip(root / "episode.mp4", range(probe.num_frames), probe).frames
    body = {"task_text": "put both in the basket", "video_path": str(root / "episode.mp4"), "nframes": 16}
    response = requests.post(server.endpoint, json=body, timeout=60)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["score"] == pytest.approx(expected_score(model, decoded), abs=1e-5)
    # One score per frame shown, in the video's order; the score is the aggregate of the last two.
    assert answer["frame_scores"] == pytest.approx(frame_probabilities(model, decoded), abs=1e-5)
    assert answer["score"] == pytest.approx(np.mean(answer["frame_scores"][-CONFIG.last_k :]), abs=1e-6)
    assert answer["score_mode"] == "probability" and answer["prompt_preset"] is None
    assert (answer["backend"], answer["model"]) == (
        "resnet",
        "basket_resnet [mean P(success) of the last 2 frames, target success]",
    )
    other = requests.post(server.endpoint, json={**body, "task_text": "anything else"}, timeout=60).json()
    assert other["score"] == answer["score"]  # the instruction is not seen
    refused = requests.post(server.endpoint, json={**body, "score_mode": "auto"}, timeout=60)
    assert refused.status_code == 400 and "its modes: probability" in refused.text


@pytest.mark.slow
@pytest.mark.parametrize("nframes", [5, 16], ids=["5-of-16", "all-16"])
def test_served_frame_scores_are_the_shown_frames_in_order(classifier, served, nframes: int) -> None:
    """``nframes`` evenly spaced frames of a 16-frame video: one score each, in the video's order."""
    from vlm_reward.video_io import decode_clip, probe_video

    _, model = classifier
    server, root = served
    video = frames(6)
    encode_mp4(video, root / f"shown{nframes}.mp4", fps=4)
    decoded = decode_clip(root / f"shown{nframes}.mp4", range(16), probe_video(root / f"shown{nframes}.mp4"))
    body = {"task_text": "t", "video_path": str(root / f"shown{nframes}.mp4"), "nframes": nframes}
    answer = requests.post(server.endpoint, json=body, timeout=60).json()
    shown = decoded.frames[evenly_spaced(16, nframes)]
    assert answer["frame_scores"] == pytest.approx(frame_probabilities(model, shown), abs=1e-5)
    assert len(answer["frame_scores"]) == nframes


@pytest.mark.slow
def test_server_refuses_a_directory_that_is_not_a_classifier_with_exit_2(tmp_path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "vlm_reward.libero_reward_server",
            "--backend",
            "resnet",
            "--model",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert result.returncode == 2
    assert f"{tmp_path} is not a classifier checkpoint" in result.stderr.splitlines()[-1]


def test_config_round_trip(tmp_path: Path) -> None:
    """The checkpoint's config reads back as written (no RLinf needed: the weights are not loaded)."""
    import torch

    write_checkpoint(tmp_path / "c", CONFIG, {"backbone.w": torch.zeros(1)}, {"data": "none"})
    assert read_config(tmp_path / "c") == CONFIG
