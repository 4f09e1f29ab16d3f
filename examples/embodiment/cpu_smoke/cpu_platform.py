"""A CPU "accelerator" for RLinf 0.3 workers: the hook behind ``run_embodiment.sh --cpu-smoke``.

RLinf loads the module named by ``RLINF_EXT_MODULE`` in every ``Worker`` process and calls its
``register()``. On a machine without an accelerator RLinf sets ``Worker.torch_platform`` and
``Worker.torch_device_type`` to ``None``, and the HF rollout worker, the FSDP manager, the actor
and the weight syncers then fail on calls such as ``torch_platform.current_device()``.
``register()`` installs :class:`CpuPlatform`, a stand-in for the few ``torch.cuda`` calls those
workers make, with device type ``"cpu"``.

Two details make this more than setting two class attributes:

* ``Worker`` copies both attributes onto the instance before it runs the hook, so the
  instance being built keeps ``None``. ``register()`` therefore also wraps ``Worker.__init__``
  (once per process) to re-set them on every instance.
* RLinf only logs a warning when the hook fails to import, and the driver then hangs. So
  ``register()`` leaves a marker file per worker in ``$RLINF_CPU_SMOKE_MARKER_DIR`` (when set),
  which the smoke driver checks (see ``examples/embodiment/cpu_smoke/guard.py``).

``register()`` also makes RLinf's wait for a collective group's peer back off instead of asking
every millisecond (:mod:`examples.embodiment.cpu_smoke.collective_wait`): on 2 cores that poll
took half a core from the simulator for a whole first rollout.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from typing import Any

import torch

from examples.embodiment.cpu_smoke import collective_wait

MARKER_DIR_ENV = "RLINF_CPU_SMOKE_MARKER_DIR"
MARKER_SUFFIX = ".hook-loaded"
_WRAPPED = "_cpu_platform_wrapped"


class _NoStream:
    """A stream/event that is always complete: CPU work is synchronous."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def wait_stream(self, other: Any) -> None:
        pass

    def wait_event(self, event: Any) -> None:
        pass

    def record_event(self, event: Any = None) -> _NoStream:
        return self

    def record(self, stream: Any = None) -> None:
        pass

    def wait(self, stream: Any = None) -> None:
        pass

    def query(self) -> bool:
        return True


class CpuPlatform:
    """The subset of ``torch.cuda`` RLinf's workers call, answered for the CPU.

    ``is_initialized()`` is ``False`` so RLinf skips stream recording and CUDA-event timing;
    ``is_available()`` is ``True`` so the FSDP manager's accelerator check passes and RNG state
    is saved with checkpoints. Memory queries answer 0.
    """

    Stream = _NoStream
    Event = _NoStream

    @staticmethod
    def current_device() -> torch.device:
        return torch.device("cpu")

    @staticmethod
    def set_device(device: Any) -> None:
        pass

    @staticmethod
    def device_count() -> int:
        return 1

    @staticmethod
    def is_available() -> bool:
        return True

    @staticmethod
    def is_initialized() -> bool:
        return False

    @staticmethod
    def current_stream(device: Any = None) -> _NoStream:
        return _NoStream()

    @staticmethod
    def stream(stream: Any) -> contextlib.nullcontext:
        return contextlib.nullcontext()

    @staticmethod
    def synchronize(device: Any = None) -> None:
        pass

    @staticmethod
    def empty_cache() -> None:
        pass

    @staticmethod
    def ipc_collect() -> None:
        pass

    @staticmethod
    def memory_allocated(device: Any = None) -> int:
        return 0

    @staticmethod
    def memory_reserved(device: Any = None) -> int:
        return 0

    @staticmethod
    def mem_get_info(device: Any = None) -> tuple[int, int]:
        return 0, 0

    @staticmethod
    def get_rng_state(device: Any = None) -> torch.Tensor:
        return torch.get_rng_state()

    @staticmethod
    def set_rng_state(state: torch.Tensor, device: Any = None) -> None:
        torch.set_rng_state(state)

    @staticmethod
    def get_device_properties(device: Any = None) -> Any:
        raise RuntimeError("the CPU platform of --cpu-smoke has no device properties")


def _install_on(target: Any) -> None:
    target.torch_platform = CpuPlatform
    target.torch_device_type = "cpu"


def marker_name(worker_name: str) -> str:
    """The marker file of the worker RLinf names ``worker_name`` (e.g. ``ActorGroup:0``)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", worker_name) + MARKER_SUFFIX


def _write_marker() -> None:
    """Leave :func:`marker_name` in ``$RLINF_CPU_SMOKE_MARKER_DIR``, so the driver knows we ran."""
    marker_dir = os.environ.get(MARKER_DIR_ENV)
    if not marker_dir:
        return
    name = os.environ.get("WORKER_NAME") or f"pid{os.getpid()}"
    os.makedirs(marker_dir, exist_ok=True)
    with open(os.path.join(marker_dir, marker_name(name)), "w", encoding="utf-8") as marker:
        marker.write(f"{os.getpid()}\n")


def register() -> None:
    """Install the CPU platform on RLinf's ``Worker`` (idempotent; RLinf calls it per Worker)."""
    from rlinf.scheduler.worker.worker import Worker

    _install_on(Worker)
    collective_wait.install()
    if not getattr(Worker.__init__, _WRAPPED, False):
        original_init = Worker.__init__

        @functools.wraps(original_init)
        def init(self: Any, *args: Any, **kwargs: Any) -> None:
            _install_on(self)  # Worker copied None onto the instance before the hook ran
            original_init(self, *args, **kwargs)

        setattr(init, _WRAPPED, True)
        Worker.__init__ = init
    _write_marker()
