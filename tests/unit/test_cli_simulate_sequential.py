"""``drasched simulate --sequential``: files applied one after another, as ``kubectl apply -f``
run file by file, each once the control plane has settled on the ones before (the published
DRA examples' numbered steps: kubernetes-sigs/dra-example-driver
demo/examples/device-taints-tolerations/device-taint-pod-noexecute/1-..4-*.yaml)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from drasched.cli import main

CLUSTER = """
apiVersion: v1
kind: Node
metadata: {name: worker-1}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors:
  - cel: {expression: "device.driver == 'gpu.example.com'"}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: worker-1-gpus}
spec:
  driver: gpu.example.com
  nodeName: worker-1
  pool: {name: worker-1, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: single-gpu, namespace: default}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.example.com}
"""

POD = """
apiVersion: v1
kind: Pod
metadata: {name: pod-to-be-evicted, namespace: default}
spec:
  containers:
  - name: ctr0
    image: ubuntu:22.04
    resources: {claims: [{name: gpu}]}
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: single-gpu
"""

RULE = """
apiVersion: resource.k8s.io/v1
kind: DeviceTaintRule
metadata: {name: example}
spec:
  deviceSelector: {driver: gpu.example.com}
  taint: {key: gpu.example.com/unhealthy, value: "true", effect: NoExecute}
"""


def steps(tmp_path: Path, *texts: str) -> Path:
    """A directory of numbered files, as the published examples come."""
    folder = tmp_path / "example"
    folder.mkdir()
    for i, text in enumerate(texts, start=1):
        (folder / f"{i}-step.yaml").write_text(text)
    return folder


def run(args: list[str], out: Path) -> tuple[int, list[dict]]:
    code = main(["simulate", *args, "-o", str(out), "--include-events", "-q"])
    return code, list(yaml.safe_load_all(out.read_text())) if out.exists() else []


def reasons(objects: list[dict], name: str) -> list[str]:
    return [o["reason"] for o in objects if o["kind"] == "Event" and o["involvedObject"]["name"] == name]


def test_a_later_noexecute_rule_evicts_the_pod_an_earlier_step_started(tmp_path: Path) -> None:
    folder = steps(tmp_path, CLUSTER, POD, RULE)
    code, objects = run(["--sequential", str(folder)], tmp_path / "out.yaml")
    assert code == 0
    # the pod ran on the device, then the rule's NoExecute taint evicted it (a bare pod is deleted)
    assert reasons(objects, "pod-to-be-evicted") == ["Scheduled", "DeviceTaintManagerEviction"]
    assert not [o for o in objects if o["kind"] == "Pod"]


def test_without_sequential_every_file_is_there_from_the_start(tmp_path: Path) -> None:
    folder = steps(tmp_path, CLUSTER, POD, RULE)
    code, objects = run([str(folder)], tmp_path / "out.yaml")
    assert code == 0
    (pod,) = [o for o in objects if o["kind"] == "Pod"]
    assert "nodeName" not in pod["spec"]  # the tainted device was never allocated
    assert reasons(objects, "pod-to-be-evicted") == ["FailedScheduling"]


def test_a_later_file_updates_what_an_earlier_one_created(tmp_path: Path) -> None:
    relabelled = CLUSTER.split("---")[0].replace("name: worker-1}", "name: worker-1, labels: {rack: r1}}")
    code, objects = run(["--sequential", str(steps(tmp_path, CLUSTER, relabelled))], tmp_path / "out.yaml")
    assert code == 0
    (node,) = [o for o in objects if o["kind"] == "Node"]
    assert node["metadata"]["labels"]["rack"] == "r1"
    assert node["status"]["allocatable"]["cpu"] == "8"


def test_a_later_file_the_server_would_refuse_names_the_object(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    renamed = POD.replace("image: ubuntu:22.04", "image: ubuntu:24.04\n    ports: [{containerPort: 80}]")
    folder = steps(tmp_path, CLUSTER, POD, renamed)
    code, _ = run(["--sequential", str(folder)], tmp_path / "out.yaml")
    assert code == 2
    err = capsys.readouterr().err
    assert "3-step.yaml: document 0: Pod default/pod-to-be-evicted: " in err
    assert "Forbidden: pod updates may not change fields other than" in err


def test_refusals_of_every_step_are_reported_before_anything_runs(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    folder = steps(tmp_path, CLUSTER, "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {}\n",
                   "apiVersion: v1\nkind: Nod\nmetadata: {name: b}\n")
    code, _ = run(["--sequential", str(folder)], tmp_path / "out.yaml")
    assert code == 2
    err = capsys.readouterr().err
    assert "2-step.yaml: document 0: Pod a: spec.containers: Required value" in err
    assert "3-step.yaml: document 0: Nod b: no kind" in err
