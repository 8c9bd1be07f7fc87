"""URLs with userinfo (``http://user:pass@host/``): credentials go in a header (issue 10).

WHATWG URLs may carry a username and password, and a same-origin link may
too (the origin leaves userinfo out). Scrapy's HTTP/1.1 handler would take
``user:pass@host`` for the host name and fail with ``invalid hostname``. As
URL libraries and browsers do (curl, requests, a browser's address bar), the
request goes to the URL without its userinfo, with the credentials as HTTP
Basic ``Authorization``; the redirect middleware drops that header when a
redirect leaves the origin. The page keeps the URL it was discovered as.

The request is replaced before any other middleware sees it (priority 40), so
no log line or error message past this point can show the password.
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
