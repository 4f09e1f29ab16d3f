"""Prompts are data: what each backend asks the VLM, and how the frames are laid out.

A :class:`PromptSpec` is a system prompt, a question template with a ``{task}`` slot, and
a frame layout: ``"video"`` (the episode video only, Qwen2.5-VL style) or
``"first_video_last"`` (first frame, video, last frame, PRIMO-R1 style). It also says how
its answers are read: in score_mode "probability", which one-token answers and what each is
worth (``answer_scale``: yes/no, or a 1-5 rubric) and the text the answer follows
(``answer_prefix``, put at the start of the assistant turn, e.g. ``"ANSWER: "``); in the
text modes, the one mode its answers must be read in, if any (``text_score_mode``). Backends
start from a preset and apply overrides from ``backend_kwargs`` (server-wide or per
request), so a user changes the prompt without touching code.

Presets: ``qwen`` (a number 0-1 in ``<answer>``), ``primo`` (PRIMO-R1's progress 0-100),
``yes_no`` (what probability mode asks by default) and ``roboreward`` (a 1-5 rubric on the
final state answered ``ANSWER: n``, scored (n - 1) / 4, for RoboReward-style judges).

:func:`build_messages` turns a spec and a job into the chat messages that both
transformers' processor and qwen-vl-utils' ``process_vision_info`` understand.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, fields, replace
from typing import Any

from vlm_reward.judging.probability import RUBRIC_1_TO_5, YES_NO, AnswerScale

FRAME_LAYOUTS = ("video", "first_video_last")
PROMPT_OVERRIDE_KEYS = ("prompt", "system_prompt", "question_template", "frame_layout")


@dataclass(frozen=True)
class PromptSpec:
    """What to ask and how to show the episode; ``{task}`` in the template is the task text.

    ``preset`` names the preset the spec started from (``custom`` for one built by hand); the
    :attr:`fingerprint` tells apart specs that differ in anything the model sees or is read by,
    so an episode log can say exactly which prompt judged it.
    """

    system_prompt: str
    question_template: str
    frame_layout: str = "video"
    answer_scale: AnswerScale = YES_NO
    answer_prefix: str = ""
    text_score_mode: str | None = None
    preset: str = "custom"

    def __post_init__(self) -> None:
        if self.frame_layout not in FRAME_LAYOUTS:
            raise ValueError(
                f"frame_layout must be one of {', '.join(FRAME_LAYOUTS)}, got {self.frame_layout!r}."
            )
        if "{task}" not in self.question_template:
            raise ValueError("question_template must contain the placeholder '{task}'.")

    def question(self, task_text: str) -> str:
        """The user question for one episode (only ``{task}`` is substituted)."""
        return self.question_template.replace("{task}", task_text.strip())

    @property
    def fingerprint(self) -> str:
        """12 hex digits of the SHA-256 of what the model sees and how its answer is read (the
        preset's name aside): equal fingerprints, equal prompts."""
        seen = [self.system_prompt, self.question_template, self.frame_layout, self.answer_prefix]
        read = [list(self.answer_scale.words), list(self.answer_scale.scores), self.text_score_mode]
        digest = hashlib.sha256(json.dumps([seen, read]).encode("utf-8")).hexdigest()
        return digest[:12]


QWEN_VIDEO_PROMPT = PromptSpec(
    system_prompt="You are a careful judge of robot manipulation videos.",
    question_template=(
        'The video shows a robot arm attempting the task: "{task}".\n'
        "Watch the whole video. Did the robot complete the task by the end of the video?\n"
        "Reply with a single number between 0 and 1: 1 if the task is fully completed, "
        "0 if it is not, a value in between for partial completion. "
        "Put only the number inside <answer></answer>."
    ),
    frame_layout="video",
    preset="qwen",
)

# PRIMO-R1's published format (10-OASIS-01/PRIMO-R1, src/primo_prompts.py, used by
# src/eval/eval_interleave.py), reworded: a system prompt fixing the output structure, and a
# user text made of "QUESTION:", "QUESTION TYPE:" (progress is "numerical"), an instruction,
# a <think>/<answer> skeleton with guidance per subsection, and the numerical answer hint.
# The model was trained on this layout, so keep the section headers and tag order if you
# edit it.
PRIMO_PROMPT = PromptSpec(
    system_prompt=(
        "A conversation between a User and an Assistant. The Assistant is an expert in reasoning "
        "about embodied procedures and events from visual input (videos or images). "
        "The Assistant always follows the same thinking process and output format: the reasoning "
        "goes inside <think> </think> and the final answer inside <answer> </answer>. "
        "The <think> block holds three subsections in this order: <planning>, <observation> and "
        "<reasoning>. The <answer> block holds only the final output that the question type asks "
        "for, with no commentary."
    ),
    question_template=(
        "QUESTION:\n"
        "The first image shows the initial state, the video shows the robot carrying out the task, "
        'and the last image shows the current state. The task is: "{task}". '
        "How far has the task progressed at the current state, as a percentage from 0 "
        "(not started) to 100 (fully completed)?\n\n"
        "QUESTION TYPE:\nnumerical\n\n"
        "Study the visual input and reason about the task being carried out.\n\n"
        "Think it through carefully, as a person would. Put your reasoning between <think> and "
        "</think>, split into the subsections <planning>, <observation> and <reasoning>, then put "
        "the final answer between <answer> and </answer>.\n\n"
        "Follow this template:\n\n"
        "<think>\n"
        "<planning>\n"
        "State the goal, the initial state and what a finished task looks like. Split the goal "
        "into an ordered list of steps and use it as the plan for reading the video.\n"
        "</planning>\n"
        "<observation>\n"
        "Describe the video in temporal order: what the robot does, which objects it handles, how "
        "their state changes, and any sign that a step has been finished.\n"
        "</observation>\n"
        "<reasoning>\n"
        "Match what you observed to the planned steps, decide which steps are done, question your "
        "assumptions against the frames, and judge how much of the task is complete.\n"
        "</reasoning>\n"
        "</think>\n"
        "<answer>\n"
        "[The final answer only, in the numerical format, with no commentary.]\n"
        "</answer>\n"
        "Give only the numerical value (for example 40 or 87.5) between the <answer> </answer> tags."
    ),
    frame_layout="first_video_last",
    preset="primo",
)

# score_mode "probability" reads P(yes) at the first answer position, so the question must
# be answerable with the one word, and say so (as TOPReward asks for "True"/"False").
YES_NO_PROMPT = PromptSpec(
    system_prompt="You are a careful judge of robot manipulation videos.",
    question_template=(
        'The video shows a robot arm attempting the task: "{task}".\n'
        "Watch the whole video. Did the robot complete the task by the end of the video? "
        "Answer with one word: yes or no."
    ),
    frame_layout="video",
    preset="yes_no",
)

# A 1-5 rubric on the final state, the answer format RoboReward-style judges are trained on.
# Probability mode starts the assistant turn with "ANSWER: " and reads the five digits there.
ROBOREWARD_PROMPT = PromptSpec(
    system_prompt="You are a careful judge of robot manipulation videos.",
    question_template=(
        'The video shows a robot arm attempting the task: "{task}".\n'
        "Rate how far the task has got by the end of the video, judging the final state:\n"
        "1 - no progress: nothing the task needs has happened.\n"
        "2 - started: the robot has reached or touched the right object.\n"
        "3 - halfway: the object is being moved toward the goal.\n"
        "4 - nearly done: the goal is almost reached.\n"
        "5 - done: the task is fully completed.\n"
        "Reply with one line: ANSWER: followed by the number."
    ),
    frame_layout="video",
    answer_scale=RUBRIC_1_TO_5,
    answer_prefix="ANSWER: ",
    text_score_mode="rubric",
    preset="roboreward",
)

PRESETS: dict[str, PromptSpec] = {
    spec.preset: spec for spec in (QWEN_VIDEO_PROMPT, PRIMO_PROMPT, YES_NO_PROMPT, ROBOREWARD_PROMPT)
}
# The preset a backend starts from in score_mode "probability", whatever its text preset.
PROBABILITY_PRESET = "yes_no"


class ServerPrompts:
    """A backend's starting prompts: its text preset, and the yes/no preset for probability mode.

    Both get the server-wide overrides of ``--backend-kwargs``; a request's overrides apply
    on top (:meth:`for_job`), so a request's ``prompt`` preset replaces the server's spec.
    """

    def __init__(self, text_preset: str, server_kwargs: dict[str, Any]) -> None:
        self.text = resolve_prompt(PRESETS[text_preset], server_kwargs)
        self.probability = resolve_prompt(PRESETS[PROBABILITY_PRESET], server_kwargs)

    def for_job(self, score_mode: str, overrides: dict[str, Any]) -> PromptSpec:
        """The prompt of one job in ``score_mode`` with its ``backend_kwargs`` applied.

        ``ValueError`` (400) when the spec's answers can only be read in another text mode
        (the "roboreward" preset in "auto" would read "ANSWER: 4" as 4 %).
        """
        base = self.probability if score_mode == "probability" else self.text
        spec = resolve_prompt(base, overrides)
        wanted = spec.text_score_mode
        if wanted is not None and score_mode not in ("probability", wanted):
            raise ValueError(
                f"this prompt's answers are read in score_mode {wanted!r} or 'probability', "
                f"not {score_mode!r}."
            )
        return spec


def resolve_prompt(default: PromptSpec, overrides: dict[str, Any]) -> PromptSpec:
    """Apply the prompt keys of ``overrides`` to ``default``.

    ``prompt`` picks a preset by name; ``system_prompt``, ``question_template`` and
    ``frame_layout`` then replace single fields. Other keys are ignored here (they belong
    to the backend's sampling settings).
    """
    spec = default
    preset = overrides.get("prompt")
    if preset is not None:
        if preset not in PRESETS:
            raise ValueError(f"unknown prompt preset {preset!r}; valid presets: {', '.join(PRESETS)}.")
        spec = PRESETS[preset]
    field_names = {f.name for f in fields(PromptSpec)}
    changes = {k: v for k, v in overrides.items() if k in field_names}
    for key, value in changes.items():
        if not isinstance(value, str):
            raise TypeError(f"backend_kwargs[{key!r}] must be a string, got {type(value).__name__}.")
    return replace(spec, **changes) if changes else spec


def build_messages(
    spec: PromptSpec,
    task_text: str,
    video_path: str,
    *,
    nframes: int,
    max_pixels: int,
    first_last: tuple[Any, Any] | None = None,
) -> list[dict[str, Any]]:
    """Chat messages for one episode in the qwen-vl-utils / transformers format.

    ``first_last`` holds the first and last frame (PIL images) and is required for the
    ``first_video_last`` layout. ``nframes`` and ``max_pixels`` go on the video entry so
    qwen-vl-utils samples exactly that many frames (its fps default would drop frames).
    """
    video = {"type": "video", "video": video_path, "nframes": nframes, "max_pixels": max_pixels}
    content: list[dict[str, Any]] = [video]
    if spec.frame_layout == "first_video_last":
        if first_last is None:
            raise ValueError("the first_video_last layout needs the first and last frames.")
        first, last = first_last
        content = [
            {"type": "image", "image": first, "max_pixels": max_pixels},
            video,
            {"type": "image", "image": last, "max_pixels": max_pixels},
        ]
    content.append({"type": "text", "text": spec.question(task_text)})
    return [
        {"role": "system", "content": [{"type": "text", "text": spec.system_prompt}]},
        {"role": "user", "content": content},
    ]
