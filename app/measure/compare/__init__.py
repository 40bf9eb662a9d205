"""``debate compare``: does debating pay, for this model and these tasks, at the same cost?"""
