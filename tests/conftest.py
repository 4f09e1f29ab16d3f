"""Shared fixtures (the tiny offline Qwen2.5-VL and Qwen3-VL checkpoints, a small rendered MP4), the
suite's two parts, and what every run checks and reports.

The heavy tests (the LIBERO simulator, the vLLM engine, training runs: marked ``libero`` or
``vllm``, or using a session's LIBERO run) need most of the machine's memory and must run one at
a time; every other test is light. ``--part heavy`` or ``--part light`` keeps only one part, so
``scripts/test.sh`` runs the light part in a second process beside the heavy one (``--part all``,
the default, runs everything here).

Every run also:

- gives each test a time limit (``timeout`` in pyproject.toml, longer for a module that says so
  with ``pytest.mark.timeout``): a hung test fails with its name and every thread's stack, the
  rest go on;
- reports a shared fixture that failed once, with its cause, at the first test that needed it;
  the other tests that needed it name that test instead of repeating the error;
- fails if a server a test started listened off loopback (``tests/support/listeners.py``);
- with ``--times-json PATH``, writes each test's seconds for ``tests/support/suite_times.py``.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import numpy as np
import pytest

from tests.support.collected import COLLECTED, record
from tests.support.listeners import PROBE_MARK, RAY_MARKS, ListenerWatch

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
    parser.addoption(
        "--shuffle",
        type=int,
        default=None,
        metavar="SEED",
        help="run the modules in an order drawn from SEED, and each module's tests in such an order "
        "(a module's tests stay together, so its shared fixtures are still built once)",
    )
    parser.addoption(
        "--times-json",
        default=None,
        help="write each test's seconds (setup + call + teardown) and the part's wall time here",
    )


def is_heavy(item: pytest.Item) -> bool:
    """Whether ``item`` runs the simulator, the vLLM engine or a training run (see the docstring)."""
    if any(item.get_closest_marker(name) for name in HEAVY_MARKERS):
        return True
    return bool(HEAVY_FIXTURES & set(getattr(item, "fixturenames", ())))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep what was collected (``tests/test_paths.py`` reads it), deselect the tests outside
    ``--part``, then shuffle what is left if ``--shuffle`` asks."""
    config.stash[COLLECTED] = record(items)
    part = config.getoption("part")
    if part != "all":
        kept: list[pytest.Item] = []
        dropped: list[pytest.Item] = []
        for item in items:
            (kept if is_heavy(item) == (part == "heavy") else dropped).append(item)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept
    seed = config.getoption("shuffle")
    if seed is not None:
        items[:] = shuffled(items, seed)


def shuffled(items: list[pytest.Item], seed: int) -> list[pytest.Item]:
    """``items`` with their modules in an order drawn from ``seed``, and each module's tests too,
    except that a test marked ``runs_last`` (it uses up the module's shared fixture) stays after
    the module's other tests."""
    rng = random.Random(seed)
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::")[0], []).append(item)
    order = list(modules.values())
    rng.shuffle(order)
    for tests in order:
        rng.shuffle(tests)
        tests.sort(key=lambda item: item.get_closest_marker("runs_last") is not None)
    return [item for tests in order for item in tests]


# ---- what every run checks and reports (see the module docstring) ------------------------

_running = {"test": "(collection)"}
_times: dict[str, float] = {}
_failed_fixtures: dict[int, tuple[BaseException, str]] = {}  # the error object -> the first test
WATCH = pytest.StashKey[ListenerWatch]()
STARTED = pytest.StashKey[float]()


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[STARTED] = time.monotonic()
    watch = ListenerWatch(lambda: _running["test"], ignore=(*RAY_MARKS, PROBE_MARK))
    session.config.stash[WATCH] = watch.start()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item) -> None:
    _running["test"] = item.nodeid


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> pytest.TestReport:
    """A fixture's error is raised again, the same object, for every test that needs the fixture:
    the full report goes with the first of them, the others point at it."""
    report = yield
    if call.when == "setup" and call.excinfo is not None and report.failed:
        error = call.excinfo.value
        _, first = _failed_fixtures.setdefault(id(error), (error, item.nodeid))
        if first != item.nodeid:
            report.longrepr = (
                f"a fixture this test needs failed at {first}: its error and cause are reported there"
            )
    return report


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _times[report.nodeid] = _times.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    found = config.stash[WATCH].stop() if WATCH in config.stash else []
    if found:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    path = config.getoption("times_json", None)
    if path:
        wall = time.monotonic() - config.stash[STARTED]
        record = {
            "part": config.getoption("part"),
            "wall_s": wall,
            "tests": _times,
            "shuffle": config.getoption("shuffle"),
        }
        Path(path).write_text(json.dumps(record, indent=1))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    found = config.stash[WATCH].found if WATCH in config.stash else []
    if found:
        terminalreporter.section("servers that listened off loopback", red=True)
        for server in found:
            terminalreporter.line(server.describe())


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
