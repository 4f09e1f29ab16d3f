"""Wrong instructions to judge a success against, none of them a text the judge is measured on: pure.

The audit's ``wrong_task`` judges each success against one other task of its suite, and a judge
trained on that one text per task learns to reject the texts it was shown rather than to read
(issue 55: trained with ``wrong_task`` on libero_10's three basket tasks, a tiny Qwen2.5-VL
called 13 of 18 held-out successes a success under "turn on the stove and put the moka pot on
it", a text it never saw). So ``finetune --wrong-instructions K`` adds, for every success, ``K``
examples of its own video under instructions drawn from a *training pool* that leaves out every
text of the suites the judge is measured on (:func:`training_pool`'s ``exclude``):

- **recombined basket pairs**: "put both the A and the B in the basket" (libero_10's wording) over
  the objects LIBERO puts in baskets, every pair but the episode's own, in both orders: the hard
  negatives, the same scene and words with other objects, so the judge must read which ones are in
  the basket;
- **other suites' instructions** that do not mention a basket (libero_90's, libero_goal's,
  libero_spatial's; a basket text there may be true of a basket success, "pick up the alphabet
  soup and put it in the basket"), so no unfamiliar text reads as a success by default.

Half of each draw is pairs, half other texts (pairs first on an odd ``K``), without repeats,
seeded by the data's seed and the episode. The measured texts (the suite's other tasks and their
paraphrases) stay unseen: that is what the acceptance's audit asks.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Collection, Iterable, Sequence

import numpy as np

WRONG_INSTRUCTION = "wrong_instruction"  # the examples' source, a row of the fine-tune's tables
# LIBERO's suites (RLinf's names); every one but the measured suite gives texts to the pool.
LIBERO_SUITES = ("libero_10", "libero_90", "libero_goal", "libero_spatial", "libero_object")
# The suites whose basket texts name the objects the pairs recombine: the living-room scenes' names.
# libero_object calls the same box "cream cheese", which would make a pair true of a success.
OBJECT_SUITES = ("libero_10", "libero_90")
PAIR_TEMPLATE = "put both the {} and the {} in the basket"
_PAIR = re.compile(r"^put both the (.+) and the (.+) in the basket$")
_SINGLE = re.compile(r"^pick up the (.+) and (?:put|place) it in the basket$")


def basket_objects(texts: Iterable[str]) -> list[str]:
    """The objects LIBERO's basket instructions among ``texts`` name, sorted, each once."""
    found: set[str] = set()
    for text in texts:
        for pattern in (_PAIR, _SINGLE):
            match = pattern.match(text.strip())
            if match:
                found.update(match.groups())
    return sorted(found)


def pair_of(text: str) -> frozenset[str] | None:
    """The two objects of a "put both the A and the B in the basket" text, or ``None``."""
    match = _PAIR.match(text.strip())
    return frozenset(match.groups()) if match else None


def training_pool(
    own_text: str, objects: Sequence[str], other_texts: Iterable[str], exclude: Collection[str]
) -> tuple[list[str], list[str]]:
    """``(pairs, others)``: the wrong instructions ``own_text``'s success may train against.

    ``pairs``: every basket pair over ``objects``, in both orders, but ``own_text``'s own; ``others``: the
    ``other_texts`` without "basket"; neither holds a text of ``exclude`` (what is measured) or
    ``own_text``. Both sorted, so a seed draws the same texts on every machine."""
    banned = {t.strip() for t in exclude} | {own_text.strip()}
    own = pair_of(own_text)
    pairs = sorted(
        PAIR_TEMPLATE.format(a, b)
        for a, b in itertools.permutations(sorted(objects), 2)  # both orders: the order tells nothing
        if frozenset((a, b)) != own
    )
    banned_pairs = {pair_of(b) for b in banned}
    pairs = [t for t in pairs if t not in banned and pair_of(t) not in banned_pairs]
    others = sorted({t.strip() for t in other_texts if "basket" not in t and t.strip() not in banned})
    return pairs, others


def draw_wrong_instructions(
    pairs: Sequence[str], others: Sequence[str], count: int, seed: Sequence[int]
) -> list[str]:
    """``count`` texts, half of them pairs (the larger half on an odd count), drawn without
    repeats from ``seed``; fewer when a pool runs out. ``ValueError`` for a negative count."""
    if count < 0:
        raise ValueError(f"the number of wrong instructions must be 0 or more, got {count}.")
    rng = np.random.default_rng(list(seed))
    take_pairs = min(len(pairs), count - count // 2)
    take_others = min(len(others), count - take_pairs)
    chosen = [pairs[i] for i in rng.permutation(len(pairs))[:take_pairs]]
    return chosen + [others[i] for i in rng.permutation(len(others))[:take_others]]
