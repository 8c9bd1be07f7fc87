"""Extraction with evidence: declared fields, every value traceable to its bytes."""
