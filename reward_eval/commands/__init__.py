"""The commands of the evaluation tool, one module each.

The helpers they share live in :mod:`reward_eval.job` and :mod:`reward_eval.judge`.

- ``run`` (:mod:`.run`): roll out, score every episode, report;
- ``rescore`` (:mod:`.rescore`): a run's kept videos judged again;
- ``report`` (:mod:`.report`): a run's report at another threshold from its stored scores;
- ``audit`` (:mod:`.audit`): counterfactual episodes of a run's kept videos judged, the judge's
  false-positive rate per perturbation; ``run`` runs it too;
- ``compare`` (:mod:`.compare`): a native-reward and a VLM-reward training run side by side.
"""
