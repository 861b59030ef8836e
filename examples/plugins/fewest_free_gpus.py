"""An example scoring plugin: prefer the node with the fewest free GPUs left after placement.

It packs GPU pods tightly whatever the top-level ``nodeOrder`` says, leaving whole empty
nodes for large gangs. Load it from the scheduler configuration alone::

    plugins:
      fewestFreeGpus:
        module: examples/plugins/fewest_free_gpus.py   # or a dotted module on the Python path
        weight: 3                                       # against nodeOrder's weight (1)
        resource: nvidia.com/gpu                        # optional; the row to count

The module defines ``PLUGIN``, a :class:`~drasched.scheduler.framework.registry.PluginSpec`:
the factory, the arguments it accepts (anything else in its settings is refused), and
whether it scores (only then is ``weight`` accepted).
"""

from __future__ import annotations

import numpy as np

from drasched.scheduler.framework.api import ClusterEvent, PodState, ScorerBase
from drasched.scheduler.framework.registry import STRING, PluginContext, PluginSpec


class FewestFreeGpus(ScorerBase):
    """Score = minus the GPUs a node would have free after the pod is placed there."""

    def __init__(self, name: str, resource: str, weight: float) -> None:
        self.name = name
        self.resource = resource
        self.weight = weight

    def events(self) -> tuple[ClusterEvent, ...]:
        return ()  # a scorer never makes a pod unschedulable: nothing to requeue for

    def score(self, state: PodState, candidates: np.ndarray) -> np.ndarray:
        session = state.session
        row = session.snap.index.pos.get(self.resource)
        if row is None:
            return np.zeros(len(candidates))
        need = sum(n.value for n in state.container if n.row == row)
        return -(session.idle[row, candidates] - need)


def _build(ctx: PluginContext) -> FewestFreeGpus:
    return FewestFreeGpus(ctx.name, str(ctx.args.get("resource", "nvidia.com/gpu")), ctx.weight)


PLUGIN = PluginSpec(_build, {"resource": STRING}, scores=True)
