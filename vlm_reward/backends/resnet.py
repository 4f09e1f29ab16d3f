"""``--backend resnet --model DIR``: RLinf's ResNet success classifier as a judge.

Served like every judge (the same server, client, replicas, ``--self-test``, metrics and episode
log), but it reads no prompt and generates nothing: every frame it is shown (the request's
``nframes`` evenly spaced frames) goes through the classifier once, the response carries each
frame's probability (``frame_scores``, in the video's order), and the episode's score is the
aggregate its checkpoint names (:mod:`vlm_reward.backends.resnet_checkpoint`; by default the mean
P(success) of the last ``last_k`` frames shown), in score mode "probability" only. It ignores the
instruction (``task_text``) and, but for the aggregate, the order of the frames: a frame
classifier judges states, not behaviour.

Every frame, always, not only when asked: the frame scores are what a progress judge is measured
by (and what a training run's episode log keeps), and they cost little. The server decodes every
frame of the MP4 anyway (:func:`vlm_reward.video_io.decode_clip`); what more frames add is their
colour conversion, their resize and a wider forward pass, measured in benchmark 15 (``--part
frames``). One path also means the score never depends on how a request asked.

Batched: the frames of every job of a batch go through one forward pass. The judge
identity on every score names backend ``resnet``, the checkpoint's directory and the aggregate
(``<dir> [<aggregate>]``), so two aggregates of one checkpoint are never mixed up in a report.

Optional: RLinf (and torch) are imported in :meth:`ResNetBackend.load` only (RLinf's module pulls
Ray, peft and transformers); without them loading fails with one sentence naming the install.

``backend_kwargs`` (server-wide only): ``device`` ("cpu" (default), "cuda", "cuda:N") and
``last_k`` (overrides the checkpoint's aggregate window).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from vlm_reward.backends.base import ProbabilityAnswer, RewardBackend, ScoreJob, register_backend
from vlm_reward.backends.resnet_checkpoint import (
    WEIGHTS_FILE,
    ClassifierConfig,
    build_model,
    episode_score,
    model_input,
    read_config,
    scored_frames,
)

SERVER_KWARGS = ("device", "last_k")
SUCCESS, FAILURE = "success", "failure"  # the answer word: the likelier class of the score


@register_backend
class ResNetBackend(RewardBackend):
    """RLinf's ``ResNetRewardModel`` from a checkpoint directory (see the module docstring)."""

    name = "resnet"
    judge_kind = "ResNet success classifier"
    default_score_mode = "probability"
    score_modes = ("probability",)

    def __init__(self, model: str, **backend_kwargs: Any) -> None:
        super().__init__(model, **backend_kwargs)
        unknown = sorted(set(backend_kwargs) - set(SERVER_KWARGS))
        if unknown:
            raise ValueError(
                f"backend 'resnet' does not accept backend_kwargs {unknown}; "
                f"valid: {', '.join(SERVER_KWARGS)}."
            )
        self.device = str(backend_kwargs.get("device", "cpu"))
        if not (self.device == "cpu" or self.device.startswith("cuda")):
            raise ValueError(f"backend 'resnet' device must be cpu, cuda or cuda:N, got {self.device!r}.")
        self.config: ClassifierConfig | None = None
        self._model: Any = None

    def check_model(self) -> None:
        """``ValueError`` unless ``model`` is a classifier's checkpoint directory (its config is read)."""
        config = read_config(self.model)
        if "last_k" in self.backend_kwargs:
            config = replace(config, last_k=self.backend_kwargs["last_k"])
        self.config = config

    def describe_model(self, display_name: str) -> str:
        """The model as the judge identity names it: the directory and the aggregate."""
        if self.config is None:
            self.check_model()
        return f"{display_name} [{self.config.describe_aggregate()}]"

    def load(self) -> None:
        """Build RLinf's model through its config and load the weights (RLinf's own loader)."""
        import os

        if self.config is None:
            self.check_model()
        model = build_model(self.config, os.path.join(self.model, WEIGHTS_FILE))
        import torch

        if self.device.startswith("cuda") and not torch.cuda.is_available():
            raise RuntimeError(
                f"backend_kwargs['device'] is {self.device!r} but no CUDA device is available."
            )
        if self.device == "cpu":
            from vlm_reward.backends.hf_generation import limit_cpu_threads

            limit_cpu_threads(torch)
        self._model = model.to(self.device).eval()

    def generate(self, jobs: Sequence[ScoreJob]) -> list[ProbabilityAnswer | Exception]:
        """One forward pass over every frame of every job; each answer carries its frames' scores
        and the aggregate of its :func:`scored_frames`. A job whose frames are bad (too small,
        none) gets its own ``ValueError`` (400) and its batch-mates are scored."""
        if self._model is None or self.config is None:
            raise RuntimeError("backend 'resnet' is not loaded; call load() first.")
        import torch

        results: list[ProbabilityAnswer | Exception] = [RuntimeError("no output")] * len(jobs)
        inputs, owners = [], []
        for slot, job in enumerate(jobs):
            try:
                frames = _job_frames(job)
                scored_frames(len(frames), self.config)  # ValueError for a job with no frame
                inputs.append(model_input(frames, self.config.image_size))
                owners.append((slot, len(frames)))
            except ValueError as exc:
                results[slot] = exc
        if not inputs:
            return results
        with torch.inference_mode():
            out = self._model(torch.cat(inputs).to(self.device))
        probabilities = out["probabilities"].float().cpu().tolist()
        start = 0
        for slot, count in owners:
            frame_scores = tuple(probabilities[start : start + count])
            picked = [frame_scores[i] for i in scored_frames(count, self.config)]
            score = episode_score(picked, self.config)
            results[slot] = ProbabilityAnswer(score, SUCCESS if score >= 0.5 else FAILURE, frame_scores)
            jobs[slot].usage.record(0, 0)  # no tokens: a classifier reads pixels only
            start += count
        return results

    def close(self) -> None:
        self._model = None


def _job_frames(job: ScoreJob) -> Any:
    """The frames the server decoded for ``job`` (the ``nframes`` evenly spaced ones it shows),
    or decoded here."""
    if job.clip is not None:
        return job.clip.frames
    from vlm_reward.frames import evenly_spaced
    from vlm_reward.video_io import decode_clip, probe_video

    probe = probe_video(job.video_path)
    return decode_clip(job.video_path, evenly_spaced(probe.num_frames, job.nframes), probe).frames
