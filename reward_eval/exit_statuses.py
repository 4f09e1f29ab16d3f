"""The exit statuses of ``reward-eval`` and its commands (the types and the shared statuses are
:mod:`vlm_reward.exit_statuses`'s, whose docstring says how the registry is used and checked).

Data only: the commands import their statuses from here, ``docgen`` renders :data:`REGISTRY`.
"""

from __future__ import annotations

from vlm_reward.exit_statuses import EXIT_BAD_OPTIONS, EXIT_OK, CommandExits, ExitStatus

EXIT_JUDGE_UNAVAILABLE = 1  # the judge could not be started or reached, or refused the key
EXIT_UNREADABLE_RUN = 1  # compare: a run cannot be read
EXIT_CANNOT_AUDIT = 3  # audit: the run has nothing to audit
EXIT_FAIL_ABOVE = 4  # audit --fail-above: a false-positive rate above the bound
EXIT_BAD_DATA = 3  # finetune, train-classifier: the data cannot train and measure a judge
EXIT_CLASS_PRIOR = 4  # finetune, train-classifier: training ended at the class prior
EXIT_SERVING_SKEW = 5  # finetune: the served judge does not answer its training data as trained

_PROG = "reward-eval"
_JOB_SOURCE = "reward_eval/job/run_dir.py"  # run_command: the judge's errors as status 1
_DONE = ExitStatus(EXIT_OK, "done")
_JUDGE = ExitStatus(
    EXIT_JUDGE_UNAVAILABLE,
    "the judge could not be started or reached, or refused the key (a 401, naming the variable the key "
    "was read from)",
)


def _bad_options(examples: str = "") -> ExitStatus:
    return ExitStatus(EXIT_BAD_OPTIONS, f"bad options{f' ({examples})' if examples else ''}")


REGISTRY: tuple[CommandExits, ...] = (
    CommandExits(
        f"{_PROG} run",
        (
            ExitStatus(EXIT_OK, "done: the run dir holds the episode log and the report"),
            _JUDGE,
            _bad_options(),
        ),
        sources=("reward_eval/commands/run.py", _JOB_SOURCE),
        note="Also `scripts/run.sh`, which is `run` with the main command's defaults.",
    ),
    CommandExits(
        f"{_PROG} rescore",
        (
            ExitStatus(EXIT_OK, "done: the new run dir holds the episode log and the report"),
            _JUDGE,
            _bad_options(),
        ),
        sources=("reward_eval/commands/rescore.py", _JOB_SOURCE),
    ),
    CommandExits(
        f"{_PROG} report",
        (_DONE, _bad_options("no episode log in RUN_DIR, an `--out` that holds one")),
        sources=("reward_eval/commands/report.py",),
    ),
    CommandExits(
        f"{_PROG} audit",
        (
            _DONE,
            _JUDGE,
            _bad_options(),
            ExitStatus(
                EXIT_CANNOT_AUDIT,
                "the run cannot be audited (no episode log, no kept video, no native success, no readable "
                "video of one), with one line saying which",
            ),
            ExitStatus(
                EXIT_FAIL_ABOVE,
                "`--fail-above RATE`: some row's false-positive rate (every row but `original`) exceeds "
                "RATE, after the report is written",
            ),
        ),
        sources=("reward_eval/commands/audit.py",),
    ),
    CommandExits(
        f"{_PROG} compare",
        (
            _DONE,
            ExitStatus(EXIT_UNREADABLE_RUN, "a run cannot be read, with the reason"),
            _bad_options("e.g. `--labels` without two labels"),
        ),
        sources=("reward_eval/commands/compare.py",),
    ),
    CommandExits(
        f"{_PROG} finetune",
        (
            _DONE,
            ExitStatus(EXIT_JUDGE_UNAVAILABLE, "a judge server could not be started"),
            _bad_options(
                "an unknown perturbation, a base checkpoint of an unsupported family or not a local "
                "directory, an existing `--out` without `--overwrite` or `--resume`, a `--resume` whose "
                "checkpoints do not match"
            ),
            ExitStatus(
                EXIT_BAD_DATA,
                "the runs cannot make a data set (a run without kept videos, one class only in the training "
                "split, an empty held-out split)",
            ),
            ExitStatus(
                EXIT_CLASS_PRIOR,
                "training ended at the class prior (`finetune.json` and the report are written, no judge)",
            ),
            ExitStatus(
                EXIT_SERVING_SKEW,
                "the served fine-tuned judge scores some training example, or some training episode as the "
                "env sent it, further from the trainer's own readout than `--serving-tolerance`, gives an "
                "episode another verdict re-encoded than as sent, or cannot score it (the judge, "
                "`finetune.json` and the report are written and say which examples)",
            ),
        ),
        sources=("reward_eval/commands/finetune.py",),
    ),
    CommandExits(
        f"{_PROG} train-classifier",
        (
            ExitStatus(EXIT_OK, "done: DIR is a classifier checkpoint (`--backend resnet --model DIR`)"),
            _bad_options(
                "DATA is not a labelled frame set, an `--image-size` larger than its frames, an existing "
                "`--out` without `--overwrite`"
            ),
            ExitStatus(
                EXIT_BAD_DATA,
                "the set cannot train and measure a classifier (one class only among its training frames, a "
                "held-out split without both classes)",
            ),
            ExitStatus(
                EXIT_CLASS_PRIOR,
                "training ended at the class prior (`finetune.json` and the report are written, no "
                "checkpoint)",
            ),
        ),
        sources=("reward_eval/commands/train_classifier.py",),
    ),
    CommandExits(
        _PROG,
        (
            ExitStatus(EXIT_OK, "`--help`: the list of commands"),
            ExitStatus(EXIT_BAD_OPTIONS, "no command, or an unknown one, with the list of commands"),
        ),
        sources=("reward_eval/cli.py",),
    ),
)
