"""A Prometheus endpoint while the crawl runs (docs/monitoring.md, "Metrics").

The add-on registers ``MetricsExtension`` only when the port is set, so a crawl without it
never imports prometheus_client. Almost every figure is read when ``/metrics`` is scraped,
from what the crawl keeps anyway (Scrapy's stats, the frontiers, the downloader); per page
there are three counts: its outcome, its download latency and its wait for its origin.
"""

from __future__ import annotations

import errno
import socket
from bisect import bisect_left
from collections.abc import Iterator
from time import monotonic
from typing import Any

from prometheus_client import CollectorRegistry, Histogram, ProcessCollector, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from twisted.internet.error import CannotListenError
from twisted.internet.interfaces import IAddress
from twisted.python.failure import Failure
from twisted.web.http import HTTPChannel
from twisted.web.resource import Resource
from twisted.web.server import Request as WebRequest
from twisted.web.server import Site

from traverse_crawl.config.settings import get_config
from traverse_crawl.crawl.frontier import Frontier
from traverse_crawl.crawl.items import PageItem
from traverse_crawl.crawl.progress import SeedProgress
from traverse_crawl.errors import ConfigError
from traverse_crawl.meta_keys import DOWNLOADER_ENTERED
from traverse_crawl.signals import seed_started
from traverse_crawl.utils.redact import redact_text

PATH = b"/metrics"
# Prometheus's default latency buckets, in seconds (the last one is +Inf).
BOUNDS: tuple[float, ...] = tuple(b for b in Histogram.DEFAULT_BUCKETS if b != float("inf"))
# A politeness wait runs up to the origin's delay (seconds, or a Crawl-delay) or a
# retry's backoff: buckets from 10 ms to 5 minutes.
WAIT_BOUNDS: tuple[float, ...] = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)
# What one client may cost the crawl, whatever it does (docs/monitoring.md, "Scraping the
# metrics"): one request per connection, answered and closed; a connection that has not
# ended this many seconds after it opened (a client that sends slowly, or never reads its
# answer) is cut; at most this many connections at once, any more are closed unanswered;
# and the figures are rendered at most once per SCRAPE_INTERVAL, later scrapes in it get
# the same text.
CONNECTION_SECONDS = 10.0
MAX_CONNECTIONS = 16
SCRAPE_INTERVAL = 0.25
# Origins shown by traverse_origin_delay_seconds: the slowest only, so its labels
# stay bounded however many origins a crawl visits.
SLOWEST_ORIGINS = 10
STATUS_PREFIX = "downloader/response_status_count/"
EXCEPTION_PREFIX = "downloader/exception_type_count/"


