"""The comparison's statistics (examples/embodiment/reward_comparison/statistics.py; milliseconds)."""

from __future__ import annotations

from typing import Any

import pytest

from examples.embodiment.reward_comparison import statistics


def _steps(counts: list[tuple[int, ...]], judged: Any = None, length: int = 400, fallback: int = 0) -> list:
    """Groups of 8 with ``counts[k][g]`` successes; ``judged``: None, or a verdict for every episode."""
    out, fallbacks = [], fallback
    for step in counts:
        groups = []
        for n in step:
            group = []
            for e in range(8):
                group.append(
                    {"success": e < n, "judged": judged, "fallback": fallbacks > 0, "length": length}
                )
                fallbacks -= 1
            groups.append(group)
        out.append(groups)
    return out


RISING = [(2, 2), (3, 3), (4, 4), (6, 6), (7, 7)]


def test_a_native_run_has_a_rise_and_no_judge_rates() -> None:
    stats = statistics.run_statistics(_steps(RISING))
    rise = stats["rise"]
    assert (rise["before"], rise["after"]) == (5 / 16, 34 / 48)
    assert rise["gap_closed"] == pytest.approx((34 / 48 - 5 / 16) / (1 - 5 / 16))
    assert rise["rise"]["low"] <= rise["rise"]["estimate"] <= rise["rise"]["high"]
    assert rise["groups"] == [4, 6] and stats["episodes"] == 80
    assert stats["false_positive_rate"] is stats["recall"] is stats["fallbacks"] is None
    assert stats["episode_length"] == {"min": 400, "max": 400}


def test_a_judged_runs_rates_are_pooled_over_episodes_and_its_fallbacks_counted() -> None:
    stats = statistics.run_statistics(_steps(RISING, judged=True, fallback=3))
    assert stats["false_positive_rate"]["estimate"] == 1.0 and stats["recall"]["estimate"] == 1.0
    assert stats["fallbacks"] == 3


def test_a_short_run_has_no_rise() -> None:
    assert statistics.run_statistics(_steps(RISING[:4]))["rise"] is None


def test_each_judged_run_is_paired_with_native_over_the_seeds_both_have() -> None:
    native = {0: _steps(RISING), 1: _steps(RISING)}
    flat = {0: _steps([(2, 2)] * 5, judged=True), 2: _steps([(2, 2)] * 5, judged=True)}
    same = {0: _steps(RISING, judged=True), 1: _steps(RISING, judged=True)}
    ends = statistics.endpoints({"native": native, "flat": flat, "same": same})
    assert set(ends) == {"flat", "same"}
    assert ends["flat"]["seeds"] == [0] and ends["flat"]["per_seed"] == {"0": pytest.approx(4 / 16 - 34 / 48)}
    assert ends["same"]["difference"] == {"estimate": 0.0, "low": 0.0, "high": 0.0, "level": 0.95}
    assert statistics.endpoints({"flat": flat}) == {}, "no native run, nothing to pair with"


def test_the_table_has_a_row_per_run() -> None:
    stats = {"native": statistics.run_statistics(_steps(RISING))}
    stats["judge"] = statistics.run_statistics(_steps(RISING, judged=True, length=270))
    ends = statistics.endpoints({"native": {0: _steps(RISING)}, "judge": {0: _steps(RISING, judged=True)}})
    rows = statistics.table(stats, ends)
    assert len(rows) == 4 and rows[0].startswith("| run | success, first 2 -> last 3")
    assert rows[2].startswith("| native | 0.31 -> 0.71, +0.40 [") and rows[2].endswith(
        "| - | n/a | n/a | - | 400-400 |"
    )
    assert "| +0.00 [+0.00, +0.00] | 1.00 [1.00, 1.00] | 1.00 [1.00, 1.00] | 0 | 270-270 |" in rows[3]


def _learning(directory, seed: int, runs: dict, steps: int = 5, judge_only: bool = False) -> None:
    import json

    directory.mkdir()
    settings = {"seed": seed, "steps": steps, "start": "default", "judge_only": judge_only, "overrides": []}
    learning = {"settings": settings, "runs": {name: {"outcomes": o} for name, o in runs.items()}}
    (directory / "learning.json").write_text(json.dumps(learning))


def test_seeds_pool_into_the_endpoint_and_each_runs_statistics(tmp_path, capsys) -> None:
    import json

    from examples.embodiment.reward_comparison import seeds

    for seed in (0, 1):
        _learning(tmp_path / f"s{seed}", seed, {"native": _steps(RISING), "flat": _steps([(2, 2)] * 5, True)})
    assert seeds.main([str(tmp_path / "s0"), str(tmp_path / "s1"), "--out", str(tmp_path / "out")]) == 0
    summary = json.loads((tmp_path / "out" / "seeds.json").read_text())
    assert summary["primary_endpoint"]["flat"]["per_seed"] == {"0": pytest.approx(-0.4583, abs=1e-4)} | {
        "1": pytest.approx(-0.4583, abs=1e-4)
    }
    assert summary["runs"]["native"]["pooled"]["rise"]["groups"] == [8, 12], "both seeds' groups"
    assert set(summary["runs"]["native"]["rise_per_seed"]) == {"0", "1"}
    printed = capsys.readouterr().out
    assert "[seeds] flat (seeds 0, 1): pooled 0.25 -> 0.25, +0.00" in printed
    assert "last 3 minus native -0.46 [" in printed and "(per seed -0.46, -0.46)" in printed
    assert "| flat |" in (tmp_path / "out" / "seeds.md").read_text()


@pytest.mark.parametrize(
    ("second", "message"),
    [
        ({"seed": 0}, "seed 0 comes twice"),
        ({"seed": 1, "judge_only": True}, "only seeds may differ"),
        ({"seed": 1, "steps": 6}, "only seeds may differ"),
    ],
    ids=["same-seed", "other-mode", "other-steps"],
)
def test_comparisons_that_differ_in_more_than_the_seed_are_not_pooled(
    tmp_path, capsys, second, message
) -> None:
    from examples.embodiment.reward_comparison import seeds

    _learning(tmp_path / "a", 0, {"native": _steps(RISING)})
    _learning(tmp_path / "b", runs={"native": _steps(RISING)}, **second)
    assert seeds.main([str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "out")]) == 2
    assert message in capsys.readouterr().err
