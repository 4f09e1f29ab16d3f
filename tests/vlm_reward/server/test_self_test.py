"""The server's self-test: the set's manifest, the grade, and a real server that refuses a judge.

The pure parts run in milliseconds on tiny videos written here. The end-to-end tests start the
real server on the default set shipped with the package (real LIBERO episodes of the scripted
expert and their counterfactuals; ``scripts/make_judge_self_test.py``) with the ``coin_flip``
stand-in judge, which answers at random but the same way for the same video: on that set it
misjudges :data:`COIN_FLIP_MISJUDGED` cases (pinned; regenerating the set changes it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import requests

from tests.support.server import REPO, ServerProcess
from vlm_reward.protocol import ScoreRequest, ScoreResponse
from vlm_reward.server.self_test import (
    DEFAULT_SELF_TEST_DIR,
    SelfTestCase,
    grade,
    load_self_test,
    request_json,
    score_cases,
    self_test_flags,
    write_manifest,
)
from vlm_reward.tools.server_process import free_port, load_failure
from vlm_reward.video_io import encode_mp4, probe_video


def _case(tmp: Path, name: str, success: bool, kind: str = "success") -> SelfTestCase:
    path = tmp / name
    encode_mp4(np.zeros((2, 16, 16, 3), dtype=np.uint8), path, fps=4)
    return SelfTestCase(path, "put the soup in the basket", success, kind)


def test_a_manifest_round_trips(tmp_path: Path) -> None:
    cases = [_case(tmp_path, "a.mp4", True), _case(tmp_path, "b.mp4", False, "reversed")]
    write_manifest(tmp_path, cases, "made by a test")
    assert load_self_test(tmp_path) == cases


BAD_SETS = [
    ("no_manifest", None, "cannot read manifest.json"),
    ("no_cases", {"cases": []}, 'has no "cases"'),
    ("missing_key", {"cases": [{"video": "a.mp4", "task_text": "t", "success": True}]}, "needs the keys"),
    (
        "success_not_bool",
        {"cases": [{"video": "a.mp4", "task_text": "t", "success": 1, "kind": "x"}]},
        "true/false",
    ),
    (
        "missing_video",
        {"cases": [{"video": "z.mp4", "task_text": "t", "success": True, "kind": "x"}]},
        "no video z.mp4",
    ),
]


@pytest.mark.parametrize(("manifest", "message"), [b[1:] for b in BAD_SETS], ids=[b[0] for b in BAD_SETS])
def test_a_bad_set_is_named(tmp_path: Path, manifest: dict | None, message: str) -> None:
    _case(tmp_path, "a.mp4", True)
    if manifest is not None:
        (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match=message):
        load_self_test(tmp_path)


GRADES = [
    # outcomes for (success, failure, reversed): score or error; misjudged; passes at tolerance 1/3
    ("all_right", [0.9, 0.1, 0.2], 0, True),
    ("fooled_by_the_counterfactual", [0.9, 0.1, 0.8], 1, True),
    ("at_the_threshold_is_success", [0.5, 0.1, 0.5], 1, True),
    ("an_error_is_wrong", [0.9, RuntimeError("parse"), 0.8], 2, False),
    ("always_yes", [0.9, 0.9, 0.9], 2, False),
]


@pytest.mark.parametrize(("outcomes", "wrong", "passed"), [g[1:] for g in GRADES], ids=[g[0] for g in GRADES])
def test_grade_counts_what_the_judge_got_wrong(
    tmp_path: Path, outcomes: list, wrong: int, passed: bool
) -> None:
    cases = [
        _case(tmp_path, "s.mp4", True),
        _case(tmp_path, "f.mp4", False, "failure"),
        _case(tmp_path, "r.mp4", False, "reversed"),
    ]
    report = grade(cases, outcomes, threshold=0.5, tolerance=1 / 3)
    assert (len(report.misjudged), report.passed) == (wrong, passed)
    assert report.summary().startswith(f"self-test: misjudged {wrong} of 3 labelled episodes")


def test_the_default_set_is_small_and_mixed() -> None:
    cases = load_self_test(DEFAULT_SELF_TEST_DIR)
    kinds = {case.kind for case in cases}
    assert {"success", "failure", "reversed", "frozen", "clipped"} <= kinds
    assert all(case.success == (case.kind == "success") for case in cases)
    size = sum(path.stat().st_size for path in DEFAULT_SELF_TEST_DIR.iterdir())
    assert size < 600 * 1024, f"a few hundred KB, got {size / 1024:.0f} KiB"


# ---- a real server on the default set -------------------------------------------------------

BAD_FLAGS = [
    ("no_set", ["--self-test", "/no/such/set"], "--self-test: self-test set /no/such/set: cannot read"),
    ("tolerance_above_1", ["--self-test", "--self-test-tolerance", "1.5"], "must be in [0, 1], got 1.5"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("flags", "message"), [b[1:] for b in BAD_FLAGS], ids=[b[0] for b in BAD_FLAGS])
def test_bad_self_test_flags_are_argparse_errors(flags: list[str], message: str) -> None:
    command = [
        sys.executable,
        "-m",
        "vlm_reward.libero_reward_server",
        "--plugin",
        "tests.support.fake_backends",
    ]
    command += ["--backend", "fixed_score", "--model", "m", *flags]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr


COIN_FLIP_MISJUDGED = 5  # of the default set's 10 cases, seed 0 (seeds 0-7 give 5, 5, 7, 6, 8, 5, 5, 2)
TOLERANCES = [
    ("refused_beyond_the_tolerance", -1, "self_test_failed"),  # tolerance just below its error rate
    ("accepted_within_the_tolerance", 0, "ok"),  # tolerance at its error rate
]


@pytest.mark.slow
@pytest.mark.parametrize(("offset", "outcome"), [t[1:] for t in TOLERANCES], ids=[t[0] for t in TOLERANCES])
def test_the_server_refuses_a_random_judge_beyond_the_tolerance(
    tmp_path: Path, offset: int, outcome: str
) -> None:
    total = len(load_self_test(DEFAULT_SELF_TEST_DIR))
    tolerance = (COIN_FLIP_MISJUDGED + offset + 0.5) / total  # between two counts: no rounding at the edge
    args = ["--backend", "coin_flip", "--model", "none", "--video-root", str(tmp_path)]
    args += ["--backend-kwargs", json.dumps({"generate_seconds": 0.5}), "--self-test"]
    server = ServerProcess([*args, "--self-test-tolerance", f"{tolerance:.4f}"], tmp_path / "server.log")
    try:
        testing = server.wait_until(lambda r: r.status_code != 503 or "backend_loading" not in r.text)
        assert testing.status_code == 503 and testing.json()["error"]["type"] == "self_testing"
        done = server.wait_until(lambda r: "self_testing" not in r.text and "backend_loading" not in r.text)
        score = requests.post(server.endpoint, json={"task_text": "t", "video_path": "x.mp4"}, timeout=10)
    finally:
        server.stop()
    summary = f"self-test: misjudged {COIN_FLIP_MISJUDGED} of {total} labelled episodes"
    assert summary in server.log()
    if outcome == "ok":
        assert done.status_code == 200 and score.status_code == 400, (
            "serving: a missing video is the client's"
        )
        return
    assert (done.status_code, done.json()["error"]["type"], score.status_code) == (503, outcome, 503)
    message = done.json()["error"]["message"]
    assert message.startswith(f"backend 'coin_flip' failed its {summary}") and "scored" in message
    assert load_failure(done) == message, "launchers stop waiting for a server that will never serve"


@pytest.mark.slow
def test_start_reward_server_sh_reports_a_failed_self_test_and_exits(tmp_path: Path) -> None:
    """A judge that says yes to everything misjudges the 6 failures of the default set."""
    script = REPO / "examples" / "embodiment" / "scripts" / "start_reward_server.sh"
    env = {**os.environ, "PORT": str(free_port()), "LOG_FILE": str(tmp_path / "server.log"), "WAIT_S": "120"}
    flags = ["--plugin", "tests.support.fake_backends", "--video-root", str(tmp_path), "--self-test"]
    flags += ["--backend-kwargs", json.dumps({"answer": "<answer>0.9</answer>"})]
    result = subprocess.run(
        ["bash", str(script), "fixed_score", "m", *flags],
        cwd="/",
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "[reward-server] backend 'fixed_score' failed its self-test: misjudged 6 of 10" in result.stderr


# ---- the request a self-test asks with: the env's --------------------------------------------

ENV_REQUEST = {
    "nframes": 12,
    "max_pixels": 12544,
    "video_fps": 5.0,
    "score_mode": "rubric",
    "backend_kwargs": {"prompt": "roboreward"},
}


def test_the_launchers_flags_reach_the_server_s_settings() -> None:
    from vlm_reward.server.cli import parse_config

    flags = self_test_flags(0.3, ENV_REQUEST)
    config, _ = parse_config(
        [
            "--plugin",
            "tests.support.fake_backends",
            "--backend",
            "fixed_score",
            "--model",
            "m",
            "--self-test",
            *flags,
        ]
    )
    assert config.self_test is not None
    assert (config.self_test.threshold, config.self_test.request) == (0.3, ENV_REQUEST)


BAD_REQUESTS = [
    ("unknown_field", '{"nframe": 3}', "unknown request fields ['nframe']"),
    ("the_video", '{"video_path": "x.mp4"}', "unknown request fields ['video_path']"),
    ("bad_value", '{"nframes": 0}', "not a valid request"),
    ("bad_mode", '{"score_mode": "percent"}', "not a valid request"),
    ("not_an_object", "[1]", "expected a JSON object"),
]


@pytest.mark.parametrize(("text", "message"), [b[1:] for b in BAD_REQUESTS], ids=[b[0] for b in BAD_REQUESTS])
def test_a_bad_self_test_request_is_one_sentence(text: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=re.escape(message)):
        request_json(text)


def test_every_case_is_asked_as_the_env_asks_its_frames_capped(tmp_path: Path) -> None:
    cases = load_self_test(DEFAULT_SELF_TEST_DIR)[:3]
    asked: list[ScoreRequest] = []

    async def score(request: ScoreRequest) -> ScoreResponse:
        asked.append(request)
        return ScoreResponse(
            score=0.5, raw_value=0.5, answer="0.5", think=None, backend="b", model="m", latency_s=0.0
        )

    outcomes = asyncio.run(score_cases(cases, score, max_nframes=10, request=ENV_REQUEST))
    assert outcomes == [0.5] * 3
    for request, case in zip(asked, cases, strict=True):
        fields = request.model_dump(include=set(ENV_REQUEST))
        frames = probe_video(case.video).num_frames
        assert fields == {**ENV_REQUEST, "nframes": min(frames, 10, 12)}, case.describe()
