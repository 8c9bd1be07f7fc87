"""Seeds of a crawl: ``-a url=`` or a ``-a seeds=FILE`` (docs/settings.md, "Spider arguments")."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from traverse_crawl.crawl.scope import SCOPES
from traverse_crawl.errors import ConfigError, FetchError
from traverse_crawl.fetch import urls
from traverse_crawl.fetch.content import CONTENT_TYPES
from traverse_crawl.utils.redact import redact_text


@dataclass(frozen=True)
class Seed:
    id: str
    url: str
    content_type: str | None = None
    # A JSON seed's own values of the crawl-policy settings (None: the setting's).
    scope: str | None = None
    include: tuple[str, ...] | None = None
    exclude: tuple[str, ...] | None = None
    extra_hops: int | None = None
    max_pages: int | None = None
    max_depth: int | None = None

    def own_values(self) -> dict[str, Any]:
        """The seed's own values, by their seeds-file names (for its JSON form)."""
        out: dict[str, Any] = {}
        for name in OWN_VALUES:
            value = getattr(self, name)
            if value is not None:
                out[name] = list(value) if isinstance(value, tuple) else value
        return out


# A JSON seed's values that override a setting for that seed: its name in the seeds
# file, and the setting's.
OWN_VALUES = {
    "scope": "TRAVERSE_SCOPE",
    "include": "TRAVERSE_INCLUDE",
    "exclude": "TRAVERSE_EXCLUDE",
    "extra_hops": "TRAVERSE_EXTRA_HOPS",
    "max_pages": "TRAVERSE_MAX_PAGES",
    "max_depth": "TRAVERSE_MAX_DEPTH",
}


def seed_dict(seed: Seed) -> dict[str, Any]:
    """The seed as kept in a JOBDIR or in Redis: its JSON line's fields."""
    out: dict[str, Any] = {"id": seed.id, "url": seed.url}
    if seed.content_type:
        out["content_type"] = seed.content_type
    out.update(seed.own_values())
    return out


def seed_from_dict(data: dict[str, Any]) -> Seed:
    """The seed ``seed_dict`` gave (its values were checked when it was first read)."""
    own: dict[str, Any] = {
        name: tuple(data[name]) if isinstance(data[name], list) else data[name]
        for name in OWN_VALUES
        if data.get(name) is not None
    }
    return Seed(data["id"], data["url"], data.get("content_type"), **own)


def seed_values(data: dict[str, Any], where: str) -> dict[str, Any]:
    """A JSON seed's own values, checked as their settings are; ``ConfigError`` names the
    setting and the seed."""
    from traverse_crawl.config import parsers as config

    out: dict[str, Any] = {}
    for name, setting in OWN_VALUES.items():
        value = data.get(name)
        if value is None:
            continue
        label = f"{setting} (seeds {where}, seed {data.get('id', data.get('url'))!r}, {name!r})"
        if name == "scope":
            out[name] = config.parse_choice(label, value, SCOPES)
        elif name in ("include", "exclude"):
            if not isinstance(value, list):
                raise ConfigError(
                    label, f"expected a JSON list of regular expressions, got {value!r}"
                )
            out[name] = config.parse_patterns(label, value)
        else:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigError(label, f"expected a whole number >= 0, got {value!r}")
            out[name] = config.parse_whole(label, value)
    return out


def check_content_type(name: str, value: str | None) -> str | None:
    if value in (None, ""):
        return None
    if value not in CONTENT_TYPES:
        accepted = ", ".join(sorted(CONTENT_TYPES))
        raise ConfigError(name, f"expected one of {accepted}, got {value!r}")
    return value


def parse_seed_line(line: str, where: str) -> Seed | None:
    """``URL``, ``ID<TAB>URL`` or a JSON object; blank and ``#`` lines give None."""
    text = line.strip()
    if not text or text.startswith("#"):
        return None
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError("seeds", f"{where}: invalid JSON ({exc.msg})") from None
        if not isinstance(data, dict) or not isinstance(data.get("url"), str):
            raise ConfigError("seeds", f"{where}: a JSON seed needs a string 'url'")
        url = data["url"]
        seed_id = data.get("id", url)
        if not isinstance(seed_id, str):
            raise ConfigError("seeds", f"{where}: 'id' must be a string")
        hint = check_content_type(f"seeds ({where}) content_type", data.get("content_type"))
        return Seed(seed_id, url, hint, **seed_values(data, where))
    if "\t" in line.rstrip("\r\n"):
        seed_id, url = line.rstrip("\r\n").split("\t", 1)
        return Seed(seed_id, url.strip())
    return Seed(text, text)


