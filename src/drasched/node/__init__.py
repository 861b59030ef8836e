"""drasched.node."""
