"""Tricky links and the WHATWG serialisation each must be requested as.

One page, ``/dir/page.html``, links to every case; each case's ``target`` is the
path and query of the link's WHATWG URL (URL Standard as ada-url 4 implements
it), written out by hand so the table checks the parser as well as the crawler.
``node20`` is what Node 20's ``new URL()`` gives where it differs.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass

from tests.support.server import Handler, Reply, Server

PAGE = "/dir/page.html"
ETAG = '"leaf"'


@dataclass(frozen=True)
class Case:
    name: str
    href: str  # as written in the page ("HOST" is the server's host:port)
    target: str  # the request target: the WHATWG URL's path and query
    node20: str | None = None  # Node 20's serialisation, where it differs


CASES = [
    Case("empty query", "x?", "/dir/x?"),
    Case("empty query and empty fragment", "e?#", "/dir/e?"),
    Case("empty fragment", "f#", "/dir/f"),
    Case("empty query on the page itself", "?", "/dir/page.html?"),
    Case("pipe in path", "a|b", "/dir/a|b"),
    Case("pipe in query", "p?q=1|2", "/dir/p?q=1|2"),
    # The URL Standard added ^ to the path percent-encode set in 2025; ada 3
    # (ada-url 4) follows it, Node 20's ada 2.9 does not (docs/architecture.md).
    Case("caret", "^c?q=^", "/dir/%5Ec?q=^", node20="/dir/^c?q=^"),
    Case("braces", "{a}?{b}", "/dir/%7Ba%7D?{b}"),
    Case("backticks", "`b`?`c`", "/dir/%60b%60?`c`"),
    Case("double quotes", 'q"t"?"u"', "/dir/q%22t%22?%22u%22"),
    Case("single quotes", "it's?q='", "/dir/it's?q=%27"),
    Case("spaces, trimmed at the ends", " sp ace?a b ", "/dir/sp%20ace?a%20b"),
    Case("percent not followed by hex", "%zz?%zz", "/dir/%zz?%zz"),
    Case("lone percent", "%4?x=%", "/dir/%4?x=%"),
    Case("percent-escapes kept, not decoded", "%7E~?q=%41", "/dir/%7E~?q=%41"),
    Case("non-ASCII path", "caf\u00e9", "/dir/caf%C3%A9"),
    Case("non-ASCII query", "s?q=\u00e9&\u65e5=\u672c", "/dir/s?q=%C3%A9&%E6%97%A5=%E6%9C%AC"),
    Case("no-break space", "nb\u00a0sp", "/dir/nb%C2%A0sp"),
    Case("angle brackets", "a<b>?q=<>", "/dir/a%3Cb%3E?q=%3C%3E"),
    Case("square brackets", "a[b]?[c]", "/dir/a[b]?[c]"),
    Case("dot segments", "../up/./x/../y", "/up/y"),
    Case("encoded dot segments", "%2e%2E/z", "/z"),
    Case("backslash", "bk\\sl", "/dir/bk/sl"),
    Case("empty ;params", "x;", "/dir/x;"),
    Case("empty ;params and empty query", "m;?", "/dir/m;?"),
    Case("double slash path", "//HOST//dbl", "//dbl"),
    Case("uppercase scheme, explicit port", "HTTP://HOST/Up/Case", "/Up/Case"),
    Case("tabs and newlines inside href", "\tt\tab\nnl\r.html\n", "/dir/tabnl.html"),
    Case("query keeps &&, +, = and order", "k?b=2&&a=1+1&=&a", "/dir/k?b=2&&a=1+1&=&a"),
    Case("fragment after a query", "g?q=1#frag?x", "/dir/g?q=1"),
    Case("absolute path, empty query", "/abs?", "/abs?"),
    Case("directory", "./", "/dir/"),
    # Its page links to "next": resolved against the page's URL (depth 2).
    Case("pipe in a directory", "p|q/index", "/dir/p|q/index"),
]
NEXT_TARGET = "/dir/p|q/next"

# A redirect chain whose Location values need WHATWG handling at every hop.
REDIRECT_START = "/dir/r?"
# Keyed by path (the server's routes ignore the query); the second hop is also
# answered at the form Scrapy's Request rewrote it to, for the legacy store.
REDIRECTS = {
    "/dir/r": "hop|1?",  # relative, a pipe, an empty query
    "/dir/hop|1": "/dir/final ^?q=^|",  # a space and a caret in the path
    "/dir/hop%7C1": "/dir/final ^?q=^|",
}
REDIRECT_TARGETS = ["/dir/r?", "/dir/hop|1?", "/dir/final%20%5E?q=^|"]


def href_of(case: Case, host: str) -> str:
    return case.href.replace("HOST", host)


def page_html(host: str) -> str:
    links = "\n".join(
        f'<a href="{html.escape(href_of(case, host), quote=True)}">{i}</a>'
        for i, case in enumerate(CASES)
    )
    redirect = f'<a href="{html.escape(REDIRECT_START, quote=True)}">redirect</a>'
    return f"<!doctype html><title>links</title>\n{links}\n{redirect}\n"


def leaf(conditional: bool = False) -> Callable[[Handler], Reply]:
    return _page("<!doctype html><p>leaf</p>", conditional)


def _page(body: str, conditional: bool) -> Callable[[Handler], Reply]:
    """A 200 with an ETag; with ``conditional``, a 304 to a request that sends it back."""

    def route(handler: Handler) -> Reply:
        if conditional and handler.headers.get("If-None-Match") == ETAG:
            return Reply(304, b"", headers={"ETag": ETAG}, content_type=None)
        return Reply(body=body, headers={"ETag": ETAG})

    return route


def tricky_site(server: Server, conditional: bool = False) -> None:
    """``PAGE`` links to every case; every other target answers a small page."""
    host = server.origin.split("://", 1)[1]
    server.routes[PAGE] = _page(page_html(host), conditional)
    for source, location in REDIRECTS.items():
        server.routes[source] = Reply(302, b"", headers={"Location": location})
    for path in ("/dir/p|q/index", "/dir/p%7Cq/index"):  # verbatim and Scrapy-rewritten forms
        server.routes[path] = _page('<a href="next">next</a>', conditional)
    server.fallback = leaf(conditional)
