"""The reward server's HTTP client: usable with only ``vlm_reward`` installed (no RLinf)."""
