"""``python -m reward_eval COMMAND [options]``: run, rescore, report, audit, compare, finetune,
train-classifier.

Each command is its own module of :mod:`.commands` with its own ``--help``; this only
dispatches, importing the command's module lazily so ``--help`` does not pay for LIBERO or
torch, after silencing the libraries' known start-up noise (:mod:`.job.quiet`).

``__main__`` runs this module as the main module (``runpy``), and not merely calls
:func:`main`, for the env processes LIBERO spawns: multiprocessing's "spawn" start runs the
parent's main module in each child, under the name ``__mp_main__``, before the child imports
anything of its task; but it skips a package's ``__main__``. Run as the main module, this one
is what each child runs first, so the children are silenced as the job is.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

from reward_eval.job.quiet import silence_known_noise
from vlm_reward.exit_statuses import EXIT_BAD_OPTIONS, EXIT_OK

PROG = "python -m reward_eval"
COMMANDS = {
    "run": ("run", "roll out LIBERO-10 episodes, score them with a VLM reward server, write a report"),
    "rescore": ("rescore", "re-score a run's kept videos with another backend or model"),
    "report": ("report", "re-render a run's report at another threshold or reward mode (no judge call)"),
    "audit": ("audit", "judge counterfactual episodes built from a run's kept videos (false positives)"),
    "compare": ("compare", "compare a native-reward and a VLM-reward training run (TensorBoard, JSONL)"),
    "finetune": (
        "finetune",
        "fine-tune a Qwen-VL judge on runs' kept videos and counterfactuals, then compare",
    ),
    "train-classifier": (
        "train_classifier",
        "train RLinf's ResNet success classifier on simulator-labelled frames, then compare",
    ),
}


def usage() -> str:
    """The top-level help: the commands and where their options are documented."""
    lines = [f"usage: {PROG} {{{','.join(COMMANDS)}}} [options]", "", "commands:"]
    lines += [f"  {name:<8} {text}" for name, (_, text) in COMMANDS.items()]
    lines += ["", f"Options of a command: {PROG} COMMAND --help"]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch to the command's ``main``; exit status 2 for a missing or unknown command."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("-h", "--help"):
        print(usage())
        return EXIT_OK
    if not args or args[0] not in COMMANDS:
        problem = "a command is required" if not args else f"unknown command {args[0]!r}"
        valid = ", ".join(COMMANDS)
        print(f"{usage()}\n\n{PROG}: error: {problem}; valid commands: {valid}.", file=sys.stderr)
        return EXIT_BAD_OPTIONS
    silence_known_noise()  # before the command imports gym, robosuite, LIBERO
    module = importlib.import_module(f"reward_eval.commands.{COMMANDS[args[0]][0]}")
    return module.main(args[1:])


if __name__ == "__mp_main__":
    # An env process the job spawned (see the module docstring): it imports the same libraries.
    silence_known_noise()

if __name__ == "__main__":
    sys.exit(main())
