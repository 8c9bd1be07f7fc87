"""A small shop site for the sitemap tests: pages linked from the home page, and
orphans that only a sitemap lists."""

from __future__ import annotations

from tests.support.server import Reply, Server

XML = "application/xml"


def urlset(*urls: str) -> str:
    entries = "".join(f"<url><loc>{u}</loc></url>" for u in urls)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'
    )


def index(*urls: str) -> str:
    entries = "".join(f"<sitemap><loc>{u}</loc></sitemap>" for u in urls)
    return (
        '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"{entries}</sitemapindex>"
    )


def shop(server: Server, robots: str = "", **files: str | Reply) -> None:
    """``/`` links a.html and b.html; orphan1..3 are linked from nowhere.

    ``files`` maps a path relative to the root (``sitemap.xml``) to a sitemap,
    served as ``application/xml`` unless given as a ``Reply``.
    """
    server.site(
        {
            "/": '<a href="/a.html">a</a> <a href="/b.html">b</a>',
            "/a.html": '<a href="/a2.html">a2</a>',
            "/b.html": "<p>b</p>",
            "/a2.html": "<p>a2</p>",
            "/orphan1.html": '<a href="/deep.html">deep</a>',
            "/orphan2.html": "<p>o2</p>",
            "/orphan3.html": "<p>o3</p>",
            "/deep.html": "<p>deep</p>",
        }
    )
    server.routes["/robots.txt"] = Reply(body=robots, content_type="text/plain")
    for path, body in files.items():
        reply = body if isinstance(body, Reply) else Reply(body=body, content_type=XML)
        server.routes["/" + path] = reply


def listed(server: Server, *paths: str) -> str:
    """robots.txt naming the given sitemap paths."""
    return "User-agent: *\nAllow: /\n" + "".join(f"Sitemap: {server.url(p)}\n" for p in paths)


def urls_and_depths(manifest: dict) -> list[tuple[str, int]]:
    return [(p["url"], p["depth"]) for p in manifest["pages"]]
