"""ProcessGroupEnv's plumbing with stand-in envs (tests/support/fake_libero_envs.py): no simulator.

Spawning a process costs a few seconds (it imports the env package), so the tests share two groups;
the real LIBERO envs in it are covered by the learning run's test (tests/examples/test_cpu_learn.py).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from rlinf.envs.libero.process_group import ProcessGroupEnv
from tests.support.fake_libero_envs import counting_env


def group(names: list[str], per_process: int, **kwargs: object) -> ProcessGroupEnv:
    params = [{"bddl_file_name": name, "seed": 0} for name in names]
    return ProcessGroupEnv(params, per_process, factory=counting_env, **kwargs)


@pytest.fixture(scope="module")
def five() -> Iterator[ProcessGroupEnv]:
    """Five envs, at most two to a process (three processes: envs 0 and 3, 1 and 4, 2), states
    recorded, rebuilt only for a new task."""
    envs = group(["a", "b", "c", "d", "e"], per_process=2, record_states=True, rebuild_same_task=False)
    yield envs
    envs.close()


def test_envs_are_dealt_round_robin_and_replies_come_back_in_env_order(five: ProcessGroupEnv) -> None:
    five.reset()
    obs, rewards, dones, infos = five.step(np.array([[1.0], [0.0], [2.0], [0.0], [3.0]]))
    assert [o["name"] for o in obs] == ["a", "b", "c", "d", "e"]
    pids = [o["pid"] for o in obs]
    assert pids[0] == pids[3] and pids[1] == pids[4] and len(set(pids)) == 3
    assert rewards.tolist() == [1.0, 0.0, 2.0, 0.0, 3.0] and dones.tolist() == [
        True,
        False,
        True,
        False,
        True,
    ]
    assert [info["steps"] for info in infos] == [1] * 5
    obs, *_ = five.step(np.array([[0.0], [0.0]]), id=[4, 1])
    assert [(o["name"], o["steps"]) for o in obs] == [("e", 2), ("b", 2)], "the order asked for"
    assert [o["steps"] for o in five.reset(id=[1])] == [0]
    assert [o["steps"] for o in five.set_init_state([np.array([7.0])], id=[3])] == [7]


def test_a_reconfigure_keeps_an_env_of_the_same_task_and_rebuilds_another(five: ProcessGroupEnv) -> None:
    builds = five.reset(id=[0])[0]["builds"]
    five.reconfigure_env_fns([{"bddl_file_name": "a", "seed": 0}], id=[0])
    assert five.reset(id=[0])[0]["builds"] == builds, "same task: no new env"
    five.reconfigure_env_fns([{"bddl_file_name": "z", "seed": 0}], id=[0])
    obs = five.reset(id=[0])[0]
    assert (obs["name"], obs["builds"]) == ("z", builds + 1)
    # Back to its task: the other tests share the group and may run after this one (--shuffle).
    five.reconfigure_env_fns([{"bddl_file_name": "a", "seed": 0}], id=[0])


def test_a_frozen_env_repeats_its_last_step_until_its_reset(five: ProcessGroupEnv) -> None:
    five.reset(id=[0, 1])
    five.step(np.zeros((2, 1)), id=[0, 1])
    five.freeze(id=[0])
    obs, rewards, *_ = five.step(np.array([[1.0], [1.0]]), id=[0, 1])
    assert [o["steps"] for o in obs] == [1, 2]
    assert rewards.tolist() == [0.0, 1.0], "the frozen env's last reply, its reward included"
    assert five.reset(id=[0])[0]["steps"] == 0
    assert five.step(np.zeros((1, 1)), id=[0])[0][0]["steps"] == 1, "stepped again after its reset"


# Per env of `five`, its actions through a chunk of three steps (a stand-in's step is done when its
# action is > 0): env 1 ends its episode at the chunk's second step, env 3 at its first.
CHUNK = np.array([[0, 0, 0], [0, 1, 0], [0, 0, 0], [2, 0, 0], [0, 0, 3]], dtype=float)[:, :, None]


def step_by_step(envs: ProcessGroupEnv, chunk: np.ndarray, freeze_on_done: bool) -> list[tuple]:
    """The chunk through plain `step` calls, freezing after a done step as LiberoEnv's hook does."""
    replies = []
    for k in range(chunk.shape[1]):
        obs, rewards, dones, _ = envs.step(chunk[:, k])
        replies.append(([o["steps"] for o in obs], rewards.tolist(), dones.tolist()))
        if freeze_on_done and dones.any():
            envs.freeze(np.flatnonzero(dones))
    return replies


