"""Watching the judge while a policy trains on it: pure logic, fed by the env.

In simulation the truth is there for every episode, so the judge can be checked live:

- :mod:`~vlm_reward.watch.confusion`: a rolling window of (judged, native) outcomes and its
  false-positive and false-negative rates;
- :mod:`~vlm_reward.watch.judge_health`: those windows overall, per task and for canaries, as
  the env's metrics (:data:`~vlm_reward.watch.judge_health.HEALTH_METRIC_KEYS`);
- :mod:`~vlm_reward.watch.canaries`: which native successes are also judged as a counterfactual
  (``reward_model.canary_rate``), capped per chunk, and the counterfactual itself;
- :mod:`~vlm_reward.watch.guard`: when the false-positive rate is too high, with hysteresis and
  a minimum sample (``reward_model.guard``);
- :mod:`~vlm_reward.watch.judge_watch`: the one object ``LiberoEnv`` feeds.

Nothing here talks to LIBERO, RLinf or the server; the tests run in milliseconds.
"""
