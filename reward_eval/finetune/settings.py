"""The fine-tune's defaults and the choices derived from them: pure.

Measured on the tiny random-weight judges (``vlm_reward/tools/tiny_checkpoint.py``, 356k and 450k
parameters) on real LIBERO episodes of the scripted expert plus counterfactuals (2 successes, 1 near
miss; 8 frames at ``max_pixels`` 12544), one example per forward pass, 8 per optimizer step:

- full fine-tuning at lr 1e-3 leaves the class-prior floor (``ln 2`` with balanced weights) after
  10-30 steps and separates every training example by step 50 (P(yes) 0.99 on the success, 0.01 on
  every negative), on both families; 3e-3 gets there too after a longer plateau;
- LoRA on the language model (rank 16 and 32, lr 1e-3 to 1e-2) stays on the floor at 1e-3, and at
  higher rates stalls at P(yes) 0.66 / 0.34 or falls back to the floor after a spike: a rank-16
  update of a 64-wide random model is too small a change to carry the video.

Hence ``auto``: full fine-tuning for checkpoints below :data:`FULL_FINETUNE_MAX_PARAMS` parameters
(where it costs nothing and LoRA cripples the model), LoRA for every real checkpoint (Qwen2.5-VL-3B
and up, Qwen3-VL-2B and up). The learning rate defaults per method: 1e-3 for full fine-tuning (what
learns on the tiny judges) and 1e-4 for LoRA (the usual rate for 7B/8B Qwen-VL LoRA recipes; not run
here). The length defaults to :data:`DEFAULT_STEPS` optimizer steps rounded up to whole epochs: the
tiny data sets need ~50 steps, which are many epochs of a few examples and less than one epoch of a
real data set of hundreds of episodes.
"""

from __future__ import annotations

import math

METHOD_CHOICES = ("auto", "full", "lora")
FULL_FINETUNE_MAX_PARAMS = 1_000_000_000
DEFAULT_LR = {"full": 1e-3, "lora": 1e-4}
DEFAULT_STEPS = 80
LR_SCHEDULES = ("constant", "cosine")  # trainer.step_lr; constant is the default
DEFAULT_GRAD_ACCUM = 8
DEFAULT_LORA_RANK = 16
DEFAULT_LORA_ALPHA = 32.0
DEFAULT_HOLDOUT_FRACTION = 0.25
# How far the served fine-tuned judge may answer a training example from the trainer's own readout
# of it (:mod:`.serving_check`). The trainer prepares its inputs with the qwen_vl_hf backend's own
# steps, and the float32 qwen_vl_hf server (the evaluation's default) reproduces its readout to
# ~1e-7 (finetune.json's serving.max_abs_diff and readout_vs_server_max_abs_diff); a skew between
# training and serving moves an example from one class to the other (P(yes) 0.99 -> 0.01), far
# beyond this.
DEFAULT_SERVING_TOLERANCE = 0.02


def resolve_method(method: str, parameters: int) -> str:
    """``full`` or ``lora``: the given one, or for ``auto`` by the model's size (see above)."""
    if method not in METHOD_CHOICES:
        raise ValueError(f"unknown method {method!r}; valid: {', '.join(METHOD_CHOICES)}.")
    if method != "auto":
        return method
    return "full" if parameters < FULL_FINETUNE_MAX_PARAMS else "lora"


def resolve_lr(lr: float | None, method: str) -> float:
    """The given learning rate, or the method's default."""
    return DEFAULT_LR[method] if lr is None else lr


def resolve_epochs(epochs: int | None, examples: int, grad_accum: int, steps: int = DEFAULT_STEPS) -> int:
    """The given epochs, or enough whole epochs of ``examples`` for at least ``steps`` optimizer steps."""
    if epochs is not None:
        return epochs
    per_epoch = math.ceil(examples / grad_accum)
    return max(1, math.ceil(steps / per_epoch))
