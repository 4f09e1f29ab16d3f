"""Turn a VLM's raw answer into a score in [0, 1].

Every backend returns free text; this module is the one place that reads it, so all
backends are scored by the same rules and a rule change is made (and tested) once.

Reading happens in two steps.

1. :func:`extract_answer` picks the answer text. The last complete ``<answer>...</answer>``
   block anywhere in the output wins, even one inside ``<think>`` when there is no other
   (tags are case-insensitive and may contain spaces, e.g. ``< Answer >``).
   Without one, the text after a last unclosed ``<answer>`` is used (generation was cut
   off, or a ``</answer>`` stop string was stripped); then the text before a stray
   ``</answer>`` (the opening tag was part of the prompt); then the whole output with
   every ``<think>`` block removed. :func:`extract_think` returns the reasoning: the first
   ``<think>...</think>`` block; an unclosed ``<think>`` runs up to the first ``<answer>``
   after it, or to the end of the text (a truncated generation still has its
   reasoning logged); a ``</think>`` with no opening tag (chat templates that put
   ``<think>`` in the prompt) makes everything before it the reasoning.

2. :func:`normalize_number` reads the score from the answer text.

   - Which number: the LAST number in the text. Models that ignore the format tend to
     explain first and conclude last ("Step 1: ... 2 objects ... so 0.8" reads 0.8).
     A fraction (``7/10``, ``7 / 10``, ``3 out of 4``) and a percentage (``85%``,
     ``85 %``, ``85 percent``) count as one number. Digits glued to letters or inside
     dotted versions (``Qwen2.5``, ``3rd``, ``1.2.3``) are not numbers, and a "-" right
     after a digit or letter is a dash ("70-80%" reads 80%), not a sign. Known limit:
     "0.8, where 1 means done" reads 1; the prompts ask for the number alone.
   - Explicit notation carries its own scale in every mode: ``a%`` is ``a / 100`` and
     needs 0 <= a <= 100; ``a/b`` is the ratio and needs 0 <= a <= b, b > 0.
   - The mode only decides what a bare number means:
     ``unit``: the number must be in [0, 1] and is the score;
     ``percentage``: the number must be in [0, 100] and the score is number / 100;
     ``auto``: a number in [0, 1] is read as unit, a number in (1, 100] as a percentage,
     anything else is an error; ``rubric`` (the "roboreward" preset): the answer is the
     last ``ANSWER: n`` (case-insensitive), else the last number, and n must be a whole
     number from 1 to 5, scored (n - 1) / 4 (percentages, fractions and verdict words are
     errors there). So in ``auto`` "1" is 1.0 (not 1 %) and "1.5" is 0.015;
     backends whose models answer 0-100 (PRIMO-R1) should use ``percentage``.
   - Words, only when the text holds no number: yes/true/success/successful(ly)/
     succeed(ed/s)/complete(d) read 1.0; no/false/failure/fail(ed/s)/unsuccessful(ly)/
     incomplete/uncompleted read 0.0. A negation right before such a word flips it
     ("not completed", "didn't succeed"). Anything unclear is an error rather than a
     guess: verdict words that disagree ("yes and no"), or a negation that does not sit
     right before a verdict word ("did not manage to complete").
   - Negative numbers, NaN, infinity, out-of-range values, empty text and text with
     neither a number nor a verdict raise :class:`ScoreParseError`.

``raw_value`` is the number as read: 85.0 for "85%", 0.85 for "0.85", the ratio 0.7 for
"7/10", 1.0 or 0.0 for a verdict word.
"""

from __future__ import annotations

import math
import numbers
import re
from dataclasses import dataclass

from vlm_reward.protocol import TEXT_SCORE_MODES

# Longest slice of the offending text quoted in an error message.
_QUOTE_LIMIT = 80


class ScoreParseError(ValueError):
    """The model's answer holds no usable score (unreadable, non-finite or out of range)."""


@dataclass(frozen=True)
class ParsedScore:
    """A parsed model output: ``score`` in [0, 1], the number as read, and the text pieces."""

    score: float
    raw_value: float
    answer: str
    think: str | None


