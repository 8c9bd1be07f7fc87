"""Meta robots: ``nofollow`` and ``noarchive`` from a page's head and its headers.

With ``TRAVERSE_ROBOTS_META=obey`` (docs/crawling-real-sites.md, "Meta robots") a page's
directives come from ``<meta name="robots">``, ``<meta name="TOKEN">`` (TOKEN: the first
product token of ``USER_AGENT``, any case) and ``X-Robots-Tag`` headers, bare or with a
``TOKEN:`` prefix that covers the whole list after it (another bot's prefix: not ours).
``none`` is both. Only the document's head is read, by libxml2's push parser, up to
``HEAD_BYTES``: the scan stops where the body starts, so a page costs a bounded read
whatever its size. With the default ``ignore`` nothing here runs.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from lxml import etree

from traverse_crawl.errors import FetchError

HEAD_BYTES = 256 * 1024  # bytes of the (decoded) body read for the head's meta tags
_CHUNK = 4 * 1024
# Where a head usually ends, found with bytes.find (memchr-fast); a cut in the wrong place
# (in a script's text, or another case) only means the parser is fed on, in chunks.
_HEAD_ENDS = (b"</head", b"<body", b"</HEAD", b"<BODY", b"</Head", b"<Body")

# Directives that carry a value after a colon, so a ``NAME:`` before them is no bot's prefix.
_VALUED = frozenset({"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"})
_PREFIX = re.compile(r"\s*([A-Za-z0-9_.\-]+)\s*:(.*)", re.DOTALL)
_SPLIT = re.compile(r"[\s,]+")


@dataclass(frozen=True)
class RobotsMeta:
    """The directives that apply to a page: for each, how it was written and where,
    e.g. ``("noarchive", '<meta name="robots">')``; None when it does not apply."""

    nofollow: tuple[str, str] | None = None
    noarchive: tuple[str, str] | None = None

    def __bool__(self) -> bool:
        return self.nofollow is not None or self.noarchive is not None

    def noarchive_message(self, url: str) -> str:
        assert self.noarchive is not None
        directive, where = self.noarchive
        return f"{directive} in {where} of {url}: the page is not archived"

    def noarchive_error(self, url: str, status: int) -> FetchError:
        """The page's outcome: recorded with no snapshot (nothing stored, no sourceRef,
        no items); its links are read as any page's."""
        return FetchError("noarchive", self.noarchive_message(url), status)


NOTHING = RobotsMeta()


def bot_token(user_agent: str) -> str:
    """The first product token of a User-Agent, lowercased (``Bot/1.0 (...)`` → ``bot``)."""
    parts = re.split(r"[\s/]+", user_agent.strip())
    return parts[0].lower() if parts else ""


def _directives(text: str) -> list[str]:
    return [word for word in _SPLIT.split(text.strip().lower()) if word]


def header_directives(values: Iterable[str], token: str) -> list[tuple[str, str]]:
    """The ``(directive, where)`` of ``X-Robots-Tag`` header values that apply to ``token``."""
    found: list[tuple[str, str]] = []
    for value in values:
        where = "X-Robots-Tag"
        match = _PREFIX.match(value)
        if match is not None and match.group(1).lower() not in _VALUED:
            if match.group(1).lower() != token:
                continue  # another bot's directives
            where = f"X-Robots-Tag ({match.group(1)}:)"
            value = match.group(2)
        found.extend((directive, where) for directive in _directives(value))
    return found


