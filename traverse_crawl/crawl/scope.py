"""What a seed's frontier admits: scope, include/exclude, extra hops, trap guards and the
seen key (docs/crawling-real-sites.md).

``policy_for`` gives a seed's ``Policy``, or None when every rule is at its default:
then the frontier and the link extraction keep their same-origin fast path, byte for
byte today's. A ``Policy`` is compiled once per seed (its regular expressions, the
seed's registrable domain), so judging a link is a few string operations. Links are
serialised http(s) URLs without a fragment (``crawl/links.py``), which the rules read
as strings. Hand-written because the admission rules are the design; the registrable
domain comes from the Public Suffix List that tldextract ships (read offline).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from traverse_crawl.config.choices import SCOPES as SCOPES  # TRAVERSE_SCOPE's names
from traverse_crawl.crawl.seen_key import SeenKey, trap_rule
from traverse_crawl.fetch import urls


@dataclass(frozen=True)
class PolicySpec:
    """The values of the rules for one seed: the settings, with the seed's own on top."""

    scope: str = "origin"
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    extra_hops: int = 0
    trap_guards: bool = False
    max_url_length: int = 2048
    seen_key: str = "verbatim"
    ignore_params: tuple[str, ...] = ()

    @property
    def is_default(self) -> bool:
        """Whether every rule is today's: origin scope, no patterns, no hops, no guards,
        the verbatim key (a URL length or ignored names unused by them do not count)."""
        return (
            self.scope == "origin"
            and not self.include
            and not self.exclude
            and self.extra_hops == 0
            and not self.trap_guards
            and self.seen_key == "verbatim"
        )


# The settings of the rules: config attribute (a ``PolicySpec`` field too) and name.
POLICY_SETTINGS = {
    "scope": "TRAVERSE_SCOPE",
    "include": "TRAVERSE_INCLUDE",
    "exclude": "TRAVERSE_EXCLUDE",
    "extra_hops": "TRAVERSE_EXTRA_HOPS",
    "trap_guards": "TRAVERSE_TRAP_GUARDS",
    "max_url_length": "TRAVERSE_MAX_URL_LENGTH",
    "seen_key": "TRAVERSE_SEEN_KEY",
    "ignore_params": "TRAVERSE_IGNORE_PARAMS",
}


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def policy_defaults() -> dict[str, Any]:
    """Each rule's setting and its default, as JSON keeps it."""
    spec = PolicySpec()
    return {name: _plain(getattr(spec, attr)) for attr, name in POLICY_SETTINGS.items()}


def policy_settings(config: Any) -> dict[str, Any]:
    """The rules' settings that are not at their default (what defines a crawl besides its
    seeds: a JOBDIR or a Redis crawl keeps them, and refuses a run that differs)."""
    defaults = policy_defaults()
    out = {}
    for attr, name in POLICY_SETTINGS.items():
        value = _plain(getattr(config, attr))
        if value != defaults[name]:
            out[name] = value
    return out


def spec_for(seed: Any, config: Any) -> PolicySpec:
    """The seed's rules: the config's, overridden by the seed's values that are set."""
    spec = PolicySpec(
        scope=config.scope,
        include=tuple(config.include),
        exclude=tuple(config.exclude),
        extra_hops=config.extra_hops,
        trap_guards=config.trap_guards,
        max_url_length=config.max_url_length,
        seen_key=config.seen_key,
        ignore_params=tuple(config.ignore_params),
    )
    own = {
        name: getattr(seed, name)
        for name in ("scope", "include", "exclude", "extra_hops")
        if getattr(seed, name, None) is not None
    }
    return replace(spec, **own) if own else spec


def policy_for(seed: Any, config: Any) -> Policy | None:
    spec = spec_for(seed, config)
    return None if spec.is_default else Policy(seed.url, spec)


@functools.cache
def _extractor() -> Any:
    import tldextract

    # No suffix-list URL and no cache: only the snapshot the package ships is read,
    # and nothing is written. Private suffixes (github.io, ...) count: a user's site
    # there is its own registrable domain, not every other user's too.
    return tldextract.TLDExtract(
        cache_dir=None, suffix_list_urls=(), include_psl_private_domains=True
    )


@functools.lru_cache(maxsize=1024)
def registrable_domain(host: str) -> str:
    """The host's registrable domain by the Public Suffix List, or "" when it has none
    (an IP address, ``localhost``, a public suffix itself)."""
    if not host or host.startswith("[") or host.replace(".", "").isdigit():
        return ""
    result = _extractor()(host)
    return str(result.top_domain_under_public_suffix if result.suffix else "")


