"""SURT keys for a WACZ's CDXJ index, as pywb computes them for look-ups.

Hand-written on purpose: the one Python SURT library (``surt``) is AGPL-3.0, and
runtime dependencies must be permissive. pywb binary-searches its index by the SURT
of the URL asked for, so these keys must equal that library's default ``surt(url)``
for the URLs a store holds; ``tests/test_warc_export.py`` compares them with it.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

_WWW = re.compile(r"^www\d*\.")
_DEFAULT_PORTS = {"http": 80, "https": 443}
_SESSION_IDS = [
    re.compile(r"^(.*)(?:jsessionid=[0-9a-z]{32})(?:&(.*))?$", re.I),
    re.compile(r"^(.*)(?:phpsessid=[0-9a-z]{32})(?:&(.*))?$", re.I),
    re.compile(r"^(.*)(?:sid=[0-9a-z]{32})(?:&(.*))?$", re.I),
    re.compile(r"^(.*)(?:aspsessionid[a-z]{8}=[a-z]{24})(?:&(.*))?$", re.I),
    re.compile(r"^(.*)(?:cfid=[^&]+&cftoken=[^&]+)(?:&(.*))?$", re.I),
]


def _query(query: str) -> str:
    for pattern in _SESSION_IDS:
        match = pattern.match(query)
        if match:
            query = match.group(1) + (match.group(2) or "")
    query = query.lower()
    if len(query) <= 1:
        return query
    args = sorted(tuple(arg.split("=", 1)) for arg in query.split("&"))
    return "&".join("=".join(arg) for arg in args)


# The rules (IA's canonicaliser): no scheme; host lowercased, a leading ``www``/``wwwN``
# label dropped, labels reversed and comma-joined; the port unless it is the scheme's
# default; ``)``; the path lowercased, without a trailing ``/`` (but ``/`` stays); the
# query lowercased with its ``&``-separated arguments sorted; no fragment.
def surt(url: str) -> str:
    parts = urlsplit(url)
    host = _WWW.sub("", (parts.hostname or "").lower())
    key = ",".join(reversed(host.split(".")))
    port = parts.port
    if port is not None and port != _DEFAULT_PORTS.get(parts.scheme.lower()):
        key += f":{port}"
    path = (parts.path or "/").lower()
    if len(path) > 1 and path.endswith("/"):
        path = path[:-1]
    key += ")" + path
    query = _query(parts.query) if parts.query else ""
    if query:
        key += "?" + query
    return key
