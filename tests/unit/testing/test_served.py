"""The test server's flags and the versions objects are written in, per Kubernetes release."""

from __future__ import annotations

import pytest

from drasched.testing.served import as_served, gang_as, kube_minor, served_apis

V136, V137 = served_apis("v1.36.3"), served_apis("v1.37.2")


def test_kube_minor_reads_release_strings() -> None:
    assert [kube_minor(v) for v in ("v1.37.2", "1.36.3", "v1.38.0-alpha.1", "v1.37")] == [37, 36, 38, 37]
    with pytest.raises(ValueError, match="not a Kubernetes version"):
        kube_minor("latest")


def test_137_serves_the_gang_api_as_v1beta1_and_no_longer_v1alpha2() -> None:
    # pkg/registry/scheduling/rest/storage_scheduling.go of 1.37 has storage for v1, v1beta1 and
    # v1alpha3 only: a runtime-config naming v1alpha2 would stop the binary from starting.
    assert V137.gang == "scheduling.k8s.io/v1beta1"
    assert "scheduling.k8s.io/v1beta1=true" in V137.runtime_config
    assert not any("v1alpha2" in e for e in V137.runtime_config)
    assert V137.taint_rule == "resource.k8s.io/v1"


def test_136_keeps_its_own_versions() -> None:
    assert (V136.gang, V136.taint_rule) == ("scheduling.k8s.io/v1alpha2", "resource.k8s.io/v1beta2")
    assert "scheduling.k8s.io/v1alpha2=true" in V136.runtime_config
    assert "scheduling.k8s.io/v1beta1=true" not in V136.runtime_config


def test_both_serve_every_older_dra_version_the_conversion_contract_writes() -> None:
    for served in (V136, V137):
        assert {"resource.k8s.io/v1beta1=true", "resource.k8s.io/v1beta2=true"} <= set(served.runtime_config)


def test_releases_without_a_setup_are_refused() -> None:
    with pytest.raises(ValueError, match=r"1\.36 or 1\.37"):
        served_apis("v1.35.0")


def test_a_taint_rule_takes_the_served_version_and_keeps_its_shape() -> None:
    rule = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "r"},
            "spec": {"taint": {"key": "k", "effect": "NoExecute"}}}
    assert as_served(rule, V137) is rule
    assert as_served(rule, V136) == {**rule, "apiVersion": "resource.k8s.io/v1beta2"}


V1BETA1_GROUP = {
    "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "g", "namespace": "ml"},
    "spec": {"workloadRef": {"workloadName": "job", "templateName": "workers"},
             "schedulingPolicy": {"gang": {"minCount": 2}}, "disruptionMode": {"all": {}}}}
V1ALPHA2_GROUP = {
    "apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": {"name": "g", "namespace": "ml"},
    "spec": {"podGroupTemplateRef": {"workload": {"workloadName": "job", "podGroupTemplateName": "workers"}},
             "schedulingPolicy": {"gang": {"minCount": 2}}, "disruptionMode": "PodGroup"}}


def test_a_pod_group_converts_between_the_two_gang_versions() -> None:
    assert gang_as(V1BETA1_GROUP, "scheduling.k8s.io/v1alpha2") == V1ALPHA2_GROUP
    assert gang_as(V1ALPHA2_GROUP, "scheduling.k8s.io/v1beta1") == V1BETA1_GROUP
    assert as_served(V1ALPHA2_GROUP, V137) == V1BETA1_GROUP
    assert V1BETA1_GROUP["spec"]["disruptionMode"] == {"all": {}}  # the input is left as it was


def test_a_workload_template_disruption_mode_converts() -> None:
    workload = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "job"},
                "spec": {"podGroupTemplates": [{"name": "w", "schedulingPolicy": {"basic": {}},
                                                "disruptionMode": {"single": {}}}]}}
    down = gang_as(workload, "scheduling.k8s.io/v1alpha2")
    assert down["spec"]["podGroupTemplates"][0]["disruptionMode"] == "Pod"
    assert gang_as(down, "scheduling.k8s.io/v1beta1") == workload


def test_v1beta1_only_fields_have_no_v1alpha2_form() -> None:
    group = {**V1BETA1_GROUP, "spec": {**V1BETA1_GROUP["spec"], "preemptionPolicy": "Never"}}
    with pytest.raises(ValueError, match=r"PodGroup ml/g: spec.preemptionPolicy has no scheduling.k8s.io/v1alpha2"):
        gang_as(group, "scheduling.k8s.io/v1alpha2")


def test_gang_field_gates_exist_in_their_release() -> None:
    # pkg/features/kube_features.go: 1.37 removed GangScheduling and WorkloadAwarePreemption; an
    # unknown gate stops kube-apiserver from starting.
    assert V137.gang_gates == ("TopologyAwareWorkloadScheduling",)
    assert set(V136.gang_gates) == {"TopologyAwareWorkloadScheduling", "GangScheduling", "WorkloadAwarePreemption"}
