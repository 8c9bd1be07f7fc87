"""The robots.txt engine: Traverse's minimal matcher, an RFC 9309 matcher, and the load policy.

Pure: ``politeness/robots_middleware.py`` fetches ``/robots.txt`` and hands the
outcome to ``decide``, which turns it into rules (``TraverseRules`` or, with
``TRAVERSE_ROBOTS_MATCHER=rfc9309``, ``ProtegoRules``) plus an optional page
warning under ``TRAVERSE_ROBOTS_POLICY`` (docs/robots.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal, NamedTuple, Protocol

from protego import Protego

from traverse_crawl.config.choices import RobotsMatcher, RobotsPolicy
from traverse_crawl.fetch import urls

# RFC 9309 §2.5: crawlers must parse at least 500 kibibytes; we parse exactly that.
MAX_ROBOTS_BYTES = 500 * 1024

# JavaScript's ``trim()`` and ``\s``: WhiteSpace (incl. U+FEFF) and LineTerminator.
# Python's ``str.strip()`` differs (it keeps U+FEFF, drops U+001C-U+001F), and a
# BOM at the start of the file must be harmless, as in Traverse.
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_JS_TRIM = re.compile(f"^[{_JS_SPACE}]+|[{_JS_SPACE}]+$")
_TOKEN_SPLIT = re.compile(f"[{_JS_SPACE}/]+")
_LINE_BREAK = re.compile(r"\r?\n")  # a lone \r is not a line break, as in Traverse

ErrorKind = Literal["network", "timeout"]
Policy = RobotsPolicy  # TRAVERSE_ROBOTS_POLICY
Matcher = RobotsMatcher  # TRAVERSE_ROBOTS_MATCHER


def js_trim(text: str) -> str:
    return _JS_TRIM.sub("", text)


def product_token(user_agent: str) -> str:
    """The first piece of ``ua.trim().split(/[\\s/]+/)``, original case (docs/robots.md)."""
    return _TOKEN_SPLIT.split(js_trim(user_agent))[0]


def path_and_query(url: str) -> str:
    """The matching candidate: WHATWG ``pathname + search`` (no fragment)."""
    parsed = urls.parse(url)
    if parsed is None:
        return "/"
    return str(parsed.pathname) + str(parsed.search)


class RobotsRules(Protocol):
    """What the middleware needs of a parsed robots.txt, resolved for one user agent."""

    @property
    def crawl_delay(self) -> float | None: ...

    def allows(self, path_and_query: str) -> bool: ...


@dataclass(frozen=True)
class AllowAll:
    crawl_delay: float | None = None

    def allows(self, path_and_query: str) -> bool:
        return True


@dataclass(frozen=True)
class DisallowAll:
    crawl_delay: float | None = None

    def allows(self, path_and_query: str) -> bool:
        return False


# -- Traverse's minimal matcher (docs/robots.md, "The `traverse` matcher") --------
# Hand-written because no library has its group rules: only Allow/Disallow close
# an agent list, and an agent matches a token that is a prefix of it, or the
# other way round. Plain case-sensitive prefixes, the longest wins, Allow wins a
# tie, no wildcards, no Crawl-delay.


@dataclass(frozen=True)
class Rule:
    path: str
    allow: bool


@dataclass
class Group:
    agents: list[str] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)
    has_rule: bool = False


def parse_groups(text: str) -> list[Group]:
    """Every group in file order; duplicate groups stay separate."""
    groups: list[Group] = []
    current: Group | None = None
    for raw in _LINE_BREAK.split(text):
        line = js_trim(raw.split("#", 1)[0])
        if not line or ":" not in line:
            continue
        name, _, rest = line.partition(":")
        name = js_trim(name).lower()
        value = js_trim(rest)
        if name == "user-agent":
            # Only Allow/Disallow close an agent list, not blank lines or other
            # directives: Traverse's code does so, though its comment says otherwise.
            if current is None or current.has_rule:
                current = Group()
                groups.append(current)
            if value:
                current.agents.append(value.lower())
        elif name in ("allow", "disallow"):
            if current is None:
                continue  # rules before the first User-agent
            current.has_rule = True
            if name == "disallow" and not value:
                continue  # an empty Disallow means allow-all: adds nothing
            current.rules.append(Rule(value, name == "allow"))
    return groups


def agent_score(agent: str, token: str) -> int:
    """3 exact, 2 prefix either way (Traverse's code), 1 ``*``, else 0; both lowercased."""
    if agent == token:
        return 3
    if token.startswith(agent) or agent.startswith(token):
        return 2
    if agent == "*":
        return 1
    return 0


def select_group(groups: list[Group], token: str) -> Group | None:
    """The first group to reach the strictly highest score; None when none scores."""
    best: Group | None = None
    best_score = 0
    for group in groups:
        for agent in group.agents:
            score = agent_score(agent, token)
            if score > best_score:
                best, best_score = group, score
    return best


@dataclass(frozen=True)
class TraverseRules:
    rules: tuple[Rule, ...] = ()
    crawl_delay: float | None = None  # Traverse ignores Crawl-delay

    def allows(self, path_and_query: str) -> bool:
        """Longest plain prefix wins, Allow wins a tie, no match allows."""
        best = -1
        allowed = True
        for rule in self.rules:
            if not rule.path or not path_and_query.startswith(rule.path):
                continue
            # Matching rules are prefixes of one string, so code points order
            # them exactly as Traverse's UTF-16 lengths do.
            length = len(rule.path)
            if length > best or (length == best and rule.allow):
                best, allowed = length, rule.allow
        return allowed


def parse_robots(text: str, user_agent: str) -> TraverseRules:
    """Traverse's ``parseRobots``: the rules of the group selected for ``user_agent``."""
    group = select_group(parse_groups(text), product_token(user_agent).lower())
    return TraverseRules(tuple(group.rules) if group else ())


# -- RFC 9309 matcher (protego) ------------------------------------------------


class ProtegoRules:
    """RFC 9309 rules for one product token: wildcards, ``$``, Crawl-delay."""

    def __init__(self, text: str, user_agent: str) -> None:
        self._parser = Protego.parse(text)
        self._token = product_token(user_agent)
        self.crawl_delay: float | None = self._parser.crawl_delay(self._token)

    def allows(self, path_and_query: str) -> bool:
        # A dummy authority keeps a path starting with "//" from being read as
        # a host by protego's urlsplit.
        return bool(self._parser.can_fetch("http://robots.invalid" + path_and_query, self._token))


# -- load policy (docs/robots.md, "Loading") ----------------------------------


@dataclass(frozen=True)
class RobotsFetch:
    """What the robots.txt request produced: an error kind, or a status and body."""

    status: int | None = None
    body: bytes = b""
    error_kind: ErrorKind | None = None


class Decision(NamedTuple):
    rules: RobotsRules
    warning: str | None


def parse_body(body: bytes, user_agent: str, matcher: Matcher = "traverse") -> RobotsRules:
    """Decode the first 500 KiB as UTF-8 with replacement (RFC 9309 §2.5) and parse."""
    text = body[:MAX_ROBOTS_BYTES].decode("utf-8", errors="replace")
    if matcher == "rfc9309":
        return ProtegoRules(text, user_agent)
    return parse_robots(text, user_agent)


def decide(
    fetch: RobotsFetch,
    origin: str,
    user_agent: str,
    policy: Policy = "fail-open",
    matcher: Matcher = "traverse",
) -> Decision:
    """Rules and page warning for one origin's robots.txt outcome.

    ``fail-open`` is Traverse: unreachable, 5xx and 429 allow all with a warning;
    other 4xx allow all silently (as RFC 9309 §2.3.1.3 does). ``rfc9309`` disallows
    all on unreachable, 5xx and 429 (RFC 9309 §2.3.1.4). A 3xx is never followed,
    as in Traverse (RFC 9309 §2.3.1.2 would follow it); its body is parsed like any
    other.
    """
    status = fetch.status
    if fetch.error_kind is not None or status is None:
        return _unavailable(policy, origin, f"unreachable ({fetch.error_kind or 'network'})")
    if status >= 500 or status == 429:
        return _unavailable(policy, origin, f"returned {status}")
    if status >= 400:
        return Decision(AllowAll(), None)
    return Decision(parse_body(fetch.body, user_agent, matcher), None)


def _unavailable(policy: Policy, origin: str, what: str) -> Decision:
    """robots.txt could not be had: Traverse's fail-open, or RFC 9309 §2.3.1.4's disallow-all."""
    if policy == "rfc9309":
        return Decision(DisallowAll(), f"robots.txt for {origin} {what}; disallowing all (rfc9309)")
    return Decision(AllowAll(), f"robots.txt for {origin} {what}; proceeding (fail-open)")
