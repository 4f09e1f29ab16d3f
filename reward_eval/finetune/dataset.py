"""The judge's training data: kept episode videos labelled by the simulator, plus counterfactuals.

Every kept video of the runs' episode logs is one example, labelled by its native success
(a success should be judged "yes", a failure "no"). Each native success also gives one
negative per chosen perturbation of the audit's registry (:mod:`..analysis.perturbations`,
built by the audit's own :func:`..judge.counterfactuals.episode_counterfactuals` with the
audit's seeding): the episode reversed, frozen, clipped, shuffled or judged against another
task's instruction, each labelled a failure.

**What the env sends, and its re-encode, for every episode.** Each episode is an example twice
with its label: as the env's client sent it (``encoding`` :data:`SENT`: the kept MP4's own bytes,
copied into the data set's folder; what ``rescore`` and a training run's env send the served
judge) and re-encoded (:data:`REENCODED`: its frames decoded once and encoded again with
:func:`vlm_reward.video_io.encode_mp4` at the kept video's frame rate, as the audit judges an
episode). The counterfactuals can only be made from decoded frames, so they are re-encoded
too. A second H.264 generation moves LIBERO's 256 px frames by ~1.3 of 255 on average (up to
~30), which a judge fitted to a handful of examples can learn: issue 55 reported one trained on
re-encodes alone that read 0.99 for its training success and served the episode the env sent at
0.0096. With both encodings of every episode under one label, the encoding says nothing about the
answer and the judge is trained on the bytes it will be served; the fine-tune's check of itself
(:mod:`.serving_check`) scores both encodings of its training episodes on the served judge.
These MP4s are what the training reads (through the server's own decoding, :mod:`.inputs`) and
what the before/after evaluation sends to real servers, so both see the same bytes.

The split is decided on episodes before anything is encoded, so an episode and its
counterfactuals always land on the same side: drawn by initial state for runs (:mod:`.split`), read
from the manifest for a labelled set (:mod:`reward_eval.classifier.finetune_data`, whose ``test``
split is measured apart). Both kinds of episode are a :class:`DataEpisode`.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from reward_eval.analysis.audit import ORIGINAL
from reward_eval.analysis.episode_log import KeptEpisode, episode_logs, kept_episodes
from reward_eval.analysis.perturbations import Counterfactual, Source
from reward_eval.finetune.instructions import WRONG_INSTRUCTION
from reward_eval.finetune.split import HELD_OUT, TEST, TRAIN, GroupInfo, choose_held_out, counts_by, group_key
from reward_eval.judge.counterfactuals import decode_frames, episode_counterfactuals
from vlm_reward.client.episode_record import EpisodeRecord
from vlm_reward.perturbations import WRONG_TASK
from vlm_reward.video_io import encode_mp4

SENT = "sent"  # the kept MP4's own bytes: what the env's client sent the judge
REENCODED = "reencoded"  # decoded and encoded again, as the audit's episodes and counterfactuals are


class DataError(ValueError):
    """The runs cannot make a data set a judge is trained and measured on (no kept video, one class
    only, an empty held-out split): the user's to fix; the command ends with status 3."""


class DataEpisode(Protocol):
    """What an example is made from: an episode's kept video and what the simulator says of it.

    ``key``: unique over the data; ``group``: its initial state (the split's unit); ``seed_index``:
    seeds its counterfactuals' random choices with the data's seed, so one episode's do not depend
    on the others'."""

    @property
    def key(self) -> str: ...
    @property
    def group(self) -> str: ...
    @property
    def video(self) -> str: ...
    @property
    def task_id(self) -> Any: ...
    @property
    def task_text(self) -> str: ...
    @property
    def native_success(self) -> bool: ...
    @property
    def seed_index(self) -> int: ...


