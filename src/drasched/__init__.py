"""drasched: a Kubernetes batch scheduler for accelerators built on Dynamic Resource Allocation."""

__version__ = "0.1.0"
