"""What a ``scrapy crawl`` process imports: not the remote-control stack Scrapy's defaults
name, without ``REDIS_URL`` nothing of the distributed crawl, and without
``TRAVERSE_METRICS_PORT`` nothing of prometheus_client."""

from __future__ import annotations

from tests.support.cli import crawl_args, scrapy


def test_a_crawl_process_does_not_import_the_remote_control_stack(tmp_path):
    # Scrapy imports every EXTENSIONS_BASE key, even one mapped to None; RemoteControl's
    # module brings aiohttp and a TLS context into every crawl process (about 0.15 s).
    # A replay of a store that does not exist: one invalid-config page, no network.
    done = scrapy(
        *("crawl", "traverse", "-a", "url=https://example.invalid/"),
        *("-s", "TRAVERSE_MODE=replay", "-s", f"TRAVERSE_STORE={tmp_path / 'none'}"),
        *("-s", f"TRAVERSE_MANIFEST_DIR={tmp_path / 'manifests'}"),
        timeout=120,
        python_flags=("-X", "importtime"),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "scrapy" in imported and "traverse_crawl.config.settings" in imported  # the project
    assert "aiohttp" not in imported
    assert "scrapy.extensions.remote_control" not in imported


def test_a_crawl_without_redis_url_imports_no_distributed_code(tmp_path, server):
    # The middlewares ask the crawler for the shared politeness, and the distributed
    # components join a crawl only with REDIS_URL: a single-process crawl imports
    # neither traverse_crawl/distributed/ nor redis-py (about 0.1 s of every process).
    server.site({"/": '<a href="/next">next</a>', "/next": "the end"})
    done = scrapy(
        *("crawl", "traverse", "-a", f"url={server.url('/')}"),
        *crawl_args(tmp_path, server.origin),
        timeout=120,
        python_flags=("-X", "importtime"),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "traverse_crawl.politeness.shared" in imported  # the middlewares ran
    assert "'downloader/response_count': 3" in done.stderr  # robots.txt and both pages
    assert "redis" not in imported
    assert sorted(m for m in imported if m.startswith("traverse_crawl.distributed")) == []
    # The metrics endpoint's extension is added only with TRAVERSE_METRICS_PORT.
    assert "prometheus_client" not in imported
    assert "traverse_crawl.operations.metrics" not in imported


def test_a_crawl_imports_no_module_its_settings_do_not_use(tmp_path, server):
    # Start-up is most of a small crawl's time: a capture without TRAVERSE_WARC_DIR,
    # whose stderr is not a terminal, imports no WARC code (warcio), no live progress
    # display (rich), no cookie handling (tldextract, requests: Traverse sends no
    # cookies), no DNS message codec (twisted.names: the system resolver answers), and none
    # of the report and WARC commands' own modules.
    server.site({"/": "<p>one page</p>"})
    done = scrapy(
        *("crawl", "traverse", "-a", f"url={server.url('/')}"),
        *crawl_args(tmp_path, server.origin),
        timeout=120,
        python_flags=("-X", "importtime"),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "'downloader/response_count': 2" in done.stderr  # robots.txt and the page
    assert "traverse_crawl.snapshots.writer" in imported  # a capture: the store's writer
    cookies = "scrapy.downloadermiddlewares.cookies"
    for module in ("warcio", "rich", "tldextract", "requests", cookies, "twisted.names.dns"):
        assert module not in imported, module
    assert sorted(m for m in imported if m.startswith("traverse_crawl.warc")) == []
    assert "traverse_crawl.reports.html" not in imported


def test_a_crawl_without_extraction_imports_no_extraction_or_diff_code(tmp_path, server):
    # Scrapy imports every command's module at the start of every command: the extract
    # and diff commands' modules import their machinery when they run, and an unset
    # TRAVERSE_EXTRACT compiles no rules (regex and tomllib: about 0.1 s of every process).
    server.site({"/": "<p>one page</p>"})
    done = scrapy(
        *("crawl", "traverse", "-a", f"url={server.url('/')}"),
        *crawl_args(tmp_path, server.origin),
        timeout=120,
        python_flags=("-X", "importtime"),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "traverse_crawl.config.settings" in imported  # the project's crawl
    for module in (
        "traverse_crawl.extraction.rules",
        "traverse_crawl.extraction.extractor",
        "traverse_crawl.reports.items_diff",
        "concurrent.futures.process",
        "regex",
        "tomllib",
    ):
        assert module not in imported, module
