"""Where a matched node's text sits in the stored body: a span that is never wrong.

lxml gives no character offsets, only each element's ``sourceline``. A scan of the
stored text finds every start tag (skipping comments, declarations and the raw text
of ``script``, ``style`` and the like) with its line; the k-th element of one tag
name that lxml puts on a line is mapped to the k-th such start tag the scan found
there, and only when both counts agree (a parser that inserts or drops elements on
that line gives no span at all). A text, attribute value or element is then given
its span only when ``body[start:end]`` equals it exactly at the mapped position;
otherwise (an entity such as ``&amp;`` decoded, a line ending rewritten, a line
past libxml2's 65,535th, markup the scan cannot place) there is none.
Hand-written because no HTML library maps lxml's nodes back to character offsets.
"""

from __future__ import annotations

import bisect
import re
from typing import Any

from lxml import etree

# libxml2 counts lines in 16 bits: from here on ``sourceline`` says nothing.
MAX_LINE = 65535
# Elements whose content the HTML tokenizer reads as text, not markup.
_RAW_TEXT = {
    name: re.compile(rf"</{name}[\s/>]", re.I)
    for name in ("script", "style", "xmp", "iframe", "noembed", "noframes", "textarea", "title")
}
_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param",
     "source", "track", "wbr", "keygen", "frame", "basefont", "bgsound"}
)  # fmt: skip
_TOKEN = re.compile(
    r"""<!--.*?(?:-->|\Z)"""  # a comment
    r"""|<[!?][^>]*>?"""  # a declaration or processing instruction
    r"""|<(/?)([A-Za-z][^\s/>]*)((?:[^>"']|"[^"]*"|'[^']*')*)>""",  # a start or end tag
    re.S,
)
_ATTRIBUTE = re.compile(r"""([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>"'`=<]+)))?""")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_COMMENT = "#comment"


class SourceMap:
    """The stored body of one page beside its parsed tree; spans on demand."""

    def __init__(self, body: str, root: etree._Element) -> None:
        self.body = body
        self.root = root
        self._starts: dict[Any, tuple[int, int, int]] | None = None  # node -> tag position
        self._tokens: list[tuple[str, str, int, int]] = []  # kind, name, start, end

    # -- mapping nodes to their start tags -----------------------------------

    def _build(self) -> dict[Any, tuple[int, int, int]]:
        # The hot loop of extraction (one pass over every tag of the page): names are
        # bound to locals and the line of a tag counted from the previous one.
        body = self.body
        # Lines as libxml2 counts them: \r\n, \r and \n each end one.
        line_starts = (
            None if "\r" not in body else [0] + [m.end() for m in _LINE_BREAK.finditer(body)]
        )
        found: dict[tuple[int, str], list[tuple[int, int, int]]] = {}
        tokens = self._tokens
        add_token = tokens.append
        count_lines = body.count
        group = found.setdefault
        raw_text = _RAW_TEXT
        skip_to = line = counted = 0
        for match in _TOKEN.finditer(body):
            start, end = match.span()
            if start < skip_to:
                continue  # inside the raw text of a script, style, ...
            slash, name = match.group(1, 2)
            if name is None:
                if not body.startswith("<!--", start):
                    continue
                kind, name = "comment", _COMMENT
            else:
                kind = "end" if slash else "start"
                name = name.lower()
            index = len(tokens)
            add_token((kind, name, start, end))
            if slash:
                continue
            if line_starts is None:
                line += count_lines("\n", counted, start)
                counted = start
                number = line + 1
            else:
                number = bisect.bisect_right(line_starts, start)
            group((number, name), []).append((start, end, index))
            if name in raw_text and kind == "start":
                close = raw_text[name].search(body, end)
                skip_to = close.start() if close is not None else len(body)
        # The parsed side: elements and comments grouped the same way, in document order.
        parsed: dict[tuple[int, str], list[Any]] = {}
        group_node = parsed.setdefault
        comment = etree.Comment
        for node in self.root.iter():
            line = node.sourceline
            if line is None or line >= MAX_LINE:
                continue
            tag = node.tag
            if tag is comment:
                name = _COMMENT
            elif isinstance(tag, str):
                name = tag.lower()
            else:
                continue  # a processing instruction or an entity
            group_node((line, name), []).append(node)
        starts: dict[Any, tuple[int, int, int]] = {}
        for key, nodes in parsed.items():
            positions = found.get(key)
            if positions is not None and len(positions) == len(nodes):
                for node, where in zip(nodes, positions, strict=True):
                    starts[node] = where
        return _in_document_order(self.root, starts)

    def start_tag(self, node: Any) -> tuple[int, int, int] | None:
        """``(start, end, token index)`` of the node's start tag (or comment), if mapped."""
        if self._starts is None:
            self._starts = self._build()
        return self._starts.get(node)

    def _element_end(self, node: Any) -> int | None:
        """Where the node's end tag ends (its start tag's end for a void element)."""
        tag = self.start_tag(node)
        if tag is None:
            return None
        _, end, index = tag
        if node.tag is etree.Comment:
            return end
        name = str(node.tag).lower()
        if name in _VOID:
            return end
        depth = 1
        for kind, other, _, other_end in self._tokens[index + 1 :]:
            if other != name:
                continue
            depth += 1 if kind == "start" else -1
            if depth == 0:
                return other_end
        return None

    # -- spans -----------------------------------------------------------------

    def _checked(self, start: int, text: str) -> tuple[int, int] | None:
        end = start + len(text)
        if start >= 0 and text and self.body[start:end] == text:
            return start, end
        return None

    def span(self, result: Any, text: str) -> tuple[int, int] | None:
        """The ``[start, end)`` of ``text``, the value matched as ``result`` (an element,
        or lxml's text or attribute result), in the body; None when not verbatim there."""
        if isinstance(result, etree._Element):
            tag = self.start_tag(result)
            return None if tag is None else self._checked(tag[0], text)
        parent = getattr(result, "getparent", None)
        node = parent() if parent is not None else None
        if node is None:
            return None
        if getattr(result, "is_attribute", False):
            return self._attribute(node, str(result.attrname), text)
        if getattr(result, "is_text", False):
            tag = self.start_tag(node)
            return None if tag is None else self._checked(tag[1], text)
        if getattr(result, "is_tail", False):
            following = node.getnext()
            if following is not None:
                tag = self.start_tag(following)
                if tag is not None:
                    return self._checked(tag[0] - len(text), text)
            end = self._element_end(node)
            return None if end is None else self._checked(end, text)
        return None

    def _attribute(self, node: Any, name: str, text: str) -> tuple[int, int] | None:
        tag = self.start_tag(node)
        if tag is None or node.tag is etree.Comment:
            return None
        start, end, _ = tag
        name_end = start + 1
        while name_end < end and not self.body[name_end].isspace() and self.body[name_end] != ">":
            name_end += 1
        wanted = name.lower()
        for match in _ATTRIBUTE.finditer(self.body, name_end, end - 1):
            if match.group(1).lower() != wanted:
                continue
            for group in (2, 3, 4):
                if match.group(group) is not None:
                    return self._checked(match.start(group), text)
            return None  # the first attribute of that name has no value
        return None


