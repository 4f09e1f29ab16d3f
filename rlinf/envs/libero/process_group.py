"""LIBERO envs run a few to a process, without cameras if asked, with their states recorded.

:class:`ProcessGroupEnv` answers the vector-env calls RLinf 0.3's ``LiberoEnv`` makes of its
``ReconfigureSubprocEnv`` (``step``, ``reset``, ``seed``, ``set_init_state``,
``reconfigure_env_fns``, ``close``) for envs dealt round-robin over ``n = ceil(num_envs /
per_process)`` spawned processes (env ``i`` to process ``i mod n``), each stepping its envs one
after another; with ``rebuild_same_task`` off, a reconfigure that keeps an env's task (its BDDL
file) keeps its simulator. :meth:`ProcessGroupEnv.freeze` stops stepping an env until its reset
(its last step's reply repeats). The processes work in parallel; one of them dying or raising is
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
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

REPLY_TIMEOUT_S = 600.0  # a LIBERO env builds in seconds; a reply this late means a hung process
# (RLinf's env-fn params of one env, cameras?) -> the env; a module-level function (spawn pickles it)
EnvFactory = Callable[[dict[str, Any], bool], Any]
CAMERA_KEYS = ("camera_heights", "camera_widths", "camera_names", "camera_depths", "camera_segmentations")


def build_env(param: dict[str, Any], cameras: bool) -> Any:
    """One LIBERO env from RLinf's env-fn params (``bddl_file_name``, ``seed``, ``init_params``)."""
    param = dict(param)
    seed = param.pop("seed")
    if cameras:
        from libero.libero.envs import OffScreenRenderEnv as env_class
    else:
        from libero.libero.envs.env_wrapper import ControlEnv as env_class

        param = {k: v for k, v in param.items() if k not in CAMERA_KEYS}
        param.update(use_camera_obs=False, has_offscreen_renderer=False, camera_names=[])
    env = env_class(**param)
    env.seed(seed)
    return env


class _Process:
    """The envs of one process (runs in the child): the commands it answers, one method each."""

    def __init__(
        self, params: list[dict[str, Any]], cameras: bool, record: bool, rebuild: bool, factory: EnvFactory
    ) -> None:
        self.cameras, self.record, self.rebuild, self.factory = cameras, record, rebuild, factory
        self.envs = [factory(p, cameras) for p in params]
        self.bddl = [p["bddl_file_name"] for p in params]
        self.history: list[list[np.ndarray]] = [[] for _ in params]
        self.camera_envs: dict[tuple[str, int], Any] = {}
        self.last: dict[int, tuple] = {}  # env -> its last step's reply
        self.frozen: set[int] = set()  # envs that repeat their last reply until their reset

    def step(self, actions: Sequence[np.ndarray], ids: Sequence[int]) -> list[tuple]:
        out = []
        for action, i in zip(actions, ids, strict=True):
            if i not in self.frozen:
                self.last[i] = self.envs[i].step(action)
                if self.record:
                    self.history[i].append(self._state(i))
            out.append(self.last[i])
        return out

    def freeze(self, ids: Sequence[int]) -> None:
        self.frozen.update(i for i in ids if i in self.last)

    def reset(self, ids: Sequence[int]) -> list[Any]:
        self.frozen.difference_update(ids)
        return [self.envs[i].reset() for i in ids]

    def seed(self, seed: int) -> None:
        for env in self.envs:
            env.seed(seed)

    def set_init_state(self, states: Sequence[np.ndarray], ids: Sequence[int]) -> list[Any]:
        self.frozen.difference_update(ids)
        return [self.envs[i].set_init_state(state) for state, i in zip(states, ids, strict=True)]

    def reconfigure(self, params: Sequence[dict[str, Any]], ids: Sequence[int]) -> None:
        for param, i in zip(params, ids, strict=True):
            if not self.rebuild and param["bddl_file_name"] == self.bddl[i]:
                continue  # the same task: the reset that follows sets the new initial state
            self.envs[i].close()
            self.envs[i] = self.factory(param, self.cameras)
            self.bddl[i] = param["bddl_file_name"]

    def mark_episode_start(self, ids: Sequence[int]) -> None:
        for i in ids:
            self.history[i] = [self._state(i)]

    def render(self, steps: Sequence[Sequence[int]], ids: Sequence[int], size: int) -> list[np.ndarray]:
        from rlinf.envs.libero.utils import get_libero_image

        out = []
        for wanted, i in zip(steps, ids, strict=True):
            camera = self._camera(self.bddl[i], size)
            frames = [get_libero_image(camera.regenerate_obs_from_state(self.history[i][s])) for s in wanted]
            out.append(np.ascontiguousarray(np.stack(frames)))
        return out

    def close(self) -> None:
        for env in [*self.envs, *self.camera_envs.values()]:
            env.close()

    def _state(self, i: int) -> np.ndarray:
        return np.asarray(self.envs[i].get_sim_state(), dtype=np.float64).copy()

    def _camera(self, bddl: str, size: int) -> Any:
        if (bddl, size) not in self.camera_envs:
            from libero.libero.envs import OffScreenRenderEnv

            env = OffScreenRenderEnv(
                bddl_file_name=bddl, camera_names=["agentview"], camera_heights=size, camera_widths=size
            )
            env.reset()  # robosuite renders only after a first reset
            self.camera_envs[(bddl, size)] = env
        return self.camera_envs[(bddl, size)]


def _serve(conn: Any, params: list[dict[str, Any]], *settings: Any) -> None:
    """The child's loop: build the envs, then answer ``(command, args)`` until ``close``."""
    try:
        envs = _Process(params, *settings)
        conn.send(("ok", None))
    except BaseException:
        conn.send(("error", traceback.format_exc()))
        return
    while True:
        try:
            command, args = conn.recv()
        except EOFError:  # the parent is gone
            envs.close()
            return
        try:
            result = getattr(envs, command)(*args)
            conn.send(("ok", result))
        except BaseException:
            conn.send(("error", traceback.format_exc()))
        if command == "close":
            return


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
            process = ctx.Process(target=_serve, args=args, daemon=True)
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
        ids = self._ids(id)
        results = self._call("step", ids, list(np.asarray(actions)))
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
