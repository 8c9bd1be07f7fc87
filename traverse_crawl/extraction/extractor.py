"""``Extractor``: the items of one stored page, each value with its evidence (docs/extraction.md).

Pure: a body, its URLs and the compiled rules in, item dicts out. The crawl runs it
off the reactor thread (``extraction/spider_extraction.py``: in the extraction process,
or a worker thread), ``scrapy extract`` runs it over the store, and a spider's
``parse_page`` may call it directly. Every page is bounded: at most
``max_items_per_page`` items (and values of one ``many`` field), at most
``max_item_bytes`` bytes of items (counted as they are made, so a page whose matches
nest never holds more than that), and at most ``timeout`` seconds, regular
expressions included (the ``regex`` module's timeout); a page past a bound keeps
what fits, or nothing after the timeout, with a warning. A selector that fails on a
page (a data-dependent error the start-up check could not see) makes its field
missing, or skips its type, with a page warning: a rule never loses a page.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from json.encoder import encode_basestring as _json_string
from typing import Any

from lxml import etree

from traverse_crawl.crawl.html import cap_attributes
from traverse_crawl.extraction.items import ExtractedItem, encode_item
from traverse_crawl.extraction.rules import (
    FieldRule,
    ItemType,
    Rules,
    Selector,
    evaluation_error,
    load_rules,
)
from traverse_crawl.extraction.spans import SourceMap, node_path
from traverse_crawl.extraction.values import NoValue, derive
from traverse_crawl.fetch import urls
from traverse_crawl.meta_keys import SNAPSHOT

MAX_ITEMS_PER_PAGE = 1000
MAX_ITEM_BYTES_PER_PAGE = 16 * 1024 * 1024
TIMEOUT = 10.0
# What an item's JSON adds to the texts it holds (keys, quotes, the page's URLs are
# counted apiece), and an evidence entry's: the bytes bound counts them too.
_ITEM_OVERHEAD = 96
_ENTRY_OVERHEAD = 48
_local = threading.local()


class ExtractionTimeout(Exception):
    pass


class _OverBudget(Exception):
    """The page's items have reached ``max_item_bytes``: the rest are dropped."""


class SelectorFailed(Exception):
    """A selector raised when evaluated on this page; ``str()`` says why."""


def evaluate(selector: Selector, context: Any) -> Any:
    """The selector's result on ``context``; ``SelectorFailed`` when it raises (an
    EXSLT ``re:`` pattern built from the page, a type error only data reaches)."""
    try:
        return selector.compiled(context)
    except Exception as exc:
        raise SelectorFailed(evaluation_error(exc)) from None


def text_bytes(text: str) -> int:
    """The size of ``text`` in an items file's line: JSON-escaped, in UTF-8."""
    escaped = _json_string(text)
    return len(escaped) if escaped.isascii() else len(escaped.encode("utf-8", "surrogatepass"))


