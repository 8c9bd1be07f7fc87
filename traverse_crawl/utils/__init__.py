"""Shared helpers: JavaScript string semantics, atomic files, child processes fed over a pipe,
URL passwords masked in what is printed."""
