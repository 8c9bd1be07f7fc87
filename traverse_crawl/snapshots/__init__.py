"""Snapshots: the model, Traverse's filesystem store, sourceRef, the writer process, capture."""
