"""The words some settings accept, shared by the config that checks them and the
features that act on them (docs/settings.md).

They are configuration: the config refuses any other value at start-up, naming the
setting, and the frontier, the seen test and the robots.txt policy branch on them.
Pure: names only.
"""

from __future__ import annotations

from typing import Literal, get_args

# TRAVERSE_SCOPE: what a seed's frontier admits (crawl/scope.py).
Scope = Literal["origin", "host", "domain", "prefix"]
SCOPES: tuple[Scope, ...] = get_args(Scope)
# TRAVERSE_SEEN_KEY: what the frontier deduplicates by (crawl/seen_key.py).
SeenKeyKind = Literal["verbatim", "sorted-query", "no-tracking"]
SEEN_KEYS: tuple[SeenKeyKind, ...] = get_args(SeenKeyKind)
# TRAVERSE_ROBOTS_POLICY and TRAVERSE_ROBOTS_MATCHER (politeness/robots.py).
RobotsPolicy = Literal["fail-open", "rfc9309"]
RobotsMatcher = Literal["traverse", "rfc9309"]
