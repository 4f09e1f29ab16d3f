"""Issue 22: connections and memory an attacker can take from the reward server.

Three attacks on one server (``fixed_score``, instant), each measured from outside:

- ``--idle`` TCP connections that never send a byte, and ``--slow`` connections that send
  one header line per second and never finish their headers, held for ``--hold-s``
  seconds: how many the server still holds open at the end (its open sockets, from
  ``/proc``), and how long a normal ``/score`` takes meanwhile;
- ``--uploads`` concurrent inline uploads of ``--upload-mb`` MB each (under the size cap):
  the server's peak RSS over its idle RSS, and the statuses it answered.

``--server-repo`` runs the server of another checkout (e.g. the commit before issue 22, for
the "before" numbers: ``git archive <commit> | tar -x -C /tmp/before``):

    PYTHONPATH=. .venv/bin/python benchmarks/bench_connection_abuse.py [--server-repo /tmp/before]
"""

from __future__ import annotations

import argparse
import socket
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

from benchmarks.harness import REPO, RewardServer, header, parse_args, synthetic_frames
from benchmarks.slow_clients import server_sockets, trickling_headers
from vlm_reward.video_io import encode_mp4


def _add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--idle", type=int, default=3000, help="idle connections (default %(default)s)")
    parser.add_argument(
        "--slow", type=int, default=1500, help="slow-header connections (default %(default)s)"
    )
    parser.add_argument(
        "--hold-s", type=float, default=20.0, help="how long they are held (default %(default)s)"
    )
    parser.add_argument("--uploads", type=int, default=24, help="concurrent uploads (default %(default)s)")
    parser.add_argument("--upload-mb", type=float, default=27.0, help="MB per upload (default %(default)s)")
    parser.add_argument("--server-repo", type=Path, default=REPO, help="checkout whose server runs")


def normal_request(server: RewardServer, video: Path) -> float:
    """Seconds for one normal ``/score`` on a fresh connection (inf if it failed or took > 30 s)."""
    body = {"task_text": "put the bowl on the plate", "video_path": str(video)}
    start = time.perf_counter()
    try:
        ok = requests.post(server.endpoint, json=body, timeout=30).status_code == 200
    except requests.RequestException:
        ok = False
    return time.perf_counter() - start if ok else float("inf")


def connect_many(port: int, n: int) -> list[socket.socket]:
    socks = []
    for _ in range(n):
        try:
            socks.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        except OSError:
            break
    return socks


def attack_connections(server: RewardServer, video: Path, args: argparse.Namespace) -> None:
    idle = connect_many(server.port, args.idle)
    slow = connect_many(server.port, args.slow)
    with trickling_headers(slow, every_s=1.0):
        start = time.monotonic()
        opened = server_sockets(server.pid)
        during = normal_request(server, video)
        peak = opened
        while time.monotonic() - start < args.hold_s:
            time.sleep(1.0)
            peak = max(peak, server_sockets(server.pid))
        held = server_sockets(server.pid)
        late = normal_request(server, video)
        rss = server.rss_bytes() / 2**20
    for s in idle + slow:
        s.close()
    print(f"connections opened by the client: {len(idle)} idle + {len(slow)} slow-header")
    print(f"server sockets: {opened} right after, peak {peak}, {held} after {args.hold_s:g} s")
    print(
        f"normal /score: {during:.3f} s at the start, {late:.3f} s after {args.hold_s:g} s; RSS {rss:.0f} MiB"
    )


def attack_uploads(server: RewardServer, args: argparse.Namespace) -> None:
    payload = b'{"task_text": "t", "video_b64": "' + b"A" * int(args.upload_mb * 2**20) + b'"}'
    base = server.rss_bytes()
    peak = base
    done = threading.Event()

    def watch() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, server.rss_bytes())
            time.sleep(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()

    def upload(_: int) -> str:
        headers = {"content-type": "application/json"}
        try:
            response = requests.post(server.endpoint, data=payload, headers=headers, timeout=120)
        except requests.RequestException as exc:
            return type(exc).__name__
        return str(response.status_code)

    with ThreadPoolExecutor(args.uploads) as pool:
        statuses = list(pool.map(upload, range(args.uploads)))
    done.set()
    watcher.join()
    counts = {s: statuses.count(s) for s in sorted(set(statuses))}
    print(
        f"{args.uploads} concurrent uploads of {args.upload_mb:g} MB: RSS {base / 2**20:.0f} MiB idle, "
        f"peak {peak / 2**20:.0f} MiB; answers {counts}"
    )


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], repeats=1, add=_add)
    header("Issue 22: connection and upload abuse")
    print(f"# server from {args.server_repo}")
    with tempfile.TemporaryDirectory(prefix="bench-connection-abuse-") as tmp:
        root = Path(tmp)
        video = root / "episode.mp4"
        encode_mp4(synthetic_frames(16), video, fps=4)
        base = ["--backend", "fixed_score", "--model", "m", "--video-root", str(root)]
        for name, attack in (("connections", attack_connections), ("uploads", attack_uploads)):
            server = RewardServer(base, root / f"{name}.log", repo=args.server_repo).wait_ready()
            try:
                if attack is attack_connections:
                    attack(server, video, args)
                else:
                    attack(server, args)
            finally:
                server.stop(grace=10)


if __name__ == "__main__":
    main()
