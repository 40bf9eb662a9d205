"""Prompt templates as Markdown files, and the one loader that renders them."""

from debate_engine.prompts.loader import (
    PromptError,
    load_prompt,
    read_prompt_file,
    render,
    role_names,
)

__all__ = ["PromptError", "load_prompt", "read_prompt_file", "render", "role_names"]
