"""From one episode to Qwen-VL chat messages and the pixels the model sees for them.

Shared by the transformers, vLLM and OpenAI-compatible backends so all show the model the
same pixels. What differs between Qwen2.5-VL and Qwen3-VL (the pixel size one visual token
covers, 28 or 32) comes from the checkpoint's
:class:`~vlm_reward.judging.model_family.ModelFamily`; everything else is the same for both.
The video is decoded once, by the server (``ScoreJob.clip``, frames chosen by
:func:`qwen_frame_indices`), or here from ``video_path`` when a job comes without one.
Three plain functions:

1. :func:`job_clip` - the job's decoded frames;
2. :func:`job_messages` - the chat messages for a job under a :class:`PromptSpec`, with
   the clip's first and last frame as images when the layout needs them;
3. :func:`load_vision_inputs` - the images (through qwen-vl-utils' ``fetch_image``) and the
   video (the clip's frames, resized here exactly as qwen-vl-utils resizes a video it read)
   with the processor's video kwargs and the per-video metadata.

Facts about qwen-vl-utils 0.0.14 this relies on (read in its ``vision_process.py``):

- A video entry with ``nframes`` gets ``round_by_factor(nframes, 2)`` frames at indices
  ``linspace(0, total - 1, n).round()``; the count must lie in ``[2, total]``. Without
  ``nframes`` it samples at 2 fps and silently drops the rest, hence the explicit count.
- After reading, a video of ``n`` frames of ``h x w`` is resized (bicubic, antialiased) to
  ``smart_resize(h, w, side, min_pixels, max_pixels)`` (``side`` = patch x merge: 28 for
  Qwen2.5-VL, 32 for Qwen3-VL, whose patch it takes as ``image_patch_size``) with
  ``max_pixels`` the least of the entry's, ``VIDEO_MAX_TOKEN_NUM`` tokens and the
  ``total_pixels`` budget spread over the frames (but at least ``1.05 * min_pixels``),
  and ``min_pixels`` the entry's (default ``VIDEO_MIN_TOKEN_NUM`` tokens).
- Its pixel floors (4 tokens for images, 128 tokens per video frame: 3136 and 100352 px
  at 28 px a token) apply even when the entry's ``max_pixels`` is below them, and then
  ``smart_resize`` fails an ``assert``: the floors are capped at ``max_pixels`` here.
  The video floor scales LIBERO's 256x256 frames up to 336x336 for Qwen2.5-VL (1.8x the
  tokens of 252x252) and 384x384 for Qwen3-VL (2.25x those of 256x256): pixels the policy
  never saw. A job with ``native_frame_size`` (:func:`native_floor`) lowers the floor to one
  token, so a frame keeps its own size rounded to whole tokens (256 -> 252 at 28 px, 256 at
  32 px); ``max_pixels`` still caps it. The HF processors' own floors (3,136 px a frame for
  Qwen2.5-VL, 4,096 px a clip for Qwen3-VL) are below that, so they do not scale it up again.
- The video metadata a reader returns is the file's ``fps``, ``frames_indices``,
  ``total_num_frames`` and ``video_backend``; the sampled rate is
  ``len(frames_indices) / total_num_frames * fps`` (:func:`sampled_fps`), which
  transformers 4.57's Qwen2.5-VL processor needs as ``fps`` for the temporal M-RoPE step.
  Qwen3-VL's processor instead writes each frame pair's timestamp (``frames_indices / fps``)
  into the prompt, so it needs the metadata itself; both get both (each ignores the other's).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from vlm_reward.backends.base import ScoreJob
from vlm_reward.frames import evenly_spaced
from vlm_reward.judging.model_family import ModelFamily
from vlm_reward.judging.prompts import PromptSpec, build_messages
from vlm_reward.video_io import Clip, decode_clip

INSTALL_HINT = "pip install 'libero-vlm-reward[hf]' (or 'libero-vlm-reward[vllm]' for the vLLM backends)"

# Frames go into the model in pairs (temporal patch 2, in every supported family).
FRAME_FACTOR = 2


class VisionInputs(NamedTuple):
    """What the model sees of one conversation, in the order the messages show it.

    ``images``: PIL images already resized to multiples of the family's token side.
    ``videos``: float ``(T, C, H, W)`` tensors with values in [0, 255], likewise resized.
    ``video_kwargs``: keyword arguments for the HF processor (``do_sample_frames=False``
    and, with videos, ``fps``: one sampled rate per video). ``video_metadata``: one dict per
    video with the file's ``fps``, ``frames_indices``, ``total_num_frames`` and
    ``video_backend``.
    """

    images: list[Any]
    videos: list[Any]
    video_kwargs: dict[str, Any]
    video_metadata: list[dict[str, Any]]


def qwen_frame_indices(total_frames: int, nframes: int) -> list[int]:
    """The frames qwen-vl-utils would read for ``nframes`` of a ``total_frames``-long video.

    The count is rounded to the even number Qwen-VL models take, capped at the frames the file
    has (a short episode may have fewer than asked for) and kept at least 2;
    ``ValueError`` for a video of fewer than 2 frames.
    """
    if total_frames < FRAME_FACTOR:
        raise ValueError(f"the video has {total_frames} frame(s); Qwen-VL models need at least 2.")
    wanted = max(FRAME_FACTOR, round(nframes / FRAME_FACTOR) * FRAME_FACTOR)
    count = min(wanted, total_frames - total_frames % FRAME_FACTOR)
    return evenly_spaced(total_frames, count)


def job_clip(job: ScoreJob) -> Clip:
    """The job's decoded frames: the server's, or decoded here from ``video_path`` (once)."""
    if job.clip is not None:
        return job.clip
    from vlm_reward.video_io import probe_video

    probe = probe_video(job.video_path)
    return decode_clip(job.video_path, qwen_frame_indices(probe.num_frames, job.nframes), probe)


def job_messages(spec: PromptSpec, job: ScoreJob, clip: Clip) -> list[dict[str, Any]]:
    """The chat messages for ``job`` under ``spec`` (:func:`vlm_reward.judging.prompts.build_messages`)."""
    first_last = None
    if spec.frame_layout == "first_video_last":
        from PIL import Image

        first_last = (Image.fromarray(clip.first), Image.fromarray(clip.last))
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
        raise ImportError(f"reading frames for Qwen-VL models needs qwen-vl-utils: {INSTALL_HINT}") from exc
    return vision_process


def _pixel_floor(family: ModelFamily, tokens: int, max_pixels: int | None) -> int:
    floor = tokens * family.token_side**2
    return floor if max_pixels is None else min(floor, max_pixels)


def native_floor(family: ModelFamily) -> int:
    """The video pixel floor of a ``native_frame_size`` job: one visual token of ``family``."""
    return family.token_side**2


def video_input(
    clip: Clip, entry: Mapping[str, Any], vision_process: Any, family: ModelFamily, native: bool = False
) -> tuple[Any, dict[str, Any]]:
    """The clip as qwen-vl-utils would hand a video it read itself for ``family``: resized
    frames and metadata. ``native``: no pixel floor above one token (:func:`native_floor`)."""
    import torch
    from torchvision.transforms import InterpolationMode
    from torchvision.transforms import functional as tf

    # qwen-vl-utils resizes the uint8 frames and takes the result as float. The same pixels come
    # from resizing contiguous float32 frames and rounding (what torchvision does with uint8 off
    # its uint8 kernel): bit for bit (tests), in about half the time on a CPU (benchmark 14b).
    video = (
        torch.from_numpy(clip.frames)
        .permute(0, 3, 1, 2)
        .to(torch.float32, memory_format=torch.contiguous_format)
    )
    count, _, height, width = video.shape
    factor = family.token_side
    floor = _pixel_floor(family, vision_process.VIDEO_MIN_TOKEN_NUM, entry.get("max_pixels"))
    if native:
        floor = min(floor, native_floor(family))
    min_pixels = entry.get("min_pixels", floor)
    total_pixels = entry.get("total_pixels", vision_process.MODEL_SEQ_LEN * factor * factor * 0.9)
    per_frame = min(vision_process.VIDEO_MAX_TOKEN_NUM * factor * factor, total_pixels / count * FRAME_FACTOR)
    ceiling = max(per_frame, int(min_pixels * 1.05))
    max_pixels = min(entry.get("max_pixels", ceiling), ceiling)
    size = vision_process.smart_resize(
        height, width, factor=factor, min_pixels=min_pixels, max_pixels=max_pixels
    )
    video = tf.resize(video, list(size), interpolation=InterpolationMode.BICUBIC, antialias=True)
    video = video.clamp_(0, 255).round_()
    metadata = {
        "fps": clip.fps,
        "frames_indices": list(clip.indices),
        "total_num_frames": clip.total_frames,
        "video_backend": "pyav",
    }
    return video, metadata


def load_vision_inputs(
    messages: Sequence[Mapping[str, Any]], clip: Clip, family: ModelFamily, native_frame_size: bool = False
) -> VisionInputs:
    """The images and the video of one conversation, in message order, sized for ``family``.

    Images go through qwen-vl-utils' ``fetch_image`` (with its pixel floor capped at the
    entry's ``max_pixels``); the one video is ``clip``, resized like qwen-vl-utils would, or
    at its own size with ``native_frame_size`` (the job's setting).
    ``ImportError`` with the install command if qwen-vl-utils is missing.
    """
    vision_process = _import_qwen_vl_utils()
    images, videos, metadata = [], [], []
    for message in messages:
        content = message.get("content")
        for item in content if isinstance(content, list) else ():
            if item.get("type") == "video" or "video" in item:
                video, meta = video_input(clip, item, vision_process, family, native_frame_size)
                videos.append(video)
                metadata.append(meta)
            elif item.get("type") == "image" or "image" in item:
                entry = dict(item)
                floor = _pixel_floor(family, vision_process.IMAGE_MIN_TOKEN_NUM, item.get("max_pixels"))
                entry.setdefault("min_pixels", floor)
                images.append(vision_process.fetch_image(entry, image_patch_size=family.patch_size))
    video_kwargs: dict[str, Any] = {"do_sample_frames": False}
    if metadata:
        video_kwargs["fps"] = [sampled_fps(meta) for meta in metadata]
    return VisionInputs(images, videos, video_kwargs, metadata)
