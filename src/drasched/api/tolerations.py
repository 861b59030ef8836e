"""A pod's toleration against a node's taint, as the API defines it.

Upstream ``Toleration.ToleratesTaint`` (k8s.io/api/core/v1/toleration.go): shared by the
scheduler's filter and score, the kubelet's admission, the DaemonSet controller and the
NoExecute taint eviction, which must all agree.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def tolerates(tol: Obj, taint: Obj) -> bool:
    """Upstream ``Toleration.ToleratesTaint``: an empty effect or key matches any; ``Exists``
    ignores the value; ``Equal`` (the default) compares it."""
    effect = tol.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = tol.get("key") or ""
    if key and key != taint.get("key"):
        return False
    op = tol.get("operator") or "Equal"
    if op == "Exists":
        return True
    return op == "Equal" and (tol.get("value") or "") == (taint.get("value") or "")
