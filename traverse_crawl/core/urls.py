"""WHATWG URL rules of the frontier (SPEC §13.4, §13.5, §17b).

Uses ada-url, a maintained WHATWG parser: ``urllib.parse.urljoin`` differs on
empty queries, whitespace, percent-encoding and dot segments (SPEC §17b).
"""

from __future__ import annotations

import ada_url

from traverse_crawl.core.js import encode_uri_component

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
