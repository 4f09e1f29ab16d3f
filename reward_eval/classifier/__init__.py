"""A judge that judges: RLinf's ResNet success classifier, trained on the simulator's labels.

``labelled_set`` is the labelled frame set (its manifest and split by initial state: train,
held-out, test), ``simulation`` plays and renders a labelled LIBERO episode, ``frame_data`` reads
the set's frames as the classifier's tensors (labelled through the training target,
:mod:`vlm_reward.backends.classifier_targets`), ``training`` is the loop, ``held_out`` the
before/after numbers of ``reward-eval train-classifier``, ``evaluation``, ``measures`` and
``report`` what it measures and shows beyond them (frames against the goal fraction, judged
successes per variant, the test split), ``labelled_run`` a set's episodes as a run dir for the judge tools,
``watch_replay`` judged episodes through the live watch, and ``setup_checkpoint`` the main job's
classifier that set-up trains. The backend that serves a checkpoint is
:mod:`vlm_reward.backends.resnet` (the checkpoint format: :mod:`vlm_reward.backends.resnet_checkpoint`).
"""
