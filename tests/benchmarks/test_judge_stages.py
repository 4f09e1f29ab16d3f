"""benchmarks.judge_stages: one /score's stages, timed on the tiny judges, compute what the server does."""

from __future__ import annotations

from dataclasses import replace

import pytest

from vlm_reward.backends import ScoreJob

pytest.importorskip("transformers")
judge_stages = pytest.importorskip("benchmarks.judge_stages")


def _judge(checkpoint: str) -> object:
    import transformers

    from vlm_reward.backends import vision_encoder
    from vlm_reward.backends.qwen_vl_hf import QwenHFBackend
    from vlm_reward.judging.model_family import checkpoint_family
    from vlm_reward.judging.probability import AnswerTokens
    from vlm_reward.judging.prompts import ServerPrompts

    family = checkpoint_family(checkpoint)
    model = getattr(transformers, family.model_class).from_pretrained(checkpoint).eval()
    vision_encoder.install(model)
    processor = transformers.AutoProcessor.from_pretrained(checkpoint)
    processor.tokenizer.padding_side = "left"
    spec = ServerPrompts(QwenHFBackend.default_preset, {}).for_job("probability", {})
    tokens = AnswerTokens.from_tokenizer(processor.tokenizer, spec.answer_scale)
    return judge_stages.Judge(model, processor, family, spec, tokens)


@pytest.mark.parametrize(
    "name", ["tiny_qwen_checkpoint", "tiny_qwen3_checkpoint"], ids=["qwen2_5_vl", "qwen3_vl"]
)
def test_every_stage_is_timed_and_the_scores_are_the_backend_s(
    request: pytest.FixtureRequest, sample_mp4: str, name: str
) -> None:
    from vlm_reward.backends.qwen_vl_hf import QwenHFBackend

    checkpoint = request.getfixturevalue(name)
    jobs = [
        ScoreJob(task, sample_mp4, n, 112 * 112, 4.0) for task, n in (("open the drawer", 8), ("stack it", 4))
    ]
    times, scores = judge_stages.time_batch(_judge(checkpoint), jobs, workers=2)
    assert set(times) == {*judge_stages.CPU_STAGES, judge_stages.POOL, *judge_stages.DEVICE_STAGES}
    assert all(times[stage] > 0 for stage in times if stage != "LM prefill and readout")
    backend = QwenHFBackend(checkpoint)
    backend.load()
    served = [answer.probability for answer in backend.generate([replace(job) for job in jobs])]
    assert scores == pytest.approx(served, abs=1e-4)


def test_the_forward_s_operations_are_counted_and_include_the_encoder_s(
    tiny_qwen_checkpoint: str, sample_mp4: str
) -> None:
    judge = _judge(tiny_qwen_checkpoint)
    one = judge_stages.model_flops(judge, [ScoreJob("t", sample_mp4, 8, 112 * 112, 4.0)])
    two = judge_stages.model_flops(judge, [ScoreJob("t", sample_mp4, 8, 112 * 112, 4.0)] * 2)
    assert 0 < one["vision encoder"] < one["whole forward"]
    assert two["whole forward"] == pytest.approx(2 * one["whole forward"], rel=1e-6)  # same job twice
