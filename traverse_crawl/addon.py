"""Placeholder while the component is built: changes no setting."""

from typing import Any


class RenderAddon:
    def update_settings(self, settings: Any) -> None:
        return None
