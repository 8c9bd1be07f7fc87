"""A hostile world: broken servers and damaged inputs at real loopback servers."""

from __future__ import annotations

import base64
import gzip
import json
import logging
import time
import zlib

import brotli
import pytest
import pytest_twisted

from tests.component.fetch.test_polite_fetching import sequence
from tests.support.server import Reply
from tests.support.tlsserver import serve_tls

# -- decompression bombs are too-large (DOWNLOAD_MAXSIZE) ---------------------------

_ZEROS = b"\0" * (4 * 1024 * 1024)
_BOMBS = {
    "gzip": gzip.compress(_ZEROS),
    "deflate": zlib.compress(_ZEROS),
    "br": brotli.compress(_ZEROS),
}


@pytest.mark.parametrize("encoding", sorted(_BOMBS))
@pytest_twisted.ensureDeferred
async def test_decompression_bomb_is_too_large_and_not_retried(server, crawl, encoding):
    server.routes["/bomb"] = Reply(
        body=_BOMBS[encoding], headers={"Content-Encoding": encoding}, content_type="text/html"
    )
    url = server.url("/bomb")
    result = await crawl(settings={"DOWNLOAD_MAXSIZE": 1_000_000}, url=url)
    fetch = result.manifest["pages"][0]["fetch"]
    assert fetch["error"] == {
        "kind": "too-large",
        "message": f"response from {url} exceeds 1000000 bytes",
    }
    assert server.count("/bomb") == 1


# -- Retry-After that is not a number or a date means the normal backoff --------------


@pytest_twisted.ensureDeferred
async def test_non_ascii_retry_after_is_retried_with_backoff(server, crawl):
    url = server.url("/busy")
    server.routes["/busy"] = sequence(Reply(503, headers={"Retry-After": "\xb2"}), Reply(body="ok"))
    result = await crawl(url=url)
    fetch = result.manifest["pages"][0]["fetch"]
    assert fetch["snapshot"]["status"] == 200
    assert fetch["warnings"] == [f"retry 1/2 for {url} after HTTP 503"]
    assert server.count("/busy") == 2


# -- the first request to an origin never waits on the machine's uptime ---------------


@pytest_twisted.ensureDeferred
async def test_first_request_is_not_delayed_on_a_freshly_booted_machine(server, crawl, monkeypatch):
    # A fake clock (standing in for the OS) for a machine booted 3 s ago: a first request
    # timed from monotonic 0 would wait 30 - 3 = 27 s at TRAVERSE_MIN_DELAY=30.
    started = time.monotonic()

    def uptime() -> float:
        return 3.0 + time.monotonic() - started

    monkeypatch.setattr("scrapy.core.downloader.monotonic", uptime)
    monkeypatch.setattr("traverse_crawl.politeness.delay_middleware.monotonic", uptime)
    server.site({"/": "one page"})
    result = await crawl(settings={"TRAVERSE_MIN_DELAY": 30}, url=server.url("/"))
    assert "snapshot" in result.manifest["pages"][0]["fetch"]
    (hit,) = [h for h in server.hits if h.path == "/"]
    assert hit.start - started < 5


# -- damaged snapshot files are named, never written into a manifest ------------------


def _strict_json(text: str) -> object:
    def reject(name: str) -> object:
        raise AssertionError(f"invalid JSON constant {name}")

    return json.loads(text, parse_constant=reject)


@pytest_twisted.ensureDeferred
async def test_replay_names_a_damaged_snapshot_file(server, crawl, tmp_path):
    server.site({"/": '<a href="/a">a</a><a href="/b">b</a>', "/a": "page a", "/b": "page b"})
    await crawl(url=server.url("/"))
    files = {json.loads(p.read_text())["url"]: p for p in (tmp_path / "store").rglob("*.json")}
    infinite = files[server.url("/a")]
    infinite.write_text(infinite.read_text().replace('"status": 200', '"status": 1e400'))
    torn = files[server.url("/b")]
    torn.write_text(torn.read_text()[:40])
    result = await crawl(settings={"TRAVERSE_MODE": "replay"}, url=server.url("/"))
    text = next(result.manifest_dir.glob("*.json")).read_text()
    pages = _strict_json(text)["pages"]  # type: ignore[index]
    assert "snapshot" in pages[0]["fetch"]
    for page, path, why in ((pages[1], infinite, "1e400"), (pages[2], torn, "not valid JSON")):
        error = page["fetch"]["error"]
        assert error["kind"] == "no-snapshot"
        assert f"snapshot file {path} is damaged" in error["message"], error
        assert why in error["message"]
    assert result.stats["replay/damaged"] == 2


# -- a same-origin link with userinfo ---------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_same_origin_link_with_userinfo_is_fetched_with_basic_auth(
    server, server2, crawl, caplog
):
    host = server.origin.removeprefix("http://")
    secret_link = f"http://us%40er:s3cr%3At@{host}/private"
    server.site(
        {
            "/": f'<a href="{secret_link}">p</a>',
            "/private": Reply(302, headers={"Location": server2.url("/elsewhere")}),
        }
    )
    server2.site({"/elsewhere": "moved"})
    caplog.set_level(logging.INFO)
    result = await crawl(url=server.url("/"))
    page = result.manifest["pages"][1]
    assert page["url"] == secret_link
    snapshot = page["fetch"]["snapshot"]
    assert snapshot["redirects"] == [server.url("/private")]
    assert snapshot["url"] == server2.url("/elsewhere")
    (hit,) = [h for h in server.hits if h.path == "/private"]
    assert hit.headers["Authorization"] == "Basic " + base64.b64encode(b"us@er:s3cr:t").decode()
    # The credentials never leave their origin, and no log line shows the password
    # (at DEBUG, Scrapy's "Scraped from" dumps the item, whose page URL has it).
    (moved,) = [h for h in server2.hits if h.path == "/elsewhere"]
    assert "Authorization" not in moved.headers
    assert "s3cr" not in caplog.text


