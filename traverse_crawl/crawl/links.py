"""Link discovery: ``<a href>`` only, resolved with WHATWG rules, same-origin, fragment-less.

On purpose unlike Traverse (docs/architecture.md, "Deliberate differences"): attribute
names match in any case, as an HTML5 parser reads them, and ``<base href>`` is honoured,
as browsers do. The work is bounded: the parse's bounds (``crawl/html.py``), and at most
``max_links`` distinct links per page (``TRAVERSE_MAX_LINKS_PER_PAGE``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any

import ada_url

from traverse_crawl.crawl.html import anchors_streamed, parse_html_bounded
from traverse_crawl.fetch import urls

# Pages at least this long (characters) are read for links as a stream, element by
# element (``crawl/html.py``, ``anchors_streamed``), not as one tree: a large page's
# tree is many times its size. The links are the same either way.
STREAM_CHARS = 2 << 20
# Pages at least this long (characters) are parsed for links in a worker thread.
THREAD_PARSE_CHARS = 256 * 1024


def discover_links(body: str, page_url: str, seed_origin: str) -> list[str]:
    """Same-origin, fragment-less hrefs of ``body`` in document order, first wins."""
    return find_links(body, page_url, seed_origin)[0]


async def find_links_in_turn(body: str, *args: Any) -> tuple[list[str], list[str]]:
    """``find_links(body, *args)``, on a running event loop: a large page is parsed in a
    worker thread (lxml releases the GIL while it parses), so other seeds' requests and
    a stop signal go on meanwhile; a small one is not worth the hop."""
    if len(body) < THREAD_PARSE_CHARS:
        return find_links(body, *args)
    return await asyncio.to_thread(find_links, body, *args)


def find_links(
    body: str,
    page_url: str,
    seed_origin: str,
    max_links: int | None = None,
    skipped: list[list[Any]] | None = None,
    judge: Judge | None = None,
) -> tuple[list[str], list[str]]:
    """Same-origin, fragment-less hrefs of ``body`` in document order, first wins,
    at most ``max_links`` of them; and the page warnings for each bound hit.

    With a ``skipped`` list (``TRAVERSE_SKIPPED``), every other distinct link of the
    page is appended to it as ``[url, reason, position]`` in document order, with
    reason ``off-origin``, ``not-http`` or ``link-limit`` and position the number of
    links found before it (``crawl/skipped.py``). Never raises: a page that
    cannot be parsed yields no links.

    With a ``judge`` (a seed's crawl policy, ``crawl/scope.py``), the links it admits
    are found instead of the same-origin ones; the others are skipped with its reason
    (and a trap's rule as a fourth value).
    """
    hrefs: Iterable[str | None]
    # Large pages: the same anchors, without the page's whole tree.
    streamed = anchors_streamed(body) if len(body) >= STREAM_CHARS else None
    if streamed is not None:
        hrefs, base_href, warnings = streamed.hrefs, streamed.base_href, streamed.warnings
    else:
        parsed = parse_html_bounded(body)
        root, warnings = parsed.root, parsed.warnings
        if root is None:
            return [], warnings
        base_href = None
        for base_el in root.iter("base"):
            base_href = base_el.get("href")
            break
        # Anchors inside <template> are inert content, as in Traverse's DOM parser;
        # the XPath that excludes them costs more, so it runs only when needed.
        if root.find(".//template") is None:
            anchors = root.iter("a")
        else:
            anchors = root.xpath("//a[@href][not(ancestor::template)]")
        hrefs = (anchor.get("href") for anchor in anchors)
    base = page_url
    if base_href is not None and base_href.strip():
        resolved = urls.normalize(base_href, page_url)
        if resolved is not None:
            base = resolved
    found: list[str] = []
    seen: set[str] = set()
    over = False  # past max_links (with a skipped list, the rest of the page is read)
    prefix = seed_origin + "/"
    for href in hrefs:
        if not href:
            continue
        if judge is not None:
            resolved = _judged(base, href, judge, seen, skipped, len(found))
            if resolved is None:
                continue
        else:
            resolved = resolve_on_origin(base, href, seed_origin, prefix)
            if resolved is None:
                if skipped is not None:
                    _skip_other(base, href, seen, skipped, len(found))
                continue
        if resolved in seen:
            continue
        if max_links is not None and len(found) >= max_links:
            if not over:
                warnings.append(
                    f"more than {max_links} links on the page; only the first {max_links} "
                    "were followed (TRAVERSE_MAX_LINKS_PER_PAGE)"
                )
            if skipped is None:
                break
            over = True
            seen.add(resolved)
            skipped.append([resolved, "link-limit", len(found)])
            continue
        seen.add(resolved)
        found.append(resolved)
    return found, warnings


# A crawl policy's verdict on a link: None (admitted) or (reason, trap rule or None).
Judge = Callable[[str], "tuple[str, str | None] | None"]


def _judged(
    base: str,
    href: str,
    judge: Judge,
    seen: set[str],
    skipped: list[list[Any]] | None,
    position: int,
) -> str | None:
    """``href`` resolved without its fragment when ``judge`` admits it; else None, and
    (with a ``skipped`` list) its line, once a page: ``not-http`` or the judge's reason."""
    try:
        resolved = ada_url.join_url(base, href)
    except ValueError:
        return None
    if resolved.startswith(("http:", "https:")):
        cut = resolved.find("#")
        url = resolved[:cut] if cut >= 0 else resolved
        verdict = judge(url)
        if verdict is None:
            return url
        line = (
            [url, verdict[0], position]
            if verdict[1] is None
            else [url, *verdict[:1], position, verdict[1]]
        )
    else:
        url, line = resolved, [resolved, "not-http", position]
    if skipped is not None and url not in seen:
        seen.add(url)
        skipped.append(line)
    return None


def _skip_other(
    base: str, href: str, seen: set[str], skipped: list[list[Any]], position: int
) -> None:
    """An href not on the seed's origin: ``off-origin`` or ``not-http``, once a page."""
    try:
        resolved = ada_url.join_url(base, href)
    except ValueError:
        return  # no URL at all (an unparsable href): nothing a frontier could admit
    if resolved.startswith(("http:", "https:")):
        cut = resolved.find("#")
        url, reason = (resolved[:cut] if cut >= 0 else resolved), "off-origin"
    else:
        url, reason = resolved, "not-http"
    if url not in seen:
        seen.add(url)
        skipped.append([url, reason, position])


def resolve_on_origin(
    base: str, href: str, seed_origin: str, prefix: str | None = None
) -> str | None:
    """``href`` resolved against ``base`` without its fragment, when on ``seed_origin``.

    ``join_url`` resolves in C and returns the WHATWG serialisation, three times
    faster than URL objects. A serialised http(s) URL on the seed's origin starts
    with the origin and "/" (``prefix``, computed once by a caller in a loop);
    other origins and schemes never do.
    """
    try:
        resolved = ada_url.join_url(base, href)
    except ValueError:
        return None
    if not resolved.startswith(prefix or seed_origin + "/") and not urls.same_origin(
        resolved, seed_origin
    ):
        return None
    cut = resolved.find("#")
    return resolved[:cut] if cut >= 0 else resolved
