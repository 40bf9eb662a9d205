"""Run settings: the context schema Studio draws, the config file, and their resolution into fixed settings."""