def check_port(host: str, port: int) -> None:
    """``ConfigError`` naming ``TRAVERSE_METRICS_PORT`` when ``host:port`` cannot be listened on.

    Called by the crawl command before the reactor runs (exit 2); the extension's own
    listen says the same should the port be taken in between.
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError) as exc:  # UnicodeError: a name IDNA cannot encode
        raise ConfigError("TRAVERSE_METRICS_HOST", f"cannot resolve {host!r}: {exc}") from None
    family, kind, proto, _, address = infos[0]
    probe = socket.socket(family, kind, proto)
    try:
        # As Twisted's listening port does: a closed connection's TIME_WAIT is no conflict.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(address)
    except OSError as exc:
        raise busy(host, port, exc.strerror or str(exc)) from None
    finally:
        probe.close()


def busy(host: str, port: int, reason: str) -> ConfigError:
    return ConfigError("TRAVERSE_METRICS_PORT", f"cannot listen on {host}:{port}: {reason}")


class MetricsExtension:
    """Serves ``GET /metrics`` on ``TRAVERSE_METRICS_HOST:TRAVERSE_METRICS_PORT``."""

    def __init__(self, crawler: Crawler) -> None:
        config = get_config(crawler)
        if not config.metrics_port:
            raise NotConfigured
        self.crawler = crawler
        self.frontiers: dict[int, Frontier] = {}
        self.seed_ids: dict[int, str] = {}
        self.pages: dict[tuple[str, str], int] = {}
        self.latency_buckets = [0] * (len(BOUNDS) + 1)
        self.latency_sum = 0.0
        self.wait_buckets = [0] * (len(WAIT_BOUNDS) + 1)
        self.wait_sum = 0.0
        # The crawl's own registry, not prometheus_client's global one: two crawlers in
        # one process (or tests) never see each other's figures.
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(CrawlCollector(self))
        ProcessCollector(registry=self.registry)  # CPU seconds, resident memory, open files
        crawler.signals.connect(self.seed_started, signal=seed_started)
        crawler.signals.connect(self.item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(self.response_received, signal=signals.response_received)
        crawler.signals.connect(self.entered, signal=signals.request_reached_downloader)
        crawler.signals.connect(self.headers_received, signal=signals.headers_received)
        crawler.signals.connect(self.engine_stopped, signal=signals.engine_stopped)
        self.port = self.listen(config.metrics_host, config.metrics_port)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> MetricsExtension:
        return cls(crawler)

    def listen(self, host: str, port: int) -> Any:
        # Served by the crawl's own reactor, not prometheus_client's start_http_server
        # (a thread): collect() then runs between the crawl's callbacks, so it reads the
        # stats, the frontiers and these counters without locks and never sees a dict
        # that changes size while it is read; a scrape costs the crawl one short turn.
        from twisted.internet import reactor

        listener: Any = reactor  # Twisted's interfaces type the reactor poorly
        site = MetricsSite(MetricsPage(self.registry))
        try:
            return listener.listenTCP(port, site, interface=host)
        except CannotListenError as exc:
            reason = exc.socketError
            text = getattr(reason, "strerror", None) or errno.errorcode.get(
                getattr(reason, "errno", 0) or 0, str(reason)
            )
            raise busy(host, port, text) from None

    def engine_stopped(self) -> None:
        if self.port is not None:
            self.port.stopListening()
            self.port = None

    def seed_started(self, frontier: Frontier, seed_key: int) -> None:
        self.frontiers[seed_key] = frontier
        self.seed_ids[seed_key] = redact_text(frontier.seed_id)

    def item_scraped(self, item: Any, spider: Spider) -> None:
        if not isinstance(item, PageItem):
            return
        error = item["fetch"].get("error")
        key = (self._seed_id(item.seed_key, spider), error["kind"] if error else "ok")
        self.pages[key] = self.pages.get(key, 0) + 1

    def _seed_id(self, seed_key: int, spider: Spider) -> str:
        seed_id = self.seed_ids.get(seed_key)
        if seed_id is None:  # a distributed worker's seeds are not announced
            seeds = getattr(spider, "seeds", None)
            seed_id = redact_text(seeds[seed_key].id) if seeds is not None else str(seed_key)
            self.seed_ids[seed_key] = seed_id
        return seed_id

    def entered(self, request: Request, spider: Spider) -> None:
        # Sent as the request joins its origin's slot queue, after the downloader
        # middlewares (robots.txt, politeness) let it through.
        request.meta[DOWNLOADER_ENTERED] = monotonic()

    def headers_received(
        self, headers: Any, body_length: int, request: Request, spider: Spider
    ) -> None:
        # Scrapy's handler sets download_latency (send to headers, monotonic) just
        # before this signal: what came before the send was the wait for the origin.
        entered = request.meta.get(DOWNLOADER_ENTERED)
        latency = request.meta.get("download_latency")
        if entered is not None and latency is not None:
            wait = max(0.0, monotonic() - latency - entered)
            self.wait_buckets[bisect_left(WAIT_BOUNDS, wait)] += 1
            self.wait_sum += wait

    def response_received(self, response: Response, request: Request, spider: Spider) -> None:
        latency = request.meta.get("download_latency")
        if latency is not None:  # None: served without a download (replay)
            self.latency_buckets[bisect_left(BOUNDS, latency)] += 1
            self.latency_sum += latency


class CrawlCollector(Collector):
    """Every ``traverse_*`` metric, built from the crawl's figures at scrape time."""

    def __init__(self, extension: MetricsExtension) -> None:
        self.extension = extension

    def collect(self) -> Iterator[Metric]:
        ext = self.extension
        stats: dict[str, Any] = ext.crawler.stats.get_stats() if ext.crawler.stats else {}

        pages = CounterMetricFamily(
            "traverse_pages", "Pages recorded, by seed and outcome (ok or the error kind).",
            labels=["seed", "outcome"],
        )  # fmt: skip
        for (seed_id, outcome), count in sorted(ext.pages.items()):
            pages.add_metric([seed_id, outcome], count)
        yield pages

        queued = GaugeMetricFamily(
            "traverse_queued", "URLs of the seed still to record within its page budget.",
            labels=["seed"],
        )  # fmt: skip
        for frontier in ext.frontiers.values():
            queued.add_metric(
                [redact_text(frontier.seed_id)], SeedProgress(frontier).figures().queued
            )
        yield queued

        requests = CounterMetricFamily(
            "traverse_requests", "Responses downloaded (robots.txt, sitemaps, retries and "
            "redirect hops included), by HTTP status.", labels=["status"],
        )  # fmt: skip
        errors = CounterMetricFamily(
            "traverse_download_errors", "Downloads that ended without a response, by exception.",
            labels=["exception"],
        )  # fmt: skip
        for name, value in sorted(stats.items()):
            if name.startswith(STATUS_PREFIX):
                requests.add_metric([name[len(STATUS_PREFIX) :]], value)
            elif name.startswith(EXCEPTION_PREFIX):
                errors.add_metric([name[len(EXCEPTION_PREFIX) :]], value)
        yield requests
        yield errors
        yield CounterMetricFamily(
            "traverse_response_bytes", "Bytes of the responses downloaded, headers included.",
            value=stats.get("downloader/response_bytes", 0),
        )  # fmt: skip

        yield HistogramMetricFamily(
            "traverse_fetch_seconds", "Download latency of each response, in seconds.",
            buckets=cumulative(BOUNDS, ext.latency_buckets), sum_value=ext.latency_sum,
        )  # fmt: skip
        yield HistogramMetricFamily(
            "traverse_politeness_wait_seconds",
            "Seconds each download waited for its origin's turn before it was sent (the "
            "delay, one request at a time, a retry's backoff).",
            buckets=cumulative(WAIT_BOUNDS, ext.wait_buckets),
            sum_value=ext.wait_sum,
        )

        engine = ext.crawler.engine
        downloader = engine.downloader if engine is not None else None
        slots = downloader.slots if downloader is not None else {}
        yield GaugeMetricFamily(
            "traverse_in_flight", "Requests being downloaded.",
            value=len(downloader.active) if downloader is not None else 0,
        )  # fmt: skip
        yield GaugeMetricFamily(
            "traverse_politeness_waiting",
            "Requests waiting for their origin's turn (the delay, one request at a time).",
            value=sum(len(slot.queue) for slot in slots.values()),
        )
        yield GaugeMetricFamily(
            "traverse_politeness_origins", "Origins with a download slot.", value=len(slots)
        )

        snapshots = CounterMetricFamily(
            "traverse_snapshot_writes", "Snapshots written to the store, by result.",
            labels=["result"],
        )  # fmt: skip
        snapshots.add_metric(["stored"], stats.get("snapshot/stored", 0))
        snapshots.add_metric(["failed"], stats.get("snapshot/store_failed", 0))
        yield snapshots
        yield CounterMetricFamily(
            "traverse_snapshot_batches", "Batches the snapshot writer made durable.",
            value=stats.get("snapshot/batches", 0),
        )  # fmt: skip
        manifests = CounterMetricFamily(
            "traverse_manifest_writes", "Manifests written, by result.", labels=["result"]
        )
        # failed: the manifest directory refused it; fallback: its content went elsewhere.
        for result, key in (("written", "written"), ("failed", "error"), ("fallback", "fallback")):
            manifests.add_metric([result], stats.get(f"manifest/{key}", 0))
        yield manifests
        if get_config(ext.crawler).checks is not None:
            yield checks_gauge(ext.crawler)
        yield origin_delays(ext.crawler)


