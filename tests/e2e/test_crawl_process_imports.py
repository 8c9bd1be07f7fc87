"""What a ``scrapy crawl`` process imports: not the remote-control stack Scrapy's defaults name."""

from __future__ import annotations

from tests.support.cli import scrapy


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
