"""drasched.sim."""
