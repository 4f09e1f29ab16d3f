"""Benchmark (issue 53): the MP4 encode, before and after it was made reproducible.

Before, ``vlm_reward.video_io.encode_mp4`` ran libx264 with its macroblock tree and its own choice
of threads; the same frames then gave different files from one call to the next on a 2-core
EPYC. Now it encodes without the macroblock tree, on one thread. This measures both on the clips
the project encodes: the env's request (16 sampled frames at 256 px, the main job's camera), a
learning run's judge clip (16 frames at 128 px), a whole kept expert episode (344 frames at 128
px, the fine-tune's source) and the clip of the test that failed (12 frames of 64 px). Every clip
is decoded from an MP4 first, as the fine-tune's counterfactuals are. Each contender encodes the
same frames in this process, with other allocations and the reversed clip encoded between calls
(as in the failing test; the differences showed only then); interleaved, rotating order, ratios
per repetition; and how many distinct files each gave (1: reproducible) and their mean size.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_encode.py [--repeats 30]
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import numpy as np

from benchmarks.harness import Row, Stats, header, interleave, parse_args, print_table, ratios, timed
from vlm_reward.video_io import decode_clip, encode_mp4, probe_video

CLIPS = {
    "env request 16 x 256 px": (16, 256),
    "judge clip 16 x 128 px": (16, 128),
    "kept episode 344 x 128 px": (344, 128),
    "decoded test clip 12 x 64 px": (12, 64),
}


def encode_before(frames: np.ndarray, path: Path, fps: float) -> None:
    """The encoder as it was before issue 53: the macroblock tree on, libx264's own threads."""
    import av

    with av.open(os.fspath(path), mode="w", format="mp4") as container:
        stream = container.add_stream("libx264", rate=Fraction(fps).limit_denominator(1000))
        stream.height, stream.width = frames.shape[1:3]
        stream.pix_fmt = "yuv420p"
        stream.options = {"crf": "17", "preset": "veryfast"}
        for frame in frames:
            container.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        container.mux(stream.encode())


def clip(frames: int, side: int, workdir: Path) -> np.ndarray:
    """A square sliding across a gradient (the failing test's kind of clip), round-tripped through
    an MP4 once, so the frames are as a decoder gives them: ``(frames, side, side, 3)``."""
    ramp = np.linspace(0, 255, side, dtype=np.uint8)
    out = np.empty((frames, side, side, 3), dtype=np.uint8)
    block = side // 4
    for t in range(frames):
        out[t] = np.stack(np.broadcast_arrays(ramp[None, :], ramp[:, None], 128), axis=-1)
        x = int(t * (side - block) / max(frames - 1, 1))
        out[t, side * 3 // 8 : side * 3 // 8 + block, x : x + block] = (255, 0, 0)
    source = workdir / f"source_{frames}_{side}.mp4"
    encode_before(out, source, fps=4)  # the kept videos of runs made before this change
    return decode_clip(source, range(frames), probe_video(source)).frames


def measure(
    encode: Callable[[np.ndarray, Path, float], None], frames: np.ndarray, path: Path, sizes: dict[str, int]
) -> Callable[[], float]:
    churn: list[bytes] = []
    rng = np.random.default_rng(0)
    backwards = frames[::-1].copy()

    def run() -> float:
        churn.append(rng.bytes(int(rng.integers(1_000, 200_000))))  # the heap moves between calls
        if len(churn) > 50:
            churn.pop(int(rng.integers(50)))
        encode(backwards, path.with_suffix(".reversed.mp4"), 4.0)
        seconds = timed(lambda: encode(frames, path, 4.0))
        data = path.read_bytes()
        sizes[hashlib.sha256(data).hexdigest()] = len(data)
        return seconds

    return run


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], repeats=30)
    header("MP4 encode: before (macroblock tree, encoder's threads) and now (no tree, one thread)")
    contenders = {"before": encode_before, "now": encode_mp4}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (frames, side) in CLIPS.items():
            video = clip(frames, side, Path(tmp))
            files: dict[str, dict[str, int]] = {c: {} for c in contenders}
            measures = {
                c: measure(encode, video, Path(tmp) / f"{c}.mp4", files[c])
                for c, encode in contenders.items()
            }
            samples = interleave(measures, args.repeats)
            rows = []
            for c, s in samples.items():
                size_kb = np.mean(list(files[c].values())) / 1e3
                rows.append(
                    Row(f"{c}: {len(files[c])} distinct file(s), {size_kb:.1f} kB", Stats.of(s), "ms", 1e3)
                )
            rows.append(Row("now / before", Stats.of(ratios(samples["now"], samples["before"])), "x"))
            print_table(name, rows)


if __name__ == "__main__":
    main()
