"""tests/support/listeners.py: the check that no server a test starts listens off loopback."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Callable

import psutil
import pytest

from tests.support.listeners import PROBE_MARK, Listener, ListenerWatch, command_line, is_ray, parse_table

REST = "00000000:00000000 00:00000000 00000000 0 0 11 1 0000000000000000 100 0 0 10 0"  # queues..inode 11
HEADER = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
TABLE = [
    ("loopback_v4", "0100007F:1F90 00000000:0000 0A", Listener("127.0.0.1", 8080, 11), True),
    ("all_v4", "00000000:1F91 00000000:0000 0A", Listener("0.0.0.0", 8081, 11), False),
    ("interface_v4", "0500000A:0050 00000000:0000 0A", Listener("10.0.0.5", 80, 11), False),
    (
        "loopback_v6",
        "00000000000000000000000001000000:1F90 " + "0" * 32 + ":0000 0A",
        Listener("::1", 8080, 11),
        True,
    ),
    ("all_v6", "0" * 32 + ":1F90 " + "0" * 32 + ":0000 0A", Listener("::", 8080, 11), False),
    (
        "mapped_loopback_v6",
        "0000000000000000FFFF00000100007F:1F90 " + "0" * 32 + ":0000 0A",
        Listener("::ffff:7f00:1", 8080, 11),
        True,
    ),
]


@pytest.mark.parametrize(("line", "listener", "loopback"), [t[1:] for t in TABLE], ids=[t[0] for t in TABLE])
def test_a_listening_socket_is_read_from_the_kernel_table(
    line: str, listener: Listener, loopback: bool
) -> None:
    row = f"   0: {line} {REST}\n"
    [parsed] = parse_table(HEADER + row)
    assert parsed == listener and parsed.on_loopback is loopback


def test_connected_sockets_are_not_listeners() -> None:
    row = f"   0: 0100007F:1F90 0100007F:D431 01 {REST}\n"  # 01: established
    assert parse_table(HEADER + row) == []


@pytest.mark.parametrize(
    ("command", "ray"),
    [
        ("/venv/lib/python3.11/site-packages/ray/core/src/ray/gcs/gcs_server --port 0", True),
        ("ray::RewardReplica.info", True),
        ("/venv/bin/python -m vlm_reward.libero_reward_server --host 0.0.0.0", False),
    ],
    ids=["gcs", "actor", "reward_server"],
)
def test_ray_s_own_processes_are_told_apart(command: str, ray: bool) -> None:
    assert is_ray(command) is ray


def _server(host: str, preload: str = "") -> subprocess.Popen:
    code = (
        f"{preload}import socket, sys, time; s = socket.socket(); s.bind((sys.argv[1], 0)); s.listen();"
        " print('up', flush=True); time.sleep(60)"
    )
    # PROBE_MARK: the session's own watch leaves these alone (they are off loopback on purpose)
    proc = subprocess.Popen([sys.executable, "-c", code, host, PROBE_MARK], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "up"
    return proc


def _interface_address() -> str:
    """An address of this machine other than loopback (what a server bound to it would expose)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the outgoing interface
        return probe.getsockname()[0]


def test_a_child_listening_off_loopback_is_found_and_one_on_loopback_is_not() -> None:
    watch = ListenerWatch(lambda: "this test", interval_s=60)  # polled by hand below
    inside, outside = _server("127.0.0.1"), _server("0.0.0.0")
    try:
        time.sleep(0.2)
        watch.poll()
    finally:
        inside.kill(), outside.kill()
        inside.wait(timeout=10), outside.wait(timeout=10)
    assert [(f.pid, f.listener.address, f.test) for f in watch.found] == [
        (outside.pid, "0.0.0.0", "this test")
    ]


def _poll_while_listening(start: Callable[[], subprocess.Popen]) -> ListenerWatch:
    """A fresh watch, then the server ``start`` starts (after the watch: what listened before it
    is not the test's), one poll while it listens, then the server stopped."""
    watch = ListenerWatch(lambda: "this test", interval_s=60)
    server = start()
    try:
        time.sleep(0.2)
        watch.poll()
    finally:
        server.kill()
        server.wait(timeout=10)
    return watch


def test_a_server_on_the_machine_s_own_interface_address_is_found() -> None:
    try:
        address = _interface_address()
    except OSError:
        pytest.skip("this machine has no network interface besides loopback")
    watch = _poll_while_listening(lambda: _server(address))
    assert [f.listener.address for f in watch.found] == [address]


def test_a_process_that_loads_ray_is_ray_s() -> None:
    """A Ray driver (a training run, a dry run) listens on all addresses for Ray's own cluster."""
    watch = _poll_while_listening(lambda: _server("0.0.0.0", preload="import ray._raylet; "))
    assert watch.found == []


class _Process:
    """A psutil process as seen at one moment: its command line, or an error reading it."""

    def __init__(self, argv: list[str] | Exception) -> None:
        self.argv = argv

    def cmdline(self) -> list[str]:
        if isinstance(self.argv, Exception):
            raise self.argv
        return self.argv


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["python", "-m", "vlm_reward.libero_reward_server"], "python -m vlm_reward.libero_reward_server"),
        ([], None),
        (psutil.NoSuchProcess(1), None),
    ],
    ids=["running", "exiting", "gone"],
)
def test_an_exiting_owner_is_not_told_apart_from_a_gone_one(
    argv: list[str] | Exception, command: str | None
) -> None:
    """A server killed as the watch looks still holds its socket after its command line is freed
    (a Ray-loading probe was once reported as "python" so): it is skipped, as a gone one is."""
    assert command_line(_Process(argv)) == command
