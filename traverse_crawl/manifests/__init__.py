"""Manifests: one per seed, written atomically, and read back."""
