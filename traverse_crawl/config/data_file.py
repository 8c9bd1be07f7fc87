"""The files a setting names (the extraction rules, the checks): TOML, or JSON by content.

Read and parsed once, at start-up; every way the file can be wrong is a ``ConfigError``
naming the setting, never an exception from the parser.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from traverse_crawl.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


def read_data_file(setting: str, path: str) -> bytes:
    """The file's bytes; ConfigError naming ``setting`` when it cannot be read."""
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise ConfigError(setting, f"cannot read {path!r}: {exc.strerror or exc}") from None


def parse_data_file(setting: str, raw: bytes, source: str = "") -> Any:
    """The file's data: JSON when its text starts with ``{``, else TOML."""
    where = f" {source!r}" if source else ""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigError(setting, f"the file{where} is not UTF-8 text") from None
    try:
        if text.lstrip().startswith("{"):
            return json.loads(text)
        return tomllib.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(setting, f"the file{where} is not valid JSON: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(setting, f"the file{where} is not valid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(setting, f"the file{where} is nested too deeply") from None
