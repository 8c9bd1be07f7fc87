"""The pure robots engine: Traverse's matcher, its load policy, RFC 9309 through protego."""

from __future__ import annotations

import pytest

from traverse_crawl.politeness.robots import (
    MAX_ROBOTS_BYTES,
    AllowAll,
    DisallowAll,
    ProtegoRules,
    RobotsFetch,
    Rule,
    TraverseRules,
    agent_score,
    decide,
    parse_groups,
    parse_robots,
    path_and_query,
    product_token,
    select_group,
)

UA = "TestBot/1.0 (+https://example.invalid/bot)"
ORIGIN = "http://127.0.0.1:8000"


@pytest.mark.parametrize(
    ("user_agent", "token"),
    [
        ("TestBot/1.0 (+https://example.invalid/bot)", "TestBot"),
        (
            "kontourai-traverse-bot/0.x (+https://github.com/kontourai/traverse; "
            "contact: set-a-real-contact@example.com)",
            "kontourai-traverse-bot",
        ),
        ("my-crawler/1.0 (...)", "my-crawler"),
        ("traverse_crawl-bot/0.1 (+https://example.invalid)", "traverse_crawl-bot"),
        ("Plain", "Plain"),
        ("  Spaced Bot/2", "Spaced"),  # trimmed first
        ("\ufeffBomBot/1", "BomBot"),  # JS trim() strips U+FEFF
        ("Tab\tBot", "Tab"),
        ("Nbsp\u00a0Bot", "Nbsp"),  # U+00A0 is JS whitespace
        ("a//b", "a"),
        ("/leading", ""),
        ("", ""),
    ],
)
def test_product_token(user_agent: str, token: str) -> None:
    assert product_token(user_agent) == token


@pytest.mark.parametrize(
    ("text", "groups"),
    [
        ("User-agent: *\nDisallow: /a", [(["*"], [("/a", False)])]),
        (
            "User-agent: *\r\nDisallow: /a\r\nAllow: /a/b\r\n",
            [(["*"], [("/a", False), ("/a/b", True)])],
        ),
        # A lone \r is not a line break: one line, one odd agent, no rules.
        ("User-agent: *\rDisallow: /a", [(["*\rdisallow: /a"], [])]),
        ("USER-AGENT: Bot\nDISALLOW: /Private", [(["bot"], [("/Private", False)])]),
        ("  User-agent  :   Bot  \n  Disallow :  /x  ", [(["bot"], [("/x", False)])]),
        ("\ufeffUser-agent: *\nDisallow: /x", [(["*"], [("/x", False)])]),
        ("# header\nUser-agent: * # all\nDisallow: /a#b", [(["*"], [("/a", False)])]),
        ("User-agent *\nDisallow /x\nUser-agent: b\nDisallow: /y", [(["b"], [("/y", False)])]),
        ("Disallow: /early\nUser-agent: *\nDisallow: /x", [(["*"], [("/x", False)])]),
        # Consecutive agents share a group, across blank lines and other directives.
        ("User-agent: a\nUser-agent: b\nDisallow: /x", [(["a", "b"], [("/x", False)])]),
        (
            "User-agent: *\nCrawl-delay: 10\n\nUser-agent: other\nDisallow: /",
            [(["*", "other"], [("/", False)])],
        ),
        (
            "User-agent: a\nSitemap: http://x/s.xml\nUser-agent: b\nDisallow: /x",
            [(["a", "b"], [("/x", False)])],
        ),
        # Only Allow/Disallow close a group; an empty Disallow closes it and adds nothing.
        (
            "User-agent: a\nDisallow:\nUser-agent: b\nDisallow: /x",
            [(["a"], []), (["b"], [("/x", False)])],
        ),
        ("User-agent: a\nAllow:\nUser-agent: b", [(["a"], [("", True)]), (["b"], [])]),
        ("User-agent:\nDisallow: /", [([], [("/", False)])]),
        (
            "User-agent: bot\nDisallow: /a\nUser-agent: bot\nDisallow: /b",
            [(["bot"], [("/a", False)]), (["bot"], [("/b", False)])],
        ),
        ("", []),
    ],
)
def test_parse_groups(text: str, groups: list[tuple[list[str], list[tuple[str, bool]]]]) -> None:
    got = [(g.agents, [(r.path, r.allow) for r in g.rules]) for g in parse_groups(text)]
    assert got == groups


