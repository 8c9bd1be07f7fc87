"""Text from outside (archive bytes, URLs, file names) made safe to print on a terminal.

A C0 or C1 control character or DEL in printed text is a command to the terminal
(``ESC ] 8`` makes a clickable link to anywhere, ``CSI 2 J`` clears the screen), so
each one is shown as its Python escape (``\\x1b``), as ``repr`` shows it.
"""

from __future__ import annotations

import re

_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def escape_controls(text: str) -> str:
    """``text`` with every control character as ``\\xNN``; a line stays one line."""
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
