# TEMPORARY STUB written by the server helper for its tests; the real module replaces it.
from vlm_reward.backends.base import RewardBackend, register_backend


@register_backend
class _Stub(RewardBackend):
    name = "qwen2_5_vl_hf"
    aliases = ("PRIMO-R1",) if "qwen2_5_vl_hf" == "primo_r1_vllm" else ()

    def load(self):
        raise ImportError("stub")

    def generate(self, jobs):
        raise RuntimeError("stub")
