"""What a crawl admits: scope, include/exclude, extra hops, trap guards and the seen key,
through ``scrapy crawl`` at real loopback sites (docs/crawling-real-sites.md)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import REPO, crawl_args, scrapy, scrapy_env
from tests.support.server import Reply, Server
from traverse_crawl.snapshots.store import source_dir_name


def links(*hrefs: str) -> str:
    return "<html><body>" + "".join(f'<a href="{h}">{h}</a>' for h in hrefs) + "</body></html>"


def crawl(
    tmp: Path, seed: str, origins: list[str], *extra: str, source_id: str = "site"
) -> subprocess.CompletedProcess[str]:
    return scrapy(
        "crawl", "traverse", "-a", f"url={seed}", "-a", f"source_id={source_id}",
        *crawl_args(tmp, *origins), "-s", "TRAVERSE_SKIPPED=True", *extra,
    )  # fmt: skip


def manifest(tmp: Path, seed_id: str = "site") -> dict[str, Any]:
    path = tmp / "manifests" / f"{source_dir_name(seed_id)}.json"
    return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def skipped(tmp: Path, seed_id: str = "site") -> list[dict[str, Any]]:
    path = tmp / "manifests" / f"{source_dir_name(seed_id)}.skipped.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def pages(found: dict[str, Any]) -> list[tuple[str, int]]:
    return [(page["url"], page["depth"]) for page in found["pages"]]


def docs_site(server: Server, other: Server) -> None:
    """A docs section under /docs/ beside a blog, search pages, sorted listings, another site."""
    server.site(
        {
            "/docs/index.html": links(
                "a", "search?q=1", "b?sort=asc", "/blog/post", "/blog/search",
                other.url("/x"), "mailto:me@example.com", "a#part", "go",
            ),
            # Slow, so that at concurrency 16 later pages are fetched before it.
            "/docs/a": Reply(body=links("c", "/docs/", "/blog/other"), delay=0.2),
            "/docs/b": links("c"),
            "/docs/c": links(),
            "/docs/": links("a"),
            "/docs/go": Reply(302, headers={"Location": "/blog/landing"}),
            "/blog/landing": links("/docs/from-landing"),
            "/blog/post": links("/docs/never"),
        }
    )  # fmt: skip
    other.site({"/x": links("/y")})


@pytest.mark.parametrize("concurrency", ["1", "16"])
def test_prefix_scope_with_exclude_patterns_crawls_only_the_docs(
    server: Server, server2: Server, tmp_path: Path, concurrency: str
) -> None:
    docs_site(server, server2)
    u = server.url
    done = crawl(
        tmp_path, u("/docs/index.html"), [server.origin, server2.origin],
        "-s", "TRAVERSE_SCOPE=prefix", "-s", 'TRAVERSE_EXCLUDE=["/search", "[?&]sort="]',
        "-s", f"CONCURRENT_REQUESTS={concurrency}", "-s", "TRAVERSE_MAX_PAGES=20",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    found = manifest(tmp_path)
    assert pages(found) == [
        (u("/docs/index.html"), 0),
        (u("/docs/a"), 1),
        (u("/docs/go"), 1),
        (u("/docs/c"), 2),
        (u("/docs/"), 2),
    ]
    # The redirect left the prefix: recorded with its final URL, its links not followed.
    go = found["pages"][2]["fetch"]["snapshot"]
    assert go["url"] == u("/blog/landing")
    assert any("/docs/go: fetched page resolved off-host" in w for w in found["warnings"])
    assert "/docs/from-landing" not in server.paths()
    assert "/blog/post" not in server.paths() and server2.paths() == []
    # Exclude wins over the scope (/blog/search); each link once, with the first reason.
    assert [(line["url"], line["reason"]) for line in skipped(tmp_path)] == [
        (u("/docs/search?q=1"), "excluded"),
        (u("/docs/b?sort=asc"), "excluded"),
        (u("/blog/post"), "out-of-scope"),
        (u("/blog/search"), "excluded"),
        (server2.url("/x"), "out-of-scope"),
        ("mailto:me@example.com", "not-http"),
        (u("/blog/other"), "out-of-scope"),
    ]


def test_host_scope_takes_any_port_of_the_seed_host_and_include_adds_a_site(
    server: Server, server2: Server, tmp_path: Path
) -> None:
    """Host scope: the seed's host at another port is in scope; ``localhost`` is another
    host, admitted only by an include pattern; the default origin scope admits neither."""
    local2 = server2.origin.replace("127.0.0.1", "localhost")
    server.site({"/": links(server2.url("/other-port"), local2 + "/by-include", local2 + "/no")})
    server2.site({"/other-port": links(), "/by-include": links(), "/no": links()})
    origins = [server.origin, server2.origin, local2]

    done = crawl(tmp_path / "host", server.url("/"), origins, "-s", "TRAVERSE_SCOPE=host",
                 "-s", "TRAVERSE_INCLUDE=/by-include$")  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert pages(manifest(tmp_path / "host")) == [
        (server.url("/"), 0),
        (server2.url("/other-port"), 1),
        (local2 + "/by-include", 1),
    ]
    assert [(s["url"], s["reason"]) for s in skipped(tmp_path / "host")] == [
        (local2 + "/no", "out-of-scope")
    ]

    done = crawl(tmp_path / "origin", server.url("/"), origins)
    assert done.returncode == 0, done.stderr[-3000:]
    assert pages(manifest(tmp_path / "origin")) == [(server.url("/"), 0)]
    assert {s["reason"] for s in skipped(tmp_path / "origin")} == {"off-origin"}


def test_extra_hops_admit_pages_off_scope_as_far_as_the_hop_count_allows(
    server: Server, server2: Server, tmp_path: Path
) -> None:
    server.site({"/": links("/in", server2.url("/hop1"))})
    server.site({"/in": links()})
    server2.site({"/hop1": links("/hop2"), "/hop2": links("/hop3"), "/hop3": links()})
    origins = [server.origin, server2.origin]

    def run(hops: int) -> list[tuple[str, int]]:
        tmp = tmp_path / str(hops)
        done = crawl(tmp, server.url("/"), origins, "-s", f"TRAVERSE_EXTRA_HOPS={hops}",
                     "-s", "TRAVERSE_MAX_DEPTH=5")  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        return pages(manifest(tmp))

    base = [(server.url("/"), 0), (server.url("/in"), 1)]
    assert run(0) == base
    assert run(1) == [*base, (server2.url("/hop1"), 1)]  # hop 1 = N: its links not followed
    assert run(2) == [*base, (server2.url("/hop1"), 1), (server2.url("/hop2"), 2)]


def test_trap_guards_skip_long_deep_and_looping_urls_with_the_rule(
    server: Server, tmp_path: Path
) -> None:
    deep = "/d" + "".join(f"/{n}" for n in range(33))  # 34 segments
    looping = "/cal/x/cal/x/cal/x/cal/page"  # "cal" 4 times
    long = "/" + "l" * 200
    fine = "/cal/x/cal/x/cal/x/ok"
    server.site({"/": links(long, deep, looping, fine)})
    server.fallback = Reply(body=links())
    args = ["-s", "TRAVERSE_TRAP_GUARDS=True", "-s", "TRAVERSE_MAX_URL_LENGTH=150"]
    done = crawl(tmp_path / "on", server.url("/"), [server.origin], *args)
    assert done.returncode == 0, done.stderr[-3000:]
    assert pages(manifest(tmp_path / "on")) == [(server.url("/"), 0), (server.url(fine), 1)]
    assert [(s["url"], s["reason"], s.get("rule")) for s in skipped(tmp_path / "on")] == [
        (server.url(long), "trap", "url-length"),
        (server.url(deep), "trap", "path-depth"),
        (server.url(looping), "trap", "repeated-segment"),
    ]
    assert skipped(tmp_path / "on")[0] == {
        "url": server.url(long), "reason": "trap", "rule": "url-length",
        "from": server.url("/"), "depth": 1,
    }  # fmt: skip

    done = crawl(tmp_path / "off", server.url("/"), [server.origin])  # the default: off
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(manifest(tmp_path / "off")["pages"]) == 5


@pytest.mark.parametrize(
    ("seen_key", "requested"),
    [
        (
            "verbatim",
            ["/p?b=2&a=1", "/p?a=1&b=2", "/p?b=2&a=1&utm_source=x", "/p?a=1&fbclid=z&b=2"],
        ),
        ("sorted-query", ["/p?b=2&a=1", "/p?b=2&a=1&utm_source=x", "/p?a=1&fbclid=z&b=2"]),
        ("no-tracking", ["/p?b=2&a=1"]),
    ],
)
def test_the_seen_key_drops_later_spellings_and_keeps_the_first_byte_for_byte(
    server: Server, tmp_path: Path, seen_key: str, requested: list[str]
) -> None:
    spellings = ["/p?b=2&a=1", "/p?a=1&b=2", "/p?b=2&a=1&utm_source=x", "/p?a=1&fbclid=z&b=2"]
    server.site({"/": links(*spellings, "/p?b=2&a=1&ref=nav"), "/p": links()})
    done = crawl(tmp_path, server.url("/"), [server.origin], "-s", f"TRAVERSE_SEEN_KEY={seen_key}",
                 "-s", "TRAVERSE_IGNORE_PARAMS=ref", "-s", "TRAVERSE_MAX_DEPTH=1")  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    ignored = ["/p?b=2&a=1&ref=nav"] if seen_key != "no-tracking" else []
    # The request line's target and the recorded URL are the first spelling, as written.
    targets = [hit.target for hit in server.hits if hit.target.startswith("/p")]
    assert sorted(targets) == sorted([*requested, *ignored])
    assert [url for url, _ in pages(manifest(tmp_path))[1:]] == [
        server.url(path) for path in [*requested, *ignored]
    ]
    assert skipped(tmp_path) == []  # a later spelling is a duplicate, not a skipped line


def test_a_seeds_file_line_carries_its_own_scope_patterns_and_budgets(
    server: Server, tmp_path: Path
) -> None:
    server.site({"/docs/": links("a", "/blog/", "/docs/skip-me"), "/": links("/docs/", "/blog/")})
    server.fallback = Reply(body=links())
    seeds = tmp_path / "seeds.jsonl"
    seeds.write_text(
        json.dumps({"id": "docs", "url": server.url("/docs/"), "scope": "prefix",
                    "exclude": ["skip-me"]}) + "\n"
        + json.dumps({"id": "small", "url": server.url("/"), "max_pages": 2}) + "\n"
        + f"plain\t{server.url('/')}\n"
    )  # fmt: skip
    done = scrapy("crawl", "traverse", "-a", f"seeds={seeds}", *crawl_args(tmp_path, server.origin))
    assert done.returncode == 0, done.stderr[-3000:]
    assert pages(manifest(tmp_path, "docs")) == [
        (server.url("/docs/"), 0),
        (server.url("/docs/a"), 1),
    ]
    assert len(manifest(tmp_path, "small")["pages"]) == 2
    assert manifest(tmp_path, "small")["truncated"] is True
    assert len(manifest(tmp_path, "plain")["pages"]) == 5  # the settings' origin scope


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["-s", "TRAVERSE_SCOPE=planet"], "TRAVERSE_SCOPE"),
        (["-s", 'TRAVERSE_EXCLUDE=["("]'], "TRAVERSE_EXCLUDE"),
        (["-s", "TRAVERSE_INCLUDE=[a-"], "TRAVERSE_INCLUDE"),
        (["-s", "TRAVERSE_EXTRA_HOPS=-1"], "TRAVERSE_EXTRA_HOPS"),
        (["-s", "TRAVERSE_MAX_URL_LENGTH=-5"], "TRAVERSE_MAX_URL_LENGTH"),
        (["-s", "TRAVERSE_SEEN_KEY=canonical"], "TRAVERSE_SEEN_KEY"),
        (["-s", "TRAVERSE_TRAP_GUARDS=maybe"], "TRAVERSE_TRAP_GUARDS"),
    ],
)
def test_a_bad_policy_setting_exits_2_naming_it_before_any_request(
    server: Server, tmp_path: Path, args: list[str], named: str
) -> None:
    server.site({"/": links()})
    done = crawl(tmp_path, server.url("/"), [server.origin], *args)
    assert done.returncode == 2, done.stderr[-3000:]
    assert named in done.stderr
    assert server.paths() == []


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ({"scope": "planet"}, "TRAVERSE_SCOPE"),
        ({"exclude": ["("]}, "TRAVERSE_EXCLUDE"),
        ({"include": "not-a-list"}, "TRAVERSE_INCLUDE"),
        ({"extra_hops": -2}, "TRAVERSE_EXTRA_HOPS"),
        ({"max_pages": -1}, "TRAVERSE_MAX_PAGES"),
        ({"max_depth": "deep"}, "TRAVERSE_MAX_DEPTH"),
    ],
)
def test_a_bad_seed_value_exits_2_naming_the_setting_and_the_seed(
    server: Server, tmp_path: Path, line: dict[str, Any], named: str
) -> None:
    server.site({"/": links()})
    seeds = tmp_path / "seeds.jsonl"
    seeds.write_text(
        f"good\t{server.url('/')}\n"
        + json.dumps({"id": "shop-7", "url": server.url("/"), **line}) + "\n"
    )  # fmt: skip
    done = scrapy("crawl", "traverse", "-a", f"seeds={seeds}", *crawl_args(tmp_path, server.origin))
    assert done.returncode == 2, done.stderr[-3000:]
    assert named in done.stderr and "'shop-7'" in done.stderr
    assert server.paths() == []


def _can_bind_hosts(tmp: Path) -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = tmp / "probe-hosts"
    probe.write_text("127.0.0.1 localhost\n")
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", f"mount --bind {probe} /etc/hosts"],
        capture_output=True, check=False,
    )  # fmt: skip
    return done.returncode == 0


DOMAIN_HOSTS = (
    "www.example.com", "docs.example.com", "example.com", "www.example.org",
    "shop.example.co.uk", "www.example.co.uk", "other.co.uk",
)  # fmt: skip


def test_domain_scope_takes_the_registrable_domain_by_the_public_suffix_list(
    server: Server, tmp_path: Path
) -> None:
    """Domain scope with real host names: the crawl runs in a private mount namespace
    whose ``/etc/hosts`` maps them to 127.0.0.1, so the crawl's own resolver (the egress
    guard's, through ``getaddrinfo``) finds the loopback server under every name and no
    lookup or request leaves the machine. Chosen over the scripted DNS server because it
    needs no change to the crawl's settings: the crawl resolves as it would in production.
    """
    if not _can_bind_hosts(tmp_path):
        pytest.skip("cannot bind-mount /etc/hosts in a private mount namespace (needs root)")
    port = server.origin.rsplit(":", 1)[1]

    def at(host: str, path: str) -> str:
        return f"http://{host}:{port}{path}"

    server.site(
        {
            "/com": links(at("docs.example.com", "/guide"), at("example.com", "/about"),
                          at("www.example.org", "/nope"), "/com-2"),
            "/uk": links(at("www.example.co.uk", "/uk-2"), at("other.co.uk", "/uk-nope")),
            "/ip": links(at("localhost", "/ip-nope"), "/ip-2"),
        }
    )  # fmt: skip
    server.fallback = Reply(body=links())
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 localhost " + " ".join(DOMAIN_HOSTS) + "\n")
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(
        f"com\t{at('www.example.com', '/com')}\nuk\t{at('shop.example.co.uk', '/uk')}\n"
        f"ip\t{server.url('/ip')}\n"
    )
    origins = [at(host, "") for host in (*DOMAIN_HOSTS, "localhost")] + [server.origin]
    command = [
        sys.executable, "-m", "scrapy", "crawl", "traverse", "-a", f"seeds={seeds}",
        *crawl_args(tmp_path, *origins), "-s", "TRAVERSE_SKIPPED=True",
        "-s", "TRAVERSE_SCOPE=domain",
    ]  # fmt: skip
    script = f'mount --bind "{hosts}" /etc/hosts || exit 99\nexec "$@"\n'
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", script, "sh", *command],
        cwd=REPO, env=scrapy_env(), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert pages(manifest(tmp_path, "com")) == [
        (at("www.example.com", "/com"), 0),
        (at("docs.example.com", "/guide"), 1),
        (at("example.com", "/about"), 1),
        (at("www.example.com", "/com-2"), 1),
    ]
    assert [s["url"] for s in skipped(tmp_path, "com")] == [at("www.example.org", "/nope")]
    # co.uk is a public suffix: example.co.uk is the registrable domain, other.co.uk is not in it.
    assert pages(manifest(tmp_path, "uk")) == [
        (at("shop.example.co.uk", "/uk"), 0),
        (at("www.example.co.uk", "/uk-2"), 1),
    ]
    assert [(s["url"], s["reason"]) for s in skipped(tmp_path, "uk")] == [
        (at("other.co.uk", "/uk-nope"), "out-of-scope")
    ]
    # An IP address has no registrable domain: scoped as its host.
    assert pages(manifest(tmp_path, "ip")) == [(server.url("/ip"), 0), (server.url("/ip-2"), 1)]
    assert [(s["url"], s["reason"]) for s in skipped(tmp_path, "ip")] == [
        (at("localhost", "/ip-nope"), "out-of-scope")
    ]
