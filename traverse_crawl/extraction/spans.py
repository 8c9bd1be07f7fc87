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
import itertools
import re
from array import array
from collections import deque
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
# A page this long (in characters) or longer is mapped only as far as spans are asked for.
LAZY_FROM = 256 * 1024
_START, _END, _COMMENTED = 0, 1, 2
# One node in this many is kept, to find a node's place in document order from.
_ANCHOR_EVERY = 32


class SourceMap:
    """The stored body of one page beside its parsed tree; spans on demand.

    A page of ``LAZY_FROM`` characters or more is mapped line by line, only as far as
    the nodes asked about (``_Lines``), in compact arrays; a smaller one, or a page whose
    element lines do not follow document order, all at once (``_Whole``). Both give
    the same mapping (the document-order check, below, runs within a line when lines
    follow document order), so the spans do not depend on the page's size.
    """

    def __init__(self, body: str, root: etree._Element, lazy_from: int | None = None) -> None:
        self.body = body
        self.root = root
        self.lazy_from = LAZY_FROM if lazy_from is None else lazy_from
        self._map: _Whole | _Lines | None = None

    def _build(self) -> _Whole | _Lines:
        if len(self.body) >= self.lazy_from and _lines_in_order(self.root):
            return _Lines(self.body, self.root)
        return _Whole(self.body, self.root)

    def start_tag(self, node: Any) -> tuple[int, int, int] | None:
        """``(start, end, token index)`` of the node's start tag (or comment), if mapped."""
        if self._map is None:
            self._map = self._build()
        return self._map.start_tag(node)

    def _element_end(self, node: Any) -> int | None:
        """Where the node's end tag ends (its start tag's end for a void element)."""
        tag = self.start_tag(node)
        if tag is None or self._map is None:
            return None
        _, end, index = tag
        if node.tag is etree.Comment:
            return end
        name = str(node.tag).lower()
        if name in _VOID:
            return end
        return self._map.end_tag_end(name, index)

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


def _group_name(node: Any) -> str | None:
    """The name a node is paired by: its tag in lower case, ``#comment``; None for a
    processing instruction or an entity."""
    tag = node.tag
    if tag is etree.Comment:
        return _COMMENT
    return tag.lower() if isinstance(tag, str) else None


def _lines_in_order(root: etree._Element) -> bool:
    """Whether the nodes' source lines never go down in document order. libxml2 builds
    the tree in source order, so they do, except where it reports a line past its
    65,535th as a neighbour's; then the whole page is mapped at once."""
    highest = 0
    for node in root.iter():
        line = node.sourceline
        if line is not None:
            if line < highest:
                return False
            highest = line
    return True


class _Whole:
    """Every start tag of the page paired with its node in one pass."""

    def __init__(self, body: str, root: etree._Element) -> None:
        self.body = body
        self.root = root
        self._tokens: list[tuple[str, str, int, int]] = []  # kind, name, start, end
        self._starts = self._build()

    def _build(self) -> dict[Any, tuple[int, int, int]]:
        # The hot loop of extraction on a small page (one pass over every tag of the
        # page): names are bound to locals and the line of a tag counted from the
        # previous one.
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
        return self._starts.get(node)

    def end_tag_end(self, name: str, index: int) -> int | None:
        depth = 1
        for kind, other, _, other_end in self._tokens[index + 1 :]:
            if other != name:
                continue
            depth += 1 if kind == "start" else -1
            if depth == 0:
                return other_end
        return None


