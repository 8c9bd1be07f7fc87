"""Link discovery: ``<a href>`` only, resolved with WHATWG rules (SPEC §13.4).

Differences from Traverse, chosen on purpose (docs/architecture.md):
- attribute names match in any case (an HTML5 parser sees ``HREF=`` as ``href``);
- ``<base href>`` is honoured, as browsers do (issue 2).
"""

from __future__ import annotations

import logging

from lxml import etree, html

from traverse_crawl.core import urls

logger = logging.getLogger(__name__)


def _parse(body: str) -> etree._Element | None:
    body = body.replace("\x00", "")
    if not body.strip():
        return None
    try:
        parser = html.HTMLParser(recover=True, remove_comments=True, remove_pis=True)
        return html.document_fromstring(body, parser=parser)
    except (etree.ParserError, ValueError):
        return None


def discover_links(body: str, page_url: str, seed_origin: str) -> list[str]:
    """Same-origin, fragment-less hrefs of ``body`` in document order, first wins.

    Never raises: a page that cannot be parsed yields no links.
    """
    root = _parse(body)
    if root is None:
        return []
    base = page_url
    for base_el in root.iter("base"):
        href = base_el.get("href")
        if href is not None and href.strip():
            resolved = urls.normalize(href, page_url)
            if resolved is not None:
                base = resolved
        break
    found: list[str] = []
    seen: set[str] = set()
    # Anchors inside <template> are inert content, as in Traverse's DOM parser.
    for anchor in root.xpath("//a[@href][not(ancestor::template)]"):
        href = anchor.get("href")
        if not href:
            continue
        url = urls.parse(href, base)
        if url is None or url.protocol not in urls.HTTP_SCHEMES:
            continue
        if url.origin != seed_origin:
            continue
        url.hash = ""
        href_norm = str(url.href)
        if href_norm not in seen:
            seen.add(href_norm)
            found.append(href_norm)
    return found
