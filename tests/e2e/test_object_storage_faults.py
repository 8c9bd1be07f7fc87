"""``scrapy crawl`` into an S3 bucket when the bucket or its endpoint fails.

At start: exit 2 naming the setting, before any request. During the crawl: a write
is retried while the endpoint is away (``TRAVERSE_S3_RETRY``), so an endpoint that
comes back loses nothing; one that stays away makes each page's write a page warning,
counted as lost (exit 1). The endpoint is taken away by stopping a TCP relay in front
of the server (moto keeps its objects in memory only: restarting it would empty it).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import scrapy
from tests.support.s3server import SECRET, Relay
from tests.support.server import Reply, Server
from traverse_crawl.snapshots.store import open_snapshot_store, source_dir_name

pytestmark = pytest.mark.s3


def args(tmp: Path, server: Server, *more: str) -> list[str]:
    return [
        "crawl", "traverse", "-a", f"url={server.url('/home.html')}", "-a", "source_id=s",
        "-s", f"TRAVERSE_EGRESS_ALLOW={server.origin}", "-s", "TRAVERSE_MIN_DELAY=0",
        "-s", f"TRAVERSE_STATS_FILE={tmp / 'stats.json'}", *more,
    ]  # fmt: skip


def chain_site(server: Server, pages: int, on_page: dict[int, Any] | None = None) -> None:
    """home → p1 → … → p{pages-1}, one link each; ``on_page[i]`` runs when page i is asked."""
    hooks = on_page or {}

    def page(index: int) -> Any:
        body = f'<a href="p{index + 1}.html">next</a> <p>page {index}</p>'

        def answer(_handler: Any) -> Reply:
            if index in hooks:
                hooks[index]()
            return Reply(body=body)

        return answer

    for i in range(pages):
        server.routes["/home.html" if i == 0 else f"/p{i}.html"] = page(i)


@pytest.mark.parametrize("which", ["TRAVERSE_STORE", "TRAVERSE_MANIFEST_DIR"])
def test_a_missing_bucket_is_exit_2_naming_the_setting_before_any_request(
    server, tmp_path, s3_server, which
):
    chain_site(server, 2)
    bucket = s3_server.new_bucket()
    paths = {"TRAVERSE_STORE": f"s3://{bucket}/st", "TRAVERSE_MANIFEST_DIR": f"s3://{bucket}/m"}
    paths[which] = "s3://no-such-bucket/x"
    settings = [f"{name}={value}" for name, value in paths.items()]
    run = scrapy(*args(tmp_path, server, "-s", settings[0], "-s", settings[1]),
                 *s3_server.setting_args())  # fmt: skip
    assert run.returncode == 2, run.stderr
    errors = [line for line in run.stderr.splitlines() if "error:" in line]
    assert errors == [
        f"__main__.py: error: {which}: s3://no-such-bucket/x: "
        "the bucket 'no-such-bucket' does not exist"
    ], run.stderr
    assert server.hits == []


def test_an_unreachable_endpoint_is_exit_2_naming_the_setting(server, tmp_path, s3_server):
    chain_site(server, 2)
    away = Relay(s3_server.port)  # never started: its port refuses connections
    run = scrapy(
        *args(tmp_path, server, "-s", "TRAVERSE_STORE=s3://b/st"),
        "-s", f"TRAVERSE_MANIFEST_DIR={tmp_path / 'manifests'}",
        *s3_server.setting_args(away.endpoint),
    )  # fmt: skip
    assert run.returncode == 2, run.stderr
    errors = [line for line in run.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1, run.stderr
    assert errors[0].startswith(
        f"__main__.py: error: TRAVERSE_STORE: s3://b/st: "
        f"cannot reach {away.endpoint} (AWS_ENDPOINT_URL)"
    ), run.stderr
    assert "Traceback" not in run.stderr
    assert server.hits == []


def test_an_endpoint_away_for_a_while_loses_no_snapshot(server, tmp_path, s3_server):
    relay = Relay(s3_server.port)
    relay.start()
    restarted = threading.Event()

    def away_for_three_seconds() -> None:
        relay.stop()

        def back() -> None:
            relay.start()
            restarted.set()

        threading.Timer(3.0, back).start()

    chain_site(server, 12, {4: away_for_three_seconds})
    bucket = s3_server.new_bucket()
    run = scrapy(
        *args(tmp_path, server, "-s", f"TRAVERSE_STORE=s3://{bucket}/st"),
        "-s", f"TRAVERSE_MANIFEST_DIR=s3://{bucket}/m", "-s", "TRAVERSE_MAX_PAGES=12",
        "-s", "TRAVERSE_MAX_DEPTH=20", *s3_server.setting_args(relay.endpoint),
        timeout=120,
    )  # fmt: skip
    assert restarted.is_set()
    assert run.returncode == 0, run.stderr
    assert "'AWS_SECRET_ACCESS_KEY': '***'" in run.stderr  # Scrapy's settings line, masked
    assert SECRET not in run.stderr
    stats = json.loads((tmp_path / "stats.json").read_text())["stats"]
    assert stats["snapshot/stored"] == 12
    assert "traverse/lost" not in stats
    manifest = json.loads(s3_server.objects(bucket, "m/")[source_dir_name("s") + ".json"])
    stored = s3_server.objects(bucket, "st/")
    assert len(manifest["pages"]) == len(stored) == 12
    store = open_snapshot_store(f"s3://{bucket}/st", s3_server.settings())
    for page in manifest["pages"]:
        assert "warnings" not in page["fetch"], page
        snapshot = store.get_by_source_ref(page["sourceRef"])
        assert snapshot is not None
        assert snapshot["bodyHash"] == page["fetch"]["snapshot"]["bodyHash"]


def test_an_endpoint_gone_for_good_is_a_page_warning_and_exit_1(server, tmp_path, s3_server):
    relay = Relay(s3_server.port)
    relay.start()
    chain_site(server, 3, {0: relay.stop})  # after the start-up check, before any write
    bucket = s3_server.new_bucket()
    run = scrapy(
        *args(tmp_path, server, "-s", f"TRAVERSE_STORE=s3://{bucket}/st"),
        "-s", f"TRAVERSE_MANIFEST_DIR={tmp_path / 'manifests'}", "-s", "TRAVERSE_S3_RETRY=1",
        *s3_server.setting_args(relay.endpoint),
        timeout=120,
    )  # fmt: skip
    assert run.returncode == 1, run.stderr
    stats = json.loads((tmp_path / "stats.json").read_text())["stats"]
    assert stats["snapshot/store_failed"] == 3
    assert stats["traverse/lost"] == 3
    assert "snapshot/stored" not in stats
    manifest = json.loads(next((tmp_path / "manifests").glob("*.json")).read_text())
    assert len(manifest["pages"]) == 3  # the crawl went on
    assert len(manifest["warnings"]) == 3  # one per page, in page order
    for page, warning in zip(manifest["pages"], manifest["warnings"], strict=True):
        assert warning.startswith(f"[depth {page['depth']}] {page['url']}: store.put failed (write "
                                  f"s3://{bucket}/st/"), warning  # fmt: skip
        assert "Could not connect to the endpoint URL" in warning
        assert warning.endswith("; page fetch result kept, snapshot not persisted")
    assert s3_server.objects(bucket, "st/") == {}
