"""Supervision of ``run_embodiment.sh --cpu-smoke`` runs, in the training driver.

A CPU smoke run is the real training entry on a tiny config (``config/cpu_smoke/tiny.yaml``) with
the CPU platform hook (``cpu_platform.py``). It checks wiring before GPUs are booked; it does not
train a useful policy. RLinf 0.3 fails badly in two ways on a misconfigured machine, and
:class:`SmokeGuard` turns both into a clear message and an exit status instead of a hang:

* The hook named by ``RLINF_EXT_MODULE`` does not load: RLinf only logs a warning in the worker,
  the worker's ``__init__`` then fails, and the driver may wait forever. :func:`load_hook_in_driver`
  imports and runs the hook in the driver first (a broken hook fails here, before Ray starts);
  each worker leaves a marker file, and every failure message says which workers did not.
* A Ray worker dies (an exception in ``__init__``, a crash, the OOM killer): a watchdog thread
  polls Ray's state API for dead actors and enforces the hard timeout; when RLinf's own threads
  notice a failed call first (they signal the driver with SIGUSR1), the guard's handler reports.

Either way the driver then kills every process it started (its private Ray cluster included)
and exits with :data:`~vlm_reward.exit_statuses.EXIT_BAD_SETTINGS` (hook or settings wrong, before
Ray starts; the training entry exits with it), :data:`~vlm_reward.exit_statuses.EXIT_WORKER_FAILED`
(a worker died or ran without the hook) or :data:`~vlm_reward.exit_statuses.EXIT_TIMEOUT`.
"""

from __future__ import annotations

import atexit
import importlib
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from examples.embodiment.cpu_smoke.cpu_platform import MARKER_DIR_ENV, marker_name
from examples.embodiment.cpu_smoke.ray_watch import RayWatch, kill_own_processes, started_ray_here
from vlm_reward.exit_statuses import EXIT_TIMEOUT, EXIT_WORKER_FAILED

EXT_MODULE_ENV = "RLINF_EXT_MODULE"
PREFIX = "[cpu-smoke]"
LEARN_PREFIX = "[cpu-learn]"
_FAILING = threading.Lock()  # held by the first fail(); later calls return at once


class SmokeError(RuntimeError):
    """A CPU smoke run cannot go on; the message says what is wrong and what to do."""


@dataclass(frozen=True)
class SmokeSettings:
    """The ``cpu_smoke`` block of the config (see ``config/cpu_smoke/tiny.yaml``)."""

    timeout_s: float
    hook_module: str
    record_dir: Path  # tiny_model_dir, the other key of the block, is read by model.py
    learning: bool = False  # a --cpu-learn run (cpu_learn.enable): same supervision, other words

    @property
    def marker_dir(self) -> Path:
        return self.record_dir / "hooks"

    @property
    def prefix(self) -> str:
        """How the run's supervision lines start."""
        return LEARN_PREFIX if self.learning else PREFIX

    @property
    def timeout_variable(self) -> str:
        """The environment variable run_embodiment.sh sets ``timeout_s`` from."""
        return "CPU_LEARN_TIMEOUT" if self.learning else "CPU_SMOKE_TIMEOUT"

    @classmethod
    def from_cfg(cls, cfg: Any) -> SmokeSettings | None:
        """The settings when ``cpu_smoke.enable`` is true, else ``None`` (a normal run)."""
        block = cfg.get("cpu_smoke", None)
        if block is None or not block.get("enable", False):
            return None
        timeout = block.get("timeout_s", None)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ValueError(f"cpu_smoke.timeout_s must be a number of seconds > 0, got {timeout!r}.")
        hook = block.get("hook_module", None)
        if not isinstance(hook, str) or not hook:
            raise ValueError(f"cpu_smoke.hook_module must be a module name, got {hook!r}.")
        learning = bool(cfg.get("cpu_learn", {}).get("enable", False))
        return cls(float(timeout), hook, Path(str(block.record_dir)), learning)


