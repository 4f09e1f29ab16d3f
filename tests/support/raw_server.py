"""A socket server that answers every request with fixed raw bytes: broken HTTP on purpose.

``http.server`` always writes well-formed responses; the faults a reward client must
survive are the ill-formed ones: a connection closed with no answer, a status line and
nothing else, a body cut short, a body that stops arriving, bytes that are not HTTP. This
server reads one whole request (headers and ``Content-Length`` body), sends ``reply``,
waits ``stall`` seconds with the connection open, then closes it.
"""

from __future__ import annotations

import socket
import threading
import time

# Replies that break HTTP in different places (Content-Length promises 100 bytes).
HEAD_100 = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
CLOSED_WITHOUT_REPLY = b""
STATUS_LINE_ONLY = b"HTTP/1.1 200 OK\r\n"
HEADERS_ONLY = HEAD_100
HALF_BODY = HEAD_100 + b'{"score": 0.'
CHUNKED_CUT = b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"sco'
NOT_HTTP = b"SSH-2.0-OpenSSH_9.6\r\n"


def http_response(status: int, body: bytes) -> bytes:
    """A complete, well-formed response, for the faults that are valid HTTP (a 500)."""
    head = f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    return head.encode() + b"Connection: close\r\n\r\n" + body


class RawServer:
    """Listens on 127.0.0.1; ``requests`` counts the requests it has read in full."""

    def __init__(self, reply: bytes, stall: float = 0.0) -> None:
        self.reply, self.stall = reply, stall
        self.requests = 0
        self._lock = threading.Lock()
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self.endpoint = f"http://127.0.0.1:{self._sock.getsockname()[1]}/score"
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        """Stop listening (connections being served finish on their own threads)."""
        self._sock.close()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:  # closed
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(30)
            try:
                _read_request(conn)
            except (OSError, ValueError):
                return
            with self._lock:
                self.requests += 1
            conn.sendall(self.reply)
            time.sleep(self.stall)


def _read_request(conn: socket.socket) -> None:
    """Consume one request: headers, then ``Content-Length`` bytes of body."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            raise ValueError("the client closed before sending a whole request")
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            raise ValueError("the client closed mid-body")
        body += chunk
