"""The measuring tools: ``compare`` (does debating pay?), the memory ``probe``, ``eval``, the dry-run estimate."""
