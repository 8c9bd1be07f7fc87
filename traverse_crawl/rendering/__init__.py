"""Rendering pages in Chromium through scrapy-playwright (docs/rendering.md).

``addon`` installs scrapy-playwright and ``middleware`` (the policy) only when pages
are rendered; ``pageguard`` answers every request a rendered page makes. The pure
parts: ``escalation`` (the ``renderEscalation`` record, the render warnings) and
``shell`` (the JavaScript-shell heuristic); the meta keys are in ``meta_keys.py``.
"""
