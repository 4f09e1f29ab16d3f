"""The exit statuses of the project's commands: named once, returned by the commands, rendered by the docs.

A pipeline (a scheduler, CI, a wrapper script) acts on a command's exit status, so every status a
command can end with is a named constant, and every command's statuses with their meanings are one
:class:`CommandExits` entry of a registry. The commands import the constants and exit with them;
``docgen`` renders the registries into ``docs/reference/exit-statuses.md``; the tests check that
each status a command's sources exit with (a constant, a literal, a script's ``exit N``) is
registered for that command, so the page cannot go stale.

This module holds the types, the statuses shared by several commands, and the registry of the
reward server, the training entry and its scripts, and the set-up scripts (:data:`REGISTRY`);
:mod:`reward_eval.exit_statuses` holds ``reward-eval``'s with the same types. It is data only and
imports nothing of the project, so every command can import it without a cycle.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass

EXIT_OK = 0
EXIT_FAILED = 1  # a launcher or check that failed, with one sentence saying why
EXIT_BAD_OPTIONS = 2  # argparse's usage error, and the commands' own refusals of their options
EXIT_BAD_SETTINGS = 2  # the training: settings found wrong before training starts
EXIT_WORKER_FAILED = 3  # a CPU smoke run: a Ray worker died, or ran without the platform hook
EXIT_GUARD_STOP = 4  # the reward guard ended the training run after its checkpoint, on purpose
EXIT_TIMEOUT = 124  # what coreutils' timeout returns; the CPU smoke's own timeout returns it too
EXIT_INTERRUPTED = 128 + signal.SIGINT  # 130: Ctrl-C (the learning comparison: SIGTERM too)
EXIT_KILLED = 128 + signal.SIGKILL  # 137: killed, e.g. by timeout's --kill-after backstop
EXIT_TERMINATED = 128 + signal.SIGTERM  # 143: SIGTERM, after the training drained its judges


@dataclass(frozen=True)
class ExitStatus:
    """One status of a command and what it means to whoever ran it."""

    code: int | str  # the status; a phrase for a status passed on from another program ("pytest's")
    meaning: str


@dataclass(frozen=True)
class CommandExits:
    """The statuses one command (or one mode of it) ends with, and the files that end it so."""

    command: str  # as the docs write it
    statuses: tuple[ExitStatus, ...]
    sources: tuple[str, ...] = ()  # files, from the repo root, whose exits these are (checked by tests)
    mode: str = ""  # a mode of the command (``--dry-run``); "" for the command as a whole
    note: str = ""  # a paragraph the page shows before the command's table

    def codes(self) -> frozenset[int | str]:
        """The registered statuses."""
        return frozenset(status.code for status in self.statuses)


SERVER = "python -m vlm_reward.libero_reward_server"
START_SERVER = "examples/embodiment/scripts/start_reward_server.sh"
RUN_EMBODIMENT = "examples/embodiment/scripts/run_embodiment.sh"
_TRAINING_SOURCES = ("examples/embodiment/train_embodied_agent.py", "examples/embodiment/judge_replicas.py")
_GUARD_STOP = ExitStatus(
    EXIT_GUARD_STOP,
    "the reward guard (`env.train.reward_model.guard` with action `stop`) ended the run after its "
    "checkpoint, on purpose; its `[reward guard]` report says why",
)

REGISTRY: tuple[CommandExits, ...] = (
    CommandExits(
        SERVER,
        (
            ExitStatus(EXIT_OK, "stopped by SIGTERM or SIGINT, after the drain"),
            ExitStatus(
                EXIT_BAD_OPTIONS,
                "a bad command line, before it listens: a bad flag value, a `--video-root` that is not a "
                "directory, a `--plugin` that cannot be imported, a non-loopback `--host` without an API "
                "key, one TLS file without the other, a `--self-test` set that cannot be read, or a backend "
                "that cannot start (a `--model` path that does not exist or has no `config.json`, a "
                "checkpoint of another family, bad `--backend-kwargs`)",
            ),
        ),
        sources=("vlm_reward/server/cli.py",),
        note="Also `libero-reward-server`.",
    ),
    CommandExits(
        START_SERVER,
        (
            ExitStatus(
                EXIT_OK,
                "the server answers `/health` with 200; it keeps running in the background (its PID is "
                "printed)",
            ),
            ExitStatus(
                EXIT_FAILED,
                "the server exited before it was ready (with its own sentence), its backend failed to load "
                "or it failed its self-test (the reason from `/health`), it was not ready after `WAIT_S` "
                "seconds, or no interpreter can run BACKEND (`vlm_reward.tools.runtime`'s sentence)",
            ),
            ExitStatus(
                EXIT_BAD_OPTIONS,
                "fewer than two arguments (BACKEND MODEL_PATH; prints the usage), or an `ENV_CONFIG` that "
                "does not load or whose `reward_model` block is wrong (its one sentence)",
            ),
        ),
        sources=(START_SERVER,),
    ),
    CommandExits(
        RUN_EMBODIMENT,
        (
            ExitStatus(EXIT_OK, "training finished"),
            ExitStatus(
                EXIT_BAD_SETTINGS,
                "a `reward_server` block that is wrong (an unknown key, a bad value, a judge that cannot "
                "start: its checkpoint, backend or interpreter), a judge placement the cluster cannot take, "
                "or a replica that did not start: one `[reward_server] FAILED:` sentence, before training",
            ),
            _GUARD_STOP,
            ExitStatus(
                EXIT_TERMINATED, "SIGTERM (a scheduler cancelling the job), after the judges were drained"
            ),
            ExitStatus("RLinf's", "any other status is RLinf's driver's (1 with a traceback for an error)"),
        ),
        sources=_TRAINING_SOURCES,
        mode="training",
        note="It exits with the status of what it ran: the training (`train_embodied_agent.py`), the dry "
        "run (`dry_run.py`) or the CPU smoke run.",
    ),
    CommandExits(
        RUN_EMBODIMENT,
        (
            ExitStatus(EXIT_OK, "`[dry-run] OK: the setup is ready for a GPU run`"),
            ExitStatus(
                EXIT_FAILED,
                "a check failed: `[dry-run] FAILED: ...` with the reason (server not reachable, checkpoint "
                "missing or not matching, a wrong `reward_server` block, ...)",
            ),
        ),
        sources=("examples/embodiment/dry_run.py",),
        mode="`--dry-run`",
    ),
    CommandExits(
        RUN_EMBODIMENT,
        (
            ExitStatus(EXIT_OK, "`[cpu-smoke] OK ...`"),
            ExitStatus(
                EXIT_BAD_SETTINGS,
                "a hook that cannot be imported or settings that are wrong, before Ray starts (also a "
                "`CPU_SMOKE_TIMEOUT` that is not a whole number of seconds, a named checkpoint too big for "
                "the memory, and a wrong `reward_server` block as in training)",
            ),
            ExitStatus(
                EXIT_WORKER_FAILED,
                "a worker died (an exception in `__init__`, a crash, Ray's memory monitor) or ran without "
                "the hook, or a call to a worker failed: that worker's error and the workers that did not "
                "run the hook",
            ),
            _GUARD_STOP,
            ExitStatus(EXIT_TIMEOUT, "the timeout (`CPU_SMOKE_TIMEOUT`, default 600 s)"),
            ExitStatus(EXIT_KILLED, "the timeout, when the backstop had to kill it"),
        ),
        sources=(
            "examples/embodiment/cpu_smoke/guard.py",
            "examples/embodiment/train_embodied_agent.py",
            RUN_EMBODIMENT,
        ),
        mode="`--cpu-smoke`",
    ),
    CommandExits(
        "scripts/setup.sh",
        (
            ExitStatus(EXIT_OK, "both venvs set up"),
            ExitStatus(
                EXIT_FAILED,
                "no CPython 3.11 (`PYTHON=` names one), an apt install that failed (apt's message above "
                "it), or no `torch==2.13.0+cpu` wheel for `.venv-vllm`; any other failed step stops it with "
                "that step's status",
            ),
            ExitStatus(EXIT_BAD_OPTIONS, "`SETUP_PART` names no part (the message lists them)"),
        ),
        sources=("scripts/setup.sh",),
    ),
    CommandExits(
        "python -m examples.embodiment.judge_flags ENV_YAML",
        (
            ExitStatus(EXIT_OK, "the server flags that make a self-test judge as ENV_YAML asks are printed"),
            ExitStatus(
                EXIT_BAD_OPTIONS,
                "ENV_YAML does not load, or its `reward_model` block is wrong (one sentence)",
            ),
        ),
        sources=("examples/embodiment/judge_flags.py",),
    ),
    CommandExits(
        "python -m vlm_reward.tools.runtime BACKEND",
        (
            ExitStatus(EXIT_OK, "the shell lines that run BACKEND's server are printed"),
            ExitStatus(
                EXIT_FAILED,
                "BACKEND needs vLLM and neither this interpreter nor the vLLM venv has it, with the command "
                "that builds the venv",
            ),
            ExitStatus(EXIT_BAD_OPTIONS, "no BACKEND"),
        ),
        sources=("vlm_reward/tools/runtime.py",),
    ),
    CommandExits(
        "scripts/docs.sh",
        (
            ExitStatus(EXIT_OK, "the site is built into `site/` (or served until Ctrl-C)"),
            ExitStatus(
                EXIT_FAILED,
                "MkDocs is not installed in the venv, or the strict build found a broken link, a missing "
                "page or an unknown generated part",
            ),
            ExitStatus(EXIT_BAD_OPTIONS, "a mode other than `build` or `serve`"),
        ),
        sources=("scripts/docs.sh",),
    ),
    CommandExits(
        "scripts/test.sh",
        (
            ExitStatus("pytest's", "after ruff, which stops it first on a lint or format error"),
            ExitStatus(
                EXIT_FAILED, "the tests passed but set-up's vLLM venv or classifier, run beside them, failed"
            ),
        ),
        sources=("scripts/test.sh",),
    ),
)
