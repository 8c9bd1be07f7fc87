"""Read one sitemap file, in memory: XML, sitemap index, RSS/Atom, plain text.

Pure: the Scrapy side (``sitemaps/requests.py``) fetches the file, un-gzips it and
decodes it; this module turns its text into an ordered list of locations and the
reasons it was not read in full. lxml's pull parser in strict mode, not Scrapy's
``Sitemap``, whose ``recover=True`` turns malformed XML into wrong URLs
(docs/architecture.md, "Sitemaps").
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from lxml import etree

# The same well-kept parser as Scrapy's (libxml2 through lxml, with Scrapy's safety
# options) in strict mode: a location counts only once the end tag of its entry
# (``</url>``, ``</sitemap>``, ``</item>``, ``</entry>``) was read, and the first syntax
# error ends the file with a reason, keeping the entries closed before it
# (crawler-commons' "allow partial"); an entry the error cut is not read in part.
# Entities are never expanded (no external DTD, no network, libxml2's amplification
# limit stops "billion laughs"); a ``<loc>`` holding an entity reference or markup is
# skipped, not read in part. Formats: ``<urlset>`` (``url/loc``),
# ``<sitemapindex>`` (``sitemap/loc``), RSS 2.0 (``item/link``) and Atom
# (``entry/link/@href``), which search engines accept as sitemaps; any text not
# starting with ``<`` is a plain-text sitemap, one URL a line.
MAX_URLS = 50_000  # entries read from one file: the sitemaps.org bound
_CHUNK = 1 << 16  # characters fed to the parser at a time

Kind = Literal["urlset", "index", "text"]

# Root element → (the document's kind, the entry element that carries a location).
_ROOTS: dict[str, tuple[Kind, str]] = {
    "urlset": ("urlset", "url"),
    "sitemapindex": ("index", "sitemap"),
    "rss": ("urlset", "item"),
    "feed": ("urlset", "entry"),
}
_LOCATION_TAGS = frozenset({"loc", "link"})


@dataclass(frozen=True)
class SitemapDocument:
    """One file's locations in document order (as written, unresolved) and problems."""

    kind: Kind
    locations: tuple[str, ...]
    problems: tuple[str, ...] = ()


def parse_sitemap(text: str) -> SitemapDocument:
    """Never raises: a file that cannot be read is a document with a problem."""
    stripped = text.lstrip("\ufeff \t\r\n")
    if not stripped.startswith("<"):
        return _parse_text(stripped)
    return _parse_xml(stripped)


def _parse_text(text: str) -> SitemapDocument:
    """sitemaps.org's text format: one URL per line, nothing else."""
    locations: list[str] = []
    ignored = 0
    problems: list[str] = []
    for line in text.splitlines():
        value = line.strip()
        if not value:
            continue
        if " " in value or "://" not in value:
            ignored += 1
            continue
        if len(locations) == MAX_URLS:
            problems.append(_over_bound())
            break
        locations.append(value)
    if ignored:
        problems.insert(0, f"{ignored} line(s) that are not URLs ignored")
    return SitemapDocument("text", tuple(locations), tuple(problems))


def _local(tag: object) -> str:
    """``{namespace}name`` → ``name``; comments, entities and PIs → ``""``."""
    if not isinstance(tag, str):
        return ""
    return tag.rpartition("}")[2]


@dataclass
class _Reading:
    """What one reading of an XML file found."""

    kind: Kind = "urlset"
    locations: list[str] = field(default_factory=list)
    skipped: int = 0
    over_bound: bool = False
    root: str = ""  # set only when the root element is not a sitemap's
    error: str = ""
    failed_at: int | None = None  # offset of the text fed to the call that met the error


def _pieces(text: str, careful_from: int) -> Iterator[tuple[int, str]]:
    """``text`` as it is fed, with each piece's offset: chunks of ``_CHUNK`` characters
    up to ``careful_from``, then pieces that each end just after a ``>``."""
    for start in range(0, careful_from, _CHUNK):
        yield start, text[start : min(start + _CHUNK, careful_from)]
    start = careful_from
    while start < len(text):
        end = text.find(">", start) + 1 or len(text)
        yield start, text[start:end]
        start = end