def checks_gauge(crawler: Crawler) -> GaugeMetricFamily:
    """``traverse_checks_failed{seed,check}``: 1 for each failing check so far."""
    from traverse_crawl.checks.extension import failed_checks

    gauge = GaugeMetricFamily(
        "traverse_checks_failed",
        "1 for each data-quality check that failed (TRAVERSE_CHECKS), by seed and check.",
        labels=["seed", "check"],
    )
    for seed_id, check in failed_checks(crawler):
        gauge.add_metric([redact_text(seed_id), check], 1)
    return gauge


def origin_delays(crawler: Crawler) -> GaugeMetricFamily:
    """The back-off or pace of the slowest origins (docs/crawling-real-sites.md)."""
    from traverse_crawl.politeness.blocking import pushback

    delays = GaugeMetricFamily(
        "traverse_origin_delay_seconds",
        f"Extra seconds between requests of the {SLOWEST_ORIGINS} slowest origins that push "
        "back (their back-off, or TRAVERSE_DELAY_FACTOR's pace).",
        labels=["origin"],
    )
    for origin, seconds in pushback(crawler).slowest(SLOWEST_ORIGINS):
        delays.add_metric([redact_text(origin)], seconds)
    return delays


def cumulative(bounds: tuple[float, ...], counts: list[int]) -> list[tuple[str, int]]:
    """A histogram's buckets as Prometheus wants them: cumulative counts, +Inf last."""
    total, buckets = 0, []
    for bound, count in zip((*bounds, float("inf")), counts, strict=True):
        total += count
        buckets.append(("+Inf" if bound == float("inf") else repr(float(bound)), total))
    return buckets


