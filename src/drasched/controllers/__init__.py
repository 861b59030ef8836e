"""drasched.controllers."""
