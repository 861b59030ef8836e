"""drasched.binder."""
