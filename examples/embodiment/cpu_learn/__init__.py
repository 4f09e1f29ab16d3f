"""Training runs that learn on a CPU (``run_embodiment.sh --cpu-learn``), apart from what GPU runs load.

- :mod:`.policy`: the scripted expert with learnable release points, an RLinf embodied policy;
- :mod:`.hook`: the ``RLINF_EXT_MODULE`` of these runs: the CPU platform and the policy registered;
- :mod:`.actor`: RLinf's FSDP actor that also logs what the learning comparison reads
  (the policy's parameters, the share of GRPO groups with a gradient) and records its batches.

The run's settings are ``config/cpu_learn/expert.yaml``; the comparison of reward settings that
uses it is ``scripts/compare_rewards.sh``. ``train_embodied_agent.py`` imports these only when
``cpu_learn.enable`` is set.
"""
