"""Every ``traverse_*`` request meta key, declared once (listed in docs/settings.md).

A key is written by one component and read by others (robots → politeness, replay →
spider), so it lives here rather than beside either. Each constant is its key without
``traverse_``, upper-cased. Pure, stdlib-free: the child processes may import it too.
"""

from __future__ import annotations

# -- a page request (set by the spider) ----------------------------------------------
SEED = "traverse_seed"  # the seed's key in the spider's frontiers
INDEX = "traverse_index"  # the page's position in its seed's BFS order
PAGE_ID = "traverse_page_id"  # the store key: encodeURIComponent(seed id) + "::" + URL
HINT = "traverse_hint"  # the seed's content_type hint (the seed page only)
WARNINGS = "traverse_warnings"  # the page's warnings; the middlewares append to it
SOURCE_REF = "traverse_source_ref"  # capture middleware: its response's snapshot sourceRef

# -- set by the middlewares ----------------------------------------------------------
UNHANDLED = "traverse_unhandled"  # failure log: a spider's request with no errback
REDIRECTS = "traverse_redirects"  # redirect: the URLs requested before this hop
ROBOTS = "traverse_robots"  # robots: marks a robots.txt request
SITEMAP = "traverse_sitemap"  # sitemaps: "robots" | "sitemap", a request that is not a page
SITEMAP_ID = "traverse_sitemap_id"  # sitemaps: the sitemap file's store id
REVALIDATE_PRIOR = "traverse_revalidate_prior"  # revalidate: the page's prior snapshot
REPLAY_READ = "traverse_replay_read"  # replay: the reader process's pending read
WARC_NAVIGATION = "traverse_warc_navigation"  # page guard → WARC: the navigation response
ROBOTS_META = "traverse_robots_meta"  # capture → spider: the response's RobotsMeta (obey)
SNAPSHOT_WRITE = "traverse_snapshot_write"  # capture middleware → pipeline: the snapshot's write
DOWNLOADER_ENTERED = "traverse_downloader_entered"  # metrics: when it entered its slot's queue

# -- one attempt only (fetch/attempt.py's ATTEMPT_KEYS: a new attempt drops them) ----
BACKOFF = "traverse_backoff"  # retry → politeness: seconds to wait before this attempt
NOT_BEFORE = "traverse_not_before"  # politeness: when this attempt may start (monotonic)
ORIGIN_DELAY = "traverse_origin_delay"  # robots → politeness: this hop's origin's Crawl-delay
REVALIDATE_SENT = "traverse_revalidate_sent"  # revalidate: the URL it sent validators to
SNAPSHOT = "traverse_snapshot"  # revalidate, replay → spider: the stored snapshot it stands for
REPLAY_WORK = "traverse_replay_work"  # replay → spider: the page's work, done by its reader
BLOCKED = "traverse_blocked"  # push-back → retry, WARC: this attempt's block-page verdict

# -- rendering (the render middleware and the page guard) ----------------------------
RENDER = "traverse_render"  # this attempt is rendered
RENDER_FALLBACK = "traverse_render_fallback"  # the plain response kept for a fallback
RENDER_ESCALATION = "traverse_render_escalation"  # the page's renderEscalation record
RENDER_GUARD = "traverse_render_guard"  # which page guard watches the navigation
RENDER_FINAL = "traverse_render_final"  # one attempt: this attempt's outcome is settled
RENDER_HANDOFF = "traverse_render_handoff"  # one attempt: the navigation handed to Scrapy
RENDER_DENIED = "traverse_render_denied"  # one attempt: the egress refusal of the navigation
RENDER_FAILED = "traverse_render_failed"  # one attempt: why the navigation failed