def _xml_events(text: str, careful_from: int, reading: _Reading) -> Iterator[tuple[str, Any]]:
    """The parser's events, read as the text is fed in pieces (memory stays flat).

    Only the events of the calls that met no error. A call that meets one may report
    events from before the error and, after it, an end for every element still open
    (lxml 6.2's ``close()`` does), which would make a torn entry look closed: its
    events are dropped, and the error and the offset of the text it was fed go to
    ``reading``.
    """
    parser = etree.XMLPullParser(
        events=("start", "end"),
        recover=False,
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
    )
    offset = 0
    try:
        for offset, piece in _pieces(text, careful_from):
            parser.feed(piece)
            stopped = _stopped_without_raising(parser)
            if stopped:
                reading.error, reading.failed_at = stopped, offset
                return
            yield from parser.read_events()
        parser.close()  # ``offset``: the last piece's, which the close may still be parsing
    except etree.XMLSyntaxError as exc:
        reading.error = f"malformed XML ({exc.msg or 'syntax error'})"
        reading.failed_at = offset
        return
    yield from parser.read_events()


def _stopped_without_raising(parser: etree.XMLPullParser) -> str:
    """The problem of a fatal error that ``feed()`` did not raise, or "".

    lxml does not raise for an undefined entity when entities are not resolved, yet
    libxml2 has stopped: a later ``feed()`` would start a new document from the middle
    of this one.
    """
    log = parser.feed_error_log
    if not log:
        return ""
    for entry in log.filter_from_fatals():
        return f"malformed XML ({entry.message}, line {entry.line}, column {entry.column})"
    return ""


def _parse_xml(text: str) -> SitemapDocument:
    reading = _read_xml(text, careful_from=len(text))
    if reading.failed_at is not None:
        # The failing call's events were dropped, and with them the entries it closed
        # before the error. Read again, feeding from that call's text on in pieces that
        # each end just after a ``>``: an end tag is then reported by the call that fed
        # its ``>``, which cannot also meet a later error, so only the entries closed
        # before the error are read. Only a malformed file is read twice.
        error = reading.error
        reading = _read_xml(text, careful_from=reading.failed_at)
        reading.error = error
    if reading.root:
        return SitemapDocument("urlset", (), (f"not a sitemap (root element <{reading.root}>)",))
    problems: list[str] = []
    if reading.error and not reading.over_bound:
        problems.append(reading.error)
    if reading.over_bound:
        problems.append(_over_bound())
    if reading.skipped:
        problems.append(f"{reading.skipped} entry(ies) without a plain-text location skipped")
    return SitemapDocument(reading.kind, tuple(reading.locations), tuple(problems))


def _read_xml(text: str, careful_from: int) -> _Reading:
    reading = _Reading()
    locations = reading.locations
    entry_tag = ""
    for event, element in _xml_events(text, careful_from, reading):
        name = _local(element.tag)
        if not entry_tag:  # the root's start event comes first
            if name not in _ROOTS:
                reading.root = name
                break
            reading.kind, entry_tag = _ROOTS[name]
            continue
        if event != "end" or name != entry_tag:
            continue
        location = _location(element)
        _forget(element)
        if location is None:
            reading.skipped += 1
            continue
        if len(locations) == MAX_URLS:
            reading.over_bound = True
            break  # the rest of the file is not parsed at all
        locations.append(location)
    return reading


def _forget(element: Any) -> None:
    """Drop an entry once read, and the entries before it (memory stays flat)."""
    element.clear()
    parent = element.getparent()
    if parent is not None:
        while element.getprevious() is not None:
            del parent[0]


def _location(entry: Any) -> str | None:
    """The entry's first ``<loc>`` / ``<link>``: its text, or an Atom link's href.

    None when it has none, or when it holds anything but text (an unexpanded
    entity reference or an element), which would otherwise be read in part.
    """
    for child in entry:
        if _local(child.tag) not in _LOCATION_TAGS:
            continue
        if len(child):
            return None
        value = (child.text or child.get("href") or "").strip()
        return value or None
    return None


def _over_bound() -> str:
    return f"more than {MAX_URLS} URLs; the first {MAX_URLS} read"


def sitemaps_in_robots(text: str) -> list[str]:
    """The values of robots.txt ``Sitemap:`` lines, in file order (RFC 9309 §2.2.4).

    A few lines, hand-written: Scrapy's ``sitemap_urls_from_robots`` resolves with
    ``urljoin``, and the walk resolves values with WHATWG rules itself.
    """
    found = []
    for line in text.splitlines():
        name, colon, value = line.partition(":")
        if colon and name.strip().lower() == "sitemap":
            value = value.split("#", 1)[0].strip()
            if value:
                found.append(value)
    return found
