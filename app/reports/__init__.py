"""What a debate reads as: its figures, the Markdown report, the verdict section and the charts."""
