"""vlm_reward's fast tests pass in the vLLM venv too, under its transformers 5.x and torch +cpu.

The reward server runs there for the vLLM backends, so its request building, tiny
checkpoint, parsing and protocol must hold there as they do in the main venv. The run is
pytest in that venv, in a subprocess, on ``tests/vlm_reward -m "not slow"`` (this test is
slow, so it does not run itself), with a hard timeout.

Left out: the tests of the transformers backend (``test_backend_qwen_vl_hf.py``), of its batched
inputs (``test_input_batch.py``) and of its vision encoder (``test_vision_encoder.py``). The
transformers backend and the fine-tune support transformers <= 4.57.6 (pyproject's ``hf`` extra,
the main venv's version) and never run in the vLLM venv; under transformers 5 the processor call
is rejected (one ``fps`` per video as a list, which transformers 5 only takes as a number) and the
vision encoder returns a model output instead of a tensor. The ``resnet`` backend's tests that
build RLinf's model are all slow (the vLLM venv has no RLinf); its fast ones, the missing-RLinf
message among them, run there.
"""

from __future__ import annotations

import re

import pytest

from tests.support.setup_steps import WAITING_TEST_TIMEOUT_S
from tests.support.vllm_venv import require_vllm_python, run_in_vllm_venv

# No engine: the light part.
pytestmark = [pytest.mark.timeout(WAITING_TEST_TIMEOUT_S), pytest.mark.vllm_venv, pytest.mark.slow]

NOT_FOR_TRANSFORMERS_5 = tuple(
    f"tests/vlm_reward/backends/{name}.py"
    for name in ("test_backend_qwen_vl_hf", "test_input_batch", "test_vision_encoder")
)
# Read the env and training YAMLs with OmegaConf, which only the env's venv has (the client and the
# replica code do not need it).
ENV_ONLY = ("tests/vlm_reward/client/test_config.py", "tests/vlm_reward/ray_replicas/test_replica_config.py")
# A floor on what must run: 360 tests ran here when this was written; a run that collects
# far fewer (a broken conftest, a wrong path) must not pass as green.
MIN_PASSED = 300


def test_fast_vlm_reward_tests_pass_in_the_vllm_venv() -> None:
    python = require_vllm_python()
    ignores = [arg for path in (*NOT_FOR_TRANSFORMERS_5, *ENV_ONLY) for arg in ("--ignore", path)]
    args = ["-m", "pytest", "tests/vlm_reward", "-m", "not slow", "-q", "-p", "no:cacheprovider", *ignores]

    result = run_in_vllm_venv(python, args, timeout=600)

    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-8000:]
    passed = re.search(r"(\d+) passed", output)
    assert passed and int(passed.group(1)) >= MIN_PASSED, output[-3000:]
    # ... and it really was transformers 5 that they ran on.
    version = run_in_vllm_venv(python, ["-c", "import transformers; print(transformers.__version__)"], 60)
    assert version.stdout.startswith("5."), version.stdout + version.stderr
