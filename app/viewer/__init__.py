"""``debate serve``: the local web viewer over the debate database (pages, live updates, actions)."""

from debate_engine.app.viewer.site import create_app

__all__ = ["create_app"]