@dataclass(frozen=True)
class RunEpisode:
    """A kept episode of one of the runs (which run: its position on the command line)."""

    run: int
    run_dir: str
    kept: KeptEpisode

    @property
    def record(self) -> EpisodeRecord:
        return self.kept.record

    @property
    def video(self) -> str:
        return self.kept.video

    @property
    def key(self) -> str:
        """Unique over the runs: ``run<r>/<log>:<record>``."""
        return f"run{self.run}/{self.kept.log}:{self.kept.index}"

    @property
    def group(self) -> str:
        """The split unit (:func:`.split.group_key`)."""
        return group_key(self.record.reset_state_id, self.key)

    @property
    def task_id(self) -> Any:
        return self.record.task_id

    @property
    def task_text(self) -> str:
        return str(self.record.task_text)

    @property
    def native_success(self) -> bool:
        return bool(self.record.native_success)

    @property
    def seed_index(self) -> int:
        """The record's line in its log, as the audit seeds the episode's counterfactuals."""
        return self.kept.index


@dataclass(frozen=True)
class Example:
    """One video to judge and the answer it should get.

    ``source``: ``original`` (a native success), ``failure`` (a native failure) or the
    perturbation that made it; ``label``: whether it should be judged a success; ``frames``:
    the frames its MP4 holds; ``episode``/``group``: where it came from (the split's unit);
    ``encoding``: :data:`SENT` (the kept video's bytes) or :data:`REENCODED`; ``source_video``:
    the kept video it was made from (the file the env sent); ``frame_size``: its frames' ``HxW``
    as rendered (the server resizes them by the request, :mod:`.inputs`).
    """

    video: str
    task_text: str
    label: bool
    source: str
    episode: str
    group: str
    task_id: Any
    frames: int
    held_out: bool
    encoding: str = REENCODED
    source_video: str = ""
    frame_size: str = ""
    split: str = TRAIN

    def to_json(self) -> dict[str, Any]:
        """The example as ``finetune.json`` lists it."""
        return asdict(self)


def run_episodes(run_dirs: Sequence[Path]) -> list[RunEpisode]:
    """Every record of the runs whose video still exists; :class:`DataError` naming the first run
    without an episode log or without a kept video."""
    episodes = []
    for r, run_dir in enumerate(run_dirs):
        logs = episode_logs(run_dir) if run_dir.is_dir() else []
        if not logs:
            raise DataError(f"{run_dir} is not a run dir: it holds no vlm_episodes_*.jsonl episode log.")
        found = [RunEpisode(r, str(run_dir), kept) for kept in kept_episodes(logs)]
        if not found:
            raise DataError(
                f"{run_dir} has no kept video; fine-tuning needs runs made with --keep-videos (training: "
                "reward_model.keep_temp_video=True) whose videos still exist."
            )
        episodes += found
    return episodes


def split_episodes(
    episodes: Sequence[RunEpisode], fraction: float, holdout_tasks: Sequence[Any], seed: int
) -> set[str]:
    """The held-out groups of ``episodes`` (:func:`.split.choose_held_out`)."""
    groups: dict[str, GroupInfo] = {}
    for e in episodes:
        old = groups.get(e.group)
        success = e.record.native_success or (old is not None and old.has_success)
        groups[e.group] = GroupInfo(e.group, e.record.task_id, success)
    return choose_held_out(list(groups.values()), fraction, holdout_tasks, seed)


def episode_examples(
    episode: DataEpisode,
    folder: Path,
    counterfactuals: Sequence[str],
    hard_negative: str | None,
    *,
    seed: int,
    split: str,
    wrong_instructions: Sequence[str] = (),
) -> list[Example]:
    """The episode as the env sent it (its kept MP4 copied byte for byte), the episode re-encoded
    and, for a native success, its chosen counterfactuals (re-encoded) and its own video under each
    of ``wrong_instructions`` (failures, :mod:`.instructions`; as sent and re-encoded in turn),
    written to ``folder``; ``ValueError`` if the kept video does not decode."""
    frames, fps = decode_frames(episode.video)
    source = Source(frames, episode.task_text, hard_negative, (seed, episode.seed_index))
    own, *made = episode_counterfactuals(source, episode.native_success)
    chosen = [own, *((name, cf) for name, cf in made if name in counterfactuals)]
    tag = episode.key.replace("/", "_").replace(":", "_")
    sent = folder / f"{tag}_{own[0]}_{SENT}.mp4"
    shutil.copyfile(episode.video, sent)
    made_paths = [(sent, own, SENT)]
    for name, cf in chosen:
        path = folder / f"{tag}_{name}.mp4"
        encode_mp4(cf.frames, path, fps=fps or 4.0)
        made_paths.append((path, (name, cf), REENCODED))
    if episode.native_success:  # a file of its own each: readouts and input caches go by file
        for i, text in enumerate(wrong_instructions):
            source, encoding = made_paths[i % 2][0], (SENT, REENCODED)[i % 2]
            path = folder / f"{tag}_{WRONG_INSTRUCTION}{i}_{encoding}.mp4"
            shutil.copyfile(source, path)
            made_paths.append((path, (WRONG_INSTRUCTION, Counterfactual(own[1].frames, text)), encoding))
    return [
        Example(
            video=str(path),
            task_text=cf.task_text,
            label=name == ORIGINAL,
            source=name,
            episode=episode.key,
            group=episode.group,
            task_id=episode.task_id,
            frames=len(cf.frames),
            held_out=split != TRAIN,
            encoding=encoding,
            source_video=str(Path(episode.video).resolve()),
            frame_size=f"{frames.shape[1]}x{frames.shape[2]}",
            split=split,
        )
        for path, (name, cf), encoding in made_paths
    ]


