"""Replay: every request answered from the snapshot store, with no network."""
