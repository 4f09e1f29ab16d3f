"""The runs of the learning comparison: each one reward setting, everything else the same.

A run is ``run_embodiment.sh --cpu-learn`` with the ``reward_model`` overrides of its
:class:`RunSpec`, as a user would set them to compare rewards; the judge (if any) is a reward
server on 127.0.0.1 that :mod:`.judges` starts for the run. Pure: no processes here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reward_eval.trained_judge.recipe import BACKEND as TRAINED_VLM_BACKEND
from reward_eval.trained_judge.recipe import REQUEST

REWARD_MODEL = "env.train.reward_model"


# A judged run stops at a failed scoring call (after the client's retries) rather than train on a
# fallback: the default fallback is the episode's native success, which would hand the simulator's
# reward to a run that claims to train on the judge's, and any fixed score is a reward no judge gave.
# The comparison stops there; the same command reruns the run.
FAIL_FAST = {"fail_on_request_error": True}


@dataclass(frozen=True)
class RunSpec:
    """One run: its judge (``None``: the simulator's reward) and its ``reward_model`` settings."""

    name: str
    description: str
    judge: str | None = None  # a key of judges.JUDGES
    reward_model: Mapping[str, Any] = field(default_factory=dict)

    def block(self, endpoint: str | None) -> dict[str, Any]:
        """The ``reward_model`` keys this run sets (with the judge's endpoint once it is up); a judged
        run fails fast (:data:`FAIL_FAST`) unless its own keys say otherwise."""
        if self.judge is None:
            return {"enable": False}
        return {"enable": True, "endpoint": endpoint, **FAIL_FAST, **self.reward_model}


_JUDGED = {"nframes": 16, "send_video_inline": True, "timeout": 120.0}
# A classifier's score as a 0/1 reward at 0.5.
_ZERO_ONE = {**_JUDGED, "backend": "resnet", "binary_reward": True, "success_threshold": 0.5}

# The trained VLM's request (16 frames at 140x140, as it was trained) and a 0/1 reward at 0.5.
_TRAINED_VLM = {"backend": TRAINED_VLM_BACKEND, "binary_reward": True, "success_threshold": 0.5, **REQUEST}

RUNS: dict[str, RunSpec] = {
    spec.name: spec
    for spec in (
        RunSpec("native", "the simulator's success (reward_model.enable: False)"),
        RunSpec(
            "classifier",
            "the success classifier set-up trains (backend resnet), a 0/1 reward at 0.5",
            judge="classifier",
            reward_model=_ZERO_ONE,
        ),
        RunSpec(
            "near_miss",
            "the success classifier trained also on objects let go beside the basket "
            "(make_classifier_data.py --variants near_miss), a 0/1 reward at 0.5",
            judge="near_miss",
            reward_model=_ZERO_ONE,
        ),
        RunSpec(
            "tiny_vlm",
            "the tiny random-weight Qwen2.5-VL (qwen_vl_hf), its score as a graded reward",
            judge="tiny_vlm",
            # native_frame_size: the 128-px frames in whole visual tokens, not upscaled to the 336-px video
            # floor (a random judge either way; a fraction of the tokens to pay for on two cores)
            reward_model={
                **_JUDGED,
                "backend": "qwen_vl_hf",
                "binary_reward": False,
                "native_frame_size": True,
            },
        ),
        RunSpec(
            "vlm",
            "the VLM judge trained here on simulator labels (reward_eval/trained_judge), a 0/1 reward "
            "at 0.5, served by vLLM at the size it was trained at",
            judge="vlm",
            reward_model={**_JUDGED, **_TRAINED_VLM},
        ),
        RunSpec(
            "progress",
            "a classifier trained on the simulator's goal fraction (train-classifier --target "
            "goal_fraction), its score (the progress of the episode's end) as a graded reward",
            judge="progress",
            reward_model={**_JUDGED, "backend": "resnet", "binary_reward": False, "success_threshold": 0.5},
        ),
        RunSpec(
            "lenient",
            "a classifier trained to call one object of two in the basket a success, 0/1 at 0.5, "
            "the live watch's guard on (warn)",
            judge="lenient",
            reward_model={
                **_ZERO_ONE,
                # at most one step's failures, so that a lenient judge trips it within the run
                "guard": {"enable": True, "action": "warn", "min_episodes": 8, "window": 32},
            },
        ),
    )
}


# Where the release Gaussians start (actor.model.release_mean, metres from the basket's centre); None:
# the learning config's own. "rare": both objects well off, so successes are rare and most groups of
# the simulator's 0/1 reward are all failures, while one object of two still lands now and then.
STARTS: dict[str, list[list[float]] | None] = {
    "default": None,
    "rare": [[0.0, -0.08], [0.0, 0.085]],
}
DEFAULT_RUNS = ("native", "classifier", "tiny_vlm", "lenient")


def start_overrides(name: str) -> list[str]:
    """The Hydra overrides of ``--start NAME``; ValueError naming the valid starts."""
    if name not in STARTS:
        raise ValueError(f"--start {name!r} is not a start; valid: {', '.join(STARTS)}.")
    mean = STARTS[name]
    return [] if mean is None else [f"actor.model.release_mean={mean}"]


# --judge-only: the --cpu-learn mode in which the judge alone decides (cpu_learn/judge_only.py).
JUDGE_ONLY_OVERRIDE = "cpu_learn.judge_only=True"


def mode_overrides(judge_only: bool) -> list[str]:
    """The Hydra overrides of the comparison's mode: ``--judge-only``'s, or none."""
    return [JUDGE_ONLY_OVERRIDE] if judge_only else []


def register_run(spec: RunSpec) -> RunSpec:
    """Add a run (a ``--plugin`` module's); ValueError for a name already taken."""
    if spec.name in RUNS and RUNS[spec.name] is not spec:
        raise ValueError(f"run name {spec.name!r} is already registered.")
    RUNS[spec.name] = spec
    return spec


def parse_runs(text: str) -> list[RunSpec]:
    """``--runs native,classifier``: the specs in the order given; ValueError naming the valid names."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in RUNS]
    if not names or unknown:
        raise ValueError(f"--runs {text!r}: unknown or no run names {unknown}; valid: {', '.join(RUNS)}.")
    if len(set(names)) != len(names):
        raise ValueError(f"--runs {text!r} names a run twice.")
    return [RUNS[name] for name in names]


def overrides(block: Mapping[str, Any], seed: int, steps: int, extra: Sequence[str] = ()) -> list[str]:
    """The Hydra overrides of one run: its ``reward_model`` keys, the seed and the step count."""
    out = [f"runner.max_steps={steps}", f"env.train.seed={seed}", f"actor.seed={seed}"]
    out += [f"{REWARD_MODEL}.{key}={_hydra_value(value)}" for key, value in _flat(block)]
    return [*out, *extra]


def _flat(block: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    items = []
    for key, value in block.items():
        if isinstance(value, Mapping):
            items += _flat(value, f"{prefix}{key}.")
        else:
            items.append((f"{prefix}{key}", value))
    return items


def _hydra_value(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, str):
        return f"'{value}'" if any(c in value for c in ":=,") else value
    return repr(value)
