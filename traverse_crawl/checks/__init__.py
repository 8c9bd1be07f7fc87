"""Data-quality checks with evidence (docs/checks.md)."""
