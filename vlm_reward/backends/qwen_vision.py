"""From one episode to Qwen2.5-VL chat messages and the frames qwen-vl-utils reads for them.

Shared by the transformers and vLLM backends so both show the model the same pixels.
Two steps, both plain functions:

1. :func:`job_messages` - the chat messages for a job under a :class:`PromptSpec`
   (reading the first and last frame with OpenCV when the layout needs them).
2. :func:`load_vision_inputs` - qwen-vl-utils' ``process_vision_info`` on those
   messages, returning images, videos, the processor's video kwargs and the per-video
   metadata.

Facts about qwen-vl-utils 0.0.14 this relies on (read in its ``vision_process.py``):

- A video entry with ``nframes`` gets exactly ``round_to_even(nframes)`` frames at
  uniform indices from the first to the last frame; without it, frames are sampled at
  2 fps and the rest silently dropped. The count must lie in ``[2, frames in the file]``,
  otherwise it raises.
- Its pixel floors (4 tokens = 3136 px for images, 128 tokens = 100352 px per video
  frame) apply even when the entry's ``max_pixels`` is below them, and then
  ``smart_resize`` fails an ``assert``.
- With ``return_video_metadata=True`` each video comes back as ``(frames, metadata)``
  and the returned video kwargs lose ``fps``; the sampled fps is recomputed here from the
  metadata with the same formula (:func:`sampled_fps`). transformers 4.57's Qwen2.5-VL
  processor needs that ``fps`` for the temporal M-RoPE step (it defaults to 2.0).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from vlm_reward.backends.base import ScoreJob
from vlm_reward.prompts import PromptSpec, build_messages, read_first_last_frames

INSTALL_HINT = "pip install 'libero-vlm-reward[hf]' (or 'libero-vlm-reward[vllm]' for the vLLM backends)"

# Qwen2.5-VL's vision geometry: 14 px patches merged 2x2, so sizes snap to 28 px.
IMAGE_PATCH_SIZE = 14


class VisionInputs(NamedTuple):
    """What qwen-vl-utils read for one conversation, in the order the messages show it.

    ``images``: PIL images already resized to multiples of 28 px. ``videos``: float
    ``(T, C, H, W)`` tensors with values in [0, 255], likewise resized. ``video_kwargs``:
    keyword arguments for the HF processor (``do_sample_frames=False`` and, with videos,
    ``fps``: one sampled rate per video). ``video_metadata``: one dict per video with the
    file's ``fps``, ``frames_indices``, ``total_num_frames`` and ``video_backend``.
    """

    images: list[Any]
    videos: list[Any]
    video_kwargs: dict[str, Any]
    video_metadata: list[dict[str, Any]]


def job_messages(spec: PromptSpec, job: ScoreJob) -> list[dict[str, Any]]:
    """The chat messages for ``job`` under ``spec`` (see :func:`vlm_reward.prompts.build_messages`)."""
    first_last = read_first_last_frames(job.video_path) if spec.frame_layout == "first_video_last" else None
    return build_messages(
        spec,
        job.task_text,
        job.video_path,
        nframes=job.nframes,
        max_pixels=job.max_pixels,
        first_last=first_last,
    )


def sampled_fps(metadata: Mapping[str, Any]) -> float:
    """Frame rate of the sampled clip: sampled frames over the file's frames, times its fps.

    This is qwen-vl-utils' ``sample_fps`` (and transformers 5's ``VideoMetadata.sampled_fps``).
    """
    return len(metadata["frames_indices"]) / max(metadata["total_num_frames"], 1e-6) * metadata["fps"]


def _import_qwen_vl_utils() -> Any:
    try:
        from qwen_vl_utils import vision_process
    except ImportError as exc:
        raise ImportError(
            f"reading videos for Qwen2.5-VL needs qwen-vl-utils and decord: {INSTALL_HINT}"
        ) from exc
    return vision_process


def fit_video_entry(entry: Mapping[str, Any], total_frames: int, vision_process: Any) -> dict[str, Any]:
    """A copy of a video entry that qwen-vl-utils can read without dropping or failing.

    ``nframes`` is capped at the frames the file has (the client sends at most that many,
    but a short episode may have fewer), rounded to the even count qwen-vl-utils uses and
    kept at least 2. ``min_pixels`` is lowered to ``max_pixels`` when qwen-vl-utils'
    floor is above it: ``max_pixels`` is the caller's cap and wins over the default floor.
    """
    fitted = dict(entry)
    if total_frames < 2:
        raise ValueError(f"the video has {total_frames} frame(s); Qwen2.5-VL needs at least 2.")
    if "nframes" in fitted:
        wanted = vision_process.round_by_factor(fitted["nframes"], vision_process.FRAME_FACTOR)
        fitted["nframes"] = max(2, min(wanted, total_frames - total_frames % 2))
    factor = IMAGE_PATCH_SIZE * vision_process.SPATIAL_MERGE_SIZE
    floor = vision_process.VIDEO_MIN_TOKEN_NUM * factor * factor
    _cap_min_pixels(fitted, floor)
    return fitted


def _cap_min_pixels(entry: dict[str, Any], floor: int) -> None:
    if "max_pixels" in entry and "min_pixels" not in entry:
        entry["min_pixels"] = min(floor, entry["max_pixels"])


def _fit_messages(messages: Sequence[Mapping[str, Any]], vision_process: Any) -> list[dict[str, Any]]:
    """``messages`` with every vision entry made safe for qwen-vl-utils (inputs untouched)."""
    from vlm_reward.video_io import count_frames

    factor = IMAGE_PATCH_SIZE * vision_process.SPATIAL_MERGE_SIZE
    image_floor = vision_process.IMAGE_MIN_TOKEN_NUM * factor * factor
    fitted = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            items = []
            for item in content:
                if isinstance(item.get("video"), str):
                    item = fit_video_entry(item, count_frames(item["video"]), vision_process)
                elif "image" in item or "image_url" in item:
                    item = dict(item)
                    _cap_min_pixels(item, image_floor)
                items.append(item)
            message = {**message, "content": items}
        fitted.append(dict(message))
    return fitted


def load_vision_inputs(messages: Sequence[Mapping[str, Any]]) -> VisionInputs:
    """Read the images and videos of one conversation with qwen-vl-utils.

    Each video entry should carry ``nframes`` and ``max_pixels`` (as
    :func:`vlm_reward.prompts.build_messages` writes them); see :func:`fit_video_entry`
    for how they are made valid for the file. Raises ``ImportError`` with the install
    command if qwen-vl-utils is missing and ``ValueError`` for an unreadable video.
    """
    vision_process = _import_qwen_vl_utils()
    fitted = _fit_messages(messages, vision_process)
    images, videos, _ = vision_process.process_vision_info(
        fitted,
        return_video_kwargs=True,
        return_video_metadata=True,
        image_patch_size=IMAGE_PATCH_SIZE,
    )
    frames = [video for video, _ in videos or []]
    metadata = [meta for _, meta in videos or []]
    video_kwargs: dict[str, Any] = {"do_sample_frames": False}
    if metadata:
        video_kwargs["fps"] = [sampled_fps(meta) for meta in metadata]
    return VisionInputs(list(images or []), frames, video_kwargs, metadata)