def load_hook_in_driver(settings: SmokeSettings) -> str:
    """Import ``$RLINF_EXT_MODULE`` and run its ``register()`` here; return the module name.

    Every Ray worker will do the same. Doing it in the driver first turns a typo or an import
    error into an immediate :class:`SmokeError` instead of a warning in a worker log and a hang,
    and checks that the hook really installs a CPU platform on RLinf's ``Worker``.
    """
    name = os.environ.get(EXT_MODULE_ENV, "")
    if not name:
        raise SmokeError(
            f"{EXT_MODULE_ENV} is not set, so RLinf's workers would run without a CPU platform; "
            f"run through run_embodiment.sh --cpu-smoke or export {EXT_MODULE_ENV}={settings.hook_module}."
        )
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        raise SmokeError(
            f"{EXT_MODULE_ENV}={name} cannot be imported ({exc}); RLinf would only log a warning in "
            "each worker and the run would hang. Is the repo root on PYTHONPATH?"
        ) from exc
    if not callable(getattr(module, "register", None)):
        raise SmokeError(f"{EXT_MODULE_ENV}={name} has no register() function for RLinf to call.")
    module.register()
    from rlinf.scheduler.worker.worker import Worker

    if Worker.torch_platform is None or Worker.torch_device_type != "cpu":
        raise SmokeError(
            f"{EXT_MODULE_ENV}={name} loaded but installed no CPU platform on RLinf's Worker "
            f"(device type {Worker.torch_device_type!r}); a hook of your own must call "
            f"{settings.hook_module}.register()."
        )
    return name


def worker_names(cfg: Any) -> list[str]:
    """``GROUP:RANK`` of every actor, rollout and env worker the config places (Ray must be up)."""
    from rlinf.scheduler import Cluster
    from rlinf.utils.placement import HybridComponentPlacement

    placement = HybridComponentPlacement(cfg, Cluster())
    groups = {"actor": cfg.actor.group_name, "rollout": cfg.rollout.group_name, "env": cfg.env.group_name}
    return [
        f"{group}:{rank}" for role, group in groups.items() for rank in range(placement.get_world_size(role))
    ]


def hook_markers(marker_dir: Path, names: list[str]) -> tuple[list[str], list[str]]:
    """``(ran, missing)``: which of ``names`` left a hook marker (``cpu_platform.marker_name``)."""
    ran = [n for n in names if (marker_dir / marker_name(n)).exists()]
    return ran, [n for n in names if n not in ran]


def fail(message: str, code: int, kill_cluster: bool = False, prefix: str = PREFIX) -> None:
    """Print ``message`` as the run's verdict and end the process at once with ``code``.

    ``os._exit``: the main thread is blocked inside RLinf waiting for a worker that will never
    answer, so a normal exit would wait too. With ``kill_cluster`` (a private cluster this run
    started) every child process goes first, see :func:`kill_own_processes`.
    """
    if not _FAILING.acquire(blocking=False):
        return  # already on its way out: RLinf's threads may signal once per failed call
    sys.stdout.flush()
    print(f"\n{prefix} FAILED: {message}\n", file=sys.stderr, flush=True)
    if kill_cluster:
        kill_own_processes()
    os._exit(code)


