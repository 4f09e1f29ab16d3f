"""``start_reward_server.sh``'s usage: what it lists comes from the code, not from its own text.

Run without its two arguments, it prints its header and the facts it takes from the code: every
backend name the registry accepts (aliases too) and the server's default host and port, which
are also where it starts when ``HOST`` and ``PORT`` are not set. (Starting and failing:
``tests/vlm_reward/server/test_server_start_failures.py``.)
"""

from __future__ import annotations

import subprocess

from docgen.commands import script_usage
from tests.support.server import REPO
from vlm_reward.backends import available_backends, resolve_backend
from vlm_reward.protocol import DEFAULT_HOST, DEFAULT_PORT

SCRIPT = REPO / "examples" / "embodiment" / "scripts" / "start_reward_server.sh"


def test_without_arguments_it_prints_its_usage_every_backend_and_the_port() -> None:
    result = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and result.stdout == ""
    lines = result.stderr.splitlines()
    header = [line.removeprefix("#").removeprefix(" ") for line in lines[:-3]]
    assert "\n".join(header).strip("\n") == script_usage(SCRIPT)
    # The project's own backends (the tests' plugins may have registered more in this process).
    own = [n for n in available_backends() if resolve_backend(n).__module__.startswith("vlm_reward.")]
    assert lines[-3:] == [
        f"backends: {', '.join(own)}",
        f"default HOST: {DEFAULT_HOST}",
        f"default PORT: {DEFAULT_PORT}",
    ]
    assert "resnet" in own