def _in_document_order(
    root: etree._Element, starts: dict[Any, tuple[int, int, int]]
) -> dict[Any, tuple[int, int, int]]:
    """Only the mappings that agree with document order: the longest run of mapped
    nodes, in tree order, whose start tags come in source order. An element the
    parser made up (an implied ``<body>``) paired with a tag it dropped (a later
    ``<body>``) is out of order with its neighbours and loses its mapping."""
    nodes = [node for node in root.iter() if node in starts]
    previous = -1
    for node in nodes:
        position = starts[node][0]
        if position <= previous:
            break
        previous = position
    else:
        return starts  # already in source order (the common case): all kept
    tails: list[int] = []  # tails[k]: index in nodes of the smallest end of a run of k+1
    ends: list[int] = []  # their positions, for bisect
    before: list[int] = [-1] * len(nodes)
    for index, node in enumerate(nodes):
        position = starts[node][0]
        k = bisect.bisect_left(ends, position)
        before[index] = tails[k - 1] if k else -1
        if k == len(tails):
            tails.append(index)
            ends.append(position)
        else:
            tails[k] = index
            ends[k] = position
    kept: dict[Any, tuple[int, int, int]] = {}
    index = tails[-1] if tails else -1
    while index >= 0:
        kept[nodes[index]] = starts[nodes[index]]
        index = before[index]
    return kept


def node_path(result: Any) -> str | None:
    """The absolute XPath of what matched: an element's path, ``…/@name`` for an
    attribute, ``…/text()[k]`` for a text node; None for a computed value."""
    if isinstance(result, etree._Element):
        return str(result.getroottree().getpath(result))
    parent = getattr(result, "getparent", None)
    node = parent() if parent is not None else None
    if node is None:
        return None
    if getattr(result, "is_attribute", False):
        return f"{node.getroottree().getpath(node)}/@{result.attrname}"
    if getattr(result, "is_text", False):
        return f"{node.getroottree().getpath(node)}/text()[1]"
    if getattr(result, "is_tail", False):
        holder = node.getparent()
        if holder is None:
            return None
        count = 1 if holder.text else 0
        for child in holder:
            if child is node:
                break
            count += 1 if child.tail else 0
        return f"{holder.getroottree().getpath(holder)}/text()[{count + 1}]"
    return None