@pytest.mark.parametrize(
    ("agent", "token", "score"),
    [
        ("testbot", "testbot", 3),
        ("test", "testbot", 2),  # our token starts with the agent
        ("testbotextra", "testbot", 2),  # the agent starts with our token: a prefix either way
        ("googlebot/2.1", "googlebot", 2),  # compared as the full lowercased string
        ("*", "testbot", 1),
        ("other", "testbot", 0),
        ("bot", "testbot", 0),  # a suffix is not a prefix
    ],
)
def test_agent_score(agent: str, token: str, score: int) -> None:
    assert agent_score(agent, token) == score


@pytest.mark.parametrize(
    ("text", "user_agent", "agents"),
    [
        ("User-agent: *\nDisallow: /", UA, ["*"]),
        ("User-agent: test\nDisallow: /a\n\nUser-agent: testbot\nDisallow: /b", UA, ["testbot"]),
        ("User-agent: *\nDisallow: /\n\nUser-agent: my\nDisallow: /x", "my-crawler/1.0", ["my"]),
        (
            "User-agent: *\nDisallow: /\n\nUser-agent: TestBotPlus\nDisallow: /x",
            UA,
            ["testbotplus"],
        ),
        # The first group to reach the strictly highest score wins.
        ("User-agent: testbo\nDisallow: /a\n\nUser-agent: test\nDisallow: /b", UA, ["testbo"]),
        ("User-agent: other\nDisallow: /", UA, None),
        ("", UA, None),
    ],
)
def test_select_group(text: str, user_agent: str, agents: list[str] | None) -> None:
    group = select_group(parse_groups(text), product_token(user_agent).lower())
    assert (group.agents if group else None) == agents


@pytest.mark.parametrize(
    ("text", "path", "allowed"),
    [
        ("User-agent: *\nDisallow: /", "/", False),
        ("User-agent: *\nDisallow: /", "/anything?q=1", False),
        ("User-agent: *\nDisallow:", "/anything", True),
        ("User-agent: *\nDisallow: /a", "/b", True),
        ("User-agent: *\nDisallow: /a", "/about", False),  # a plain prefix, no segment rule
        # Longest match decides; Allow wins a tie whatever the order.
        ("User-agent: *\nDisallow: /a\nAllow: /a/b", "/a/b/c", True),
        ("User-agent: *\nAllow: /a/b\nDisallow: /a", "/a/c", False),
        ("User-agent: *\nAllow: /a\nDisallow: /a/b", "/a/b", False),
        ("User-agent: *\nDisallow: /a\nAllow: /a", "/a", True),
        ("User-agent: *\nAllow: /a\nDisallow: /a", "/a", True),
        # Case-sensitive, no percent-decoding.
        ("User-agent: *\nDisallow: /Private", "/private", True),
        ("User-agent: *\nDisallow: /%7Ea", "/~a", True),
        ("User-agent: *\nDisallow: /%7Ea", "/%7Ea/b", False),
        # No wildcards in the minimal matcher: * and $ are literal.
        ("User-agent: *\nDisallow: /*.pdf", "/doc.pdf", True),
        ("User-agent: *\nDisallow: /*.pdf", "/*.pdf", False),
        ("User-agent: *\nDisallow: /a$", "/a", True),
        ("User-agent: *\nDisallow: /a$", "/a$", False),
        # The query is part of the candidate.
        ("User-agent: *\nDisallow: /search?q=", "/search?q=cats", False),
        ("User-agent: *\nDisallow: /search?q=", "/search", True),
        # An empty Allow is stored but never matches.
        ("User-agent: *\nAllow:\nDisallow: /", "/x", False),
        # Crawl-delay does not close the agent list, so * is blocked too.
        ("User-agent: *\nCrawl-delay: 10\nUser-agent: other\nDisallow: /", "/x", False),
        # Duplicate groups are not merged: the first one wins.
        ("User-agent: testbot\nDisallow: /a\n\nUser-agent: testbot\nDisallow: /b", "/b", True),
        ("User-agent: testbot\nDisallow: /a\n\nUser-agent: testbot\nDisallow: /b", "/a", False),
        # The exact agent beats * even when * comes first.
        ("User-agent: *\nDisallow: /\n\nUser-agent: testbot\nDisallow: /x", "/y", True),
        ("User-agent: other\nDisallow: /", "/x", True),
        ("User-agent: *\rDisallow: /", "/x", True),  # a lone \r: no rule at all
    ],
)
def test_traverse_matcher(text: str, path: str, allowed: bool) -> None:
    assert parse_robots(text, UA).allows(path) is allowed


