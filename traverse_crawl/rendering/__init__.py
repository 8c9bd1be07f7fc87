"""Rendering pages in Chromium through scrapy-playwright (SPEC §11, CONTRACT §2).

- ``addon``: the add-on's render part installs scrapy-playwright and the render
  middleware, and checks the browser at start-up, only when pages are rendered;
- ``browser``: launch-option defaults and the one real launch at start-up;
- ``handler``: scrapy-playwright's download handler over ``wire``'s exact-target one;
- ``navigation``: a rendered page's navigation, fetched with the exact request target;
- ``middleware``: ``RenderMiddleware``, the policy (which attempt is rendered,
  escalation, fallback, typed errors);
- ``pageguard``: the browser side, answering every request a rendered page makes;
- ``response``: responses kept in meta as data, the rendered DOM as UTF-8 HTML.

The pure parts (the ``renderEscalation`` record, SPEC §4's warnings)
are in ``traverse_crawl.rendering.escalation``; the shell heuristic in ``core.shell``.
"""
