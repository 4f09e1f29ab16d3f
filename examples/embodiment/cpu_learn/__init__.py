"""Training runs that learn on a CPU (``run_embodiment.sh --cpu-learn``), apart from what GPU runs load.

- :mod:`.policy`: the scripted expert with learnable release points, an RLinf embodied policy;
- :mod:`.hook`: the ``RLINF_EXT_MODULE`` of these runs: the CPU platform and the policy registered;
- :mod:`.actor`: RLinf's FSDP actor with every trajectory weighed alike (:mod:`.weights`), that also
  logs what the learning comparison reads (the policy's parameters, the GRPO groups trained on,
  :mod:`.groups`) and records its batches;
- :mod:`.env_worker`: RLinf's env worker that also records each episode's outcome (:mod:`.outcomes`);
- :mod:`.judge_only`: the mode in which the judge alone decides (``cpu_learn.judge_only``).

The run's settings are ``config/cpu_learn/expert.yaml``; the comparison of reward settings that
uses it is ``scripts/compare_rewards.sh``. ``train_embodied_agent.py`` imports these only when
``cpu_learn.enable`` is set.
"""
