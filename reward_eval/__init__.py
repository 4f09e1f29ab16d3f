"""Evaluation of the VLM reward against the simulator's success on LIBERO episodes.

``python -m examples.embodiment.reward_eval run|rescore|report|audit|compare`` (``__main__`` runs
:mod:`.cli`, which dispatches). The package is split by role:

- :mod:`.commands`: what executes: the three commands, their shared options, the reward
  server they score against (a given ``--endpoint`` or a local one they start), the
  rollout through ``LiberoEnv``, and the run dir they write;
- :mod:`.policies`: the policies that play the episodes (by name: ``zero``, ``random``,
  ``expert``);
- :mod:`.analysis`: reading episode logs and training-run scalars, and the numbers: VLM vs
  native metrics, agreement curves; pure functions apart from the readers;
- :mod:`.report`: what a person reads: the evaluation report (Markdown, HTML, figures,
  the terminal table) and the training-run comparison.
"""