@dataclass
class Extraction:
    """One page's items (in type, then node order) and its page warnings."""

    items: list[ExtractedItem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def bytes_warning(max_bytes: int, kept: int) -> str:
    """The page warning of a page whose items passed ``max_bytes``."""
    return (
        f"extraction: more than {max_bytes} bytes of items on this page; the first {kept} "
        "item(s) were kept (TRAVERSE_MAX_ITEM_BYTES_PER_PAGE)"
    )


def failed_warning(reason: str) -> str:
    """The page warning of a page whose extraction raised: the page is kept."""
    return f"extraction failed on this page ({reason}); no items from this page"


def timeout_warning(timeout: float) -> str:
    """The page warning of a page whose extraction took more than ``timeout`` seconds."""
    return (
        f"extraction stopped after {timeout:g} s (TRAVERSE_EXTRACT_TIMEOUT); "
        "no items from this page"
    )


def _parser() -> etree.HTMLParser:
    # One per thread (an lxml parser must not be shared between threads); comments
    # are kept, as parsel keeps them, so selectors see the page parsel would.
    parser: etree.HTMLParser | None = getattr(_local, "parser", None)
    if parser is None:
        parser = etree.HTMLParser(recover=True, huge_tree=True, encoding="utf-8")
        _local.parser = parser
    return parser


def parse_body(body: str) -> tuple[etree._Element | None, bool]:
    """The parsed page, and whether character positions in it are those of ``body``.

    NUL becomes U+FFFD (what an HTML parser reads it as; lxml refuses NUL), which
    keeps every position; a start tag cut for too many attributes (``crawl/html.py``)
    does not, and then no span is given.
    """
    text = body.replace("\x00", "\ufffd") if "\x00" in body else body
    text, cut = cap_attributes(text)
    if not text.strip():
        return None, False
    try:
        root = etree.fromstring(text.encode("utf-8", "surrogatepass"), _parser())
    except (etree.XMLSyntaxError, ValueError):
        return None, False
    return root, cut == 0


def document_base(root: etree._Element, page_url: str) -> str:
    """The page's final URL, or its first ``<base href>`` resolved against it."""
    for base in root.iter("base"):
        href = base.get("href")
        if href is not None and href.strip():
            resolved = urls.normalize(href, page_url)
            if resolved is not None:
                return resolved
        break
    return page_url


def matched_text(result: Any) -> str:
    """What a selector result reads as: a text or attribute value as it is, an element
    as its markup (parsel's ``.get()``), a number or boolean of an XPath function."""
    if isinstance(result, etree._Element):
        return str(etree.tostring(result, method="html", encoding="unicode", with_tail=False))
    if isinstance(result, bool):
        return "true" if result else "false"
    if isinstance(result, float):
        return str(int(result)) if result.is_integer() else repr(result)
    return str(result)


class Extractor:
    """Extraction rules, compiled once; ``extract`` applies them to one page.

    ``rules`` is the path of an extraction file (TOML or JSON, docs/extraction.md) or
    ``Rules`` already loaded. Raises ``ConfigError`` for a bad file.
    """

    def __init__(
        self,
        rules: Rules | str | os.PathLike[str],
        max_items_per_page: int = MAX_ITEMS_PER_PAGE,
        timeout: float = TIMEOUT,
        max_item_bytes_per_page: int = MAX_ITEM_BYTES_PER_PAGE,
    ) -> None:
        self.rules = rules if isinstance(rules, Rules) else load_rules(os.fspath(rules))
        self.max_items = max_items_per_page
        self.timeout = timeout
        self.max_bytes = max_item_bytes_per_page

    @property
    def extractor(self) -> str:
        """``sha256:`` of the extraction file's bytes: every item's ``extractor``."""
        return self.rules.extractor

    def extract_page(self, response: Any, page: dict[str, Any]) -> list[ExtractedItem]:
        """For ``TraverseSpider.parse_page(response, page)``: the page's items from its
        snapshot as stored (the body a replay serves), with its page id and sourceRef."""
        snapshot = getattr(response, "meta", {}).get(SNAPSHOT)
        body = snapshot["body"] if isinstance(snapshot, dict) else response.text
        final_url = snapshot["url"] if isinstance(snapshot, dict) else response.url
        return self.extract(
            body,
            final_url,
            page_url=page.get("url"),
            page_id=page.get("id"),
            source_ref=page.get("sourceRef"),
        ).items

    def extract(
        self,
        body: str,
        final_url: str,
        *,
        page_url: str | None = None,
        page_id: str | None = None,
        source_ref: str | None = None,
        seed_url: str | None = None,
    ) -> Extraction:
        """The items of one HTML page. ``final_url`` is the URL the body was read from
        (``url`` fields resolve against it), ``page_url`` the page's URL in the
        manifest (default ``final_url``), ``seed_url`` the seed whose origin ``paths``
        apply to (default: the page's own origin)."""
        deadline = time.monotonic() + self.timeout
        out = Extraction()
        try:
            self._extract(body, final_url, page_url or final_url, page_id, source_ref,
                          seed_url, deadline, out)  # fmt: skip
        except (ExtractionTimeout, TimeoutError):
            out.items.clear()
            out.warnings.append(timeout_warning(self.timeout))
        except Exception as exc:  # a bug or a resource limit: the page is kept, not its items
            out.items.clear()
            out.warnings.append(failed_warning(f"{type(exc).__name__}: {exc}"[:200]))
        return out

    def _extract(
        self,
        body: str,
        final_url: str,
        page_url: str,
        page_id: str | None,
        source_ref: str | None,
        seed_url: str | None,
        deadline: float,
        out: Extraction,
    ) -> None:
        root, exact = parse_body(body)
        if root is None:
            return
        source = SourceMap(body, root) if exact else None
        base = document_base(root, final_url)
        origin = urls.origin(seed_url or final_url)
        parsed = urls.parse(final_url)
        on_origin = parsed is not None and urls.same_origin(final_url, origin)
        path = str(parsed.pathname) if parsed is not None else ""
        page = _Page(root, source, base, deadline, self.max_items, self.max_bytes, out)
        given = {"pageId": page_id, "url": page_url, "sourceRef": source_ref}
        head = {key: value for key, value in given.items() if value is not None}
        head_bytes = _ITEM_OVERHEAD + sum(map(text_bytes, head.values()))
        head_bytes += text_bytes(self.rules.extractor)
        for item_type in self.rules.types:
            if item_type.paths and not (on_origin and item_type.matches_path(path)):
                continue
            if item_type.require is not None:
                required = _page_level(item_type, "require", item_type.require, root, out)
                if required is None or not _truthy(required):
                    continue
            contexts = [root]
            if item_type.each is not None:
                found = _page_level(item_type, "each", item_type.each, root, out)
                if found is None:
                    continue
                contexts = _elements(found)
            for context in contexts:
                if len(out.items) >= self.max_items:
                    out.warnings.append(
                        f"extraction: more than {self.max_items} items on this page; the first "
                        f"{self.max_items} were kept (TRAVERSE_MAX_ITEMS_PER_PAGE)"
                    )
                    return
                try:
                    page.spend(head_bytes + text_bytes(item_type.name))
                    item = page.item(item_type, context, head, self.rules.extractor)
                except _OverBudget:
                    out.warnings.append(bytes_warning(self.max_bytes, len(out.items)))
                    return
                out.items.append(item)


def _page_level(
    item_type: ItemType, key: str, selector: Selector, root: Any, out: Extraction
) -> Any:
    """The result of a type's ``require`` or ``each``; None, with a page warning, when
    it fails on this page (the type gives no items here; the page is kept)."""
    try:
        return evaluate(selector, root)
    except SelectorFailed as exc:
        out.warnings.append(
            f"extraction: type {item_type.name!r}: its {key!r} selector failed on this page "
            f"({exc}); no items of this type"
        )
        return None


def _truthy(result: Any) -> bool:
    return bool(result) if isinstance(result, (list, bool, float)) else bool(str(result))


def _elements(result: Any) -> list[Any]:
    if not isinstance(result, list):
        return []
    return [node for node in result if isinstance(node, etree._Element)]


class _Page:
    """One page's parse, shared by its item types and fields."""

    def __init__(
        self,
        root: etree._Element,
        source: SourceMap | None,
        base: str,
        deadline: float,
        max_values: int,
        max_bytes: int,
        out: Extraction,
    ) -> None:
        self.root = root
        self.source = source
        self.base = base
        self.deadline = deadline
        self.max_values = max_values
        self.left = max_bytes  # bytes the page's items may still take
        self.out = out
        self.capped: set[str] = set()
        self.failed: set[str] = set()

    def spend(self, size: int) -> None:
        """Count ``size`` bytes against the page's items; ``_OverBudget`` past the bound."""
        self.left -= size
        if self.left < 0:
            raise _OverBudget

    def item(
        self, item_type: ItemType, context: Any, head: dict[str, Any], extractor: str
    ) -> ExtractedItem:
        fields: dict[str, Any] = {}
        missing: list[str] = []
        evidence: dict[str, list[dict[str, Any]]] = {}
        for rule in item_type.fields:
            self.spend(3 * text_bytes(rule.name) + 8)  # in fields or missing, and evidence
            value, entries = self.field(item_type, rule, context)
            if value is None:
                missing.append(rule.name)
            else:
                fields[rule.name] = value
            if entries:
                evidence[rule.name] = entries
        return ExtractedItem(
            {"type": item_type.name, **head, "fields": fields, "missing": missing,
             "extractor": extractor, "evidence": evidence}
        )  # fmt: skip

    def field(
        self, item_type: ItemType, rule: FieldRule, context: Any
    ) -> tuple[Any, list[dict[str, Any]]]:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise ExtractionTimeout
        try:
            results = evaluate(rule.selector, context)
        except SelectorFailed as exc:
            key = f"{item_type.name}.{rule.name}"
            if key not in self.failed:  # one warning per field and page, not per item
                self.failed.add(key)
                self.out.warnings.append(
                    f"extraction: field {rule.name!r} of type {item_type.name!r}: its selector "
                    f"failed on this page ({exc}); the field is missing"
                )
            return None, []
        if not isinstance(results, list):
            results = [results]
        values: list[Any] = []
        entries: list[dict[str, Any]] = []
        for result in results:
            text = matched_text(result)
            if not text.strip():
                continue  # whitespace between elements is not a value
            # Counted before it is kept (then its value, below): a text past what is
            # left ends the page's items.
            self.spend(text_bytes(text) + _ENTRY_OVERHEAD)
            if rule.many and len(values) >= self.max_values:
                key = f"{item_type.name}.{rule.name}"
                if key not in self.capped:
                    self.capped.add(key)
                    self.out.warnings.append(
                        f"extraction: field {rule.name!r} of type {item_type.name!r} matched "
                        f"more than {self.max_values} values; the first {self.max_values} "
                        "were kept (TRAVERSE_MAX_ITEMS_PER_PAGE)"
                    )
                break
            entry = self.evidence(rule, result, text)
            try:
                value = derive(text, rule.pattern, rule.url, rule.type, self.base,
                               max(0.001, self.deadline - time.monotonic()))  # fmt: skip
            except NoValue as exc:
                entry["reason"] = str(exc)
                self.spend(text_bytes(entry["reason"]))
            else:
                self.spend(text_bytes(value) if isinstance(value, str) else 24)
                values.append(value)
            entries.append(entry)
            if not rule.many:
                break
        if not values:
            return None, entries
        return (values if rule.many else values[0]), entries

    def evidence(self, rule: FieldRule, result: Any, text: str) -> dict[str, Any]:
        entry: dict[str, Any] = {"selector": rule.selector.written}
        node = node_path(result)
        self.spend(text_bytes(rule.selector.written) + (0 if node is None else len(node)))
        if node is not None:
            entry["node"] = node
        entry["text"] = text
        if self.source is not None and node is not None:
            span = self.source.span(result, text)
            if span is not None:
                entry["span"] = [span[0], span[1]]
        if rule.pattern is not None:
            entry["re"] = rule.pattern.pattern
        if rule.url:
            entry["url"] = True
        if rule.type != "string":
            entry["type"] = rule.type
        return entry


def encode_items(extraction: Extraction) -> bytes:
    """The page's lines of its seed's items file."""
    return b"".join(encode_item(item) for item in extraction.items)