def test_traverse_matcher_ignores_crawl_delay() -> None:
    assert parse_robots("User-agent: *\nCrawl-delay: 5", UA).crawl_delay is None
    assert TraverseRules((Rule("/a", False),)).allows("/b")


@pytest.mark.parametrize(
    ("url", "candidate"),
    [
        ("http://h.test/a/b?x=1#frag", "/a/b?x=1"),
        ("http://h.test", "/"),
        ("http://h.test/a?", "/a"),  # WHATWG: an empty query has an empty search
        ("http://h.test/caf\u00e9 x", "/caf%C3%A9%20x"),
        ("HTTP://H.TEST:80/a/../b", "/b"),
    ],
)
def test_path_and_query(url: str, candidate: str) -> None:
    assert path_and_query(url) == candidate


@pytest.mark.parametrize(
    ("text", "path", "allowed"),
    [
        ("User-agent: *\nDisallow: /*.pdf", "/docs/a.pdf", False),
        ("User-agent: *\nDisallow: /*.pdf", "/docs/a.html", True),
        ("User-agent: *\nDisallow: /a$", "/a", False),
        ("User-agent: *\nDisallow: /a$", "/ab", True),
        ("User-agent: *\nDisallow: /private", "/private/x", False),
        ("User-agent: *\nDisallow: /\nAllow: /public", "/public/x", True),
        ("User-agent: *\nDisallow: /%7Ea", "/~a", False),  # RFC 9309 normalises escapes
        ("User-agent: *\nDisallow: /\n\nUser-agent: testbot\nDisallow: /x", "/y", True),
        ("User-agent: *\nDisallow: /\n\nUser-agent: testbot\nDisallow: /x", "/x", False),
        ("User-agent: *\nDisallow: /", "//double/slash", False),
    ],
)
def test_rfc9309_matcher(text: str, path: str, allowed: bool) -> None:
    assert ProtegoRules(text, UA).allows(path) is allowed


@pytest.mark.parametrize(
    ("text", "delay"),
    [
        ("User-agent: *\nCrawl-delay: 2.5", 2.5),
        ("User-agent: *\nCrawl-delay: 9\n\nUser-agent: testbot\nCrawl-delay: 1", 1.0),
        ("User-agent: *\nDisallow: /x", None),
        ("User-agent: other\nCrawl-delay: 3", None),
    ],
)
def test_rfc9309_crawl_delay(text: str, delay: float | None) -> None:
    assert ProtegoRules(text, UA).crawl_delay == delay


def _unreachable(kind: str, policy: str) -> str:
    tail = "proceeding (fail-open)" if policy == "fail-open" else "disallowing all (rfc9309)"
    return f"robots.txt for {ORIGIN} unreachable ({kind}); {tail}"


def _returned(status: int, policy: str) -> str:
    tail = "proceeding (fail-open)" if policy == "fail-open" else "disallowing all (rfc9309)"
    return f"robots.txt for {ORIGIN} returned {status}; {tail}"


DENY_ALL = b"User-agent: *\nDisallow: /"


