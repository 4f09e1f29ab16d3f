"""The reward server's client, usable with only ``vlm_reward`` installed (no RLinf, no LIBERO).

- :mod:`~vlm_reward.client.scoring`: frames or an MP4 -> ``POST /score`` -> a score in
  [0, 1], with replicas, retries and the fallback score (:class:`RewardClient`);
- :mod:`~vlm_reward.client.http`: one ``POST /score`` to one replica, and which failures
  fail over or are retried;
- :mod:`~vlm_reward.client.replicas`: which replica gets the next call, and cool-downs;
- :mod:`~vlm_reward.client.config`: the ``reward_model`` block the env YAML carries (pydantic);
- :mod:`~vlm_reward.client.episode_record`: one line of the JSONL episode log, typed;
- :mod:`~vlm_reward.client.episode_log`: the episode log file: its name, writer and readers.

``rlinf.envs.libero.libero_env`` submits each ended LIBERO episode to :class:`RewardClient`.
"""