def read_seeds(path: str) -> list[Seed]:
    try:
        # utf-8-sig: a file saved with a byte order mark (Windows editors)
        # would otherwise start its first seed with an invisible U+FEFF.
        with open(path, encoding="utf-8-sig") as handle:
            lines = handle.readlines()
    except OSError as exc:
        raise ConfigError("seeds", f"cannot read {path!r}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError("seeds", f"{path!r} is not UTF-8 text") from None
    seeds = []
    for number, line in enumerate(lines, 1):
        seed = parse_seed_line(line, f"{path}:{number}")
        if seed is not None:
            seeds.append(seed)
    if not seeds:
        raise ConfigError("seeds", f"{path!r} holds no seed")
    return seeds


def check_unique(seeds: list[Seed]) -> None:
    """Two seeds with one id would share page ids, store slots and a manifest file.

    An id must also be valid Unicode: a lone surrogate (possible in a JSON seeds
    file) has no ``encodeURIComponent`` form, so it could not name a page.
    """
    seen: set[str] = set()
    for seed in seeds:
        try:
            seed.id.encode("utf-8")
        except UnicodeEncodeError:
            raise ConfigError("seeds", f"seed id {seed.id!r} is not valid Unicode") from None
        if seed.id in seen:
            raise ConfigError("seeds", f"duplicate seed id {seed.id!r}")
        seen.add(seed.id)


def seeds_from_args(
    url: str | None = None,
    seeds: str | None = None,
    source_id: str | None = None,
    content_type: str | None = None,
) -> list[Seed]:
    """The seeds named by the spider's ``-a`` arguments."""
    if (url is None) == (seeds is None):
        raise ConfigError("url/seeds", "give exactly one of -a url=URL or -a seeds=FILE")
    if seeds is not None:
        if source_id is not None or content_type is not None:
            raise ConfigError(
                "source_id/content_type", "apply to -a url= only; put them in the seeds file"
            )
        found = read_seeds(seeds)
    else:
        assert url is not None
        hint = check_content_type("content_type", content_type)
        found = [Seed(url if source_id is None else source_id, url, hint)]
    check_unique(found)
    return found


def password_warning(seeds: list[Seed]) -> str | None:
    """The start-up warning for seeds whose URL or id carries a URL's password, or None.

    A page id is the seed id and the page's URL as discovered, and names the page's
    store directory; the seed id also names the manifest file (Traverse's naming,
    docs/snapshots.md): those keep what the id and the URL hold.
    """
    by_id = [seed for seed in seeds if redact_text(seed.id) != seed.id]
    by_url = [seed for seed in seeds if redact_text(seed.url) != seed.url]
    if not by_id and not by_url:
        return None
    if by_id:
        found, what = by_id, "seed id"
        keeps = "the manifest's file name, every page id and the store's directory names"
        advice = "; -a source_id=NAME (or an id in the seeds file) gives the seed an id without it"
    else:
        found, what = by_url, "seed URL"
        keeps = "the page id of its page and that page's store directory name"
        advice = ""
    first = redact_text(found[0].id if by_id else found[0].url)
    which = f"{what} {first!r}" if len(found) == 1 else f"{len(found)} {what}s ({first!r}, ...)"
    return (
        f"{which} carries a password (a URL's user:password@): {keeps} keep it, as the "
        f"WARC metadata records do; logs, stats and reports mask it{advice} "
        "(docs/snapshots.md)"
    )


def invalid_seed_error(seed_url: str) -> FetchError:
    """Traverse's ``invalid-url`` messages for a seed that cannot be fetched."""
    parsed = urls.parse(seed_url)
    if parsed is None:
        return FetchError("invalid-url", f"SourceConfig.url is not a valid URL: {seed_url}")
    return FetchError("invalid-url", f"unsupported URL protocol: {parsed.protocol}")
