"""Shared fixtures (the tiny offline Qwen2.5-VL and Qwen3-VL checkpoints, a small rendered MP4) and
the suite's two parts.

The heavy tests (the LIBERO simulator, the vLLM engine, training runs: marked ``libero`` or
``vllm``, or using a session's LIBERO run) need most of the machine's memory and must run one at
a time; every other test is light. ``--part heavy`` or ``--part light`` keeps only one part, so
``scripts/test.sh`` runs the light part in a second process beside the heavy one (``--part all``,
the default, runs everything here).
"""

from __future__ import annotations

import numpy as np
import pytest

PARTS = ("all", "heavy", "light")
HEAVY_MARKERS = ("libero", "vllm")
# A LIBERO run each, once a session (tests/reward_eval/conftest.py, tests/envs/conftest.py).
HEAVY_FIXTURES = frozenset({"reward_eval_run", "expert_run", "project_rollout"})


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--part",
        choices=PARTS,
        default="all",
        help="run only the heavy tests (LIBERO, vLLM, training), only the others, or all (default)",
    )


def is_heavy(item: pytest.Item) -> bool:
    """Whether ``item`` runs the simulator, the vLLM engine or a training run (see the docstring)."""
    if any(item.get_closest_marker(name) for name in HEAVY_MARKERS):
        return True
    return bool(HEAVY_FIXTURES & set(getattr(item, "fixturenames", ())))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the tests outside ``--part``."""
    part = config.getoption("part")
    if part == "all":
        return
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        (kept if is_heavy(item) == (part == "heavy") else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.fixture(scope="session")
def tiny_qwen_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A random-weight Qwen2.5-VL with a real processor, built offline once per session."""
    from vlm_reward.tools.tiny_checkpoint import build_tiny_qwen2_5_vl

    path = tmp_path_factory.mktemp("tiny-qwen2.5-vl")
    build_tiny_qwen2_5_vl(path)
    return str(path)


@pytest.fixture(scope="session")
def tiny_qwen3_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A random-weight Qwen3-VL with a real processor, built offline once per session."""
    from vlm_reward.judging.model_family import QWEN3_VL
    from vlm_reward.tools.tiny_checkpoint import build_tiny_checkpoint

    path = tmp_path_factory.mktemp("tiny-qwen3-vl")
    build_tiny_checkpoint(path, QWEN3_VL.model_type)
    return str(path)


@pytest.fixture(scope="session")
def tiny_oft_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A random-weight OpenVLA-OFT (examples/embodiment/cpu_smoke/tiny_openvla_oft.py), one a session."""
    from examples.embodiment.cpu_smoke.tiny_openvla_oft import build

    return str(build(tmp_path_factory.mktemp("tiny-openvla-oft")))


def moving_square_frames(n: int = 16, size: int = 64) -> np.ndarray:
    """``n`` RGB frames of a square sliding across a gradient: real content, cheap to make."""
    ramp = np.linspace(0, 255, size, dtype=np.uint8)
    frames = np.empty((n, size, size, 3), dtype=np.uint8)
    for t in range(n):
        frames[t] = np.stack(np.broadcast_arrays(ramp[None, :], ramp[:, None], 128), axis=-1)
        x = int(t * (size - 16) / max(n - 1, 1))
        frames[t, 24:40, x : x + 16] = (255, 0, 0)
    return frames


@pytest.fixture(scope="session")
def sample_mp4(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A 16-frame 64x64 MP4 at 4 fps."""
    from vlm_reward.video_io import encode_mp4

    path = tmp_path_factory.mktemp("videos") / "episode.mp4"
    encode_mp4(moving_square_frames(), path, fps=4)
    return str(path)
