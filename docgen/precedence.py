"""The precedence rule of the evaluation commands' ``reward_model`` block, as a table.

Rendered from the rule's own definitions (:mod:`reward_eval.job.reward_block`'s order and its
job-owned and source-run keys, :data:`reward_eval.job.options.OPTION_KEYS`' flags), so the page
says what the code does: per key, which option sets it, whether a re-judging command keeps the
source run's value, and which keys the command itself owns. Pure: the definitions in, markdown out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from docgen.markdown import code, table


def precedence_table(
    keys: Iterable[str],
    option_flag: Mapping[str, str],
    source_run_keys: Sequence[str],
    job_owned: Mapping[str, str],
) -> str:
    """One row per key with a role beyond the env YAML's, in ``keys``' order, then one sentence
    listing the keys that only the env YAML sets."""
    rows, yaml_only = [], []
    for key in keys:
        flag = option_flag.get(key)
        kept = key in source_run_keys
        if key in job_owned:
            rows.append((code(key), "", "", job_owned[key]))
        elif flag or kept:
            rows.append((code(key), code(flag) if flag else "", "yes" if kept else "", ""))
        else:
            yaml_only.append(code(key))
    head = (
        "key",
        "1. the option, when given",
        "2. the source run's, when re-judging",
        "always the command's",
    )
    text = table(head, rows)
    if yaml_only:
        text += f"\n\nEvery other key comes from the env YAML alone: {', '.join(yaml_only)}."
    return text
