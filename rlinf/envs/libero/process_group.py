"""LIBERO envs run a few to a process, without cameras if asked, with their states recorded.

:class:`ProcessGroupEnv` answers the vector-env calls RLinf 0.3's ``LiberoEnv`` makes of its
``ReconfigureSubprocEnv`` (``step``, ``reset``, ``seed``, ``set_init_state``,
``reconfigure_env_fns``, ``close``) for envs dealt round-robin over ``n = ceil(num_envs /
per_process)`` spawned processes (env ``i`` to process ``i mod n``), each stepping its envs one
after another; with ``rebuild_same_task`` off, a reconfigure that keeps an env's task (its BDDL
file) keeps its simulator. :meth:`ProcessGroupEnv.freeze` stops stepping an env until its reset
(its last step's reply repeats). :meth:`ProcessGroupEnv.step_ahead` steps every env through a
whole action chunk at once, each process at its own pace, and the ``step`` calls that follow
replay it. The processes work in parallel; one of them dying or raising is
a ``RuntimeError`` in the caller naming the process and its traceback, never a hang (every reply
has a deadline).

Without cameras an env is robosuite's camera-less ``ControlEnv`` (no offscreen renderer, no
EGL context). With ``record_states`` each process keeps, per env, the flattened MuJoCo state
after every step since :meth:`ProcessGroupEnv.mark_episode_start`, and
:meth:`ProcessGroupEnv.render_frames` renders any of them afterwards as ``LiberoEnv`` shows
its main image (the agentview camera, turned upright by RLinf's ``get_libero_image``) through
a camera env of the same task, built once per task and size in that process.
"""

from __future__ import annotations

import multiprocessing
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rlinf.envs.libero.env_process import EnvFactory, build_env, serve

REPLY_TIMEOUT_S = 600.0  # a LIBERO env builds in seconds; a reply this late means a hung process


