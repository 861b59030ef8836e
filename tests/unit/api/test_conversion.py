"""resource.k8s.io v1beta1 and v1beta2 manifests read as v1, as the API server converts them
(upstream pkg/apis/resource/v1beta1/conversion.go: Convert_v1beta1_DeviceRequest_To_resource_DeviceRequest,
hasAnyMainRequestFieldsSet, Convert_v1beta1_Device_To_resource_Device)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from drasched.api.conversion import ConversionError, to_storage_version
from drasched.api.manifest import ManifestError, load_paths
from drasched.cli import main

QUICKSTART = Path(__file__).resolve().parents[3] / "examples" / "quickstart" / "cluster.yaml"


def _claim(requests: list[dict]) -> dict:
    return {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "default"}, "spec": {"devices": {"requests": requests}}}


def test_v1beta1_flat_request_fields_move_into_exactly() -> None:
    req = {"name": "gpu", "deviceClassName": "gpu.example.com", "count": 2, "allocationMode": "ExactCount",
           "selectors": [{"cel": {"expression": "true"}}], "adminAccess": False,
           "tolerations": [{"key": "k", "operator": "Exists"}], "capacity": {"requests": {"memory": "1Gi"}}}
    v1 = to_storage_version(_claim([req]))
    assert v1["apiVersion"] == "resource.k8s.io/v1"
    assert v1["spec"]["devices"]["requests"] == [{"name": "gpu", "exactly": {k: v for k, v in req.items()
                                                                             if k != "name"}}]


def test_v1beta1_first_available_alone_has_no_exactly() -> None:
    sub = [{"name": "big", "deviceClassName": "gpu.example.com", "count": 1}]
    v1 = to_storage_version(_claim([{"name": "gpu", "firstAvailable": sub}]))
    assert v1["spec"]["devices"]["requests"] == [{"name": "gpu", "firstAvailable": sub}]


def test_v1beta1_template_requests_are_converted_too() -> None:
    tmpl = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "t", "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "g"}]}}}}
    v1 = to_storage_version(tmpl)
    assert v1["spec"]["spec"]["devices"]["requests"] == [{"name": "gpu", "exactly": {"deviceClassName": "g"}}]
    assert tmpl["apiVersion"] == "resource.k8s.io/v1beta1"  # the input is not changed


def test_v1beta1_basic_device_is_flattened() -> None:
    basic = {"attributes": {"model": {"string": "a100"}}, "capacity": {"memory": {"value": "40Gi"}},
             "consumesCounters": [{"counterSet": "s", "counters": {"mem": {"value": "1Gi"}}}], "taints": []}
    sl = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice", "metadata": {"name": "s"},
          "spec": {"driver": "d", "nodeName": "n", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                   "devices": [{"name": "gpu-0", "basic": basic}]}}
    assert to_storage_version(sl)["spec"]["devices"] == [{"name": "gpu-0", **basic}]


def test_v1beta2_has_v1s_shape() -> None:
    claim = _claim([{"name": "gpu", "exactly": {"deviceClassName": "g"}}])
    claim["apiVersion"] = "resource.k8s.io/v1beta2"
    v1 = to_storage_version(claim)
    assert v1 == {**claim, "apiVersion": "resource.k8s.io/v1"}


@pytest.mark.parametrize("version", ["v1alpha2", "v1alpha3"])
def test_versions_1_37_does_not_serve_are_refused_with_the_accepted_ones(version: str) -> None:
    claim = _claim([])
    claim["apiVersion"] = f"resource.k8s.io/{version}"
    with pytest.raises(ConversionError, match=re.escape(
            f"resource.k8s.io/{version} ResourceClaim is not served by Kubernetes 1.37: write it as resource.k8s.io/v1 "
            "(also accepted and converted: resource.k8s.io/v1beta2, resource.k8s.io/v1beta1)")):
        to_storage_version(claim)


def test_loader_names_the_file_and_object_of_an_unserved_version(tmp_path: Path) -> None:
    f = tmp_path / "old.yaml"
    f.write_text(yaml.safe_dump({**_claim([]), "apiVersion": "resource.k8s.io/v1alpha3"}))
    with pytest.raises(ManifestError, match=r"old.yaml: document 0: ResourceClaim default/c: .*v1alpha3"):
        load_paths([str(f)])


def _as_v1beta1(doc: dict) -> dict:
    """The quickstart's v1 objects written as a 1.32 user would have written them."""
    if not str(doc.get("apiVersion", "")).startswith("resource.k8s.io/"):
        return doc
    doc = {**doc, "apiVersion": "resource.k8s.io/v1beta1"}
    if doc["kind"] == "ResourceSlice":
        doc["spec"]["devices"] = [{"name": d["name"], "basic": {k: v for k, v in d.items() if k != "name"}}
                                  for d in doc["spec"]["devices"]]
    if doc["kind"] == "ResourceClaimTemplate":
        reqs = doc["spec"]["spec"]["devices"]["requests"]
        doc["spec"]["spec"]["devices"]["requests"] = [{"name": r["name"], **r.get("exactly", {})} for r in reqs]
    return doc


def test_quickstart_in_v1beta1_simulates_exactly_as_in_v1(tmp_path: Path) -> None:
    docs = [d for d in yaml.safe_load_all(QUICKSTART.read_text()) if d]
    old = tmp_path / "v1beta1.yaml"
    old.write_text(yaml.safe_dump_all([_as_v1beta1(d) for d in docs], sort_keys=False))
    assert "resource.k8s.io/v1beta1" in old.read_text()
    out_v1, out_old = tmp_path / "v1.out.yaml", tmp_path / "old.out.yaml"
    assert main(["simulate", str(QUICKSTART), "-o", str(out_v1), "-q"]) == 0
    assert main(["simulate", str(old), "-o", str(out_old), "-q"]) == 0
    assert out_old.read_text() == out_v1.read_text()
    assert "resource.k8s.io/v1beta1" not in out_old.read_text()
