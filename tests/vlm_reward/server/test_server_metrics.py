"""``GET /metrics`` of a real server process, parsed with ``prometheus_client``'s own parser.

A known mix of requests (three scored, a 422, an unknown backend, an unknown path, a request
without a key, a client that leaves mid-generation) moves each series by exactly its count
(tokens included),
and made-up names add no series. The server has a key in ``--api-key-file`` and
``--metrics-public``, so the scrape needs no key while ``/score`` does.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator

import pytest
import requests

from tests.support.server import Samples, ServerProcess, metric_samples

pytestmark = pytest.mark.slow

KEY = "metrics-test-key-5c2e"
AUTH = {"Authorization": f"Bearer {KEY}"}
GENERATE_S = 0.4  # each batch; the leaving client gives up after 0.1 s


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, sample_mp4: str) -> Iterator[ServerProcess]:
    base = tmp_path_factory.mktemp("metrics")
    shutil.copy(sample_mp4, base / "episode.mp4")
    (base / "keys").write_text(f"{KEY}\n")
    args = ["--backend", "fixed_score", "--model", "/models/fake", "--video-root", str(base)]
    args += ["--backend-kwargs", json.dumps({"generate_seconds": GENERATE_S})]
    args += ["--api-key-file", str(base / "keys"), "--metrics-public", "--max-batch-size", "1"]
    proc = ServerProcess(args, base / "server.log").wait_ready()
    yield proc
    proc.stop()


def scrape(server: ServerProcess) -> Samples:
    """Every sample of the scrape (no key: ``--metrics-public``), by name and labels."""
    return metric_samples(server.url(""))


def delta(before: Samples, after: Samples, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """How each series named ``name`` moved (series that did not move are left out)."""
    moved = {}
    for (sample_name, labels), value in after.items():
        change = value - before.get((sample_name, labels), 0.0)
        if sample_name == name and change:
            moved[labels] = change
    return moved


def _requests_labels(route: str, status: int, backend: str, error_type: str) -> tuple[tuple[str, str], ...]:
    return tuple(
        sorted({"route": route, "status": str(status), "backend": backend, "error_type": error_type}.items())
    )


SCORE = {"task_text": "put the bowl on the plate", "video_path": "episode.mp4"}


def test_a_known_mix_of_requests_moves_each_series_by_exactly_its_count(server: ServerProcess) -> None:
    before = scrape(server)
    statuses = [
        requests.post(server.endpoint, json=SCORE, headers=AUTH, timeout=30).status_code for _ in range(3)
    ]
    statuses.append(
        requests.post(server.endpoint, json={"video_path": "x.mp4"}, headers=AUTH, timeout=30).status_code
    )
    made_up = {**SCORE, "backend": "made-up-backend"}
    statuses.append(requests.post(server.endpoint, json=made_up, headers=AUTH, timeout=30).status_code)
    statuses.append(requests.get(server.url("/made-up-path"), headers=AUTH, timeout=30).status_code)
    statuses.append(requests.post(server.endpoint, json=SCORE, timeout=30).status_code)
    with pytest.raises(requests.exceptions.ReadTimeout):
        requests.post(server.endpoint, json=SCORE, headers=AUTH, timeout=0.1)
    server.log_containing("status=499")
    after = scrape(server)

    assert statuses == [200, 200, 200, 422, 404, 404, 401]
    assert delta(before, after, "vlm_reward_requests_total") == {
        _requests_labels("/score", 200, "fixed_score", "none"): 3,
        _requests_labels("/score", 422, "-", "validation_error"): 1,
        _requests_labels("/score", 404, "-", "unknown_backend"): 1,
        _requests_labels("other", 404, "-", "not_found"): 1,
        _requests_labels("/score", 401, "-", "unauthorized"): 1,
        _requests_labels("/score", 499, "fixed_score", "client_disconnected"): 1,
        _requests_labels("/metrics", 200, "-", "none"): 1,  # the first scrape
    }
    backend = (("backend", "fixed_score"),)
    assert delta(before, after, "vlm_reward_jobs_aborted_total") == {
        (("backend", "fixed_score"), ("reason", "client_disconnected")): 1
    }
    assert delta(before, after, "vlm_reward_model_seconds_count") == {backend: 3}
    assert delta(before, after, "vlm_reward_queue_wait_seconds_count") == {backend: 3}
    assert delta(before, after, "vlm_reward_video_decode_seconds_count") == {backend: 4}
    # fixed_score counts a character as a token; the job whose client left adds nothing.
    assert delta(before, after, "vlm_reward_prompt_tokens_total") == {backend: 3 * len(SCORE["task_text"])}
    assert delta(before, after, "vlm_reward_generated_tokens_total") == {
        backend: 3 * len("<answer>0.8</answer>")
    }
    model_sum = after[("vlm_reward_model_seconds_sum", backend)] - before.get(
        ("vlm_reward_model_seconds_sum", backend), 0
    )
    assert 3 * GENERATE_S <= model_sum < 3 * GENERATE_S + 1.0


def test_gauges_and_build_info(server: ServerProcess) -> None:
    time.sleep(GENERATE_S)  # the abandoned job of the test above ends its (uncancellable) batch
    samples = scrape(server)
    states = {
        s: samples[("vlm_reward_backend_state", (("backend", "fixed_score"), ("state", s)))]
        for s in ("loading", "ready", "failed")
    }
    assert states == {"loading": 0.0, "ready": 1.0, "failed": 0.0}
    assert samples[("vlm_reward_jobs_queued", (("backend", "fixed_score"),))] == 0.0
    assert samples[("vlm_reward_jobs_running", (("backend", "fixed_score"),))] == 0.0
    assert samples[("vlm_reward_draining", ())] == 0.0
    info = (("backend", "fixed_score"), ("model", "fake"), ("version", "0.1.0"))
    assert samples[("vlm_reward_build_info", info)] == 1.0


def test_made_up_names_add_no_series(server: ServerProcess) -> None:
    for i in range(20):
        requests.get(server.url(f"/probe-{i}"), headers=AUTH, timeout=10)
        requests.post(server.endpoint, json={**SCORE, "backend": f"probe-{i}"}, headers=AUTH, timeout=10)
    samples = scrape(server)
    assert not any("probe" in value for _, labels in samples for _, value in labels)
    routes = {dict(labels)["route"] for name, labels in samples if name == "vlm_reward_requests_total"}
    assert routes <= {"/score", "/health", "/backends", "/metrics", "other"}


def test_metrics_are_public_but_scoring_is_not(server: ServerProcess) -> None:
    assert requests.get(server.url("/metrics"), timeout=10).status_code == 200
    assert requests.get(server.url("/backends"), timeout=10).status_code == 401
