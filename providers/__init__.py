"""Model providers: the one factory (OpenAI-compatible, OpenRouter, the embedded llama.cpp server, the fake model)."""