@pytest.mark.parametrize("freeze_on_done", [True, False], ids=["frozen-at-done", "stepped-on"])
def test_a_chunk_stepped_ahead_replays_as_the_same_steps_taken_one_by_one(
    five: ProcessGroupEnv, freeze_on_done: bool
) -> None:
    five.reset()
    expected = step_by_step(five, CHUNK, freeze_on_done)
    five.reset()
    five.mark_episode_start()
    five.step_ahead(CHUNK, freeze_on_done=freeze_on_done)
    assert step_by_step(five, CHUNK, freeze_on_done=False) == expected
    steps_of_env1 = [2, 2] if freeze_on_done else [2, 3]
    assert [replies[0][1] for replies in expected[1:]] == steps_of_env1, "the stand-in's count, as designed"


def test_a_step_that_does_not_replay_the_chunk_is_an_error_and_drops_the_rest(five: ProcessGroupEnv) -> None:
    five.reset()
    five.step_ahead(CHUNK, freeze_on_done=True)
    five.step(CHUNK[:, 0])
    with pytest.raises(RuntimeError, match="must replay the chunk's actions"):
        five.step(CHUNK[:, 2])  # the third step's actions asked for second
    obs, *_ = five.step(np.zeros((5, 1)))
    # The chunk's three steps stay taken (envs 1, 3 and 4 frozen at their done step); a plain step
    # after them, not a replay of the dropped third
    assert [o["steps"] for o in obs] == [4, 2, 4, 1, 3]
    with pytest.raises(ValueError, match=r"chunk_actions must be \(num_envs=5, steps, action_dim\)"):
        five.step_ahead(CHUNK[:2], freeze_on_done=True)


def test_rendering_reaches_the_recorded_states_and_surfaces_the_childs_error(five: ProcessGroupEnv) -> None:
    """Each frame is the camera stand-in's image of the state recorded at the step asked (channel 0:
    the env's step count then; channel 1: its name), turned upright; the envs and steps as asked."""
    five.set_init_state([np.array([7.0]), np.array([0.0])], id=[3, 2])
    five.mark_episode_start(id=[3, 2])  # recorded step 0: env 3 at its 7th step, env 2 at its reset
    for _ in range(2):
        five.step(np.zeros((2, 1)), id=[3, 2])
    frames = five.render_frames({3: [2, 0, 1], 2: [1]}, 16)  # env 3 in process 0, env 2 in process 2
    assert list(frames) == [3, 2]
    assert [(f.shape, f.dtype) for f in frames.values()] == [
        ((3, 16, 16, 3), np.uint8),
        ((1, 16, 16, 3), np.uint8),
    ]
    shown = {
        env: [(int(f[0, 0, 0]), chr(f[0, 0, 1])) for f in env_frames] for env, env_frames in frames.items()
    }
    assert shown == {3: [(9, "d"), (7, "d"), (8, "d")], 2: [(1, "c")]}
    assert frames[3][0, :, 0, 2].tolist() == list(range(15, -1, -1)), "turned upright: the rows reversed"
    with pytest.raises(RuntimeError, match=r"(?s)LIBERO simulator process 2 failed:.*IndexError"):
        five.render_frames({2: [3]}, 16)  # env 2 recorded steps 0 to 2 only


def test_failures_are_errors_naming_the_process_never_hangs() -> None:
    with pytest.raises(
        RuntimeError, match=r"(?s)LIBERO simulator process 1 failed:.*this env cannot be built"
    ):
        group(["a", "fail"], per_process=1)
    envs = group(["die"], per_process=1)
    try:
        with pytest.raises(RuntimeError, match="render_frames\\(\\) needs record_states=True"):
            envs.render_frames({0: [0]}, 16)
        with pytest.raises(RuntimeError, match="LIBERO simulator process 0 died \\(exit code 3\\)"):
            envs.step(np.zeros((1, 1)))
    finally:
        envs.close()
