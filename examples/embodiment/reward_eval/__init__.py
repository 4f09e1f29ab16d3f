"""Evaluation of the VLM reward against the simulator's success on LIBERO episodes.

Roll out episodes, score them with the reward server, and measure how well the VLM's
judgement matches the native success (``metrics``), then write a human-readable report
with plots and the frames of the episodes the two disagree on (``report``, ``plots``).
"""
