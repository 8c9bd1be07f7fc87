"""WHATWG URL rules of the frontier: parsing, origins, page ids and request targets.

Uses ada-url, a maintained WHATWG parser: ``urllib.parse.urljoin`` differs on
empty queries, whitespace, percent-encoding and dot segments.
"""

from __future__ import annotations

import hashlib

import ada_url
from w3lib.url import safe_url_string

from traverse_crawl.utils.javascript import encode_uri_component

HTTP_SCHEMES = frozenset({"http:", "https:"})


def parse(url: str, base: str | None = None) -> ada_url.URL | None:
    """Parse ``url`` (against ``base``) or return None when it does not parse."""
    try:
        return ada_url.URL(url, base) if base is not None else ada_url.URL(url)
    except (ValueError, TypeError):
        return None


def normalize(url: str, base: str | None = None) -> str | None:
    """The fragment-less WHATWG href of an http(s) URL, or None."""
    parsed = parse(url, base)
    if parsed is None or parsed.protocol not in HTTP_SCHEMES:
        return None
    parsed.hash = ""
    return str(parsed.href)


def request_target(url: str) -> str:
    """The origin-form request target of a serialised URL: its path and query
    exactly as written, an empty query's "?" included, never the fragment.

    Hand-written because no parser returns it: WHATWG's ``pathname + search``
    loses an empty query (``search`` is "" for both ``/x`` and ``/x?``), and
    urllib's split/unsplit also drops an empty ``;`` parameter. In a WHATWG
    serialisation the first "/", "?" or "#" after "//" ends the authority
    (userinfo and host percent-encode or refuse all three).
    """
    start = url.find("//")
    start = 0 if start < 0 else start + 2
    end = len(url)
    for sep in "/?#":
        found = url.find(sep, start)
        if 0 <= found < end:
            end = found
    target = url[end:].split("#", 1)[0]
    return target if target.startswith("/") else "/" + target


def legacy_form(url: str) -> str:
    """The URL Scrapy's ``Request`` made of ``url`` before requests were sent
    verbatim: w3lib's ``safe_url_string`` (``/x?`` became ``/x``, ``|`` became
    ``%7C``), the form that older stores' snapshots record (docs/snapshots.md)."""
    return str(safe_url_string(url, "utf-8"))


def origin(url: str) -> str:
    """The WHATWG origin (``scheme://host[:port]``), or ``""`` when unparsable."""
    parsed = parse(url)
    if parsed is None or parsed.protocol not in HTTP_SCHEMES:
        return ""
    return str(parsed.origin)


def same_origin(url: str, expected_origin: str) -> bool:
    """Whether a serialised URL is on ``expected_origin``.

    A serialised http(s) URL on an origin starts with the origin and "/"; only a
    URL with userinfo needs the full parse (the origin leaves userinfo out).
    """
    if url.startswith(expected_origin + "/"):
        return True
    return "@" in url and origin(url) == expected_origin


def page_id(seed_id: str, url: str) -> str:
    """``encodeURIComponent(seedId) + "::" + url``: the store key of a crawl page."""
    return f"{encode_uri_component(seed_id)}::{url}"


def url_hash(url: str) -> int:
    """A stable 64-bit hash of a URL (the frontier persists it); a collision can
    only make a truncation count one lower, with odds of about n²/2⁶⁵ for n URLs."""
    digest = hashlib.blake2b(url.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest)
