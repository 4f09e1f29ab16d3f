"""The pieces of ``--cpu-smoke`` that run without Ray: the CPU platform hook and the guard's checks.

The end-to-end runs are in ``test_training_smoke.py``. Here RLinf's ``Worker`` class is patched
in this process, so every test that registers the hook restores it through ``monkeypatch``.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from examples.embodiment.cpu_smoke import cpu_platform
from examples.embodiment.cpu_smoke import guard as cpu_smoke
from examples.embodiment.cpu_smoke.cpu_platform import CpuPlatform
from examples.embodiment.cpu_smoke.ray_watch import death_line


@pytest.fixture
def worker_cls(monkeypatch: pytest.MonkeyPatch) -> type:
    """RLinf's ``Worker`` as on a machine without an accelerator, restored after the test."""
    from rlinf.scheduler.collective.collective import Collective
    from rlinf.scheduler.worker.worker import Worker

    # register() also replaces RLinf's collective-group wait (collective_wait): undone the same way
    monkeypatch.setattr(Collective, "_get_group_info_safe", Collective._get_group_info_safe)
    monkeypatch.setattr(Worker, "torch_platform", None)
    monkeypatch.setattr(Worker, "torch_device_type", None)
    monkeypatch.setattr(Worker, "__init__", Worker.__init__)  # so the wrapper is undone too
    monkeypatch.delenv(cpu_platform.MARKER_DIR_ENV, raising=False)
    return Worker


def test_register_installs_the_cpu_platform_on_the_class_and_on_new_instances(worker_cls: type) -> None:
    cpu_platform.register()
    cpu_platform.register()  # RLinf calls it once per Worker in a process: wrap only once
    assert worker_cls.torch_platform is CpuPlatform and worker_cls.torch_device_type == "cpu"
    assert not getattr(worker_cls.__init__.__wrapped__, "_cpu_platform_wrapped", False)
    instance = worker_cls.__new__(worker_cls)  # outside Ray: no environment set-up
    instance.torch_platform = instance.torch_device_type = None  # what Worker copied before the hook
    with pytest.raises(RuntimeError, match="create_group"):  # RLinf refuses a Worker outside Ray...
        worker_cls.__init__(instance)
    assert instance.torch_platform is CpuPlatform and instance.torch_device_type == "cpu"  # ...after this


