"""Shared helpers: JavaScript string semantics, atomic files, child processes fed over a pipe."""
