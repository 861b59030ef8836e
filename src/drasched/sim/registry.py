"""Which controllers an embedded run starts, in the order one round runs them.

Order matters only for how much work one round gets done, never for the outcome: every
controller is level-triggered and the runner loops until none of them has work left.
"""

from __future__ import annotations

from drasched.sim.context import Controller


def build_default_controllers() -> list[Controller]:
    controllers: list[Controller] = []
    # 1. claim controller (claims from templates, release, deallocation)
    # 2. scheduler (one cycle per round)
    # 3. binder (carries out BindRequests)
    # 4. simulated kubelet (prepare, run, finish pods)
    try:
        from drasched.dra.minimal_pass import MinimalDraScheduler
    except ImportError:  # the allocator lands in its own change
        return controllers
    controllers.append(MinimalDraScheduler())
    return controllers