def test_register_leaves_a_marker_named_after_the_worker(
    worker_cls: type, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(cpu_platform.MARKER_DIR_ENV, str(tmp_path / "hooks"))
    monkeypatch.setenv("WORKER_NAME", "ActorGroup:0")
    cpu_platform.register()
    assert [p.name for p in (tmp_path / "hooks").iterdir()] == ["ActorGroup_0.hook-loaded"]
    assert cpu_smoke.hook_markers(tmp_path / "hooks", ["ActorGroup:0", "EnvGroup:0"]) == (
        ["ActorGroup:0"],
        ["EnvGroup:0"],
    )


def test_cpu_platform_answers_the_calls_rlinf_makes() -> None:
    assert torch.tensor(0.0, device=CpuPlatform.current_device()).device.type == "cpu"
    for call in (CpuPlatform.synchronize, CpuPlatform.empty_cache, CpuPlatform.ipc_collect):
        assert call() is None
    CpuPlatform.current_stream().synchronize()
    assert CpuPlatform.Event().query() and not CpuPlatform.is_initialized() and CpuPlatform.is_available()
    state = CpuPlatform.get_rng_state()
    first = torch.rand(3)
    CpuPlatform.set_rng_state(state)
    assert torch.equal(torch.rand(3), first)


def _settings(tmp_path: Path, **block: object) -> cpu_smoke.SmokeSettings | None:
    base = {"enable": True, "timeout_s": 60, "hook_module": "examples.embodiment.cpu_smoke.cpu_platform"}
    cfg = OmegaConf.create({"cpu_smoke": {**base, "record_dir": str(tmp_path), **block}})
    return cpu_smoke.SmokeSettings.from_cfg(cfg)


def test_settings_are_read_only_when_enabled(tmp_path: Path) -> None:
    assert cpu_smoke.SmokeSettings.from_cfg(OmegaConf.create({"runner": {}})) is None
    assert _settings(tmp_path, enable=False) is None
    settings = _settings(tmp_path)
    assert settings.timeout_s == 60.0 and settings.marker_dir == tmp_path / "hooks"


@pytest.mark.parametrize("timeout", [0, -5, "soon", True, None])
def test_a_bad_timeout_is_refused_with_the_value(tmp_path: Path, timeout: object) -> None:
    with pytest.raises(ValueError, match=r"cpu_smoke\.timeout_s must be a number of seconds > 0, got"):
        _settings(tmp_path, timeout_s=timeout)


def _fake_module(monkeypatch: pytest.MonkeyPatch, name: str, **attrs: object) -> None:
    monkeypatch.setitem(sys.modules, name, types.SimpleNamespace(**attrs))
    monkeypatch.setenv(cpu_smoke.EXT_MODULE_ENV, name)


def test_the_driver_loads_the_hook_and_checks_what_it_installed(
    worker_cls: type, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = _settings(tmp_path)
    monkeypatch.delenv(cpu_smoke.EXT_MODULE_ENV, raising=False)
    with pytest.raises(cpu_smoke.SmokeError, match="RLINF_EXT_MODULE is not set"):
        cpu_smoke.load_hook_in_driver(settings)
    monkeypatch.setenv(cpu_smoke.EXT_MODULE_ENV, "examples.embodiment.no_such_hook")
    with pytest.raises(cpu_smoke.SmokeError, match=r"cannot be imported .* the run would hang"):
        cpu_smoke.load_hook_in_driver(settings)
    _fake_module(monkeypatch, "fake_hook_without_register")
    with pytest.raises(cpu_smoke.SmokeError, match="has no register"):
        cpu_smoke.load_hook_in_driver(settings)
    _fake_module(monkeypatch, "fake_hook_doing_nothing", register=lambda: None)
    with pytest.raises(cpu_smoke.SmokeError, match="installed no CPU platform"):
        cpu_smoke.load_hook_in_driver(settings)
    monkeypatch.setenv(cpu_smoke.EXT_MODULE_ENV, "examples.embodiment.cpu_smoke.cpu_platform")
    assert cpu_smoke.load_hook_in_driver(settings) == "examples.embodiment.cpu_smoke.cpu_platform"
    assert worker_cls.torch_device_type == "cpu"


def test_death_lines_name_the_worker_and_skip_intended_kills() -> None:
    creation = {
        "name": "RolloutGroup:0",
        "class_name": "MultiStepRolloutWorker",
        "pid": 42,
        "death_cause": {
            "creation_task_failure_context": {
                "formatted_exception_string": "Traceback ...\n  File x\nAttributeError: 'NoneType' object\n"
            }
        },
    }
    assert death_line(creation) == (
        "RolloutGroup:0 (pid 42) died in __init__: AttributeError: 'NoneType' object"
    )
    crashed = {
        "name": "",
        "class_name": "EnvWorker",
        "pid": 7,
        "death_cause": {"actor_died_error_context": {"reason": "WORKER_DIED", "error_message": "killed\n"}},
    }
    assert death_line(crashed) == "EnvWorker (pid 7) died (WORKER_DIED): killed"
    oom = {
        "name": "EnvGroup:0",
        "pid": 9,
        "death_cause": {"oom_context": {"error_message": "low memory\nstats"}},
    }
    assert death_line(oom) == "EnvGroup:0 (pid 9) was killed by Ray's memory monitor: low memory"
    killed = {"name": "probe", "death_cause": {"actor_died_error_context": {"reason": "RAY_KILL"}}}
    assert death_line(killed) is None


@pytest.mark.parametrize(
    ("parameters", "fits"),
    [(15_929_152, True), (7_541_237_184, False)],
    ids=["tiny-oft", "openvla-oft-7b"],
)
def test_a_policy_too_large_for_memory_is_refused_up_front(parameters: int, fits: bool) -> None:
    from examples.embodiment.cpu_smoke.model import check_fits

    available = 20 * 2**30  # what this 24 GiB machine has free
    if fits:
        check_fits(parameters, available, Path("/ckpt"))
        return
    with pytest.raises(ValueError, match=r"the checkpoint at /ckpt has 7\.54 B parameters") as error:
        check_fits(parameters, available, Path("/ckpt"))
    assert "6 fp32 copies (168.6 GiB) and this machine has 20.0 GiB available" in str(error.value)


def test_a_policy_without_a_checkpoint_needs_no_preparation() -> None:
    from examples.embodiment.cpu_smoke.model import prepare_policy

    cfg = OmegaConf.create({"actor": {"model": {"model_type": "mlp_policy"}}})
    assert prepare_policy(cfg) is None
