"""The debate graph: typed state, run settings, routing and the builder.

Import from the modules (``debate_engine.graph.builder``); this package
imports nothing itself, so ``debate_engine.nodes`` can use ``graph.state``
without pulling the builder in.
"""
