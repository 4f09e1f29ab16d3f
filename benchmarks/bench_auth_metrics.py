"""Issue 22: what API keys and ``/metrics`` cost a ``/score``, with an instant backend.

Two servers side by side in one run: one with a key (``VLM_REWARD_API_KEY``) and metrics
on, one with neither (``--no-metrics``). One client per server, one request at a time, the
16-frame 256x256 MP4 the env sends, by path. Ratios are taken per repetition (keyed /
open) before the median. Target: <= 1.03x.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_auth_metrics.py [--repeats 300]
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import requests

from benchmarks.harness import (
    RewardServer,
    Row,
    Stats,
    header,
    interleave,
    parse_args,
    print_table,
    ratios,
    synthetic_frames,
    timed,
    verdict,
)
from vlm_reward.protocol import API_KEY_ENV
from vlm_reward.video_io import encode_mp4

KEY = "bench-key-0f4c1d2e9a"
TARGET = 1.03


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], repeats=300)
    header("Issue 22: /score with API key and metrics on vs off (instant backend)")
    with tempfile.TemporaryDirectory(prefix="bench-auth-metrics-") as tmp:
        root = Path(tmp)
        video = root / "episode.mp4"
        encode_mp4(synthetic_frames(16), video, fps=4)
        body = {"task_text": "put the bowl on the plate", "video_path": str(video)}
        base = ["--backend", "fixed_score", "--model", "m", "--video-root", str(root)]
        on = RewardServer(base, root / "on.log", env={API_KEY_ENV: KEY})
        off = RewardServer([*base, "--no-metrics"], root / "off.log", env={API_KEY_ENV: ""})
        sessions = {"on": requests.Session(), "off": requests.Session()}
        sessions["on"].headers["Authorization"] = f"Bearer {KEY}"
        try:
            on.wait_ready()
            off.wait_ready()

            def score(name: str, server: RewardServer) -> float:
                def post() -> None:
                    sessions[name].post(server.endpoint, json=body, timeout=30).raise_for_status()

                return timed(post)

            samples = interleave(
                {"on": lambda: score("on", on), "off": lambda: score("off", off)}, args.repeats, warmup=10
            )
            scraped = sessions["on"].get(on.url("/metrics"), timeout=30).text
        finally:
            for session in sessions.values():
                session.close()
            on.stop()
            off.stop()
    ratio = Stats.of(ratios(samples["on"], samples["off"]))
    rows = [
        Row("/score, key + metrics on", Stats.of(samples["on"]), "ms", 1e3),
        Row("/score, no key, --no-metrics", Stats.of(samples["off"]), "ms", 1e3),
        Row("ratio on / off (per repetition)", ratio, "x", 1.0),
    ]
    print_table(f"{args.repeats} interleaved repetitions, one request at a time", rows)
    counted = 'vlm_reward_requests_total{backend="fixed_score",error_type="none",route="/score",status="200"}'
    assert counted in scraped, "the keyed server counted its requests"
    print(verdict("median ratio on / off", ratio.median, f"<= {TARGET}x", ratio.median <= TARGET))


if __name__ == "__main__":
    main()
