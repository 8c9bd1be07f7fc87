"""WACZ 1.1.1 packages of an export, opened by ReplayWeb.page and pywb (docs/web-archives.md).

A WACZ is a ZIP (stored, so its members can be read by range) of the export's WARC,
a CDXJ index, the pages and ``datapackage.json``. Written by hand: the ``wacz``
package (Apache-2.0) would bring about fifty packages, among them an AGPL one
(``surt``) that a runtime dependency may not have; the format is four small,
documented files (specs.webrecorder.net/wacz).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import zipfile
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import Any

from traverse_crawl.snapshots.model import Snapshot
from traverse_crawl.warc.export import Page, write_warc
from traverse_crawl.warc.surt import surt

WACZ_VERSION = "1.1.1"
WARC_NAME = "data.warc.gz"


# The index is named ``indexes/index.cdx`` (CDXJ lines inside): pywb's
# ``wb-manager add --unpack-wacz`` only takes ``.cdx``/``.cdx.gz`` members, and
# ReplayWeb.page reads both names.
def cdxj_line(page: Page) -> str:
    timestamp = "".join(ch for ch in page.ts if ch.isdigit())[:14]
    fields = {
        "url": page.url,
        "mime": page.media.split(";", 1)[0].strip(),
        "status": "200",
        "digest": page.digest,
        "length": str(page.length),
        "offset": str(page.offset),
        "filename": WARC_NAME,
    }
    return f"{surt(page.url)} {timestamp} {json.dumps(fields)}\n"


def pages_jsonl(pages: list[Page]) -> str:
    lines = [{"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}]
    lines += [
        {"id": page.page_id, "url": page.url, "ts": page.ts, "title": page.page_id}
        for page in pages
    ]
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)


def write_wacz(
    path: str, snapshots: Iterable[Snapshot], info: dict[str, str], software: str
) -> list[Page]:
    """Write the WACZ at ``path`` (through a temporary file); return the pages written."""
    with tempfile.TemporaryFile() as warc_file:
        pages = list(write_warc(warc_file, snapshots, info, WARC_NAME))
        index = "".join(sorted(cdxj_line(page) for page in pages))
        members: list[tuple[str, Any]] = [
            ("indexes/index.cdx", index.encode("utf-8")),
            ("pages/pages.jsonl", pages_jsonl(pages).encode("utf-8")),
        ]
        resources = [_resource("archive/" + WARC_NAME, _file_digest(warc_file))]
        resources += [
            _resource(name, (hashlib.sha256(data).hexdigest(), len(data))) for name, data in members
        ]
        package = {
            "profile": "data-package",
            "wacz_version": WACZ_VERSION,
            "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "software": software,
            "resources": resources,
        }
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
            warc_file.seek(0)
            with archive.open("archive/" + WARC_NAME, "w", force_zip64=True) as member:
                shutil.copyfileobj(warc_file, member)
            for name, data in members:
                archive.writestr(name, data)
            archive.writestr("datapackage.json", json.dumps(package, indent=2))
    return pages


def _file_digest(handle: Any) -> tuple[str, int]:
    handle.seek(0)
    digest = hashlib.sha256()
    size = 0
    while chunk := handle.read(1 << 20):
        digest.update(chunk)
        size += len(chunk)
    return digest.hexdigest(), size


def _resource(path: str, digest: tuple[str, int]) -> dict[str, Any]:
    name = path.rsplit("/", 1)[-1]
    return {"name": name, "path": path, "hash": f"sha256:{digest[0]}", "bytes": digest[1]}
