"""The JavaScript-shell heuristic of ``TRAVERSE_RENDER=on-shell-warning``.

A page is a *shell*, HTML that shows its content only after its scripts run, when
(Traverse's ``detectJsShell`` thresholds) its prepared text is under 600 characters
and under 0.08 of the raw HTML, its ``<script>`` blocks are at least 45 % of the raw
HTML or a client-render mount is empty, and no embedded state can be harvested. The
definitions are in docs/rendering.md. Pure: never raises on any input.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from lxml import etree

from traverse_crawl.crawl.html import parse_html

PREPARED_TEXT_FLOOR = 600
TEXT_RATIO_MAX = 0.08
SCRIPT_RATIO_MIN = 0.45
MOUNT_IDS = frozenset({"root", "__next", "app"})
MAX_BLOCK_CHARS = 256_000

_INVISIBLE = ("head", "script", "style", "noscript", "template", "svg", "math", "iframe", "object")
_WHITESPACE = re.compile(r"\s+")
_STATE_ASSIGNMENT = re.compile(r"(?:window\s*\.\s*)?__(?:INITIAL_STATE|PRELOADED_STATE)__\s*=\s*")
_NAME_CHAR = re.compile(r"[a-z0-9_]")


@dataclass(frozen=True)
class ShellSignals:
    """The numbers behind a verdict, for logs and tests."""

    raw_chars: int
    prepared_chars: int
    script_chars: int
    empty_mount: bool
    embedded_state: bool

    @property
    def text_ratio(self) -> float:
        return self.prepared_chars / self.raw_chars if self.raw_chars else 1.0

    @property
    def script_ratio(self) -> float:
        return self.script_chars / self.raw_chars if self.raw_chars else 0.0

    @property
    def shell_shaped(self) -> bool:
        """Conditions 1 to 3: looks like a shell, embedded state aside."""
        small = self.prepared_chars < PREPARED_TEXT_FLOOR and self.text_ratio < TEXT_RATIO_MAX
        return small and (self.script_ratio >= SCRIPT_RATIO_MIN or self.empty_mount)

    @property
    def suspected(self) -> bool:
        """Traverse's pure ``js-shell-suspected`` verdict, the one that escalates."""
        return self.shell_shaped and not self.embedded_state

    def describe(self) -> str:
        mount = "; client-render mount element is empty" if self.empty_mount else ""
        return (
            f"prepared text {self.prepared_chars} chars is {self.text_ratio:.1%} of "
            f"{self.raw_chars}-char HTML; scripts {self.script_ratio:.1%} of HTML{mount}"
        )


def inspect(raw_html: str) -> ShellSignals:
    """Measure ``raw_html`` (decoded text) against the heuristic."""
    scripts = script_chars(raw_html)
    root = parse_html(raw_html)
    if root is None:
        return ShellSignals(len(raw_html), 0, scripts, False, False)
    # Scripts and mounts are read before prepared_text() strips the invisible parts.
    embedded = _has_embedded_state(root)
    empty_mount = _has_empty_mount(root)
    return ShellSignals(len(raw_html), len(prepared_text(root)), scripts, empty_mount, embedded)


def is_shell(raw_html: str) -> bool:
    return inspect(raw_html).suspected


def prepared_text(root: etree._Element) -> str:
    """The visible text of a parsed document, whitespace collapsed (the *prepared text*).

    Drops the invisible subtrees (comments are gone already) from ``root`` in place;
    their tails stay, since text after a ``<script>`` is visible. Traverse measures
    its Markdown rendering instead, which also drops nav/header/footer/aside/form;
    ours keeps those, since they are visible.
    """
    etree.strip_elements(root, *_INVISIBLE, with_tail=False)
    return _WHITESPACE.sub(" ", " ".join(root.itertext())).strip()


def script_chars(raw_html: str) -> int:
    """Characters inside ``<script …>…</script>`` blocks, tags included.

    A linear scan rather than a lazy regex, which backtracks quadratically on
    many unclosed ``<script`` tags (Traverse avoids it for the same reason).
    """
    lower = raw_html.lower()
    total = 0
    cursor = 0
    while True:
        start = lower.find("<script", cursor)
        if start < 0:
            return total
        after = start + len("<script")
        if _NAME_CHAR.match(lower, after):
            cursor = after  # <scripts>, <script2>: another tag name
            continue
        tag_end = lower.find(">", after)
        close = lower.find("</script>", tag_end) if tag_end >= 0 else -1
        if close < 0:
            return total + len(raw_html) - start
        end = close + len("</script>")
        total += end - start
        cursor = end


def _has_empty_mount(root: etree._Element) -> bool:
    # Any element with a mount id, no child element and only whitespace text
    # (Traverse looks at <div> only).
    for element in root.iter():
        if not isinstance(element.tag, str) or element.get("id") not in MOUNT_IDS:
            continue
        has_children = any(isinstance(child.tag, str) for child in element)
        if not has_children and not "".join(element.itertext()).strip():
            return True
    return False


def _has_embedded_state(root: etree._Element) -> bool:
    # A parsable JSON-LD block, a parsable Next.js __NEXT_DATA__, or a parsable JSON
    # object or array assigned to __INITIAL_STATE__ / __PRELOADED_STATE__ in an inline
    # script; blocks over MAX_BLOCK_CHARS are ignored, as in Traverse.
    for script in root.iter("script"):
        text = (script.text or "").strip()
        if not text or len(text) > MAX_BLOCK_CHARS:
            continue
        kind = (script.get("type") or "").strip().lower()
        if kind == "application/ld+json" or (script.get("id") or "").strip() == "__NEXT_DATA__":
            if _parses(text):
                return True
        elif script.get("src") is None and _has_state_assignment(text):
            return True
    return False


def _has_state_assignment(text: str) -> bool:
    match = _STATE_ASSIGNMENT.search(text)
    if match is None:
        return False
    blob = balanced_json(text, match.end())
    return blob is not None and _parses(blob)


def balanced_json(source: str, start: int) -> str | None:
    """The JSON object or array that opens at ``start`` (after whitespace), string-aware."""
    i = start
    while i < len(source) and source[i].isspace():
        i += 1
    if i >= len(source) or source[i] not in "{[":
        return None
    opener = source[i]
    closer = "}" if opener == "{" else "]"
    depth = 0
    in_string = False
    escaped = False
    for j in range(i, len(source)):
        ch = source[j]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == opener:
            depth += 1
        elif ch == closer:
            depth -= 1
            if depth == 0:
                return source[i : j + 1]
    return None


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True
