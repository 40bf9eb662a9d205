"""The call road: every model call, from request to record.

Import from the modules (``debate_engine.calls.road``, ``.drive``, ``.spend``,
...); this package imports nothing itself, so the state's schema can use the
plain records of ``calls.ledger`` without pulling the road and the providers in.
"""
