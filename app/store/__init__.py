"""Where debates are kept: the checkpoint database (SQLite or PostgreSQL), the job queue, forks."""