class _Lines:
    """The pairing of ``_Whole``, made one source line at a time and only up to the
    last line asked about; the page's lines must follow document order
    (``_lines_in_order``).

    Then a line's elements are contiguous in document order and every tag of a line
    lies before every tag of the next, so the longest run in source order over the page
    is the runs of its lines put together, each as ``_in_document_order`` picks it on
    that line alone. What is kept: the tags scanned so far (four arrays) and, per node
    in document order, the index of its tag or -1; a node is found again in document
    order from the nearest of one node in ``_ANCHOR_EVERY``, kept with its index.
    """

    def __init__(self, body: str, root: etree._Element) -> None:
        self.body = body
        self.root = root
        # The scan: one entry per tag or comment, in source order.
        self.kinds = bytearray()  # _START, _END or _COMMENTED
        self.names = array("i")  # an index into self.name_list
        self.starts = array("q")
        self.ends = array("q")
        self.name_ids: dict[str, int] = {}
        self.name_list: list[str] = []
        self._matches = _TOKEN.finditer(body)
        self._skip_to = 0
        self._line = 0  # lines counted up to self._counted (bodies without \r)
        self._counted = 0
        self._line_starts: array[int] | None = None
        if "\r" in body:
            self._line_starts = array("q", [0])
            self._line_starts.extend(m.end() for m in _LINE_BREAK.finditer(body))
        # Start tags and comments of lines not yet paired: line -> name -> token indexes.
        self._waiting: dict[int, dict[str, array[int]]] = {}
        self._lines_waiting: deque[int] = deque()  # its keys, in order
        self._scanned_line = 0  # every tag of the lines before this one is scanned
        self._scan_done = False
        # The parsed side.
        self._nodes = root.iter()
        # The first node of the next line to pair: document index, line, name.
        self._next: tuple[int, int, str] | None = None
        self.paired = array("i")  # document index -> token index, -1 for none
        self._anchors: dict[Any, int] = {}
        self._line_done = 0  # every line up to this one is paired

    # -- the scan of the stored text -------------------------------------------------

    def _scan_one(self) -> bool:
        """Scan the next tag; False at the end of the body."""
        body = self.body
        for match in self._matches:
            start, end = match.span()
            if start < self._skip_to:
                continue  # inside the raw text of a script, style, ...
            slash, name = match.group(1, 2)
            if name is None:
                if not body.startswith("<!--", start):
                    continue
                kind, name = _COMMENTED, _COMMENT
            else:
                kind = _END if slash else _START
                name = name.lower()
            index = len(self.kinds)
            name_id = self.name_ids.get(name)
            if name_id is None:
                name_id = self.name_ids[name] = len(self.name_list)
                self.name_list.append(name)
            self.kinds.append(kind)
            self.names.append(name_id)
            self.starts.append(start)
            self.ends.append(end)
            if slash:
                return True
            if self._line_starts is None:
                self._line += body.count("\n", self._counted, start)
                self._counted = start
                number = self._line + 1
            else:
                number = bisect.bisect_right(self._line_starts, start)
            self._scanned_line = number
            if number < MAX_LINE:
                line = self._waiting.get(number)
                if line is None:
                    line = self._waiting[number] = {}
                    self._lines_waiting.append(number)
                group = line.get(name)
                if group is None:
                    group = line[name] = array("i")
                group.append(index)
            if name in _RAW_TEXT and kind == _START:
                close = _RAW_TEXT[name].search(body, end)
                self._skip_to = close.start() if close is not None else len(body)
            return True
        self._scan_done = True
        return False

    def _scan_past(self, line: int) -> None:
        """Scan until every start tag on ``line`` is found."""
        while not self._scan_done and self._scanned_line <= line:
            self._scan_one()

    def end_tag_end(self, name: str, index: int) -> int | None:
        name_id = self.name_ids.get(name)
        depth = 1
        other = index + 1
        while True:
            if other >= len(self.kinds) and not (not self._scan_done and self._scan_one()):
                return None
            if self.names[other] == name_id:
                depth += 1 if self.kinds[other] == _START else -1
                if depth == 0:
                    return self.ends[other]
            other += 1

    # -- pairing, a line at a time -----------------------------------------------------

    def _pull(self) -> tuple[int, str | None] | None:
        """The next node in document order: its line (0 when it has none, at most
        ``MAX_LINE``) and the name it is paired by (None: never paired); None after
        the last node."""
        for node in self._nodes:
            index = len(self.paired)
            self.paired.append(-1)
            if index % _ANCHOR_EVERY == 0:
                self._anchors[node] = index
            line = node.sourceline
            if line is None:
                return 0, None
            return min(line, MAX_LINE), _group_name(node)
        return None

    def _pair_next_line(self) -> bool:
        """Pair the next line that has nodes; False when no line is left to pair."""
        while self._next is None:
            pulled = self._pull()
            if pulled is None:
                return False
            if pulled[0] and pulled[1] is not None:
                self._next = (len(self.paired) - 1, pulled[0], pulled[1])
        first, line, name = self._next
        if line >= MAX_LINE:
            return False  # past libxml2's lines: nothing more is paired
        self._next = None
        nodes: dict[str, list[int]] = {name: [first]}
        order = [first]  # the line's nodes' document indexes
        while (pulled := self._pull()) is not None:
            if not pulled[0] or pulled[1] is None:
                continue
            index = len(self.paired) - 1
            if pulled[0] != line:
                self._next = (index, pulled[0], pulled[1])
                break
            nodes.setdefault(pulled[1], []).append(index)
            order.append(index)
        self._scan_past(line)
        found = self._waiting.pop(line, {})
        while self._lines_waiting and self._lines_waiting[0] <= line:
            self._waiting.pop(self._lines_waiting.popleft(), None)  # tags but no nodes
        paired = self.paired
        for group, indexes in nodes.items():
            positions = found.get(group)
            if positions is not None and len(positions) == len(indexes):
                for where, token in zip(indexes, positions, strict=True):
                    paired[where] = token
        self._keep_in_order([where for where in order if paired[where] >= 0])
        self._line_done = line
        return True

    def _keep_in_order(self, mapped: list[int]) -> None:
        """``_in_document_order`` on one line's mapped nodes: unpair those outside the
        longest run whose tags come in source order."""
        starts = self.starts
        positions = [starts[self.paired[where]] for where in mapped]
        if all(a < b for a, b in itertools.pairwise(positions)):
            return
        kept = set(_longest_run(positions))
        for number, where in enumerate(mapped):
            if number not in kept:
                self.paired[where] = -1

    # -- look-ups ------------------------------------------------------------------------

    def _document_index(self, node: Any) -> int | None:
        """The node's index in ``root.iter()`` order, from the nearest anchor before it."""
        steps = 0
        anchors = self._anchors
        while True:
            found = anchors.get(node)
            if found is not None:
                return found + steps
            before = node.getprevious()
            if before is None:
                node = node.getparent()
                if node is None:
                    return None
            else:
                while len(before):
                    before = before[-1]
                node = before
            steps += 1

    def start_tag(self, node: Any) -> tuple[int, int, int] | None:
        line = node.sourceline
        if line is None or line >= MAX_LINE or _group_name(node) is None:
            return None
        top = node
        while (up := top.getparent()) is not None:
            top = up
        if top is not self.root:
            return None  # outside the root element: never paired
        while self._line_done < line and self._pair_next_line():
            pass
        index = self._document_index(node)
        if index is None or index >= len(self.paired):
            return None
        token = self.paired[index]
        if token < 0:
            return None
        return self.starts[token], self.ends[token], token


