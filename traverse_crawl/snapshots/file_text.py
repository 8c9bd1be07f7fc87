"""A snapshot file's bytes: Traverse's ``JSON.stringify(toDiskShape(s), null, 2)``.

Apart from ``snapshots/store.py`` so that the capture's writer process
(``snapshots/writer_child.py``), which renders every page's file, imports only
this and the standard library: its start-up is paid by every capture.
"""

from __future__ import annotations

import base64
import json
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the writer process imports no more than the standard library
    from traverse_crawl.snapshots.model import Snapshot

_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")


def serialize(snapshot: Snapshot) -> str:
    """``JSON.stringify(toDiskShape(snapshot), null, 2)``, byte for byte.

    ``bodyBytes`` becomes ``bodyBytesBase64``, appended last. A lone surrogate
    (possible only in a caller's id) is escaped as ``\\udXXX`` as JavaScript's
    well-formed ``JSON.stringify`` does; Python would otherwise write it raw and
    the file could not be encoded as UTF-8.
    """
    text = _json_text(snapshot)
    return _escape_lone_surrogates(text) if _LONE_SURROGATE.search(text) else text


def encode(snapshot: Snapshot) -> bytes:
    """The file's bytes: ``serialize`` as UTF-8 (what ``put`` writes).

    Only an encoding that fails can hold a lone surrogate, so the regex scan of
    the whole text (which cost more than the JSON encoding itself) is skipped.
    """
    text = _json_text(snapshot)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _escape_lone_surrogates(text).encode("utf-8")


def _json_text(snapshot: Snapshot) -> str:
    data = {key: value for key, value in snapshot.items() if key != "bodyBytes"}
    body_bytes = snapshot.get("bodyBytes")
    if body_bytes is not None:
        data["bodyBytesBase64"] = base64.b64encode(bytes(body_bytes)).decode("ascii")
    return json.dumps(data, indent=2, ensure_ascii=False)


def _escape_lone_surrogates(text: str) -> str:
    # Imported here: only an id with a lone surrogate needs it, and utils/javascript.py pulls in
    # urllib.parse, which every writer process's start-up would pay for.
    from traverse_crawl.utils.javascript import js_string

    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", js_string(text))