@pytest.mark.parametrize("policy", ["fail-open", "rfc9309"])
@pytest.mark.parametrize(
    ("fetch", "degraded", "allowed", "warning"),
    [
        (RobotsFetch(error_kind="network"), True, None, lambda p: _unreachable("network", p)),
        (RobotsFetch(error_kind="timeout"), True, None, lambda p: _unreachable("timeout", p)),
        (RobotsFetch(500, DENY_ALL), True, None, lambda p: _returned(500, p)),
        (RobotsFetch(503), True, None, lambda p: _returned(503, p)),
        (RobotsFetch(599), True, None, lambda p: _returned(599, p)),
        (RobotsFetch(429, DENY_ALL), True, None, lambda p: _returned(429, p)),
        # Other 4xx: allow-all and silent under both policies, whatever the body.
        (RobotsFetch(404, DENY_ALL), False, True, lambda p: None),
        (RobotsFetch(401, DENY_ALL), False, True, lambda p: None),
        (RobotsFetch(403, DENY_ALL), False, True, lambda p: None),
        (RobotsFetch(408), False, True, lambda p: None),
        # A 3xx is not followed; its body is parsed as robots text, as in Traverse.
        (RobotsFetch(301, DENY_ALL), False, False, lambda p: None),
        (RobotsFetch(302, b"<html>moved</html>"), False, True, lambda p: None),
        (RobotsFetch(200, DENY_ALL), False, False, lambda p: None),
        (RobotsFetch(200, b"\xef\xbb\xbf" + DENY_ALL), False, False, lambda p: None),
        (RobotsFetch(200, b"User-agent: *\nDisallow: /\xff\xfe"), False, True, lambda p: None),
        (RobotsFetch(200, b""), False, True, lambda p: None),
    ],
)
def test_policy(fetch: RobotsFetch, degraded: bool, allowed, warning, policy: str) -> None:  # type: ignore[no-untyped-def]
    rules, got_warning = decide(fetch, ORIGIN, UA, policy)  # type: ignore[arg-type]
    assert got_warning == warning(policy)
    if degraded:
        expected = AllowAll if policy == "fail-open" else DisallowAll
        assert isinstance(rules, expected)
        assert rules.allows("/x") is (policy == "fail-open")
    else:
        assert rules.allows("/x") is allowed


@pytest.mark.parametrize("matcher", ["traverse", "rfc9309"])
def test_only_the_first_500_kib_are_parsed(matcher: str) -> None:
    head = b"User-agent: *\nDisallow: /early\n"
    padding = b"# " + b"x" * (MAX_ROBOTS_BYTES - len(head) - 3) + b"\n"
    assert len(head + padding) == MAX_ROBOTS_BYTES
    body = head + padding + b"Disallow: /late\n" + b"# " + b"y" * 100 * 1024 + b"\n"
    rules, warning = decide(RobotsFetch(200, body), ORIGIN, UA, "fail-open", matcher)  # type: ignore[arg-type]
    assert warning is None
    assert not rules.allows("/early")
    assert rules.allows("/late")
    # A rule that ends exactly at the limit is still read.
    edge = (
        head + b"Disallow: /edge" + b"\n" * (MAX_ROBOTS_BYTES - len(head) - 15) + b"Disallow: /late"
    )
    assert len(edge) > MAX_ROBOTS_BYTES
    rules, _ = decide(RobotsFetch(200, edge), ORIGIN, UA, "fail-open", matcher)  # type: ignore[arg-type]
    assert not rules.allows("/edge")
    assert rules.allows("/late")


def test_rfc9309_matcher_is_chosen_by_policy_call() -> None:
    body = b"User-agent: *\nDisallow: /*.pdf\nCrawl-delay: 3"
    traverse_rules, _ = decide(RobotsFetch(200, body), ORIGIN, UA, "fail-open", "traverse")
    rfc_rules, _ = decide(RobotsFetch(200, body), ORIGIN, UA, "rfc9309", "rfc9309")
    assert traverse_rules.allows("/a.pdf") and traverse_rules.crawl_delay is None
    assert not rfc_rules.allows("/a.pdf") and rfc_rules.crawl_delay == 3.0
