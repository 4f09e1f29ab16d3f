"""The project's vision encoder pieces (vlm_reward.backends.vision_encoder) against transformers' own.

The shipped path and the swapped one run the same tiny checkpoint on the same patches: grids whose
windows all have one length, grids whose edge windows are shorter (Qwen2.5-VL at 252 px: 9 x 9
merged tokens in windows of 4, 4 and 1), and batches of videos of different sizes, in both
attention implementations that loop over windows (sdpa, eager), forward and backward (the
fine-tune trains through it). Equal within float32 rounding.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

import pytest

from vlm_reward.judging.model_family import QWEN2_5_VL, QWEN3_VL, ModelFamily

torch = pytest.importorskip("torch")
vision_encoder = pytest.importorskip("vlm_reward.backends.vision_encoder")

WindowGroup = vision_encoder.WindowGroup


@pytest.mark.parametrize(
    ("cu_seqlens", "expected"),
    [
        ([0, 64, 128, 192], [WindowGroup(64, (0, 64, 128))]),
        (
            [0, 64, 80, 144, 160, 164],
            [WindowGroup(64, (0, 80)), WindowGroup(16, (64, 144)), WindowGroup(4, (160,))],
        ),
        ([0, 16, 16, 32], [WindowGroup(16, (0, 16))]),
        ([0], []),
    ],
    ids=["equal", "edge-windows", "empty-window-dropped", "no-rows"],
)
def test_window_groups(cu_seqlens: list[int], expected: list) -> None:
    assert vision_encoder.window_groups(cu_seqlens) == expected


def _model(checkpoint: str, family: ModelFamily, implementation: str) -> Any:
    import transformers

    model_class = getattr(transformers, family.model_class)
    return model_class.from_pretrained(checkpoint, attn_implementation=implementation).eval()


@pytest.fixture(scope="module")
def models(request: pytest.FixtureRequest) -> Any:
    """Each (family, attention implementation)'s tiny model, loaded once; tests leave it as transformers'."""
    loaded: dict[tuple[str, str], Any] = {}

    def get(family: ModelFamily, implementation: str) -> Any:
        key = (family.model_type, implementation)
        if key not in loaded:
            name = "tiny_qwen3_checkpoint" if family is QWEN3_VL else "tiny_qwen_checkpoint"
            loaded[key] = _model(request.getfixturevalue(name), family, implementation)
        vision_encoder.uninstall(loaded[key])
        return loaded[key]

    return get


def _patches(model: Any, grids: list[list[int]]) -> Any:
    """Random pixel patches for ``grids`` ([t, h, w] in patches), as the processor lays them out."""
    config = model.config.vision_config
    width = config.in_channels * config.temporal_patch_size * config.patch_size**2
    rows = sum(t * h * w for t, h, w in grids)
    generator = torch.Generator().manual_seed(sum(map(sum, grids)))
    return torch.randn(rows, width, generator=generator), torch.tensor(grids)


def _encode(model: Any, pixels: Any, grid: Any) -> list[Any]:
    out = model.model.visual(pixels, grid_thw=grid)
    return [out[0], *out[1]] if isinstance(out, tuple) else [out]  # Qwen3-VL: and its DeepStack


# [t, h, w] in patches: Qwen2.5-VL's window is 8 x 8 patches, so 18 x 18 ends in short windows.
GRIDS = {
    "qwen2_5_vl": [[[2, 16, 16]], [[1, 18, 18], [1, 8, 12]]],
    "qwen3_vl": [[[2, 8, 8]], [[1, 8, 8], [1, 12, 8]]],
}


@pytest.mark.parametrize("implementation", ["sdpa", "eager"])
@pytest.mark.parametrize("family", [QWEN2_5_VL, QWEN3_VL], ids=["qwen2_5_vl", "qwen3_vl"])
def test_swapped_encoder_equals_the_shipped_one(
    models: Any, family: ModelFamily, implementation: str
) -> None:
    model = models(family, implementation)
    for grids in GRIDS[family.model_type]:
        pixels, grid = _patches(model, grids)
        with torch.inference_mode():
            shipped = _encode(model, pixels, grid)
            assert vision_encoder.install(model) > 0
            ours = _encode(model, pixels, grid)
            vision_encoder.uninstall(model)
        for a, b in zip(shipped, ours, strict=True):
            torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("family", [QWEN2_5_VL, QWEN3_VL], ids=["qwen2_5_vl", "qwen3_vl"])
def test_gradients_through_the_swapped_encoder_equal_the_shipped_ones(
    models: Any, family: ModelFamily
) -> None:
    model = models(family, "sdpa")
    pixels, grid = _patches(model, GRIDS[family.model_type][-1])
    weights = [block.attn.qkv.weight for block in model.model.visual.blocks]

    def grads() -> list[Any]:
        model.zero_grad()
        sum(x.square().mean() for x in _encode(model, pixels, grid)).backward()
        return [w.grad.clone() for w in weights] + [model.model.visual.patch_embed.proj.weight.grad.clone()]

    shipped = grads()
    vision_encoder.install(model)
    ours = grads()
    model.zero_grad()
    for a, b in zip(shipped, ours, strict=True):
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-6)


def test_install_swaps_attention_and_patch_embedding_once_and_uninstall_restores(models: Any) -> None:
    model = models(QWEN2_5_VL, "sdpa")
    keys = set(model.state_dict())
    depth = len(model.model.visual.blocks)
    assert vision_encoder.install(model) == depth + 1  # every block's attention, one patch embedding
    assert vision_encoder.install(model) == 0  # already the project's
    assert isinstance(model.model.visual.blocks[0].attn, vision_encoder.WindowBatchedAttention)
    assert set(model.state_dict()) == keys  # no parameter or buffer added
    assert vision_encoder.uninstall(model) == depth + 1
    assert not isinstance(model.model.visual.blocks[0].attn, vision_encoder.WindowBatchedAttention)


def test_a_wrapped_patch_projection_falls_back_to_the_convolution(tiny_qwen_checkpoint: str) -> None:
    """A LoRA wrapper around the convolution is not a plain Conv3d: its own forward must run."""

    class Wrapped(torch.nn.Conv3d):
        calls = 0

        def forward(self, x: Any) -> Any:
            Wrapped.calls += 1
            return super().forward(x)

    model = _model(tiny_qwen_checkpoint, QWEN2_5_VL, "sdpa")
    embed = model.model.visual.patch_embed
    pixels, _ = _patches(model, [[2, 8, 8]])
    with torch.inference_mode():
        plain = embed(pixels)
        vision_encoder.install(model)
        wrapped = Wrapped(3, embed.embed_dim, embed.proj.kernel_size, embed.proj.kernel_size, bias=False)
        wrapped.load_state_dict(embed.proj.state_dict())
        embed.proj = wrapped
        torch.testing.assert_close(embed(pixels), plain, rtol=1e-5, atol=1e-5)
    assert Wrapped.calls == 1


def test_a_transformers_without_qwen3_vl_still_swaps_qwen2_5_vl(
    models: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Below transformers 4.57 there is no ``transformers.models.qwen3_vl``: the module imports and
    swaps Qwen2.5-VL's classes as before (a fresh copy, imported with that package made missing)."""
    for name in ("transformers.models.qwen3_vl", "transformers.models.qwen3_vl.modeling_qwen3_vl"):
        monkeypatch.setitem(sys.modules, name, None)  # `import` of it raises ImportError
    spec = importlib.util.spec_from_file_location("vision_encoder_without_qwen3", vision_encoder.__file__)
    assert spec is not None and spec.loader is not None
    without = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, without)
    spec.loader.exec_module(without)
    assert without.qwen3 is None and not hasattr(without, "Qwen3VLWindowBatchedAttention")
    qwen2_5 = {cls for cls in vision_encoder.REPLACEMENTS if cls.__module__.endswith("qwen2_5_vl")}
    assert set(without.REPLACEMENTS) == qwen2_5 and len(qwen2_5) == 2
    model = models(QWEN2_5_VL, "sdpa")
    pixels, grid = _patches(model, GRIDS["qwen2_5_vl"][-1])
    with torch.inference_mode():
        shipped = _encode(model, pixels, grid)
        assert without.install(model) == len(model.model.visual.blocks) + 1
        ours = _encode(model, pixels, grid)
        without.uninstall(model)
    torch.testing.assert_close(ours[0], shipped[0], rtol=1e-5, atol=1e-5)
