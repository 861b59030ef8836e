"""PodDisruptionBudget (policy/v1) arithmetic, shared by the eviction subresource and the scheduler.

Upstream the disruption controller writes ``status.disruptionsAllowed`` and the eviction
subresource spends it. Embedded runs have no disruption controller, so both the memory
store and the scheduler compute the same numbers from the pods themselves:

* a pod is *healthy* when it is Running, Ready and not being deleted;
* the *expected* count is the number of matching pods that are not Succeeded or Failed
  (pods being deleted included: they are still there). Upstream takes it from the owning
  controller's scale; for bare pods and embedded runs the pods are all there is;
* ``minAvailable`` (integer or percentage of expected, rounded up) is the desired healthy
  count; ``maxUnavailable`` gives ``expected - maxUnavailable`` (percentage rounded up);
* evicting a healthy pod needs ``healthy - desired >= 1``; an unhealthy pod may go when
  ``healthy >= desired`` (``unhealthyPodEvictionPolicy: IfHealthyBudget``, the default) or
  always (``AlwaysAllow``);
* a ``null`` selector matches no pod, an empty one every pod of the namespace (policy/v1).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from drasched.api.selectors import match_label_selector_object

Obj = dict[str, Any]
TERMINAL = ("Succeeded", "Failed")
EVICT_WHOLE = "drasched.io/evict-whole"
"""On a PodGroup, ``"true"``: the scheduler evicts the gang whole or not at all, never its surplus pods
one by one (``scheduler/victims.py``); an upstream PodGroup's ``disruptionMode: {all: {}}`` (v1alpha2
``PodGroup``) is translated to it."""


def is_healthy(pod: Obj) -> bool:
    """Running and Ready, and not being deleted."""
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    status = pod.get("status") or {}
    if status.get("phase") != "Running":
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])


def selects(pdb: Obj, pod: Obj) -> bool:
    """Whether ``pdb`` covers ``pod`` (same namespace, selector matches)."""
    pmd, bmd = pod.get("metadata") or {}, pdb.get("metadata") or {}
    if (pmd.get("namespace") or "default") != (bmd.get("namespace") or "default"):
        return False
    selector = (pdb.get("spec") or {}).get("selector")
    if selector is None:
        return False
    return match_label_selector_object(selector, pmd.get("labels") or {})


def _scaled(value: Any, total: int) -> int:
    """An IntOrString: an integer, or a percentage of ``total`` rounded up (as upstream)."""
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(int(value[:-1]) * total / 100)
    return int(value)


@dataclass
class Budget:
    """One PDB's numbers right now."""

    name: str
    expected: int
    healthy: int
    desired: int
    always_allow_unhealthy: bool

    @property
    def allowed(self) -> int:
        """Healthy pods that may still be evicted (``disruptionsAllowed``)."""
        return max(0, self.healthy - self.desired)

    def permits(self, pod_healthy: bool) -> bool:
        if not pod_healthy:
            return self.always_allow_unhealthy or self.healthy >= self.desired
        return self.allowed >= 1

    def refusal(self) -> str:
        """The cause the API server gives in its 429."""
        return f"The disruption budget {self.name} needs {self.desired} healthy pods and has {self.healthy} currently"


def budget(pdb: Obj, pods: Iterable[Obj]) -> Budget:
    """The budget of ``pdb`` over ``pods`` (any pods: those it does not select are ignored)."""
    spec = pdb.get("spec") or {}
    matching = [p for p in pods if selects(pdb, p) and (p.get("status") or {}).get("phase") not in TERMINAL]
    expected = len(matching)
    healthy = sum(1 for p in matching if is_healthy(p))
    if spec.get("minAvailable") is not None:
        desired = _scaled(spec["minAvailable"], expected)
    elif spec.get("maxUnavailable") is not None:
        desired = max(0, expected - _scaled(spec["maxUnavailable"], expected))
    else:
        desired = 0
    name = str((pdb.get("metadata") or {}).get("name", ""))
    return Budget(name, expected, healthy, desired, spec.get("unhealthyPodEvictionPolicy") == "AlwaysAllow")
