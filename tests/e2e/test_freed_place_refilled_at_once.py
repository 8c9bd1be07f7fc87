"""A freed download place is refilled in the loop turn its response arrives.

Scrapy's engine takes the next request on a ``callLater(0)`` timer, a loop turn
after the response that freed the place, behind whatever page work that turn
queued; ``runtime/refill_extension.py`` runs the engine's pass at once. Observed in a
real crawl, one request at a time against a server that answers late, by
counting the event loop's turns (``tests/support/turnprobe.py``).
"""

from __future__ import annotations

import json
import statistics

from tests.support.server import Reply, Server
from tests.support.turnprobe import turns_to_refill

CHILDREN = 12


def _late_site(server: Server) -> None:
    links = "".join(f'<a href="/c{i}.html">c{i}</a>' for i in range(CHILDREN))
    server.site({"/index.html": Reply(body=links, delay=0.02)})
    server.site({f"/c{i}.html": Reply(body=f"<p>{i}</p>", delay=0.02) for i in range(CHILDREN)})


def _enabled_extensions(log: str) -> str:
    """Scrapy's "Enabled extensions:" list in a crawl's log."""
    return log.split("Enabled extensions:", 1)[1].split("]", 1)[0]


def test_the_next_request_reaches_the_downloader_a_turn_sooner(server: Server, tmp_path) -> None:
    _late_site(server)
    on, log = turns_to_refill(server, tmp_path / "on")
    off, _ = turns_to_refill(server, tmp_path / "off", refill=False)
    assert "RefillAtResponse" in _enabled_extensions(log)
    assert len(on) >= CHILDREN and len(off) >= CHILDREN, (on, off)
    assert statistics.median(off) - statistics.median(on) >= 1, (on, off)


def test_replay_runs_without_it(server: Server, tmp_path) -> None:
    """In replay there is no network wait to hide: the extension is not enabled, and the
    replay of a capture finds every page."""
    _late_site(server)
    turns_to_refill(server, tmp_path)  # a capture, into tmp_path / "store"
    server.shutdown()
    server.server_close()
    gaps, log = turns_to_refill(server, tmp_path, "-s", "TRAVERSE_MODE=replay")
    assert gaps == []  # the store answers: no request goes to the downloader
    assert "RefillAtResponse" not in _enabled_extensions(log)
    assert "FrozenStartupHeap" in _enabled_extensions(log)
    # Nothing is wrong: no warning about it.
    assert "Disabled RefillAtResponse" not in log
    (manifest,) = (tmp_path / "manifests").glob("*.json")
    pages = json.loads(manifest.read_text(encoding="utf-8"))["pages"]
    assert len(pages) == CHILDREN + 1
    assert all("snapshot" in page["fetch"] for page in pages)
