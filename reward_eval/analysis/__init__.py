"""The numbers of an evaluation: reading the logs, then pure functions over what was read.

- :mod:`.episode_log`: the JSONL episode logs a run (or a training run) writes;
- :mod:`.metrics`: how well the VLM's verdicts match the simulator's success;
- :mod:`.perturbations`: the audit's counterfactual episodes, pure functions registered by name;
  :mod:`.hard_negatives`: which other instruction ``wrong_task`` uses; :mod:`.audit`: its numbers;
- :mod:`.training_runs`: native success and agreement over a training run (TensorBoard
  scalars, or the episode log in windows).
"""