def _longest_run(positions: list[int]) -> list[int]:
    """The indexes of the longest strictly increasing run of ``positions``, as
    ``_in_document_order`` picks it."""
    tails: list[int] = []
    ends: list[int] = []
    before: list[int] = [-1] * len(positions)
    for index, position in enumerate(positions):
        k = bisect.bisect_left(ends, position)
        before[index] = tails[k - 1] if k else -1
        if k == len(tails):
            tails.append(index)
            ends.append(position)
        else:
            tails[k] = index
            ends[k] = position
    kept: list[int] = []
    index = tails[-1] if tails else -1
    while index >= 0:
        kept.append(index)
        index = before[index]
    return kept


def _in_document_order(
    root: etree._Element, starts: dict[Any, tuple[int, int, int]]
) -> dict[Any, tuple[int, int, int]]:
    """Only the mappings that agree with document order: the longest run of mapped
    nodes, in tree order, whose start tags come in source order. An element the
    parser made up (an implied ``<body>``) paired with a tag it dropped (a later
    ``<body>``) is out of order with its neighbours and loses its mapping."""
    nodes = [node for node in root.iter() if node in starts]
    positions = [starts[node][0] for node in nodes]
    if all(a < b for a, b in itertools.pairwise(positions)):
        return starts  # already in source order (the common case): all kept
    return {nodes[index]: starts[nodes[index]] for index in _longest_run(positions)}


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