# -- disguised numeric hosts: the address they stand for decides (docs/egress.md) ------


@pytest.mark.parametrize("host", ["0x7f000001", "2130706433", "0177.0.0.1", "127.1", "0x7f.1"])
@pytest_twisted.ensureDeferred
async def test_disguised_loopback_seed_is_refused_as_loopback(server, crawl, host):
    port = server.server_address[1]
    server.site({"/": "never fetched"})
    result = await crawl(settings={"TRAVERSE_EGRESS_ALLOW": []}, url=f"http://{host}:{port}/")
    page = result.manifest["pages"][0]
    assert page["url"] == f"http://127.0.0.1:{port}/"  # normalised before any request
    assert page["fetch"]["error"]["kind"] == "egress-denied"
    assert "127.0.0.1 is a loopback address" in page["fetch"]["error"]["message"]
    assert server.hits == []


# -- response headers are capped (TRAVERSE_MAX_HEADER_SIZE) -----------------------------


def _endless_headers(handler) -> Reply:
    handler.wfile.write(b"HTTP/1.1 200 OK\r\n")
    line = b"X-Filler: " + b"a" * 100 + b"\r\n"
    try:
        for _ in range(2_000_000):  # 200 MB unless the client hangs up
            handler.wfile.write(line)
    except OSError:
        pass
    handler.close_connection = True
    return Reply(body="")


def _one_long_line(handler) -> Reply:
    handler.wfile.write(b"HTTP/1.1 200 OK\r\nX-Long: " + b"b" * 200_000 + b"\r\n\r\n")
    handler.close_connection = True
    return Reply(body="")


@pytest_twisted.ensureDeferred
async def test_response_headers_over_the_cap_are_too_large_and_not_retried(server, crawl):
    many = {f"X-H{i}": "v" * 700 for i in range(100)}  # a 70 KB header block
    server.site(
        {
            "/": '<a href="/many">m</a><a href="/endless">e</a><a href="/long">l</a>'
            '<a href="/fine">f</a>',
            "/many": Reply(body="x", headers=many),
            "/fine": Reply(body="ok", headers={f"X-H{i}": "v" * 100 for i in range(100)}),
        }
    )
    server.routes["/endless"] = _endless_headers
    server.routes["/long"] = _one_long_line
    result = await crawl(url=server.url("/"))
    pages = result.manifest["pages"]
    for page, path in zip(pages[1:4], ("/many", "/endless", "/long"), strict=True):
        assert page["fetch"]["error"] == {
            "kind": "too-large",
            "message": f"response headers from {server.url(path)} exceed 65536 bytes "
            "(TRAVERSE_MAX_HEADER_SIZE)",
        }
        # Requests as they arrived: the endless reply's thread may still be writing into
        # the closed connection (its hit is logged when it ends).
        with server.lock:
            assert server.started.count(path) == 1
    assert "snapshot" in pages[4]["fetch"]


@pytest_twisted.ensureDeferred
async def test_header_cap_is_a_setting(server, crawl):
    server.site({"/": Reply(body="x", headers={f"X-H{i}": "v" * 700 for i in range(100)})})
    result = await crawl(settings={"TRAVERSE_MAX_HEADER_SIZE": 200_000}, url=server.url("/"))
    assert "snapshot" in result.manifest["pages"][0]["fetch"]


# -- TLS certificates are verified by default -------------------------------------------


@pytest.fixture
def tls_server(tmp_path):
    yield from serve_tls(tmp_path)


@pytest_twisted.ensureDeferred
async def test_self_signed_certificate_is_refused_by_default(tls_server, crawl):
    tls_server.site({"/": "secret", "/robots.txt": Reply(body="", content_type="text/plain")})
    url = tls_server.url("/")
    result = await crawl(settings={"TRAVERSE_EGRESS_ALLOW": [tls_server.origin]}, url=url)
    fetch = result.manifest["pages"][0]["fetch"]
    assert fetch["error"]["kind"] == "network"
    assert fetch["error"]["message"].startswith(
        f"request to {url} failed: the server's TLS certificate is not trusted"
    )
    # Not retried: the certificate will not change (robots.txt failed the same way).
    assert not [w for w in fetch.get("warnings", []) if w.startswith("retry")]
    assert tls_server.hits == []


@pytest_twisted.ensureDeferred
async def test_unverified_tls_is_allowed_by_setting_with_a_page_warning(tls_server, crawl):
    tls_server.site({"/": "secret", "/robots.txt": Reply(body="", content_type="text/plain")})
    url = tls_server.url("/")
    result = await crawl(
        settings={
            "TRAVERSE_EGRESS_ALLOW": [tls_server.origin],
            "DOWNLOAD_VERIFY_CERTIFICATES": False,
        },
        url=url,
    )
    fetch = result.manifest["pages"][0]["fetch"]
    assert fetch["snapshot"]["status"] == 200
    assert fetch["warnings"] == [
        f"TLS certificate of {url} not verified (DOWNLOAD_VERIFY_CERTIFICATES is False)"
    ]
