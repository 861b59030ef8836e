"""drasched.dra."""