_THINK_OPEN = re.compile(r"<\s*think\s*>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"<\s*/\s*think\s*>", re.IGNORECASE)
_ANSWER_OPEN = re.compile(r"<\s*answer\s*>", re.IGNORECASE)
_ANSWER_CLOSE = re.compile(r"<\s*/\s*answer\s*>", re.IGNORECASE)
_ANSWER_BLOCK = re.compile(r"<\s*answer\s*>(.*?)<\s*/\s*answer\s*>", re.IGNORECASE | re.DOTALL)

# One number. ASCII digits only: float() also accepts other scripts' digits, which no
# prompt asks for. The look-arounds keep digits that are part of a word ("Qwen2", "3rd")
# or of a dotted version ("1.2.3") from counting as numbers, and a "-" after a digit or
# letter is a dash ("steps 1-2"), not a sign. A leading-dot number (".85") may not follow
# another dot, so "well...85" reads 85.
_NUM = (
    r"(?<![A-Za-z0-9_])(?<![0-9]\.)[-+]?(?:[0-9]+(?:\.[0-9]*)?|(?<!\.)\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
    r"(?![A-Za-z0-9_]|\.[0-9])"
)
# A number, optionally followed by a denominator ("/ 10", "out of 10") or a percent sign.
_NUMBER_ITEM = re.compile(
    rf"(?P<num>{_NUM})(?:\s*(?:/|\bout\s+of\b)\s*(?P<den>{_NUM})|\s*(?P<pct>%|percent\b))?",
    re.IGNORECASE,
)

_POSITIVE_WORDS = ("yes", "true", "success", "successful", "successfully", "succeed", "succeeded")
_POSITIVE_WORDS += ("succeeds", "complete", "completed")
_NEGATIVE_WORDS = ("no", "false", "failure", "fail", "failed", "fails", "unsuccessful", "unsuccessfully")
_NEGATIVE_WORDS += ("incomplete", "uncompleted")
_VERDICT_WORDS = {**dict.fromkeys(_POSITIVE_WORDS, True), **dict.fromkeys(_NEGATIVE_WORDS, False)}
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
# "ANSWER: 4", the rubric's answer line (RUBRIC_LEVELS levels, scored (n - 1) / (levels - 1)).
_RUBRIC_ANSWER = re.compile(r"\banswer\s*:\s*(?P<num>[0-9]+(?:\.[0-9]*)?)", re.IGNORECASE)
RUBRIC_LEVELS = 5


def _quote(text: str) -> str:
    """``text`` as a repr, cut to a readable length (answers can be whole essays)."""
    if len(text) <= _QUOTE_LIMIT:
        return repr(text)
    return f"{text[:_QUOTE_LIMIT]!r}... ({len(text)} characters)"


def _check_mode(mode: object) -> None:
    if not isinstance(mode, str) or mode not in TEXT_SCORE_MODES:
        raise ValueError(f"score mode must be one of {', '.join(TEXT_SCORE_MODES)}, got {mode!r}.")


def _split_think(text: str) -> tuple[str | None, str]:
    """(reasoning of the first think block, ``text`` without that block); see the module doc."""
    open_m = _THINK_OPEN.search(text)
    first_close = _THINK_CLOSE.search(text)
    if first_close is not None and (open_m is None or first_close.start() < open_m.start()):
        # "</think>" before any "<think>": the opening tag was in the prompt.
        return text[: first_close.start()].strip(), text[first_close.end() :]
    if open_m is None:
        return None, text
    close_m = _THINK_CLOSE.search(text, open_m.end())
    if close_m is not None:
        return text[open_m.end() : close_m.start()].strip(), text[: open_m.start()] + text[close_m.end() :]
    answer_m = _ANSWER_OPEN.search(text, open_m.end())
    end = answer_m.start() if answer_m is not None else len(text)
    return text[open_m.end() : end].strip(), text[: open_m.start()] + text[end:]


def extract_think(text: str) -> str | None:
    """The model's reasoning (stripped), or ``None`` when the output has no think block.

    An empty ``<think></think>`` gives ``""``, so "no reasoning" and "no block" stay
    distinguishable. Unclosed and prompt-opened blocks are handled as the module doc says.
    """
    return _split_think(text)[0]


def _strip_think(text: str) -> str:
    """``text`` with every think block removed (each pass removes at least one tag)."""
    think, rest = _split_think(text)
    while think is not None:
        think, rest = _split_think(rest)
    return rest


def extract_answer(text: str) -> str:
    """The answer part of a model output, stripped; the order of fallbacks is in the module doc.

    Never raises for a string: an output with no answer gives ``""`` (or its non-think
    text), and deciding whether that holds a score is :func:`normalize_number`'s job.
    """
    blocks = _ANSWER_BLOCK.findall(text)
    if blocks:
        return blocks[-1].strip()
    rest = _strip_think(text)
    opens = list(_ANSWER_OPEN.finditer(rest))
    if opens:
        return rest[opens[-1].end() :].strip()
    close_m = _ANSWER_CLOSE.search(rest)
    if close_m is not None:
        return rest[: close_m.start()].strip()
    return rest.strip()


def _fail(text: str, reason: str) -> ScoreParseError:
    return ScoreParseError(f"cannot read a score from {_quote(text)}: {reason}.")


def _rubric(x: float, text: str) -> tuple[float, float]:
    if not (math.isfinite(x) and x == int(x) and 1 <= x <= RUBRIC_LEVELS):
        raise _fail(text, f"{x:g} is not a rubric level (a whole number from 1 to {RUBRIC_LEVELS})")
    return (x - 1) / (RUBRIC_LEVELS - 1) + 0.0, float(x)


def _scale_bare(x: float, mode: str, text: str) -> tuple[float, float]:
    """Score of a bare number (no % and no denominator) under ``mode``."""
    if mode == "rubric":
        return _rubric(x, text)
    if not math.isfinite(x):
        raise _fail(text, f"{x} is not a finite number")
    if x < 0:
        raise _fail(text, f"{x:g} is negative")
    if mode == "unit" or (mode == "auto" and x <= 1):
        if x > 1:
            raise _fail(text, f"{x:g} is above 1, the maximum in unit mode")
        return x + 0.0, x  # + 0.0 turns -0.0 into 0.0
    if x > 100:
        limit = "the maximum in percentage mode" if mode == "percentage" else "auto mode reads 0-1 or 0-100"
        raise _fail(text, f"{x:g} is above 100 ({limit})")
    return x / 100 + 0.0, x


def _percent(x: float, text: str) -> tuple[float, float]:
    if not math.isfinite(x) or x < 0 or x > 100:
        raise _fail(text, f"{x:g}% is not a percentage between 0 and 100")
    return x / 100 + 0.0, x


def _ratio(num: float, den: float, text: str) -> tuple[float, float]:
    # num <= den with den > 0 keeps the ratio in [0, 1] (IEEE division rounds correctly),
    # and checking before dividing avoids overflow on huge numerators.
    if not (math.isfinite(num) and math.isfinite(den) and den > 0 and 0 <= num <= den):
        raise _fail(text, f"{num:g}/{den:g} is not a fraction between 0 and 1")
    value = num / den + 0.0
    return value, value


def _word_verdict(text: str) -> float | None:
    """1.0 / 0.0 for a clear yes/no style verdict, ``None`` if there is none or it is unclear."""
    tokens = _WORD.findall(text.lower().replace("\u2019", "'"))
    verdicts: set[bool] = set()
    for i, token in enumerate(tokens):
        if _is_negation(token):
            # A negation only counts when it plainly targets a verdict word.
            if i + 1 >= len(tokens) or tokens[i + 1] not in _VERDICT_WORDS:
                return None
        elif token in _VERDICT_WORDS:
            negated = i > 0 and _is_negation(tokens[i - 1])
            verdicts.add(_VERDICT_WORDS[token] != negated)
    return float(verdicts.pop()) if len(verdicts) == 1 else None


def _is_negation(token: str) -> bool:
    return token in ("not", "never", "cannot") or token.endswith("n't")


def _parse_text(value: str, mode: str) -> tuple[float, float]:
    text = value.strip()
    if not text:
        raise _fail(value, "the answer is empty")
    if mode == "rubric":
        return _parse_rubric(text)
    items = list(_NUMBER_ITEM.finditer(text))
    if not items:
        verdict = _word_verdict(text)
        if verdict is None:
            raise _fail(text, "it holds no number and no clear yes/no verdict")
        return verdict, verdict
    last = items[-1]
    num = float(last["num"])
    if last["den"] is not None:
        return _ratio(num, float(last["den"]), text)
    if last["pct"] is not None:
        return _percent(num, text)
    return _scale_bare(num, mode, text)


def _parse_rubric(text: str) -> tuple[float, float]:
    """The rubric level of ``text``: its last "ANSWER: n", else its last plain number."""
    marked = list(_RUBRIC_ANSWER.finditer(text))
    if marked:
        return _rubric(float(marked[-1]["num"]), text)
    items = list(_NUMBER_ITEM.finditer(text))
    if not items:
        raise _fail(text, f"it holds no 'ANSWER: n' with n from 1 to {RUBRIC_LEVELS}")
    last = items[-1]
    if last["den"] is not None or last["pct"] is not None:
        raise _fail(text, "a rubric answer is a level from 1 to 5, not a fraction or a percentage")
    return _rubric(float(last["num"]), text)


def normalize_number(value: str | float | int, mode: str = "auto") -> tuple[float, float]:
    """``(score, raw_value)`` for one answer: score in [0, 1], raw_value the number as read.

    ``value`` is answer text or a number; ``True``/``False`` read 1.0/0.0. The rules
    (which number, what each mode does) are in the module doc. Raises
    :class:`ScoreParseError` when no valid score can be read, ``ValueError`` for an
    unknown ``mode`` and ``TypeError`` for a value that is neither text nor a number.
    """
    _check_mode(mode)
    if isinstance(value, bool):
        return float(value), float(value)
    if isinstance(value, numbers.Real):
        try:
            x = float(value)
        except OverflowError:  # an int or Fraction too large for a float
            raise _fail(str(value), "it is too large to be a score") from None
        return _scale_bare(x, mode, repr(value))
    if not isinstance(value, str):
        raise TypeError(f"value must be a str, int, float or bool, got {type(value).__name__}.")
    return _parse_text(value, mode)


def parse_score(text: str, mode: str = "auto") -> ParsedScore:
    """Read one raw model output: :func:`extract_answer`, then :func:`normalize_number`.

    Raises :class:`ScoreParseError` if the answer holds no valid score, ``ValueError``
    for an unknown ``mode`` and ``TypeError`` if ``text`` is not a string.
    """
    _check_mode(mode)
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}.")
    answer = extract_answer(text)
    if not answer:
        raise _fail(text, "the output has no answer")
    score, raw_value = normalize_number(answer, mode)
    return ParsedScore(score=score, raw_value=raw_value, answer=answer, think=extract_think(text))
