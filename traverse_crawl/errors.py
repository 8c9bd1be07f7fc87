"""Typed page outcomes: one frozen ``FetchError`` per failed page (``fetch.error``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

ErrorKind = Literal[
    "invalid-config",
    "invalid-url",
    "robots-denied",
    "timeout",
    "network",
    "http-error",
    "too-many-redirects",
    "no-snapshot",
    "too-large",
    "egress-denied",
    "render-error",
    "noarchive",
    "blocked",
]
ERROR_KINDS: frozenset[str] = frozenset(get_args(ErrorKind))


@dataclass(frozen=True)
class FetchError:
    """Why a page has no snapshot. ``status`` is set for ``http-error``, and for
    ``noarchive`` and ``blocked`` (the status of the response that said so; a page
    of an origin given up is ``blocked`` without one)."""

    kind: ErrorKind
    message: str
    status: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in ERROR_KINDS:
            raise ValueError(f"unknown FetchError kind: {self.kind!r}")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "message": self.message}
        if self.status is not None:
            out["status"] = self.status
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FetchError:
        return cls(data["kind"], data["message"], data.get("status"))


class ConfigError(ValueError):
    """An invalid setting or argument; raised at start-up, before any request.

    The message always names the setting or argument; the crawl exits with status 2.
    """

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(f"{name}: {problem}")
        self.name = name
        self.problem = problem
