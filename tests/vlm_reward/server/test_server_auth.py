"""API keys, safe binding and TLS: the key table against a real HTTPS server process, and the
parsing of keys and binding flags in-process (milliseconds).

The server runs with two keys in ``VLM_REWARD_API_KEY`` (a rotation) and a self-signed
certificate made here; every request verifies it. Afterwards no file the run wrote, and not
the server's command line, holds a key.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from tests.support.server import ServerProcess
from tests.support.tls import self_signed_cert
from vlm_reward.protocol import API_KEY_ENV
from vlm_reward.server.auth import ApiKeys, load_api_keys
from vlm_reward.server.cli import is_loopback, parse_config

KEY_ONE = "key-one-7d1f0c9a2b"
KEY_TWO = "key-two-e85b44c310"


@dataclass(frozen=True)
class KeyedServer:
    server: ServerProcess
    cert: str
    written: Path  # every file the run wrote lives under here


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory, sample_mp4: str) -> Iterator[KeyedServer]:
    written = tmp_path_factory.mktemp("keyed")
    root = written / "videos"
    root.mkdir()
    shutil.copy(sample_mp4, root / "episode.mp4")
    cert, key = self_signed_cert(written)
    args = ["--backend", "fixed_score", "--model", "fake", "--video-root", str(root)]
    args += ["--ssl-certfile", str(cert), "--ssl-keyfile", str(key), "--log-level", "debug"]
    env = {API_KEY_ENV: f"{KEY_ONE}, {KEY_TWO}", "TMPDIR": str(written)}
    server = ServerProcess(args, written / "server.log", env=env).wait_ready()
    yield KeyedServer(server, str(cert), written)
    server.stop()


SCORE = {"task_text": "put the bowl on the plate", "video_path": "episode.mp4"}


def _auth(value: str | None) -> dict[str, str]:
    return {} if value is None else {"Authorization": value}


AUTH_TABLE = [
    ("no-header", "POST", "/score", None, 401),
    ("wrong-scheme", "POST", "/score", f"Basic {KEY_ONE}", 401),
    ("wrong-key", "POST", "/score", "Bearer not-the-key", 401),
    ("empty-key", "POST", "/score", "Bearer ", 401),
    ("key-with-suffix", "POST", "/score", f"Bearer {KEY_ONE}x", 401),
    ("first-key", "POST", "/score", f"Bearer {KEY_ONE}", 200),
    ("second-key", "POST", "/score", f"Bearer {KEY_TWO}", 200),
    ("scheme-any-case", "POST", "/score", f"bearer {KEY_TWO}", 200),
    ("health-without-key", "GET", "/health", None, 200),
    ("backends-without-key", "GET", "/backends", None, 401),
    ("backends-with-key", "GET", "/backends", f"Bearer {KEY_ONE}", 200),
    ("metrics-without-key", "GET", "/metrics", None, 401),
    ("metrics-with-key", "GET", "/metrics", f"Bearer {KEY_ONE}", 200),
    ("unknown-path-without-key", "GET", "/admin", None, 401),  # no 404: nothing is revealed
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("method", "path", "authorization", "status"), [r[1:] for r in AUTH_TABLE], ids=[r[0] for r in AUTH_TABLE]
)
def test_every_route_but_health_needs_a_key(
    keyed: KeyedServer, method: str, path: str, authorization: str | None, status: int
) -> None:
    body = SCORE if method == "POST" else None
    response = requests.request(
        method, keyed.server.url(path), json=body, headers=_auth(authorization), verify=keyed.cert, timeout=30
    )
    assert response.status_code == status, response.text
    if status == 401:
        assert response.json()["error"]["type"] == "unauthorized"
        assert response.headers["www-authenticate"] == "Bearer"
        assert KEY_ONE not in response.text and "not-the-key" not in response.text


@pytest.mark.slow
def test_plain_http_is_not_served_on_the_tls_port(keyed: KeyedServer) -> None:
    with pytest.raises(requests.ConnectionError):
        requests.get(keyed.server.url("/health").replace("https://", "http://"), timeout=5)


@pytest.mark.slow
def test_no_key_in_any_file_the_run_wrote_or_on_the_command_line(keyed: KeyedServer) -> None:
    requests.post(
        keyed.server.url("/score"), json=SCORE, headers=_auth(f"Bearer {KEY_ONE}"), verify=keyed.cert
    )
    keyed.server.log_containing("POST /score")
    files = [p for p in keyed.written.rglob("*") if p.is_file()]
    assert any(p.name == "server.log" for p in files)
    for path in files:
        data = path.read_bytes()
        assert KEY_ONE.encode() not in data and KEY_TWO.encode() not in data, path
    assert not any(KEY_ONE in arg or KEY_TWO in arg for arg in keyed.server.cmd)


# ---------------------------------------------------------------------------- keys, in-process


KEY_SOURCES = [
    ("env-two-keys", None, f" {KEY_ONE} ,{KEY_TWO}", 2),
    ("env-empty", None, "", None),
    ("env-only-commas", None, " , ", None),
    ("file-lines-and-comments", f"# rotation\n{KEY_ONE}\n\n{KEY_TWO}  # new\n", "ignored", 2),
]


@pytest.mark.parametrize(
    ("file_text", "env_value", "count"), [r[1:] for r in KEY_SOURCES], ids=[r[0] for r in KEY_SOURCES]
)
def test_keys_come_from_the_file_else_the_variable(
    tmp_path: Path, file_text: str | None, env_value: str, count: int | None
) -> None:
    key_file = None
    if file_text is not None:
        key_file = tmp_path / "keys"
        key_file.write_text(file_text)
    keys = load_api_keys(None if key_file is None else str(key_file), {API_KEY_ENV: env_value})
    assert (None if keys is None else len(keys)) == count
    if keys is not None:
        assert keys.accepts(f"Bearer {KEY_ONE}") and keys.accepts(f"Bearer {KEY_TWO}")
        assert KEY_ONE not in repr(keys) and KEY_ONE not in str(keys)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [("", "holds no key"), ("# only a comment\n", "holds no key")],
    ids=["empty", "comment"],
)
def test_a_key_file_without_a_key_is_an_error(tmp_path: Path, text: str, fragment: str) -> None:
    (tmp_path / "keys").write_text(text)
    with pytest.raises(ValueError, match=fragment):
        load_api_keys(str(tmp_path / "keys"), {})


def test_an_unreadable_key_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot be read"):
        load_api_keys(str(tmp_path / "missing"), {})


HEADERS = [
    ("none", None, False),
    ("bearer-only", "Bearer", False),
    ("token-scheme", f"Token {KEY_ONE}", False),
    ("extra-spaces", f"  Bearer   {KEY_ONE}  ", True),
    ("prefix-of-key", f"Bearer {KEY_ONE[:-1]}", False),
]


@pytest.mark.parametrize(("header", "accepted"), [r[1:] for r in HEADERS], ids=[r[0] for r in HEADERS])
def test_authorization_header_parsing(header: str | None, accepted: bool) -> None:
    assert ApiKeys([KEY_ONE]).accepts(header) is accepted


# ---------------------------------------------------------------------------- binding


BASE = ["--plugin", "tests.support.fake_backends", "--backend", "fixed_score", "--model", "m"]
BINDINGS = [
    ("loopback-no-key", ["--host", "127.0.0.1"], {}, None),
    ("localhost-no-key", ["--host", "localhost"], {}, None),
    ("ipv6-loopback-no-key", ["--host", "::1"], {}, None),
    ("all-interfaces-no-key", ["--host", "0.0.0.0"], {}, "--allow-unauthenticated"),
    ("hostname-no-key", ["--host", "node0"], {}, "no API key is set"),
    ("all-interfaces-with-key", ["--host", "0.0.0.0"], {API_KEY_ENV: KEY_ONE}, None),
    ("all-interfaces-insisting", ["--host", "0.0.0.0", "--allow-unauthenticated"], {}, None),
    ("cert-without-key", ["--ssl-certfile", __file__], {}, "go together"),
]


@pytest.mark.parametrize(("flags", "env", "error"), [r[1:] for r in BINDINGS], ids=[r[0] for r in BINDINGS])
def test_binding_beyond_loopback_needs_a_key(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
    env: dict,
    error: str | None,
) -> None:
    monkeypatch.delenv(API_KEY_ENV, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    if error is None:
        config, _ = parse_config([*BASE, *flags])
        assert (config.api_keys is not None) == bool(env)
        return
    with pytest.raises(SystemExit) as exit_info:
        parse_config([*BASE, *flags])
    assert exit_info.value.code == 2 and error in capsys.readouterr().err


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.1.2.3", True),
        ("::1", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
    ],
    ids=["127.0.0.1", "127.1.2.3", "::1", "localhost", "0.0.0.0", "::"],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_a_literal_upstream_key_in_backend_kwargs_is_refused() -> None:
    from vlm_reward.backends.openai_compatible import OpenAICompatibleBackend

    with pytest.raises(ValueError, match="export OPENAI_API_KEY"):
        OpenAICompatibleBackend("m", base_url="http://127.0.0.1:1/v1", api_key="sk-literal")
