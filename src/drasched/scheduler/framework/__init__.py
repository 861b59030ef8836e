"""Scheduling plugins: extension points (``api``), the name -> factory registry (``registry``)
and the enabled plugins of one configuration bound per point (``profile``)."""
