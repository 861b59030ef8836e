"""Which controllers an embedded run starts, in the order one round runs them."""

from __future__ import annotations

from drasched.sim.context import Controller


def build_default_controllers() -> list[Controller]:
    controllers: list[Controller] = []
    try:
        from drasched.dra.minimal_pass import MinimalDraScheduler
    except ImportError:  # the allocator lands in its own change
        return controllers
    controllers.append(MinimalDraScheduler())
    return controllers
