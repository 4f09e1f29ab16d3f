"""A 401 ends every evaluation command at once: status 1, one sentence naming the variable read.

The judge is a keyed server (a real process, the ``fixed_score`` test backend). Each command
runs as a user runs it, in a fresh interpreter whose environment exports ``VLM_REWARD_API_KEY``:
with ``--api-key-env`` naming it and a wrong value, the sentence names it; with a right value
exported but not named, the sentence says no key was sent. Nothing is judged before the check
(no episode log, no rollout), and no key shows in what the command printed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import moving_square_frames
from tests.reward_eval.conftest import run_reward_eval
from tests.reward_eval.test_reward_eval_audit import write_run
from tests.support.server import ServerProcess
from vlm_reward.client.episode_log import EPISODE_LOG_GLOB
from vlm_reward.protocol import API_KEY_ENV

pytestmark = pytest.mark.slow  # a server process and a fresh interpreter per command

KEY = "the-servers-key"
WRONG = "a-stale-key"
NAMED = ("--api-key-env", API_KEY_ENV)
SENT_WRONG = f"this client sent the key in ${API_KEY_ENV};"
SENT_NONE = "this client sent no key (no api_key_env is set);"


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, Path]]:
    """The keyed judge, and a run dir with kept videos (one success, one failure) for it to judge."""
    tmp = tmp_path_factory.mktemp("keyed-judge")
    run_dir = write_run(
        tmp / "run", [(0, True, moving_square_frames(8)), (0, False, moving_square_frames(4))]
    )
    args = ["--backend", "fixed_score", "--model", "none", "--video-root", str(tmp)]
    server = ServerProcess(
        args, tmp / "server.log", plugins=("tests.support.fake_backends",), env={API_KEY_ENV: KEY}
    )
    try:
        yield server.wait_ready(), run_dir
    finally:
        server.stop()


COMMANDS = [
    ("rescore-wrong-key", "rescore", WRONG, NAMED, SENT_WRONG),
    ("audit-wrong-key", "audit", WRONG, NAMED, SENT_WRONG),
    ("rescore-no-key", "rescore", KEY, (), SENT_NONE),
    ("audit-no-key", "audit", KEY, (), SENT_NONE),
    ("run-wrong-key", "run", WRONG, NAMED, SENT_WRONG),
]


@pytest.mark.parametrize(
    ("command", "exported", "named", "sentence"), [c[1:] for c in COMMANDS], ids=[c[0] for c in COMMANDS]
)
def test_a_401_ends_the_command_with_status_1_and_one_sentence(
    keyed: tuple[ServerProcess, Path],
    tmp_path: Path,
    command: str,
    exported: str,
    named: tuple[str, ...],
    sentence: str,
) -> None:
    server, run_dir = keyed
    out = tmp_path / "out"
    source = {"run": ["--tasks", "0", "--episodes-per-task", "1"], "rescore": [str(run_dir)]}
    argv = [*source.get(command, [str(run_dir)]), "--endpoint", server.endpoint, *named, "--out", str(out)]
    result = run_reward_eval(
        command, *argv, "--backend", "fixed_score", env={API_KEY_ENV: exported}, timeout=300
    )
    assert result.returncode == 1, result.stdout[-2000:] + result.stderr[-2000:]
    errors = [line for line in result.stderr.splitlines() if line.startswith("[reward-eval] error:")]
    assert len(errors) == 1 and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert f"the reward server at {server.endpoint} refused the request with HTTP 401" in errors[0]
    assert sentence in errors[0]
    assert KEY not in result.stdout + result.stderr and WRONG not in result.stdout + result.stderr
    assert not list(out.glob(EPISODE_LOG_GLOB)), "nothing was judged before the key was checked"
