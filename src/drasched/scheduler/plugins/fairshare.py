"""Fair-share queue order as a plugin (KAI's proportion plugin): the queue furthest below its share first."""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import TYPE_CHECKING

from drasched.scheduler.constants import PODS
from drasched.scheduler.framework.api import ADD, DELETE, UPDATE, ClusterEvent

if TYPE_CHECKING:
    from drasched.scheduler.snapshot import GroupInfo


def share_ratio(allocated: Mapping[str, float], share: Mapping[str, Fraction]) -> float:
    """The dominant ratio: the largest ``allocated / fairShare`` over the dimensions a queue holds."""
    ratio = 0.0
    for d, v in allocated.items():
        if d == PODS or v <= 0:
            continue
        f = share.get(d, Fraction(0))
        ratio = max(ratio, v / float(f) if f > 0 else math.inf)
    return ratio


class GangPriority:
    """Within a queue, gangs by priority (highest first), then age.

    Disabled: a queue's gangs go first come, first served (creation time, then name);
    preemption still follows priority.
    """

    name = "gangPriority"

    def events(self) -> tuple[ClusterEvent, ...]:
        return ()  # an order rejects no pod

    def gang_key(self, group: GroupInfo) -> tuple[int]:
        return (-group.priority,)


class FairShare:
    """Queues offer gangs in order of their dominant share ratio (lowest first).

    Disabled: queues offer gangs by priority, then name, whatever they already use (the
    reported fair shares and reclaim still follow the weights).
    """

    name = "fairShare"

    def events(self) -> tuple[ClusterEvent, ...]:
        return (ClusterEvent("Queue", ADD), ClusterEvent("Queue", UPDATE), ClusterEvent("Pod", DELETE))

    def ratio(self, allocated: Mapping[str, float], share: Mapping[str, Fraction]) -> float:
        return share_ratio(allocated, share)
