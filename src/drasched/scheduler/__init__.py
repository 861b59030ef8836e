"""drasched.scheduler."""