class ProcessGroupEnv:
    """``len(params)`` LIBERO envs, ``per_process`` to a spawned process (see the module docstring)."""

    def __init__(
        self,
        params: Sequence[dict[str, Any]],
        per_process: int,
        cameras: bool = True,
        record_states: bool = False,
        rebuild_same_task: bool = True,
        factory: EnvFactory = build_env,
    ) -> None:
        if per_process < 1:
            raise ValueError(f"per_process must be >= 1, got {per_process!r}.")
        self.env_num = len(params)
        # step_ahead's (actions, replies) of the steps not yet asked for
        self._stepped_ahead: deque[tuple[np.ndarray, list[tuple]]] = deque()
        self.record_states = record_states
        # Dealt round-robin (env i to process i mod n): a GRPO group is consecutive envs from one
        # initial state, so its successes (frozen until the reset) tend to come together, and
        # contiguous blocks could leave one process idle while another stepped a failing group.
        n = -(-self.env_num // per_process)
        self._slices = [range(p, self.env_num, n) for p in range(n)]
        ctx = multiprocessing.get_context("spawn")  # LIBERO and EGL do not survive a fork
        self._conns, self._processes = [], []
        for slice_ in self._slices:
            parent, child = ctx.Pipe()
            settings = (cameras, record_states, rebuild_same_task, factory)
            args = (child, [dict(params[i]) for i in slice_], *settings)
            process = ctx.Process(target=serve, args=args, daemon=True)
            process.start()
            child.close()
            self._conns.append(parent)
            self._processes.append(process)
        for p in range(len(self._slices)):
            self._reply(p)  # each built its envs, or the first failure is raised here
        self.is_closed = False

    def __len__(self) -> int:
        return self.env_num

    # ---- RLinf's vector-env calls ------------------------------------------------------

    def step(self, actions: Any, id: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, list]:
        if self._stepped_ahead:
            results = self._next_stepped_ahead(actions, id)
        else:
            results = self._call("step", self._ids(id), list(np.asarray(actions)))
        obs, rewards, dones, infos = zip(*results, strict=True)
        return _objects(obs), np.asarray(rewards, dtype=float), np.asarray(dones, dtype=bool), list(infos)

    def reset(self, id: Any = None, **kwargs: Any) -> np.ndarray:
        return _objects(self._call("reset", self._ids(id)))

    def seed(self, seed: int) -> None:
        for p in range(len(self._slices)):
            self._send(p, "seed", (int(seed),))
        for p in range(len(self._slices)):
            self._reply(p)

    def set_init_state(self, init_state: Sequence[np.ndarray], id: Any = None) -> np.ndarray:
        return _objects(self._call("set_init_state", self._ids(id), list(init_state)))

    def reconfigure_env_fns(self, env_fns: Sequence[dict[str, Any]], id: Any = None) -> None:
        self._call("reconfigure", self._ids(id), list(env_fns), returns=False)

    def close(self) -> None:
        if self.is_closed:
            return
        self.is_closed = True
        for p, process in enumerate(self._processes):
            try:
                self._send(p, "close", ())
                self._reply(p)
            except (RuntimeError, OSError):
                pass  # a dead process has nothing to close
            process.join(timeout=30)
            if process.is_alive():
                process.kill()

    def step_ahead(self, chunk_actions: Any, freeze_on_done: bool) -> None:
        """Step every env through its whole chunk now, ``chunk_actions[env, k]`` its ``k``-th action;
        the next ``k`` :meth:`step` calls (all envs, the same actions) return these steps' replies.

        Each process steps its envs one after another through the chunk, so the processes meet
        once a chunk instead of once a step (at every step the faster one waited for the slower).
        ``freeze_on_done``: an env whose step reports ``done`` is frozen at once, as a caller that
        freezes an env after a step that ended its episode would have it; without it an env is
        only frozen by :meth:`freeze`, as with :meth:`step`.
        """
        chunk = np.asarray(chunk_actions)
        if chunk.ndim != 3 or len(chunk) != self.env_num:
            raise ValueError(
                f"chunk_actions must be (num_envs={self.env_num}, steps, action_dim), got {chunk.shape}."
            )
        per_env = self._call("step_chunk", self._ids(None), list(chunk), extra=(bool(freeze_on_done),))
        self._stepped_ahead = deque(
            (chunk[:, k], [replies[k] for replies in per_env]) for k in range(chunk.shape[1])
        )

    def _next_stepped_ahead(self, actions: Any, id: Any) -> list[tuple]:
        """The replies of the next step that :meth:`step_ahead` took; RuntimeError (and the rest
        dropped) unless the caller asks for that step: every env, the same actions."""
        expected, replies = self._stepped_ahead.popleft()
        if id is not None or not np.array_equal(np.asarray(actions), expected):
            self._stepped_ahead.clear()
            raise RuntimeError(
                "step() after step_ahead() must replay the chunk's actions, for every env and in order."
            )
        return replies

    def freeze(self, id: Any) -> None:
        """Stop stepping these envs until their next reset: each ``step`` repeats the env's last
        ``(obs, reward, done, info)`` and records no state (an env not stepped yet is left alone)."""
        self._call("freeze", self._ids(id), returns=False)

    # ---- recorded states ---------------------------------------------------------------

    def mark_episode_start(self, id: Any = None) -> None:
        """Start each env's recorded episode at its current state (the reset frame)."""
        self._call("mark_episode_start", self._ids(id), returns=False)

    def render_frames(self, wanted: Mapping[int, Sequence[int]], size: int) -> dict[int, np.ndarray]:
        """Per env of ``wanted`` (env -> its recorded steps, 0 the reset), ``(len(steps), size, size, 3)``
        uint8 main images; the processes render their envs' frames in parallel."""
        if not self.record_states:
            raise RuntimeError("render_frames() needs record_states=True.")
        envs = list(wanted)
        steps = [[int(s) for s in wanted[env]] for env in envs]
        return dict(zip(envs, self._call("render", envs, steps, extra=(int(size),)), strict=True))

    # ---- plumbing ------------------------------------------------------------------------

    def _ids(self, id: Any) -> list[int]:
        if id is None:
            return list(range(self.env_num))
        return [int(i) for i in np.atleast_1d(id)]

    def _where(self, env: int) -> tuple[int, int]:
        if not 0 <= env < self.env_num:
            raise IndexError(f"env {env} is not one of the {self.env_num} envs.")
        n = len(self._slices)
        return env % n, env // n

    def _call(
        self,
        command: str,
        ids: list[int],
        per_env: list | None = None,
        returns: bool = True,
        extra: tuple = (),
    ) -> list:
        """Send each process its envs' share of ``command`` (``extra``: arguments every process gets);
        the replies in the order of ``ids``."""
        shares: dict[int, tuple[list, list[int]]] = {}
        for k, env in enumerate(ids):
            p, local = self._where(env)
            values, locals_ = shares.setdefault(p, ([], []))
            if per_env is not None:
                values.append(per_env[k])
            locals_.append(local)
        for p, (values, locals_) in shares.items():
            self._send(p, command, ((values, locals_) if per_env is not None else (locals_,)) + extra)
        replies = {p: self._reply(p) for p in shares}
        if not returns:
            return []
        position = {p: 0 for p in shares}
        ordered = []
        for env in ids:
            p, _ = self._where(env)
            ordered.append(replies[p][position[p]])
            position[p] += 1
        return ordered

    def _send(self, p: int, command: str, args: tuple) -> None:
        try:
            self._conns[p].send((command, args))
        except (BrokenPipeError, EOFError, OSError) as exc:
            raise RuntimeError(f"LIBERO simulator process {p} is gone ({exc}).") from exc

    def _reply(self, p: int) -> Any:
        conn = self._conns[p]
        if not conn.poll(REPLY_TIMEOUT_S):
            raise RuntimeError(f"LIBERO simulator process {p} did not answer within {REPLY_TIMEOUT_S:.0f} s.")
        try:
            status, value = conn.recv()
        except EOFError as exc:
            self._processes[p].join(timeout=5)  # its pipe closed: it is exiting
            code = self._processes[p].exitcode
            raise RuntimeError(f"LIBERO simulator process {p} died (exit code {code}).") from exc
        if status == "error":
            raise RuntimeError(f"LIBERO simulator process {p} failed:\n{value}")
        return value


def _objects(values: Sequence[Any]) -> np.ndarray:
    """A 1-D object array of ``values`` (raw observations are dicts: never stacked)."""
    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    return out
