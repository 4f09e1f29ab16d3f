"""The learning comparison: GRPO runs that differ only in their reward, side by side.

``bash examples/embodiment/scripts/compare_rewards.sh --out DIR`` (:mod:`.cli`) trains the
``--cpu-learn`` policy once per reward setting (:mod:`.runs`: the simulator's reward, the success
classifier, the tiny random VLM, a lenient classifier), one run after another, each judge started
before its run and stopped after it (:mod:`.judges`), and writes ``reward-eval compare``'s picture
and table over all of them plus ``DIR/learning.json`` (:mod:`.results`); a finished run is reused
only as it was made (:mod:`.provenance`). docs/training/learning.md.
"""
