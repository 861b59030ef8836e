"""What ``drasched simulate`` writes is accepted by a real API server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from drasched.api import kinds
from drasched.api.errors import AlreadyExists
from drasched.cli import main
from drasched.store.kube import KubeStore
from drasched.testing.apiserver import LocalCluster

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.e2e
@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir()))
def test_simulate_output_applies_to_a_real_api_server(example: str, tmp_path: Path) -> None:
    out = tmp_path / "out.yaml"
    assert main(["simulate", str(EXAMPLES / example), "-o", str(out), "-q"]) in (0, 3)
    objects = [o for o in yaml.safe_load_all(out.read_text()) if o]
    # a cluster of its own: the output restores a whole cluster, cluster-scoped objects included
    with LocalCluster() as cluster:
        _apply(cluster.store(), objects)


def _apply(store: KubeStore, objects: list[dict[str, Any]]) -> None:
    created = 0
    for obj in sorted(objects, key=lambda o: kinds.order_index(kinds.for_object(o))):
        rt = kinds.for_object(obj)
        try:
            stored = store.create(obj)  # KubeStore sends fieldValidation=Strict: unknown fields fail
        except AlreadyExists:
            assert rt is kinds.NAMESPACE, f"{obj['kind']} {obj['metadata']['name']} already exists"
            continue
        created += 1
        if rt.has_status and obj.get("status"):
            # status goes through the status subresource, as a restore tool would write it
            stored["status"] = obj["status"]
            store.update_status(stored)
        back = store.get(rt, obj["metadata"]["name"], obj["metadata"].get("namespace"))
        if rt is kinds.POD:
            continue  # the server defaults many pod fields (dnsPolicy, tolerations, ...)
        if rt in (kinds.JOB, kinds.DEPLOYMENT, kinds.REPLICA_SET, kinds.STATEFUL_SET, kinds.DAEMON_SET):
            # their pod templates get the same pod defaults, and a Job its generated selector and
            # template labels (batch.kubernetes.io/controller-uid): accepted as written is the check
            continue
        spec = dict(back.get("spec") or {})
        if rt is kinds.NODE:  # the TaintNodesByCondition admission plugin adds not-ready to new nodes
            taints = [t for t in spec.get("taints") or [] if t.get("key") != "node.kubernetes.io/not-ready"]
            spec.pop("taints", None)
            if taints:
                spec["taints"] = taints
        assert spec == (obj.get("spec") or {}), f"{obj['kind']} {obj['metadata']['name']}: spec changed on the server"
    assert created > 0
