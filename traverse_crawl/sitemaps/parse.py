"""Read one sitemap file, in memory: XML, sitemap index, RSS/Atom, plain text.

Pure: the Scrapy side (``sitemaps/requests.py``) fetches the file, un-gzips it and
decodes it; this module turns its text into an ordered list of locations and the
reasons it was not read in full. lxml's pull parser in strict mode, not Scrapy's
``Sitemap``, whose ``recover=True`` turns malformed XML into wrong URLs
(docs/architecture.md, "Sitemaps").
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from lxml import etree

# The same well-kept parser as Scrapy's (libxml2 through lxml, with Scrapy's safety
# options) in strict mode: a location counts only once its entry (``</url>``,
# ``</sitemap>``, ``</item>``, ``</entry>``) is closed, and the first syntax error ends
# the file with a reason, keeping the entries before it (crawler-commons' "allow
# partial"). Entities are never expanded (no external DTD, no network, libxml2's
# amplification limit stops "billion laughs"); a ``<loc>`` holding an entity reference
# or markup is skipped, not read in part. Formats: ``<urlset>`` (``url/loc``),
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


def _xml_events(text: str, errors: list[str]) -> Iterator[tuple[str, Any]]:
    """The parser's events, read as the text is fed in chunks (memory stays flat).

    The events before a syntax error are still yielded: entries closed before it
    stand; the error is appended to ``errors``.
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
    try:
        for start in range(0, len(text), _CHUNK):
            parser.feed(text[start : start + _CHUNK])
            yield from parser.read_events()
        parser.close()
    except etree.XMLSyntaxError as exc:
        errors.append(f"malformed XML ({exc.msg or 'syntax error'})")
    yield from parser.read_events()


def _parse_xml(text: str) -> SitemapDocument:
    kind: Kind = "urlset"
    entry_tag = ""
    locations: list[str] = []
    skipped = 0
    problems: list[str] = []
    errors: list[str] = []
    for event, element in _xml_events(text, errors):
        name = _local(element.tag)
        if not entry_tag:  # the root's start event comes first
            if name not in _ROOTS:
                return SitemapDocument("urlset", (), (f"not a sitemap (root element <{name}>)",))
            kind, entry_tag = _ROOTS[name]
            continue
        if event != "end" or name != entry_tag:
            continue
        location = _location(element)
        _forget(element)
        if location is None:
            skipped += 1
            continue
        if len(locations) == MAX_URLS:
            problems.append(_over_bound())
            break  # the rest of the file is not parsed at all
        locations.append(location)
    if skipped:
        problems.append(f"{skipped} entry(ies) without a plain-text location skipped")
    if errors and not (problems and problems[-1] == _over_bound()):
        problems.insert(0, errors[0])
    return SitemapDocument(kind, tuple(locations), tuple(problems))


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
