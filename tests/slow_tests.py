"""The tests over a minute: what each pays for, what it proves, and its measured time.

A test's time is its setup, call and teardown (pytest's durations): the first test to need a shared
run (a training, a LIBERO rollout, a vLLM engine) pays for it, so the run is named with it.
``scripts/test.sh`` ends by naming any test over :data:`LIMIT_S` that this list does not
(``tests/support/suite_times.py``), so the price of a new slow test is seen and said; the docs
render the list (``docs/design/tests.md``). The seconds are one run of the README's test command
from a clean clone on the 2-core machine (:data:`MEASURED`), with both parts running.
"""

from __future__ import annotations

from dataclasses import dataclass

LIMIT_S = 60.0
MEASURED = (
    "2026-11-29, run 3 of benchmarks/README.md's 'The test suite's time' (the learning slice and the "
    "vLLM venv's fast tests: issue 54's clean-clone run)"
)


@dataclass(frozen=True)
class SlowTest:
    """A test over :data:`LIMIT_S`: its node id (a parametrized test by its function), its
    measured seconds, the shared run it pays for and what it proves."""

    test: str
    seconds: int
    pays_for: str
    proves: str


SMOKE = "tests/examples/test_training_smoke.py::"
FINETUNE = "tests/reward_eval/finetune/test_finetune_libero.py::"

SLOW_TESTS: tuple[SlowTest, ...] = (
    SlowTest(
        "tests/reward_eval/finetune/test_finetune_data.py::test_the_labels_and_the_split_are_the_sets",
        62,
        "finetune --data on a six-episode labelled set with two wrong instructions a success (the tiny "
        "Qwen2.5-VL's default training, both judges on real qwen_vl_hf servers)",
        "the labels and the split are the set's, the test split is reported apart, no wrong instruction is "
        "a measured text, and the served judge answers the set's MP4s as trained",
    ),
    SlowTest(
        f"{FINETUNE}test_the_default_fine_tune_leaves_the_class_prior_and_separates_the_training_episodes",
        124,
        "the default fine-tune of the tiny Qwen2.5-VL and Qwen3-VL (80 steps each), each judged before "
        "and after on real qwen_vl_hf servers",
        "the fine-tune leaves the class prior on real LIBERO episodes (as the env sent them and "
        "re-encoded) and their counterfactuals, and its served judge answers as it was trained, the "
        "episodes as the env sent them included",
    ),
    SlowTest(
        "tests/envs/test_libero_env_equivalence.py::test_the_two_classes_differ",
        151,
        "a seeded rollout of the project's env and of RLinf's (2 envs at 256 px, rebuilding resets)",
        "with the reward model off, the project's env is RLinf's, output for output",
    ),
    SlowTest(
        f"{SMOKE}test_vlm_run_trains_on_the_scores",
        117,
        "the VLM training run: Ray, two judges placed by Ray (one killed mid-run), 2 GRPO steps, the "
        "guard's stop",
        "GRPO trains OpenVLA-OFT on the judge's scores; failover, drain, the key kept out of files, "
        "the guard's stop after its checkpoint",
    ),
    SlowTest(
        f"{SMOKE}test_native_run_completes_a_grpo_step",
        92,
        "the native training run: Ray, RLinf's workers, one GRPO step, a tiny OpenVLA-OFT built in",
        "RLinf's GRPO loop runs end to end on CPU; the update is exactly AdamW's weight decay",
    ),
    SlowTest(
        "tests/examples/test_cpu_learn.py::test_a_line_per_grpo_step_then_the_summary",
        97,
        "compare_rewards.sh on a slice: 2 GRPO steps of the learning policy, 4 envs of two tasks, a "
        "judge on the wire",
        "each score reaches its own episode's return and GRPO's advantage; the reward filter drops the "
        "groups it should; the policy moves the way they say; outcomes and statistics are written",
    ),
    SlowTest(
        "tests/examples/test_run_embodiment.py::"
        "test_a_bad_reward_server_block_stops_the_run_before_training_in_one_sentence",
        113,
        "a dry run that starts Ray to find its judges cannot be placed: 22 s alone, 107-118 s in the "
        "suite's first minutes, beside set-up's classifier training and the heavy part's LIBERO envs",
        "a reward_server block that the cluster cannot place stops the run before training, in one sentence",
    ),
    SlowTest(
        "tests/vlm_reward/test_vllm_engine_e2e.py::test_servers_run_on_the_vllm_venv",
        87,
        "three vLLM engines (Qwen2.5-VL by the start script, PRIMO-R1, Qwen3-VL), a clip rendered by LIBERO",
        "both vLLM backends on the real engine: pinned answers, the frames the engine sees, batches, aborts",
    ),
    SlowTest(
        "tests/vlm_reward/test_vllm_venv_fast_tests.py::test_fast_vlm_reward_tests_pass_in_the_vllm_venv",
        63,
        "the fast vlm_reward tests run again in a subprocess of the vLLM venv (its own Python and packages)",
        "the reward server's fast tests pass on the packages the vLLM engine is installed with",
    ),
)