def build_examples(
    episodes: Sequence[DataEpisode],
    splits: Mapping[str, str],
    folder: Path,
    counterfactuals: Sequence[str],
    hard_negatives: Callable[[Any], str | None],
    *,
    seed: int,
    workers: int = 2,
    wrong_instructions: Callable[[Any], Sequence[str]] = lambda e: (),
) -> tuple[list[Example], list[dict[str, Any]]]:
    """``(examples, unreadable)``: every episode's examples in episode order, and the episodes
    whose kept video did not decode (``episode``, ``video``, ``error``), which are left out.
    ``splits``: group -> its split, for every group that does not train; ``wrong_instructions``:
    episode -> the wrong instructions its success is also judged under."""
    folder.mkdir(parents=True, exist_ok=True)

    def build(e: DataEpisode) -> list[Example] | dict[str, Any]:
        try:
            split = splits.get(e.group, TRAIN)
            other = hard_negatives(e) if WRONG_TASK in counterfactuals else None  # a suite is read only then
            texts = wrong_instructions(e) if e.native_success else ()
            return episode_examples(
                e, folder, counterfactuals, other, seed=seed, split=split, wrong_instructions=texts
            )
        except ValueError as exc:
            return {"episode": e.key, "video": e.video, "error": str(exc)}

    with ThreadPoolExecutor(workers) as pool:
        built = list(pool.map(build, episodes))
    examples = [x for b in built if isinstance(b, list) for x in b]
    return examples, [b for b in built if isinstance(b, dict)]


def check_examples(examples: Sequence[Example]) -> None:
    """:class:`DataError` when the training side lacks a class or the held-out side is empty."""
    train = [x for x in examples if not x.held_out]
    labels = {x.label for x in train}
    if labels != {True, False}:
        kind = "success" if True in labels else "failure" if labels else "example"
        raise DataError(
            f"the training split holds only {kind} examples ({len(train)}); the judge needs native "
            "successes and failures (or counterfactuals, which need successes) to learn from."
        )
    if not any(x.held_out for x in examples):
        raise DataError(
            "the held-out split would be empty; give more initial states (reset_state_id), "
            "a larger --holdout-fraction or --holdout-tasks."
        )


def data_summary(examples: Sequence[Example], unreadable: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``finetune.json``'s data block: counts per split, class, source, encoding and frame size (as
    rendered), the unreadable episodes."""
    rows = [x.to_json() for x in examples]
    groups = {
        TRAIN: sorted({x.group for x in examples if not x.held_out}),
        HELD_OUT: sorted({x.group for x in examples if x.held_out}),  # test's as well
    }
    test = sorted({x.group for x in examples if x.split == TEST})
    if test:
        groups[TEST] = test
    return {
        "examples": len(rows),
        "episodes": len({x.episode for x in examples}),
        "groups": groups,
        "by_class": counts_by(rows, "split", "label"),
        "by_source": counts_by(rows, "split", "source"),
        "by_encoding": counts_by(rows, "split", "encoding"),
        "by_frame_size": counts_by(rows, "split", "frame_size"),
        "unreadable": list(unreadable),
    }