def head_directives(body: bytes, token: str) -> list[tuple[str, str]]:
    """The ``(directive, where)`` of the robots meta tags in the document's head."""
    found: list[tuple[str, str]] = []
    if not body:
        return found
    parser = etree.HTMLPullParser(
        events=("start", "end"), tag=("head", "body", "meta"), recover=True,
        remove_comments=True, remove_pis=True, no_network=True,
    )  # fmt: skip
    head = body[:HEAD_BYTES]
    # The parser builds every element it is fed: feed it up to where the head ends (a
    # cheap search), then, only if it has not seen the end there, the rest in chunks.
    cut = len(head)
    for end in _HEAD_ENDS:  # each search stops where an earlier one found an end
        at = head.find(end, 0, cut)
        cut = at if at >= 0 else cut
    cut = cut + 7 if cut < len(head) else _CHUNK
    ends = [*range(min(cut, len(head)), len(head), _CHUNK), len(head)]
    start = 0
    try:
        for end in [*ends, -1]:
            if end < 0:
                parser.close()
            elif end > start:
                parser.feed(head[start:end])
                start = end
            for event, element in parser.read_events():
                tag = element.tag
                if tag == "body" or (event == "end" and tag == "head"):
                    return found
                if event == "end" or tag != "meta":
                    continue
                name = (element.get("name") or "").strip().lower()
                if name == "robots" or (name and name == token):
                    where = f'<meta name="{element.get("name", "").strip()}">'
                    content = element.get("content") or ""
                    found.extend((directive, where) for directive in _directives(content))
    except (etree.ParserError, etree.XMLSyntaxError, ValueError):
        pass
    return found


def judge(directives: Iterable[tuple[str, str]]) -> RobotsMeta:
    """What the directives mean for the crawl: the first that says each thing wins."""
    nofollow = noarchive = None
    for directive, where in directives:
        if directive in ("nofollow", "none") and nofollow is None:
            nofollow = (directive, where)
        if directive in ("noarchive", "none") and noarchive is None:
            noarchive = (directive, where)
    if nofollow is None and noarchive is None:
        return NOTHING
    return RobotsMeta(nofollow, noarchive)


def robots_meta(headers: Iterable[str], html_body: bytes | None, token: str) -> RobotsMeta:
    """A page's verdict: its ``X-Robots-Tag`` values, then, for an HTML page
    (``html_body`` not None), its head's meta tags."""
    found = header_directives(headers, token)
    if html_body is not None:
        found += head_directives(html_body, token)
    return judge(found)


def decoded_head(body: bytes, content_encoding: str | None, limit: int = HEAD_BYTES) -> bytes:
    """The first ``limit`` bytes of ``body`` with its ``Content-Encoding`` undone
    (gzip, deflate, br, applied in the header's order): what HttpCompressionMiddleware
    will hand the spider, read only as far as the head scan needs. An encoding that
    cannot be undone gives the bytes as they are (what the spider gets too)."""
    codings = [c.strip().lower() for c in (content_encoding or "").split(",") if c.strip()]
    data = body
    for coding in reversed(codings):
        try:
            if coding in ("gzip", "x-gzip"):
                data = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data, limit)
            elif coding == "deflate":
                try:
                    data = zlib.decompressobj().decompress(data, limit)
                except zlib.error:  # raw deflate, as some servers send it
                    data = zlib.decompressobj(-zlib.MAX_WBITS).decompress(data, limit)
            elif coding == "br":
                import brotli

                data = brotli.Decompressor().process(data, output_buffer_limit=limit)
            elif coding == "identity":
                continue
            else:
                return data
        except Exception:  # damaged: the spider gets it as it is (the head scan reads that)
            return data
    return data[:limit]


def nofollow_lines(links: list[str], others: list[list[Any]]) -> list[list[Any]]:
    """A nofollow page's links as skipped lines ``[url, "nofollow", 0]``, in document
    order: its followable ``links`` and its ``others`` (``[url, reason, position]``,
    position = how many of ``links`` come before it, ``crawl/links.py``)."""
    lines: list[list[Any]] = []
    at, count = 0, len(others)
    for position, link in enumerate(links):
        while at < count and others[at][2] <= position:
            lines.append([others[at][0], "nofollow", 0])
            at += 1
        lines.append([link, "nofollow", 0])
    lines.extend([url, "nofollow", 0] for url, *_ in others[at:])
    return lines
