"""The reward server's flags that make it judge as an env YAML asks: ``python -m
examples.embodiment.judge_flags ENV_YAML``.

A server's self-test (``--self-test``) should grade the judge the way the training will use it:
a success at the env's ``success_threshold``, each case asked with the env's judge-facing
``reward_model`` values (nframes, max_pixels, video_fps, score_mode, backend_kwargs). The
launchers pass those as ``--self-test-threshold`` and ``--self-test-request``
(:func:`vlm_reward.server.self_test.self_test_flags`): the Ray-placed replicas from the training
config (``judge_replicas.py``), ``start_reward_server.sh`` from its ``ENV_CONFIG`` through this
module, which prints them one per line. Exit status 2 with one sentence for a YAML that does not
load or whose ``reward_model`` block is wrong.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from reward_eval.job.env_config import load_env_config
from vlm_reward.client.config import RewardModelConfig
from vlm_reward.exit_statuses import EXIT_OK
from vlm_reward.server.self_test import self_test_flags


def env_self_test_flags(env_yaml: Path) -> list[str]:
    """The self-test flags of the env YAML at ``env_yaml`` (its ``reward_model`` block composed)."""
    block = RewardModelConfig.from_mapping(load_env_config(env_yaml).get("reward_model", None))
    return self_test_flags(block.success_threshold, block.judge_request())


def main(argv: Sequence[str] | None = None) -> int:
    """Print the flags, one per line (for ``mapfile`` in the start script)."""
    parser = argparse.ArgumentParser(prog="python -m examples.embodiment.judge_flags", description=__doc__)
    parser.add_argument("env_yaml", type=Path, help="the env YAML the server judges for")
    args = parser.parse_args(argv)
    try:
        flags = env_self_test_flags(args.env_yaml)
    except (ValueError, TypeError) as exc:
        parser.error(str(exc))
    print("\n".join(flags))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
