"""The ``debate`` command line and what it writes: reports, exports, the checkpoint database."""
