"""``qwen_vl_hf`` in batches, as the server runs it: distinct videos, their CPU steps prepared ahead.

For both tiny families (float32 on the CPU): a batch of distinct episodes (different videos, tasks,
frame counts and sizes, so the batch is left-padded and its windows have several lengths) scores
each episode as it scores alone, and as transformers' own vision encoder scores it alone (the
shipped path), within 1e-4; through the backend's runner, concurrent submissions are prepared
ahead (:meth:`QwenHFBackend.prepare_ahead`) and answered the same; a video that fails in a batch
fails only its own job.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from vlm_reward.backends import ScoreJob
from vlm_reward.backends.qwen_vl_hf import QwenHFBackend
from vlm_reward.video_io import encode_mp4

pytest.importorskip("transformers")
vision_encoder = pytest.importorskip("vlm_reward.backends.vision_encoder")

TOLERANCE = 1e-4
# (seed, frames, side, nframes, max_pixels, native_frame_size): each a different shape of request.
EPISODES = [
    (1, 8, 64, 8, 112 * 112, False),
    (2, 12, 96, 6, 224 * 224, False),
    (3, 8, 64, 4, 112 * 112, True),
    (4, 10, 80, 8, 112 * 112, False),
]


@pytest.fixture(scope="module", params=["qwen2_5_vl", "qwen3_vl"])
def backend(request: pytest.FixtureRequest) -> Iterator[QwenHFBackend]:
    name = "tiny_qwen3_checkpoint" if request.param == "qwen3_vl" else "tiny_qwen_checkpoint"
    loaded = QwenHFBackend(request.getfixturevalue(name))
    loaded.load()
    yield loaded
    loaded.close()


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> list[ScoreJob]:
    """One probability job per :data:`EPISODES` entry, each its own noisy video and task."""
    root = tmp_path_factory.mktemp("batch-videos")
    made = []
    for seed, frames, side, nframes, max_pixels, native in EPISODES:
        pixels = np.random.default_rng(seed).integers(0, 256, (frames, side, side, 3), dtype=np.uint8)
        path = root / f"episode_{seed}.mp4"
        encode_mp4(pixels, path, fps=4)
        task = f"put object {seed} in the basket"
        made.append(
            ScoreJob(
                task, str(path), nframes, max_pixels, 4.0, score_mode="probability", native_frame_size=native
            )
        )
    return made


def fresh(job: ScoreJob) -> ScoreJob:
    """The same request as a new job (a job is answered once)."""
    return replace(job)


def alone(backend: QwenHFBackend, jobs: list[ScoreJob]) -> list[float]:
    return [backend.generate([fresh(job)])[0].probability for job in jobs]


def test_a_batch_scores_each_episode_as_it_scores_alone_and_as_the_shipped_encoder_does(
    backend: QwenHFBackend, jobs: list[ScoreJob]
) -> None:
    batch = [fresh(job) for job in jobs]
    for job in batch:
        backend.prepare_ahead(job)  # as the server does when it queues a request
    batched = [answer.probability for answer in backend.generate(batch)]
    single = alone(backend, jobs)
    assert vision_encoder.uninstall(backend._model) > 0
    try:
        shipped = alone(backend, jobs)
    finally:
        vision_encoder.install(backend._model)
    assert np.abs(np.subtract(batched, single)).max() <= TOLERANCE, (batched, single)
    assert np.abs(np.subtract(batched, shipped)).max() <= TOLERANCE, (batched, shipped)
    assert len({round(p, 6) for p in batched}) == len(jobs)  # distinct episodes, distinct scores


def test_concurrent_submissions_through_the_runner_are_answered_as_alone(
    backend: QwenHFBackend, jobs: list[ScoreJob]
) -> None:
    runner = backend.runner(max_batch_size=8, max_wait_ms=200, name="test")
    try:
        tickets = [runner.reserve() for _ in jobs]  # a burst: every request reserves on arrival
        with ThreadPoolExecutor(len(jobs)) as pool:
            futures = list(
                pool.map(lambda pair: pair[0].submit(fresh(pair[1])), zip(tickets, jobs, strict=True))
            )
        answers = [future.result(timeout=120).probability for future in futures]
    finally:
        runner.close(timeout=10)
    assert np.abs(np.subtract(answers, alone(backend, jobs))).max() <= TOLERANCE


def test_a_failing_video_fails_only_its_own_job(
    backend: QwenHFBackend, jobs: list[ScoreJob], tmp_path: Path
) -> None:
    broken = tmp_path / "broken.mp4"
    broken.write_bytes(b"\x00\x00\x00\x18ftypmp42 not really a video")
    batch = [fresh(jobs[0]), replace(jobs[1], video_path=str(broken)), fresh(jobs[2])]
    for job in batch:
        backend.prepare_ahead(job)
    answers = backend.generate(batch)
    assert isinstance(answers[1], ValueError) and "not a readable video" in str(answers[1])
    expected = alone(backend, [jobs[0], jobs[2]])
    assert np.abs(np.subtract([answers[0].probability, answers[2].probability], expected)).max() <= TOLERANCE
