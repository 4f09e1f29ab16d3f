"""The learning comparison reuses a finished run only when it was made as a run would be now; a run's
timeout grows with its steps. No processes: the runs are stand-ins."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from examples.embodiment.reward_comparison import cli, judges, provenance, runs

REWARD_TERM = "rlinf/envs/libero/reward_term.py"
STAMP = "a" * 64  # the stand-in judge's stamp now


def test_every_training_file_is_in_the_repo() -> None:
    for entry in provenance.TRAINING_FILES:
        path = provenance.REPO / entry
        assert path.is_file() or any(path.rglob("*.py")), f"{entry}: no such file or package"


@pytest.fixture
def repo_copy(tmp_path: Path) -> Path:
    """The training files copied into a repo of their own."""
    root = tmp_path / "repo"
    for path in provenance.training_files():
        target = root / path.relative_to(provenance.REPO)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    return root


def _append(relative: str) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        with open(root / relative, "a") as file:
            file.write("\n# changed\n")

    return edit


def _add(relative: str) -> Callable[[Path], None]:
    return lambda root: (root / relative).write_text("x = 1\n")


def _remove(relative: str) -> Callable[[Path], None]:
    return lambda root: (root / relative).unlink()


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (_append(REWARD_TERM), REWARD_TERM),
        (
            _append("examples/embodiment/config/env/libero_10.yaml"),
            "examples/embodiment/config/env/libero_10.yaml",
        ),
        (
            _append("examples/embodiment/reward_comparison/runs.py"),
            "examples/embodiment/reward_comparison/runs.py",
        ),
        (_append("vlm_reward/client/scoring.py"), "vlm_reward/client/scoring.py"),
        (_add("examples/embodiment/cpu_learn/extra.py"), "examples/embodiment/cpu_learn/extra.py (new)"),
        (_remove("vlm_reward/watch/guard.py"), "vlm_reward/watch/guard.py (gone)"),
    ],
    ids=["env-module", "env-yaml", "runs", "reward-client", "added", "removed"],
)
def test_a_changed_training_file_changes_the_hash_and_is_named(
    repo_copy: Path, edit: Callable[[Path], None], named: str
) -> None:
    before = provenance.made_with(STAMP, repo_copy)
    assert before.files == provenance.made_with(STAMP).files, "the copy is the repo's"
    edit(repo_copy)
    now = provenance.made_with(STAMP, repo_copy)
    assert now.code != before.code
    assert provenance.stale_reason(before.to_json(), now) == f"training files changed: {named}"


def test_bytecode_is_not_a_training_file(repo_copy: Path) -> None:
    before = provenance.made_with(None, repo_copy)
    (repo_copy / "rlinf/envs/libero/__pycache__").mkdir(exist_ok=True)
    (repo_copy / "rlinf/envs/libero/__pycache__/reward_term.cpython-310.pyc").write_bytes(b"\0")
    assert provenance.made_with(None, repo_copy) == before


NOW = provenance.Provenance("b" * 64, {f"f{k}.py": "0" for k in range(9)})


@pytest.mark.parametrize(
    ("recorded", "reason"),
    [
        (NOW.to_json(), None),
        (None, provenance.NO_PROVENANCE),
        ({}, provenance.NO_PROVENANCE),
        (
            {**NOW.to_json(), "judge_stamp": "c" * 64},
            "its judge's model differs (stamp cccccccccccc then, bbbbbbbbbbbb now)",
        ),
        (
            {**NOW.to_json(), "judge_stamp": None},
            "its judge's model differs (stamp none then, bbbbbbbbbbbb now)",
        ),
        (
            {**NOW.to_json(), "files": {}},
            "training files changed: f0.py (new), f1.py (new), f2.py (new), f3.py (new), f4.py (new), "
            "f5.py (new) and 3 more",
        ),
    ],
    ids=["same", "none-recorded", "empty", "judge-retrained", "judge-made-since", "many-files"],
)
def test_the_stale_reason_names_what_differs(recorded: dict[str, Any] | None, reason: str | None) -> None:
    assert provenance.stale_reason(recorded, NOW) == reason


@pytest.fixture
def comparison(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> SimpleNamespace:
    """A comparison in ``tmp_path/out`` of the run ``stamped``, whose judge's stamp is
    :data:`STAMP`; nothing is trained (a run that would be is an error) or compared."""
    current = {"stamp": STAMP}
    judge = judges.Judge("none", lambda judges_dir: judges_dir, stamp=lambda judges_dir: current["stamp"])
    monkeypatch.setitem(judges.JUDGES, "stamped", judge)
    monkeypatch.setitem(runs.RUNS, "stamped", runs.RunSpec("stamped", "a stamped judge", judge="stamped"))
    monkeypatch.setattr(cli.signal, "signal", lambda *args: None)  # keep pytest's own SIGTERM handling
    monkeypatch.setattr(cli, "compare", lambda specs, args: cli.EXIT_OK)

    def not_trained(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the finished run was run again")

    monkeypatch.setattr(cli, "train", not_trained)
    out = tmp_path / "out"
    argv = ["--out", str(out), "--runs", "stamped", "--steps", "5"]
    return SimpleNamespace(out=out, argv=argv, current=current, finished=out / "stamped" / cli.FINISHED)


def _finish(comparison: SimpleNamespace, edit: Callable[[dict[str, Any]], None]) -> None:
    """A finished.json as the run would write it now, then ``edit``ed."""
    args = cli.build_parser().parse_args(comparison.argv)
    finished = {"status": 0, "settings": cli.settings_of(args)}
    finished["provenance"] = provenance.made_with(STAMP).to_json()
    edit(finished)
    comparison.finished.parent.mkdir(parents=True)
    comparison.finished.write_text(json.dumps(finished))


def _changed_file(finished: dict[str, Any]) -> None:
    finished["provenance"]["files"][REWARD_TERM] = "0" * 64


def _retrained_judge(finished: dict[str, Any]) -> None:
    finished["provenance"]["judge_stamp"] = "c" * 64


def _no_provenance(finished: dict[str, Any]) -> None:
    del finished["provenance"]


def _other_steps(finished: dict[str, Any]) -> None:
    finished["settings"]["steps"] = 4


def _stale(reason: str) -> str:
    """The line for a stale run, ``{path}`` and ``{dir}`` to fill."""
    advice = "Delete {dir} to run it again, or add --reuse-stale to reuse it as it is."
    return f"stamped: {{path}} is stale: {reason}. {advice}"


def _reused(reason: str) -> str:
    return f"stamped: reusing {{path}} although {reason} (--reuse-stale)."


CHANGED = f"training files changed: {REWARD_TERM}"
RETRAINED = "its judge's model differs (stamp cccccccccccc then, aaaaaaaaaaaa now)"


@pytest.mark.parametrize(
    ("edit", "flags", "status", "line"),
    [
        (lambda finished: None, [], cli.EXIT_OK, "stamped: finished before ({path}); not run again."),
        (_changed_file, [], cli.EXIT_BAD_OPTIONS, _stale(CHANGED)),
        (_changed_file, ["--reuse-stale"], cli.EXIT_OK, _reused(CHANGED)),
        (_retrained_judge, [], cli.EXIT_BAD_OPTIONS, _stale(RETRAINED)),
        (_no_provenance, [], cli.EXIT_BAD_OPTIONS, _stale(provenance.NO_PROVENANCE)),
        (_no_provenance, ["--reuse-stale"], cli.EXIT_OK, _reused(provenance.NO_PROVENANCE)),
        (
            _other_steps,
            ["--reuse-stale"],
            cli.EXIT_BAD_OPTIONS,
            "stamped: {path} ran with other settings (steps 4 then, 5 now); use another --out.",
        ),
    ],
    ids=[
        "matching",
        "file-changed",
        "file-changed-reused",
        "judge-retrained",
        "no-provenance",
        "no-provenance-reused",
        "other-settings",
    ],
)
def test_a_finished_run_is_reused_only_as_it_was_made(
    comparison: SimpleNamespace,
    capsys: pytest.CaptureFixture[str],
    edit: Callable[[dict[str, Any]], None],
    flags: list[str],
    status: int,
    line: str,
) -> None:
    _finish(comparison, edit)
    assert cli.main([*comparison.argv, *flags]) == status
    expected = line.format(path=comparison.finished, dir=comparison.finished.parent)
    assert capsys.readouterr().out.splitlines() == [f"[compare] {expected}"]


def test_a_run_records_what_it_was_made_with_and_is_reused_after(
    comparison: SimpleNamespace, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    served = []

    @contextmanager
    def serving(name: str, judges_dir: Path, log_path: Path) -> Iterator[SimpleNamespace]:
        comparison.current["stamp"] = "d" * 64  # the judge's model made ready (retrained) here
        served.append(name)
        yield SimpleNamespace(endpoint="http://127.0.0.1:1/score")

    monkeypatch.setattr(cli.judges, "serving", serving)
    monkeypatch.setattr(cli, "train", lambda spec, block, run_dir, args, judge=None: (0, run_dir / "logs"))
    comparison.current["stamp"] = None  # not made yet
    assert cli.main(comparison.argv) == cli.EXIT_OK
    recorded = json.loads(comparison.finished.read_text())["provenance"]
    assert recorded == provenance.made_with("d" * 64).to_json()
    monkeypatch.setattr(cli, "train", None)  # a second run would fail
    capsys.readouterr()
    assert cli.main(comparison.argv) == cli.EXIT_OK
    assert served == ["stamped"]
    assert "stamped: finished before" in capsys.readouterr().out


MEASURED_START_UP_S, MEASURED_STEP_S = 355, 230  # the slowest seen here


@pytest.mark.parametrize("steps", [1, 2, 5, 20, 100], ids=lambda steps: f"{steps}-steps")
def test_a_runs_timeout_grows_with_its_steps_with_room_to_spare(steps: int) -> None:
    timeout, judge_only = cli.run_timeout_s(steps), cli.run_timeout_s(steps, judge_only=True)
    assert cli.run_timeout_s(steps + 1) > timeout
    assert judge_only > timeout
    assert timeout >= 2 * (MEASURED_START_UP_S + MEASURED_STEP_S * steps)
    assert judge_only >= 2 * (MEASURED_START_UP_S + 1.5 * MEASURED_STEP_S * steps)


def test_a_default_run_has_at_least_the_hour_it_had() -> None:
    assert cli.run_timeout_s(cli.default_steps()) >= 3600


@pytest.mark.parametrize(
    ("user", "timeout"),
    [(None, str(cli.run_timeout_s(7))), ("12345", "12345")],
    ids=["from-steps", "users-wins"],
)
def test_each_run_gets_its_timeout_unless_the_user_set_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, user: str | None, timeout: str
) -> None:
    if user is None:
        monkeypatch.delenv("CPU_LEARN_TIMEOUT", raising=False)
    else:
        monkeypatch.setenv("CPU_LEARN_TIMEOUT", user)
    envs = []

    class Done:
        """A run that has ended by the time it is looked at; its environment kept."""

        returncode = 0

        def __init__(self, command: list[str], **kwargs: Any) -> None:
            envs.append(kwargs["env"])

        def poll(self) -> int:
            return 0

    monkeypatch.setattr(cli.subprocess, "Popen", Done)
    args = cli.build_parser().parse_args(["--out", str(tmp_path), "--steps", "7"])
    assert cli.train(runs.RUNS["native"], {}, tmp_path, args) == (0, tmp_path / "logs")
    [env] = envs
    assert env["CPU_LEARN_TIMEOUT"] == timeout
    assert env["LOG_ROOT"] == str(tmp_path / "logs")
