"""Kubernetes objects as the API server writes them.

Objects travel through drasched as plain JSON-compatible dicts (the wire form), which
keeps every field, known or not, on a round trip. Typed msgspec views (``drasched.api.models``)
are decoded from them for scheduling logic and never written back.
"""
