"""Which servers started by the test session listen off loopback (issue 53: tests stay on loopback).

:class:`ListenerWatch` polls the kernel's socket tables (``/proc/net/tcp`` and ``tcp6``: a read of
a few hundred lines, no process scan) for listening sockets that were not there when it started.
Only a new socket bound to an address other than 127.0.0.0/8 or ::1 (``0.0.0.0`` and ``::``
included) costs more: its owner is looked up among this process and its descendants, and recorded
unless it is one of Ray's processes: its daemons, its workers and the drivers that load it (a
training run, a dry run, a test that starts Ray in-process) listen on the node's address to form
the private cluster that ``RAY_ADDRESS=local`` starts; those sockets are Ray's, not servers of this
project (which Ray-placed judges start as processes of their own). The project's servers (reward
servers, Ray-placed judges, vLLM, the docs site) are all checked.
"""

from __future__ import annotations

import ipaddress
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import psutil

TABLES = (Path("/proc/net/tcp"), Path("/proc/net/tcp6"))
LISTEN = "0A"  # the kernel's TCP_LISTEN state
RAY_MARKS = ("/site-packages/ray/", "ray::", "raylet", "gcs_server")
# In the command line of the servers tests/test_listeners.py starts off loopback on purpose, to
# check a watch of its own: the session's watch leaves them alone.
PROBE_MARK = "--listener-watch-probe"


@dataclass(frozen=True)
class Listener:
    """A listening TCP socket: its address, port and the kernel's inode of the socket."""

    address: str
    port: int
    inode: int

    @property
    def on_loopback(self) -> bool:
        ip = ipaddress.ip_address(self.address)
        mapped = getattr(ip, "ipv4_mapped", None)
        return (mapped or ip).is_loopback


@dataclass(frozen=True)
class OffLoopback:
    """A server a test started that listened off loopback: where, who, and during which test."""

    listener: Listener
    pid: int
    command: str
    test: str

    def describe(self) -> str:
        where = f"{self.listener.address}:{self.listener.port}"
        return f"{where} by pid {self.pid} ({self.command}) during {self.test}"


def _address(hex_address: str) -> str:
    """The kernel's hex address (``0100007F``: little-endian words) as text."""
    raw = bytes.fromhex(hex_address)
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return str(ipaddress.ip_address(words))


def parse_table(text: str) -> list[Listener]:
    """The listening sockets of one ``/proc/net/tcp``-style table (the header line skipped)."""
    found = []
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 10 or fields[3] != LISTEN:
            continue
        address, port = fields[1].split(":")
        found.append(Listener(_address(address), int(port, 16), int(fields[9])))
    return found


def listening() -> list[Listener]:
    """Every listening TCP socket on the machine (IPv4 and IPv6)."""
    return [s for table in TABLES if table.exists() for s in parse_table(table.read_text())]


def owner(inode: int, candidates: Iterable[psutil.Process]) -> psutil.Process | None:
    """The process among ``candidates`` that holds socket ``inode``, if any still does."""
    target = f"socket:[{inode}]"
    for process in candidates:
        fd_dir = f"/proc/{process.pid}/fd"
        try:
            if any(os.readlink(f"{fd_dir}/{fd}") == target for fd in os.listdir(fd_dir)):
                return process
        except OSError:
            continue
    return None


def command_line(process: psutil.Process) -> str | None:
    """``process``'s command line, ``None`` once it is exiting: the kernel frees an exiting
    process's memory (its command line, its mapped libraries) before it closes its files, so for a
    moment it still holds its sockets with nothing left to tell whose they were."""
    try:
        return " ".join(process.cmdline()) or None
    except psutil.Error:
        return None


def is_ray(command: str) -> bool:
    """Whether a command line is one of Ray's daemons or workers (see the module docstring)."""
    return any(mark in command for mark in RAY_MARKS)


def loads_ray(pid: int) -> bool:
    """Whether process ``pid`` has Ray's core library loaded: a Ray driver or worker."""
    try:
        with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as maps:
            return any("_raylet" in line for line in maps)
    except OSError:
        return False


class ListenerWatch:
    """Polls every ``interval_s`` from :meth:`start` to :meth:`stop`; :attr:`found` holds the
    servers that listened off loopback, but those whose command line holds one of ``ignore``.
    ``current_test`` names what was running when each was seen."""

    def __init__(
        self, current_test: Callable[[], str], interval_s: float = 0.5, ignore: tuple[str, ...] = RAY_MARKS
    ) -> None:
        self._current_test, self._interval_s, self._ignore = current_test, interval_s, ignore
        self._known = {s.inode for s in listening()}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="listener-watch", daemon=True)
        self.found: list[OffLoopback] = []

    def start(self) -> ListenerWatch:
        self._thread.start()
        return self

    def stop(self) -> list[OffLoopback]:
        self._stop.set()
        self._thread.join(timeout=10)
        self.poll()
        return self.found

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            self.poll()

    def poll(self) -> None:
        """Look once: record each new off-loopback listener of a descendant that is not Ray's."""
        new = [s for s in listening() if s.inode not in self._known]
        self._known.update(s.inode for s in new)
        outside = [s for s in new if not s.on_loopback]
        if not outside:
            return
        me = psutil.Process()
        candidates = [me, *me.children(recursive=True)]
        for socket in outside:
            process = owner(socket.inode, candidates)
            command = None if process is None else command_line(process)
            if command is None:
                continue  # gone or going, or not ours (the other part of the suite, another program)
            if not any(mark in command for mark in self._ignore) and not loads_ray(process.pid):
                self.found.append(OffLoopback(socket, process.pid, command[:200], self._current_test()))
