"""The call road: every model call, from request to record."""

from debate_engine.calls.drive import adrive, drive
from debate_engine.calls.parse import json_object, parse_structured
from debate_engine.calls.road import Answer, Attempt, CallFailed, Request, aask, ask
from debate_engine.calls.slots import LOCAL_SLOTS, slot_limit
from debate_engine.calls.usage import counted_usage, usage_of

__all__ = [
    "LOCAL_SLOTS",
    "Answer",
    "Attempt",
    "CallFailed",
    "Request",
    "aask",
    "adrive",
    "ask",
    "counted_usage",
    "drive",
    "json_object",
    "parse_structured",
    "slot_limit",
    "usage_of",
]
