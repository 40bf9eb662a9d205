"""What the fake OpenAI server says: the text of a prompt, seeded reply words, a value for any JSON schema."""

from __future__ import annotations

import hashlib
import random
from typing import Any

_VOCAB_TEXT = (
    "argument evidence claim premise rebuttal consensus risk cost latency throughput budget queue cache retry "
    "timeout token model judge critic proposal refinement trade-off baseline metric scale shard replica lock "
    "index window burst limit bucket policy fallback audit tradeoff design review"
)
VOCAB = tuple(_VOCAB_TEXT.split())


def wanted_tool(body: Any) -> str | None:
    """Return the tool a chat request forces the model to call (None: a prose answer, whatever tools it offers)."""
    choice = body.get("tool_choice") if isinstance(body, dict) else None
    return (choice.get("function") or {}).get("name") if isinstance(choice, dict) else None


def text_of(content: Any) -> str:
    """Message content is a string or a list of typed parts; tests search the text either way."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def reply_words(prompt: str, count: int) -> list[str]:
    """Return the same prompt, same reply: a seeded pick from a fixed vocabulary keeps tests reproducible."""
    rng = random.Random(int.from_bytes(hashlib.sha256(prompt.encode()).digest()[:8], "big"))
    return [rng.choice(VOCAB) for _ in range(count)]


def fake_value(schema: dict[str, Any], defs: dict[str, Any], name: str, depth: int = 0) -> Any:
    """Build a value that validates against a JSON schema, so a client's structured-output parsing succeeds."""
    if "$ref" in schema:
        return fake_value(defs[schema["$ref"].rsplit("/", 1)[-1]], defs, name, depth + 1)
    combined = next((schema[key] for key in ("anyOf", "oneOf", "allOf") if schema.get(key)), None)
    if combined:
        options = [s for s in combined if s.get("type") != "null"]
        if not options or (depth > 4 and len(options) < len(combined)):
            return None  # a nullable field deep in a recursive schema stops the recursion
        return fake_value(options[0], defs, name, depth)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    label = name.replace("_", " ")
    if kind == "string":
        text = f"A short note on {label}."
        return text.ljust(schema.get("minLength", 0), ".")[
            : schema.get("maxLength", len(text) + 999)
        ]
    if kind == "array":
        count = (
            0 if depth > 4 else max(schema.get("minItems", 0), min(2, schema.get("maxItems", 2)))
        )
        items = schema.get("items", {"type": "string"})
        return [fake_value(items, defs, f"{label} item {i + 1}", depth + 1) for i in range(count)]
    if kind in _LEAVES:
        return _LEAVES[kind](schema)
    props = schema.get("properties", {})
    return {key: fake_value(sub, defs, key, depth + 1) for key, sub in props.items()}


_LEAVES: dict[str, Any] = {
    "integer": lambda schema: _fake_number(schema, integer=True),
    "number": lambda schema: _fake_number(schema, integer=False),
    "boolean": lambda schema: True,
    "null": lambda schema: None,
}


def _fake_number(schema: dict[str, Any], *, integer: bool) -> float:
    """Pick a number inside the schema's bounds."""
    step = 1 if integer else 0.01
    value: float = 7 if integer else 0.7
    if "exclusiveMinimum" in schema:
        value = max(value, schema["exclusiveMinimum"] + step)
    if "exclusiveMaximum" in schema:
        value = min(value, schema["exclusiveMaximum"] - step)
    return min(max(value, schema.get("minimum", value)), schema.get("maximum", value))
