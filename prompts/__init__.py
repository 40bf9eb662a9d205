"""Prompt templates as Markdown files, and the one loader that renders them."""

from prompts.loader import PromptError, load_prompt, read_prompt_file, render, role_names

__all__ = ["PromptError", "load_prompt", "read_prompt_file", "render", "role_names"]
