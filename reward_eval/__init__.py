"""Evaluation of the VLM reward against the simulator's success on LIBERO episodes.

``reward-eval run|rescore|report|audit|compare`` (the console script ``scripts/setup.sh``
installs) or ``python -m reward_eval ...`` (``__main__`` runs :mod:`.cli`, which dispatches).
The package is split by role:

- :mod:`.commands`: what executes: one module per command;
- :mod:`.job`: what the commands share around the judge: their options, the rollout through
  ``LiberoEnv``, the run dir they write, the repo's paths, the libraries' notices silenced;
- :mod:`.judge`: the reward server they score against (a given ``--endpoint`` or a local one
  they start) and the many calls to it of ``audit`` and ``rescore --prefixes``;
- :mod:`.policies`: the policies that play the episodes (by name: ``zero``, ``random``,
  ``expert``);
- :mod:`.analysis`: reading episode logs and training-run scalars, and the numbers: VLM vs
  native metrics, agreement curves; pure functions apart from the readers;
- :mod:`.report`: what a person reads: the evaluation report (Markdown, HTML, figures,
  the terminal table) and the training-run comparison;
- :mod:`.classifier`: RLinf's ResNet success classifier trained on simulator labels, its data;
- :mod:`.libero_task`: a LIBERO task outside RLinf's env, reset as ``LiberoEnv`` resets it.
"""
