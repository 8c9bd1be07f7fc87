"""Responses of the render middleware: kept as data, rebuilt, and made UTF-8 HTML.

``freeze``/``thaw`` carry a response through ``request.meta`` as picklable data
(so ``JOBDIR`` can persist the request): the plain page that ``on-shell-warning``
keeps for its fallback, and the navigation answer the page guard hands back.
``as_rendered_html`` makes a scrapy-playwright response what the spider stores
for a rendered page: the DOM as UTF-8, without the server's validators.
"""

from __future__ import annotations

from typing import Any

from scrapy import Request
from scrapy.http import Headers, Response, TextResponse
from scrapy.responsetypes import responsetypes

# Validators and transfer details describe the server's bytes, not the DOM.
_NOT_RENDERED = (b"ETag", b"Last-Modified", b"Content-Encoding", b"Content-Length")


def freeze(response: Response) -> dict[str, Any]:
    return {
        "url": response.url,
        "status": response.status,
        "headers": [(k, v) for k, values in response.headers.items() for v in values],
        "body": response.body,
    }


def thaw(data: dict[str, Any], request: Request) -> Response:
    """The response again, attached to ``request`` (its meta is the spider's)."""
    headers = Headers()
    for name, value in data["headers"]:
        headers.appendlist(name, value)
    # Both sources hand over decoded bodies (HttpCompression, Playwright's fetch).
    headers.pop(b"Content-Encoding", None)
    body: bytes = data["body"]
    url = data["url"] or request.url
    cls = responsetypes.from_args(headers=headers, url=url, body=body)
    return cls(url=url, status=data["status"], headers=headers, body=body, request=request)


def utf8_body(response: Response) -> bytes:
    # scrapy-playwright encodes the DOM in the page's declared charset; the spider
    # reads a rendered body as UTF-8, as Traverse does (its renderer returns a string).
    return response.text.encode("utf-8") if isinstance(response, TextResponse) else response.body


def as_rendered_html(response: Response, body: bytes, url: str) -> Response:
    """The DOM as the page's body, at ``url``: the URL Scrapy asked for, byte for
    byte, rather than Chromium's serialisation of it (navigation.py). A page that
    navigates itself away is handed back as a redirect, so the DOM is ``url``'s."""
    headers = response.headers.copy()
    for name in _NOT_RENDERED:
        headers.pop(name, None)
    headers[b"Content-Type"] = b"text/html; charset=utf-8"
    if isinstance(response, TextResponse):
        return response.replace(url=url, body=body, headers=headers, encoding="utf-8")
    return response.replace(url=url, body=body, headers=headers)
