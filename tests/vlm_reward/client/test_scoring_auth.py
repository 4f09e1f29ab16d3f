"""The env's client against a keyed HTTPS reward server (a real process on 127.0.0.1).

``reward_model.api_key_env`` names the variable with the key and ``ca_bundle`` the
certificate that verifies the server (self-signed, made here). The right key is scored; a
wrong one raises :class:`RewardAuthError` at the first call, sent once (a 401 is neither retried
nor failed over), in lenient and strict mode alike: it is never a fallback.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import moving_square_frames
from tests.support.server import ServerProcess
from tests.support.tls import self_signed_cert
from vlm_reward.client.config import RewardModelConfig
from vlm_reward.client.http import RewardAuthError
from vlm_reward.client.scoring import FinishedEpisode, RewardClient
from vlm_reward.protocol import API_KEY_ENV

pytestmark = pytest.mark.slow  # a real server process

KEY = "env-side-key-3b9e51"
KEY_VAR = "TEST_REWARD_KEY"


@dataclass(frozen=True)
class KeyedClientServer:
    server: ServerProcess
    cert: str
    videos: Path


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KeyedClientServer]:
    base = tmp_path_factory.mktemp("keyed-env")
    videos = base / "videos"
    videos.mkdir()
    cert, key = self_signed_cert(base)
    args = ["--backend", "fixed_score", "--model", "fake", "--video-root", str(videos)]
    args += ["--ssl-certfile", str(cert), "--ssl-keyfile", str(key)]
    server = ServerProcess(args, base / "server.log", env={API_KEY_ENV: KEY}).wait_ready()
    yield KeyedClientServer(server, str(cert), videos)
    server.stop()


def _client(keyed: KeyedClientServer, **changes: object) -> RewardClient:
    settings = {
        "enable": True,
        "endpoint": keyed.server.endpoint,
        "api_key_env": KEY_VAR,
        "ca_bundle": keyed.cert,
        "temp_video_dir": str(keyed.videos),
        "timeout": 30.0,
        "backend": None,
        **changes,
    }
    return RewardClient(RewardModelConfig(**settings))


def _episode() -> FinishedEpisode:
    return FinishedEpisode("put the bowl on the plate", list(moving_square_frames(4)), native_success=True)


def test_the_right_key_is_scored(keyed: KeyedClientServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_VAR, KEY)
    client = _client(keyed)
    try:
        results = client.score_many([_episode(), _episode()])
    finally:
        client.close()
    assert [(r.fallback, r.score) for r in results] == [(False, 0.8), (False, 0.8)]
    assert KEY not in repr(client.cfg) and KEY not in str(client.cfg.model_dump())


@pytest.mark.parametrize("strict", [False, True], ids=["lenient", "strict"])
def test_a_wrong_key_raises_at_once_sent_once_whatever_the_failure_policy(
    keyed: KeyedClientServer, monkeypatch: pytest.MonkeyPatch, strict: bool
) -> None:
    monkeypatch.setenv(KEY_VAR, "not-the-key")
    line = "POST /score backend=- status=401"
    before = keyed.server.log().count(line)
    client = _client(keyed, max_retries=3, fail_on_request_error=strict)
    try:
        with pytest.raises(RewardAuthError) as raised:
            client.score(_episode())
    finally:
        client.close()
    assert (raised.value.kind, raised.value.status) == ("unauthorized", 401)
    assert f"this client sent the key in ${KEY_VAR}" in str(raised.value)
    assert "not-the-key" not in str(raised.value) and not client.error_counts
    deadline = time.monotonic() + 10  # the server logs a request after its response has gone out
    while keyed.server.log().count(line) - before < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)  # a retry, had there been one, would be logged by now
    assert keyed.server.log().count(line) - before == 1  # no retry


@pytest.mark.parametrize("value", [None, "", "  "], ids=["unset", "empty", "blank"])
def test_a_named_but_missing_variable_stops_the_client_being_built(
    keyed: KeyedClientServer, monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    if value is None:
        monkeypatch.delenv(KEY_VAR, raising=False)
    else:
        monkeypatch.setenv(KEY_VAR, value)
    with pytest.raises(ValueError, match=rf"{KEY_VAR}.*unset or empty"):
        _client(keyed)


def test_an_untrusted_certificate_is_a_connection_fallback(
    keyed: KeyedClientServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_VAR, KEY)
    client = _client(keyed, ca_bundle=None, max_retries=0)
    try:
        result = client.score(_episode())
    finally:
        client.close()
    assert (result.fallback, result.error_kind) == (True, "connection")
    assert "CERTIFICATE_VERIFY_FAILED" in (result.error or "")


DRY_RUN_KEYS = [
    ("right-key", KEY, None),
    ("wrong-key", "not-the-key", "refused the API key"),
    ("no-key", None, "401"),
]


@pytest.mark.parametrize(("key", "error"), [r[1:] for r in DRY_RUN_KEYS], ids=[r[0] for r in DRY_RUN_KEYS])
def test_the_dry_run_checks_the_key_against_each_replica(
    keyed: KeyedClientServer, key: str | None, error: str | None
) -> None:
    from examples.embodiment.dry_run import SetupError, check_reward_key

    if error is None:
        assert check_reward_key(keyed.server.endpoint, key, keyed.cert) == "key accepted"
        return
    with pytest.raises(SetupError, match=error):
        check_reward_key(keyed.server.endpoint, key, keyed.cert)
