"""Text that is safe to print on a terminal: no control character reaches it as such.

A seed id, URL or archive byte may hold ESC sequences (colours, cursor moves, OSC 8
hyperlinks, a title change), a carriage return that overwrites the line, or bidi controls
that reorder it. ``escape_controls`` shows each as a Python-style escape (``\\x1b``,
``\\u202e``); hand-written because the set is small and the stdlib has no such helper.
"""

from __future__ import annotations

# C0 controls, DEL, C1 controls, and the Unicode bidi overrides and isolates.
_CODES = [*range(0x20), 0x7F, *range(0x80, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_TABLE = {code: f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" for code in _CODES}
# A log record's own newlines and tabs stay.
_LINES = {code: value for code, value in _TABLE.items() if code not in (0x09, 0x0A)}


def escape_controls(text: str) -> str:
    """``text`` with every control character escaped, newlines and tabs included."""
    return text.translate(_TABLE)


def escape_line_controls(text: str) -> str:
    """``text`` with every control character but newline and tab escaped (a log line: a
    traceback or a stats dump keeps its lines)."""
    return text.translate(_LINES)
