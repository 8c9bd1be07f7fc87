"""Politeness: robots.txt, the per-origin delay, retries with backoff, manual redirects."""