class SmokeGuard:
    """What the training entry does around RLinf in a CPU smoke run (see the module docstring).

    Order of use: construct (loads the hook in the driver), :meth:`start` before Ray starts,
    :meth:`expect_workers` once it has, :meth:`check_hooks` after the workers initialised,
    :meth:`finish` after training. A run that ends any other way (RLinf stops the driver when a
    worker call fails) gets :meth:`_explain_exit` at interpreter exit.
    """

    def __init__(self, settings: SmokeSettings, poll_s: float = 5.0) -> None:
        self.settings, self.poll_s = settings, poll_s
        self.hook = load_hook_in_driver(settings)
        settings.marker_dir.mkdir(parents=True, exist_ok=True)
        os.environ[MARKER_DIR_ENV] = str(settings.marker_dir)  # Ray workers inherit it
        self.workers: list[str] = []
        self.ray_watch: RayWatch | None = None
        self.owns_cluster = False
        self.started_at = time.monotonic()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="cpu-smoke-watchdog", daemon=True)
        what = "CPU learning run" if settings.learning else "CPU wiring check, not training"
        print(
            f"{settings.prefix} {what}: hook {self.hook} loaded in the driver; "
            f"hard timeout {settings.timeout_s:.0f} s.",
            flush=True,
        )

    def start(self) -> SmokeGuard:
        atexit.register(self._explain_exit)
        self._thread.start()
        return self

    def expect_workers(self, cfg: Any) -> None:
        """Once Ray is up (main thread): the workers to expect and how to watch them.

        Also takes over SIGUSR1, which RLinf's threads send to the driver when a call to a worker
        failed: RLinf's handler shuts Ray down while those threads still use it, and the process
        may then die with exit status 1 before saying anything. Ours reports and cleans up.
        """
        self.workers = worker_names(cfg)
        self.owns_cluster = started_ray_here()
        signal.signal(signal.SIGUSR1, self._on_worker_failure)
        try:
            self.ray_watch = RayWatch.current()
        except Exception as exc:  # no dashboard (ray minimal): the timeout still applies
            print(
                f"{self.settings.prefix} cannot watch Ray workers ({exc}); only the timeout applies.",
                flush=True,
            )

    def hook_report(self) -> str:
        """Where the hook ran and where it did not (yet), for failure messages."""
        if not self.workers:
            return "(Ray had not placed the workers yet.)"
        ran, missing = hook_markers(self.settings.marker_dir, self.workers)
        if not missing:
            return f"The CPU platform hook ran in every worker ({', '.join(ran)})."
        return (
            f"The CPU platform hook ({self.hook}) left no marker from {', '.join(missing)} "
            f"(ran in: {', '.join(ran) or 'none'}); a worker without one had not started or ran without "
            f"the hook: RLinf only logs a warning when {EXT_MODULE_ENV} fails to import in a worker "
            "(is the repo root on the workers' PYTHONPATH?)."
        )

    def check_hooks(self) -> None:
        """After the workers initialised: every actor, rollout and env worker ran the hook."""
        if hook_markers(self.settings.marker_dir, self.workers)[1]:
            self._fail(self.hook_report(), EXIT_WORKER_FAILED)
        print(f"{self.settings.prefix} {self.hook_report()}", flush=True)

    def finish(self, cfg: Any) -> None:
        """Stop watching and say what the run did and did not show."""
        self._done.set()
        took = (
            f"{self.settings.prefix} OK in {time.monotonic() - self.started_at:.0f} s: {cfg.runner.max_steps}"
        )
        if self.settings.learning:
            print(
                f"{took} GRPO step(s) of the learning run; per step, the policy's parameters "
                "(rollout/policy/*), the simulator's success (env/success_once) and the judge's rates are in "
                f"the run's log dir, the GRPO batches in {self.settings.record_dir}.",
                flush=True,
            )
            return
        print(
            f"{took} GRPO step(s) ran end to end (rollout, weight sync, advantages, optimizer step, "
            "checkpoint). This checks wiring only: the tiny random-weight policy learned nothing useful, "
            "and FSDP1, the patch syncer and bf16 (GPU-only) were not run.",
            flush=True,
        )

    def stand_down(self, reason: str) -> None:
        """Stop watching: the run ends on purpose before its last step (e.g. the reward guard)."""
        self._done.set()
        print(f"{self.settings.prefix} {reason}; the run stops here.", flush=True)

    def _watch(self) -> None:
        """Fail the run when a Ray worker dies or the run outlives ``timeout_s``."""
        warned = False
        while not self._done.wait(self.poll_s):
            if time.monotonic() - self.started_at > self.settings.timeout_s:
                self._fail(
                    f"no result after {self.settings.timeout_s:.0f} s (cpu_smoke.timeout_s, "
                    f"{self.settings.timeout_variable}); a worker may be stuck, see the log above. "
                    f"{self.hook_report()}",
                    EXIT_TIMEOUT,
                )
            watch = self.ray_watch
            try:
                dead = watch.dead_actors() if watch is not None else []
            except Exception as exc:  # the dashboard may be busy, or gone after RLinf stopped Ray
                if not warned:
                    print(
                        f"{self.settings.prefix} cannot list Ray workers ({exc}); will keep trying.",
                        flush=True,
                    )
                    warned = True
                continue
            if dead and not self._done.is_set():
                lines = ["a Ray worker died, so the run would hang:", *(f"  {d}" for d in dead)]
                self._fail("\n".join([*lines, self.hook_report()]), EXIT_WORKER_FAILED)

    def _on_worker_failure(self, signum: int, frame: Any) -> None:
        if self._done.is_set():
            return  # training finished and was reported; a failure while Ray stops changes nothing
        self._fail(
            f"a call to a Ray worker failed (the first error is above). {self.hook_report()}",
            EXIT_WORKER_FAILED,
        )

    def _fail(self, message: str, code: int) -> None:
        fail(message, code, self.owns_cluster, self.settings.prefix)

    def _explain_exit(self) -> None:
        """At exit without :meth:`finish` (RLinf stopped the run): say what the hook markers show."""
        if not self._done.is_set():
            print(
                f"\n{self.settings.prefix} FAILED: the run stopped early (see the first error above). "
                f"{self.hook_report()}\n",
                file=sys.stderr,
                flush=True,
            )
