"""``dry_run.check_within_server_limits``: the env's requests against the caps a server reports."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from examples.embodiment.dry_run import SetupError, check_within_server_limits
from vlm_reward.server.limits import RequestLimits

SERVER = {"status": "ok", "limits": RequestLimits(max_nframes=16, max_video_pixels=16 * 200704).as_dict()}


@pytest.mark.parametrize(
    ("nframes", "max_pixels", "message"),
    [
        (16, 200704, None),
        (17, 100000, "reward_model nframes is 17, above this server's limit of 16 (--max-nframes)"),
        (
            16,
            2_000_000,
            "max_pixels is 2000000, above this server's limit of 1003520 (--max-pixels)",
        ),
        (
            16,
            200705,
            "nframes * max_pixels is 3211280, above this server's limit of 3211264",
        ),
        (16, 200704, "backend_kwargs['system_prompt'] length is 8193 chars, above this server's limit"),
    ],
    ids=["fits", "too-many-frames", "frame-too-large", "product-too-large", "prompt-too-long"],
)
def test_requests_above_a_server_cap_fail_the_dry_run(
    nframes: int, max_pixels: int, message: str | None
) -> None:
    kwargs = {"system_prompt": "x" * 8193} if message and "system_prompt" in message else {}
    reward_model = OmegaConf.create({"nframes": nframes, "max_pixels": max_pixels, "backend_kwargs": kwargs})
    if message is None:
        check_within_server_limits(reward_model, SERVER)
        return
    with pytest.raises(SetupError, match="every episode would be refused") as info:
        check_within_server_limits(reward_model, SERVER)
    assert message in str(info.value)


def test_a_server_without_limits_in_health_is_not_checked() -> None:
    """Older servers report no caps: nothing to compare, the live chunk step still runs."""
    check_within_server_limits(OmegaConf.create({"nframes": 10**6, "max_pixels": 10**9}), {"status": "ok"})
