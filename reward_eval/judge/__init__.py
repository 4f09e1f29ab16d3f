"""The judge a command scores against, and the judge calls beyond one per episode.

- :mod:`.endpoint`: the reward server: a checked ``--endpoint``, or a local server started and
  stopped around the command;
- :mod:`.replicas`: ``--replicas N``: the local judge as N servers placed by a private Ray cluster;
- :mod:`.calls`: many calls on a thread pool with a progress bar (fallbacks counted);
- :mod:`.counterfactuals`: the audit's episodes built, encoded and judged;
- :mod:`.prefixes`: ``rescore --prefixes``: growing prefixes of each video judged.
"""
