"""What a command's job needs around its judge calls, shared by the commands.

- :mod:`.paths`: the repo root, the default env YAML, the rlinf overlay put first on the path;
- :mod:`.options`: argparse types and the scoring options of ``run`` and ``rescore``;
- :mod:`.rollout`: the episodes played through ``LiberoEnv`` with a policy, the progress bar;
- :mod:`.run_dir`: ``settings.json``, the report at the end, and the exit status;
- :mod:`.judge_config`: the client settings of a command that judges a run's episodes again;
- :mod:`.audit_run`: one audit of a run dir (``audit``, and ``run``'s own audit);
- :mod:`.quiet`: the libraries' known start-up notices, silenced message by message;
- :mod:`.main_job`: the main command's episodes and the shipped self-test set's, defined once.
"""
