"""A field a built-in kind does not declare is reported, as kubectl's default strict validation
refuses it (``strict decoding error: unknown field "spec.nodeSelektor"``). The declared fields
are kube-apiserver 1.37's own (its OpenAPI v3, scripts/gen-openapi-fields.py)."""

from __future__ import annotations

from drasched.api.unknown_fields import checks, unknown_fields


def claim(exactly: dict[str, object], api_version: str = "resource.k8s.io/v1") -> dict[str, object]:
    return {"apiVersion": api_version, "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "default", "managedFields": [{"manager": "kubectl"}]},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}


def test_a_misspelt_allocation_mode_is_reported_with_its_path() -> None:
    obj = claim({"deviceClassName": "gpu", "allocationmode": "All"})
    assert unknown_fields(obj) == ["spec.devices.requests[0].exactly.allocationmode"]


def test_every_declared_field_passes_metadata_and_status_included() -> None:
    obj = claim({"deviceClassName": "gpu", "allocationMode": "All", "adminAccess": False,
                 "selectors": [{"cel": {"expression": "true"}}], "tolerations": [{"operator": "Exists"}],
                 "capacity": {"requests": {"memory": "1Gi"}}})
    obj["status"] = {"allocation": {"devices": {"results": [{"request": "gpu", "driver": "d", "pool": "p",
                                                             "device": "x", "bindingConditions": ["A"]}]},
                                    "allocationTimestamp": "2026-01-01T00:00:00Z"},
                     "devices": [{"driver": "d", "pool": "p", "device": "x", "conditions": [],
                                  "data": {"any": {"thing": 1}}, "networkData": {"interfaceName": "eth0"}}]}
    assert unknown_fields(obj) == []  # status.devices[].data is free-form (preserve-unknown-fields)


def test_an_older_version_is_checked_against_its_own_fields() -> None:
    old = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim", "metadata": {"name": "c"},
           "spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "gpu", "allocationMode": "All"}]}}}
    assert unknown_fields(old) == []  # v1beta1 has no `exactly`
    assert unknown_fields(claim({"deviceClassName": "gpu"}, "resource.k8s.io/v1beta1")) == [
        "spec.devices.requests[0].exactly"]


def test_pod_typos_are_reported_in_spec_containers_and_claims() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"any": "label"}},
           "spec": {"nodeSelektor": {"gpu": "yes"},
                    "containers": [{"name": "c", "image": "x", "resourcez": {"limits": {"nvidia.com/gpu": 1}},
                                    "resources": {"claims": [{"name": "gpu"}], "requests": {"cpu": "1"}}}],
                    "resourceClaims": [{"name": "gpu", "source": {"resourceClaimName": "c"}}],
                    "schedulingGates": [{"name": "g"}], "tolerations": [{"key": "k", "operator": "Exists"}]}}
    assert unknown_fields(pod) == ["spec.nodeSelektor", "spec.containers[0].resourcez", "spec.resourceClaims[0].source"]


def test_a_job_s_pod_template_is_checked_too() -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
           "spec": {"parallelism": 2, "template": {"spec": {"restartPolicy": "Never", "containers": [
               {"name": "c", "image": "x", "comand": ["sleep"]}]}}}}
    assert unknown_fields(job) == ["spec.template.spec.containers[0].comand"]


def test_kinds_not_known_here_are_not_checked() -> None:
    crd_object = {"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "Queue", "metadata": {"name": "q"},
                  "spec": {"anything": 1}}
    assert unknown_fields(crd_object) == []
    assert not checks("scheduling.drasched.io/v1alpha1", "Queue")
    assert checks("resource.k8s.io/v1", "ResourceSlice") and checks("v1", "Pod")
