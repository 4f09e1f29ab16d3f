"""The tiny checkpoints name their architecture at the top level, so vLLM serves them as generators.

vLLM picks the model class from ``config.json``'s top-level ``architectures``; without it,
it resolves ``Qwen2_5_VLModel`` as a pooling model and refuses ``generate``. The vLLM check
runs vLLM's own config resolution in the vLLM venv, on the checkpoint as built and on a copy
without the key (which must resolve to pooling, or the check proves nothing). That the
engine then really generates from it is in ``test_vllm_engine_e2e.py``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.support.setup_steps import WAITING_TEST_TIMEOUT_S
from tests.support.vllm_venv import require_vllm_python, run_in_vllm_venv
from vlm_reward.judging.model_family import QWEN2_5_VL, QWEN3_VL

# Prints "<architecture> <runner type>" for each checkpoint path given.
RESOLVE = """
import sys
from vllm.config import ModelConfig
for path in sys.argv[1:]:
    config = ModelConfig(model=path)
    print(config.architecture, config.runner_type)
"""


@pytest.mark.parametrize(
    ("checkpoint", "architecture", "model_type"),
    [
        ("tiny_qwen_checkpoint", "Qwen2_5_VLForConditionalGeneration", "qwen2_5_vl"),
        ("tiny_qwen3_checkpoint", "Qwen3VLForConditionalGeneration", "qwen3_vl"),
    ],
    ids=["qwen2_5_vl", "qwen3_vl"],
)
def test_config_names_the_generative_architecture_at_the_top(
    request: pytest.FixtureRequest, checkpoint: str, architecture: str, model_type: str
) -> None:
    config = json.loads((Path(request.getfixturevalue(checkpoint)) / "config.json").read_text())
    assert config["architectures"] == [architecture]
    assert config["model_type"] == model_type
    assert architecture in (QWEN2_5_VL.architecture, QWEN3_VL.architecture)


@pytest.mark.vllm_venv  # vLLM's config resolution, no engine: the light part
@pytest.mark.slow
@pytest.mark.timeout(WAITING_TEST_TIMEOUT_S)
def test_vllm_resolves_it_as_a_generative_model(
    tiny_qwen_checkpoint: str, tiny_qwen3_checkpoint: str, tmp_path: Path
) -> None:
    python = require_vllm_python()
    stripped = tmp_path / "no-architectures"
    shutil.copytree(tiny_qwen_checkpoint, stripped)
    config = json.loads((stripped / "config.json").read_text())
    del config["architectures"]
    (stripped / "config.json").write_text(json.dumps(config))

    paths = [tiny_qwen_checkpoint, str(stripped), tiny_qwen3_checkpoint]
    result = run_in_vllm_venv(python, ["-c", RESOLVE, *paths], timeout=300)

    assert result.returncode == 0, result.stderr[-4000:]
    assert result.stdout.splitlines()[-3:] == [
        "Qwen2_5_VLForConditionalGeneration generate",
        "Qwen2_5_VLModel pooling",  # what the checkpoint gave before it wrote the key
        "Qwen3VLForConditionalGeneration generate",
    ]
