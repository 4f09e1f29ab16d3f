"""The options the commands share: argparse types, and which server, judge and threshold score.

The scoring options of ``run`` and ``rescore``: either ``--endpoint URL`` (a server that
is already running) or ``--backend NAME [--model PATH]`` (the job starts a local server and
stops it at the end; a vLLM backend runs on the vLLM venv when this interpreter has no
vLLM, see :mod:`vlm_reward.tools.runtime`; ``--replicas N`` starts N of them on a private Ray
cluster of this machine, see :mod:`..judge.replicas`).
With a Qwen-VL backend (``qwen_vl_hf``, ``qwen_vl_vllm``, ``PRIMO-R1``) and no
``--model`` a tiny random-weight checkpoint is built offline into the run dir, of the family
``--tiny-family`` names (Qwen2.5-VL by default, or Qwen3-VL), and the settings say
``random_model: true``: its scores mean nothing, the run only shows that every stage works.
``--model`` takes a checkpoint of any supported family (its config.json decides).
:mod:`..judge.endpoint` turns them into the endpoint a command scores against.

The judgement options (``--threshold``, ``--binary/--continuous``, ``--score-mode``,
``--backend-kwargs``, ``--request-timeout``, ``--send-video-inline``, ...) default to "not
given" (``None``): each sets its ``reward_model`` key (:data:`OPTION_KEYS`) only when given, over
the source run's and the env YAML's (:mod:`.reward_block`).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from reward_eval.analysis.perturbations import perturbation_names
from reward_eval.judge.endpoint import DEFAULT_LOCAL_BACKEND, served_backend
from vlm_reward.argtypes import json_object, non_negative_int, positive_int, unit_interval
from vlm_reward.backends import canonical_name
from vlm_reward.judging.model_family import FAMILIES, QWEN2_5_VL
from vlm_reward.protocol import DEFAULT_PORT, SCORE_MODES
from vlm_reward.tools.runtime import server_python
from vlm_reward.tools.server_process import START_TIMEOUT_S
from vlm_reward.tools.tiny_families import TINY_FAMILIES

# The backends that can run the offline tiny checkpoints (Qwen-VL backends), canonical names.
TINY_BACKENDS = ("qwen_vl_hf", "qwen_vl_vllm", "PRIMO-R1")
# Options that configure a server we start, and options only a given --endpoint takes.
LOCAL_ONLY = ("model", "plugin", "server_kwargs", "tiny_family", "replicas", "gpus_per_replica")
ENDPOINT_ONLY = ("api_key_env", "ca_bundle")


def prefix_count(text: str) -> int:
    """argparse type of ``--prefixes``: an integer >= 2 (a VOC ranks at least two prefixes)."""
    try:
        value = int(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}; give K >= 2, e.g. 4") from exc
    if value < 2:
        raise argparse.ArgumentTypeError(
            f"must be an integer >= 2 (VOC ranks at least two prefixes of each video), got {value}"
        )
    return value


NONE = "none"  # --counterfactuals none: no counterfactual negatives


def counterfactual_names(text: str) -> tuple[str, ...]:
    """argparse type of ``--counterfactuals``: registered perturbation names, comma-separated, or ``none``."""
    if text.strip() == NONE:
        return ()
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [n for n in names if n not in perturbation_names()]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown perturbation {', '.join(map(repr, unknown)) or repr(text)}; valid: "
            f"{', '.join(perturbation_names())}, or {NONE}"
        )
    return tuple(dict.fromkeys(names))


def positive_float(text: str) -> float:
    """argparse type: a float > 0."""
    try:
        value = float(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from exc
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {value}")
    return value


def add_scoring_options(parser: argparse.ArgumentParser, threshold_default: str) -> None:
    """Add the server and judgement options (see the module docstring); ``threshold_default``
    says in the help where ``--threshold`` and ``--binary/--continuous`` default from."""
    server = parser.add_argument_group("reward server (either --endpoint, or --backend/--model)")
    server.add_argument(
        "--endpoint", help=f"POST /score URL of a running server, e.g. http://host:{DEFAULT_PORT}/score"
    )
    server.add_argument(
        "--backend",
        help=f"backend to request; also the local server's (default: {DEFAULT_LOCAL_BACKEND} for a local "
        "server; with --endpoint, the source run's or the env YAML's)",
    )
    server.add_argument(
        "--model",
        help=f"checkpoint of the local server (with {', '.join(TINY_BACKENDS)}: default the tiny random one)",
    )
    server.add_argument(
        "--tiny-family",
        choices=sorted(TINY_FAMILIES),
        help=f"family of the tiny checkpoint built without --model (default {QWEN2_5_VL.model_type})",
    )
    server.add_argument(
        "--plugin", action="append", default=[], metavar="MODULE", help="local server --plugin"
    )
    server.add_argument(
        "--server-kwargs", type=json_object, default={}, help="local server --backend-kwargs (JSON object)"
    )
    server.add_argument(
        "--api-key-env",
        metavar="NAME",
        help="environment variable holding the --endpoint server's API key (never the key itself); "
        "a local server gets a fresh key of its own",
    )
    server.add_argument(
        "--ca-bundle", metavar="PATH", help="PEM bundle verifying an https --endpoint (default: the system's)"
    )
    server.add_argument(
        "--replicas",
        type=positive_int,
        help="local servers to start, placed by a private Ray cluster of this machine; the episodes "
        "are spread over them (default 1: one server, no Ray)",
    )
    server.add_argument(
        "--gpus-per-replica",
        type=non_negative_int,
        help="with --replicas: GPUs of this machine each replica gets (default: 1 each if there are "
        "enough, else 0)",
    )
    server.add_argument(
        "--server-start-timeout",
        type=positive_float,
        default=START_TIMEOUT_S,
        help="seconds to wait for the local server's /health (default %(default)s)",
    )
    judge = parser.add_argument_group("judgement")
    judge.add_argument(
        "--threshold",
        type=unit_interval,
        help=f"success threshold on the score (default: {threshold_default})",
    )
    mode = judge.add_mutually_exclusive_group()
    mode.add_argument(
        "--binary",
        dest="binary_reward",
        action="store_true",
        default=None,
        help=f"success signal 1[score >= threshold] (default: {threshold_default})",
    )
    mode.add_argument(
        "--continuous", dest="binary_reward", action="store_false", help="success signal = score"
    )
    judge.add_argument(
        "--score-mode",
        choices=SCORE_MODES,
        help="how the server reads the judge's answer as a score (default: the backend's)",
    )
    judge.add_argument(
        "--backend-kwargs",
        type=json_object,
        help="per-request backend_kwargs, merged key by key over the source run's and the env YAML's",
    )
    judge.add_argument(
        "--request-timeout",
        type=positive_float,
        help="seconds per /score call (default: the env YAML's reward_model.timeout)",
    )
    judge.add_argument(
        "--send-video-inline",
        action=argparse.BooleanOptionalAction,
        help="send videos in the request (no shared filesystem; default: the env YAML's)",
    )


def _given(args: argparse.Namespace, names: tuple[str, ...]) -> list[str]:
    return [f"--{name.replace('_', '-')}" for name in names if getattr(args, name, None)]


def check_scoring_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Reject contradictory server options and fill in the local backend's default."""
    if args.endpoint is not None:
        if not args.endpoint.startswith(("http://", "https://")):
            parser.error(f"--endpoint must be an http(s) URL, got {args.endpoint!r}.")
        if given := _given(args, LOCAL_ONLY):
            parser.error(f"{', '.join(given)} only configure a local server; drop them or --endpoint.")
        if args.api_key_env and not os.environ.get(args.api_key_env, "").strip():
            parser.error(f"--api-key-env names {args.api_key_env}, but that variable is unset or empty.")
        return
    if given := _given(args, ENDPOINT_ONLY):
        parser.error(f"{', '.join(given)} only apply to an --endpoint; a local server gets a fresh key.")
    backend = served_backend(args)
    if args.gpus_per_replica is not None and (args.replicas or 1) < 2:
        parser.error("--gpus-per-replica goes with --replicas N (N >= 2); one server sees every GPU.")
    if args.model is not None and args.tiny_family is not None:
        parser.error("--tiny-family picks the tiny checkpoint built when no --model is given; drop one.")
    if args.model is None and not has_tiny_model(backend):
        parser.error(
            f"--backend {backend} needs --model (only {', '.join(TINY_BACKENDS)} have a built-in tiny model)."
        )
    try:
        server_python(backend)  # fail now, not after the envs were built
    except ImportError as exc:
        parser.error(str(exc))


