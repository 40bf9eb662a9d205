"""The memory probe: plant facts in a debate, then measure where each one survives."""