class MetricsPage(Resource):
    """``GET /metrics``: the registry in Prometheus's text format; any other path is 404."""

    isLeaf = True

    def __init__(self, registry: CollectorRegistry) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.registry = registry
        self.text = b""
        self.rendered_at = float("-inf")

    def render_GET(self, request: WebRequest) -> bytes:
        if request.path != PATH:
            request.setResponseCode(404)
            return b"not found: the metrics are at /metrics\n"
        request.setHeader(b"Content-Type", CONTENT_TYPE_LATEST.encode("ascii"))  # type: ignore[no-untyped-call]
        now = monotonic()
        if now - self.rendered_at >= SCRAPE_INTERVAL:
            self.text = generate_latest(self.registry)
            self.rendered_at = now
        return self.text


class MetricsChannel(HTTPChannel):
    """Twisted's HTTP/1.1 server, one request per connection and a bounded life.

    Pipelined requests after the first are read and dropped (Twisted does so on a
    connection that is not persistent), never answered one after another in one turn of
    the crawl; the answer says ``Connection: close``, and the connection is aborted,
    whatever is left of its answer dropped, once it has lived ``CONNECTION_SECONDS``.
    """

    site: MetricsSite

    def connectionMade(self) -> None:
        super().connectionMade()  # type: ignore[no-untyped-call]
        self.site.open += 1
        transport: Any = self.transport
        later: Any = self.callLater  # the site's reactor's (HTTPFactory.buildProtocol)
        self.deadline: Any = later(CONNECTION_SECONDS, transport.abortConnection)

    def connectionLost(self, reason: Failure) -> None:  # type: ignore[override]
        self.site.open -= 1
        if self.deadline is not None and self.deadline.active():
            self.deadline.cancel()
        self.deadline = None
        super().connectionLost(reason)  # type: ignore[no-untyped-call]

    def checkPersistence(self, request: Any, version: bytes) -> bool:
        request.responseHeaders.setRawHeaders(b"Connection", [b"close"])
        return False


class MetricsSite(Site):
    """The endpoint's factory: ``MetricsChannel`` connections, at most ``MAX_CONNECTIONS``."""

    protocol = MetricsChannel  # type: ignore[assignment]
    noisy = False  # no "Starting factory" lines in the crawl's log

    def __init__(self, resource: Resource) -> None:
        super().__init__(resource)  # type: ignore[no-untyped-call]
        # No idle timeout of Twisted's (it logs each client it times out): a connection's
        # whole life is bounded by MetricsChannel's deadline instead.
        self.timeOut = None
        self.open = 0

    def buildProtocol(self, addr: IAddress | None) -> Any:
        if self.open >= MAX_CONNECTIONS:
            return None  # Twisted closes the connection at once
        return super().buildProtocol(addr)  # type: ignore[no-untyped-call]