def host_of(url: str) -> str:
    """The host of a serialised http(s) URL (IPv6 in brackets), without userinfo or port."""
    start = url.find("://") + 3
    end = url.find("/", start)
    authority = url[start:end] if end >= 0 else url[start:]
    if "@" in authority:
        authority = authority[authority.rfind("@") + 1 :]
    if authority[:1] == "[":
        return authority[: authority.find("]") + 1]
    colon = authority.find(":")
    return authority if colon < 0 else authority[:colon]


class Searcher(Protocol):
    def search(self, text: str, /) -> Any: ...


def any_of(patterns: tuple[str, ...]) -> Searcher | None:
    """One compiled expression that matches where any of ``patterns`` does (searched
    once per link, not once per pattern); None for no pattern. Patterns that cannot be
    joined as alternatives (a back-reference or a global flag) are joined by a lookahead
    each, which is still one search."""
    if not patterns:
        return None
    if len(patterns) == 1:
        return re.compile(patterns[0])
    joined = "|".join(f"(?:{p})" for p in patterns)
    if not _BACKREF.search(joined):
        try:
            return re.compile(joined)
        except re.error:  # a global flag not at the start of the whole expression
            pass
    compiled = [re.compile(p) for p in patterns]
    return _Any(compiled)


_BACKREF = re.compile(r"\\[1-9]|\(\?P=|\\g<")


class _Any:
    """``search`` of several compiled expressions (what ``any_of`` cannot join)."""

    def __init__(self, compiled: list[re.Pattern[str]]) -> None:
        self.compiled = compiled

    def search(self, text: str) -> bool:
        return any(pattern.search(text) for pattern in self.compiled)


class Policy:
    """One seed's compiled rules."""

    def __init__(self, seed_url: str, spec: PolicySpec) -> None:
        self.spec = spec
        normalized = urls.normalize(seed_url) or ""
        self.seed_origin = urls.origin(normalized) if normalized else ""
        self.scope_reason = "off-origin" if spec.scope == "origin" else "out-of-scope"
        self.include = any_of(spec.include)
        self.exclude = any_of(spec.exclude)
        self.extra_hops = spec.extra_hops
        self.max_url_length = spec.max_url_length if spec.trap_guards else None
        self.key = SeenKey(spec.seen_key, spec.ignore_params)
        self.rule = self._rule(normalized, spec.scope)

    def _rule(self, normalized: str, scope: str) -> Callable[[str], bool]:
        origin = self.seed_origin
        if not origin:
            return lambda url: False
        if scope == "origin":
            return lambda url: urls.same_origin(url, origin)
        host = host_of(normalized)
        if scope == "domain":
            domain = registrable_domain(host)
            if domain:
                tail = "." + domain

                def in_domain(url: str) -> bool:
                    found = host_of(url)
                    return found == domain or found.endswith(tail)

                return in_domain
        if scope in ("host", "domain"):
            # Without userinfo a serialised URL on the host starts with one of these.
            starts = tuple(f"{s}://{host}{c}" for s in ("http", "https") for c in "/:")

            def on_host(url: str) -> bool:
                if "@" not in url:
                    return url.startswith(starts)
                return host_of(url) == host

            return on_host
        path = urls.parse(normalized).pathname  # type: ignore[union-attr]
        directory = path[: path.rfind("/") + 1]
        prefix = origin + directory

        def in_prefix(url: str) -> bool:
            if url.startswith(prefix):
                return True
            if "@" not in url or urls.origin(url) != origin:
                return False
            parsed = urls.parse(url)
            return parsed is not None and parsed.pathname.startswith(directory)

        return in_prefix

    def excluded(self, url: str) -> bool:
        return self.exclude is not None and bool(self.exclude.search(url))

    def scoped(self, url: str) -> bool:
        """The scope rule or an include pattern admits ``url`` (exclude not asked)."""
        return self.rule(url) or (self.include is not None and bool(self.include.search(url)))

    def in_scope(self, url: str) -> bool:
        """A page whose final URL is this is in scope: its hop count is 0."""
        return not self.excluded(url) and self.scoped(url)

    def judge(self, url: str, hop: int) -> tuple[str, str | None] | None:
        """Why a link of a page with hop count ``hop`` is not admitted (reason, trap rule),
        in the skipped file's order of precedence; None when it is admitted."""
        if self.exclude is not None and self.exclude.search(url):
            return "excluded", None
        if hop + 1 > self.extra_hops and not self.scoped(url):
            return self.scope_reason, None
        if self.max_url_length is not None:
            rule = trap_rule(url, self.max_url_length)
            if rule is not None:
                return "trap", rule
        return None

    def follows(self, hop: int) -> bool:
        """Links are followed from a page whose hop count is 0 or below the extra hops."""
        return hop == 0 or hop < self.extra_hops
