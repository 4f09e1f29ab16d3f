"""The commands of the evaluation tool and what they share.

- ``run`` (:mod:`.run`): roll out, score every episode, report; :mod:`.rollout` plays the
  episodes through ``LiberoEnv`` with a policy and shows the progress bar;
- ``rescore`` (:mod:`.rescore`): a run's kept videos judged again;
- ``report`` (:mod:`.report`): a run's report at another threshold from its stored scores
  (:mod:`.report_hint`: that command line, printed by every report's calibration);
- ``audit`` (:mod:`.audit`): counterfactual episodes of a run's kept videos judged
  (:mod:`.counterfactuals`), the judge's false-positive rate per perturbation; ``run`` runs it too;
- :mod:`.call_bar`: the progress bar of the commands that make many judge calls;
- ``compare`` (:mod:`.compare`): a native-reward and a VLM-reward training run side by side;
- :mod:`.options`: argparse types and the scoring options of ``run`` and ``rescore``;
- :mod:`.judge`: the reward server a command scores against: a checked ``--endpoint``, or a
  local server started and stopped around the command;
- :mod:`.run_dir`: ``settings.json``, the report at the end, and the exit status;
- :mod:`.quiet`: the libraries' known start-up notices, silenced message by message.
"""
