"""URLs with userinfo (``http://user:pass@host/``): credentials go in a header.

Scrapy's HTTP/1.1 handler would take ``user:pass@host`` for the host name. As curl,
requests and browsers do, the request goes to the URL without its userinfo, with the
credentials as HTTP Basic ``Authorization`` (the redirect middleware drops it when a
redirect leaves the origin); the page keeps the URL it was discovered as. At
priority 40, before any other middleware, so no later log line shows the password.
"""

from __future__ import annotations

from urllib.parse import unquote

from scrapy import Request
from w3lib.http import basic_auth_header

from traverse_crawl.fetch import urls


class UserinfoMiddleware:
    def process_request(self, request: Request) -> Request | None:
        if "@" not in request.url:
            return None
        parsed = urls.parse(request.url)
        if parsed is None or not (parsed.username or parsed.password):
            return None
        user, password = unquote(parsed.username), unquote(parsed.password)
        parsed.username = ""
        parsed.password = ""
        headers = request.headers.copy()
        headers[b"Authorization"] = basic_auth_header(user, password)
        return request.replace(url=str(parsed.href), headers=headers)
