"""Object-model library measurement: decode N realistic pods, and their memory.

Run: python -m tests.bench.bench_models [N]   (default 100000)
Compares plain dicts (json, msgspec), msgspec Structs (drasched.api.models.Pod) and a
pydantic v2 model of the same shape, and the cost of Python's GC while filling a cache.
"""

from __future__ import annotations

import gc
import json
import sys
import time
import tracemalloc
from typing import Any

import msgspec

from drasched.api.models import Pod


def realistic_pod(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"trainer-{i:06d}",
            "namespace": f"team-{i % 10}",
            "uid": f"00000000-0000-4000-8000-{i:012d}",
            "resourceVersion": str(1000 + i),
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"app": "trainer", "drasched.io/queue": f"q{i % 10}", "drasched.io/pod-group": f"g{i // 8}"},
            "annotations": {"example.com/owner": "ml-platform"},
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": f"job-{i // 8}",
                                 "uid": f"10000000-0000-4000-8000-{i // 8:012d}", "controller": True}],
        },
        "spec": {
            "schedulerName": "drasched",
            "priorityClassName": "batch",
            "containers": [{
                "name": "main",
                "image": "registry.example.com/trainer:1.2.3",
                "command": ["python", "train.py", "--epochs", "10"],
                "env": [{"name": "RANK", "value": str(i % 8)}, {"name": "WORLD", "value": "8"}],
                "resources": {"requests": {"cpu": "4", "memory": "32Gi", "nvidia.com/gpu": "1"},
                              "limits": {"nvidia.com/gpu": "1"}, "claims": [{"name": "gpu"}]},
                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
            }],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "nodeSelector": {"pool": "a100"},
            "volumes": [{"name": "data", "emptyDir": {}}],
        },
        "status": {"phase": "Pending", "qosClass": "Burstable"},
    }


def _pydantic_pod_model() -> Any:
    from pydantic import BaseModel, ConfigDict, Field

    class M(BaseModel):
        model_config = ConfigDict(populate_by_name=True, extra="ignore")

    class Meta(M):
        name: str = ""
        namespace: str = ""
        uid: str = ""
        resource_version: str = Field("", alias="resourceVersion")
        creation_timestamp: str | None = Field(None, alias="creationTimestamp")
        labels: dict[str, str] = {}
        annotations: dict[str, str] = {}
        owner_references: list[dict[str, Any]] = Field([], alias="ownerReferences")

    class Res(M):
        requests: dict[str, str] = {}
        limits: dict[str, str] = {}
        claims: list[dict[str, Any]] = []

    class Ctr(M):
        name: str = ""
        image: str = ""
        resources: Res = Res()

    class Spec(M):
        containers: list[Ctr] = []
        node_name: str = Field("", alias="nodeName")
        node_selector: dict[str, str] = Field({}, alias="nodeSelector")
        tolerations: list[dict[str, Any]] = []
        scheduler_name: str = Field("", alias="schedulerName")
        priority_class_name: str = Field("", alias="priorityClassName")
        resource_claims: list[dict[str, Any]] = Field([], alias="resourceClaims")

    class Status(M):
        phase: str = ""

    class PPod(M):
        metadata: Meta = Meta()
        spec: Spec = Spec()
        status: Status = Status()

    return PPod


def _timed(label: str, fn: Any, n: int) -> Any:
    gc.collect()
    t0 = time.perf_counter()
    out = fn()
    dt = time.perf_counter() - t0
    print(f"{label:<42} {dt:7.2f} s  {n / dt:>10,.0f} pods/s")
    return out


def _memory(label: str, fn: Any, n: int) -> None:
    gc.collect()
    tracemalloc.start()
    out = fn()
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"{label:<42} {current / n:7.0f} bytes/pod")
    del out


def main(n: int = 100_000) -> None:
    print(f"python {sys.version.split()[0]}, msgspec {msgspec.__version__}, {n:,} pods")
    blobs = [json.dumps(realistic_pod(i)).encode() for i in range(n)]
    dec_pod = msgspec.json.Decoder(Pod)
    dec_dict = msgspec.json.Decoder()
    ppod = _pydantic_pod_model()
    _timed("json.loads -> dict", lambda: [json.loads(b) for b in blobs], n)
    _timed("msgspec.json -> dict", lambda: [dec_dict.decode(b) for b in blobs], n)
    _timed("msgspec.json -> Struct (api.models.Pod)", lambda: [dec_pod.decode(b) for b in blobs], n)
    _timed("pydantic v2 model_validate_json", lambda: [ppod.model_validate_json(b) for b in blobs], n)
    dicts = [dec_dict.decode(b) for b in blobs]
    _timed("msgspec.convert dict -> Struct", lambda: [msgspec.convert(d, Pod, strict=False) for d in dicts], n)
    dicts.clear()
    _memory("memory: dict (full object)", lambda: [dec_dict.decode(b) for b in blobs], n)
    _memory("memory: msgspec Struct view", lambda: [dec_pod.decode(b) for b in blobs], n)
    _memory("memory: pydantic model", lambda: [ppod.model_validate_json(b) for b in blobs], n)
    gc.enable()
    _timed("fill cache, default GC", lambda: {i: dec_pod.decode(b) for i, b in enumerate(blobs)}, n)
    gc.disable()
    _timed("fill cache, GC disabled during fill", lambda: {i: dec_pod.decode(b) for i, b in enumerate(blobs)}, n)
    gc.enable()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