def has_tiny_model(backend: str) -> bool:
    """Whether ``backend`` (name or alias) can run the tiny checkpoint when no ``--model`` is given."""
    try:
        return canonical_name(backend) in TINY_BACKENDS
    except ValueError:  # a --plugin backend, registered only in the server
        return False


def resolve_model(args: argparse.Namespace, run_dir: Path) -> tuple[str | None, bool]:
    """``(model, random_model)``: the given checkpoint, or the tiny one built into ``run_dir``."""
    if args.endpoint is not None:
        return None, False  # the server's own model; we cannot know it
    if args.model is not None:
        return args.model, False
    from vlm_reward.tools.tiny_checkpoint import build_tiny_checkpoint

    family = FAMILIES[args.tiny_family or QWEN2_5_VL.model_type]
    path = build_tiny_checkpoint(run_dir / f"tiny-{family.name.lower()}", family.model_type)
    return str(path), True


# The reward_model keys the scoring options set when given, and each one's argparse dest: one
# table, read by judge_options and rendered in the docs' precedence table.
OPTION_KEYS: dict[str, str] = {
    "backend": "backend",
    "backend_kwargs": "backend_kwargs",
    "score_mode": "score_mode",
    "success_threshold": "threshold",
    "binary_reward": "binary_reward",
    "timeout": "request_timeout",
    "send_video_inline": "send_video_inline",
    "ca_bundle": "ca_bundle",
}


def judge_options(args: argparse.Namespace) -> dict[str, Any]:
    """The ``reward_model`` keys the scoring options set (``None``: the option was not given), for
    :func:`..reward_block.resolve_reward_block`."""
    return {key: getattr(args, dest, None) for key, dest in OPTION_KEYS.items()}


def option_flag(key: str) -> str:
    """The command-line flag of ``reward_model`` key ``key`` (``--threshold``, ``--binary/--continuous``)."""
    dest = OPTION_KEYS[key]
    return "--binary/--continuous" if dest == "binary_reward" else f"--{dest.replace('_', '-')}"
