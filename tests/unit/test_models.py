"""Typed views decode what Kubernetes writes and name the field when a type is wrong."""

from __future__ import annotations

import pytest

from drasched.api.errors import Invalid
from drasched.api.models import BindRequest, Node, Pod, Queue, view


def test_pod_view_reads_camel_case_and_ignores_unknown_fields() -> None:
    pod = view({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "labels": {"drasched.io/queue": "a"}},
        "spec": {"schedulerName": "drasched", "futureField": {"x": 1},
                 "initContainers": [{"name": "init", "image": "i", "restartPolicy": "Always"}],
                 "containers": [{"name": "c", "image": "i",
                                 "resources": {"requests": {"cpu": "500m", "nvidia.com/gpu": 2}}}],
                 "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}]},
        "status": {"extendedResourceClaimStatus": {
            "resourceClaimName": "p-extended-resources-abcde",
            "requestMappings": [{"containerName": "c", "resourceName": "nvidia.com/gpu",
                                 "requestName": "container-0-request-1"}]}},
    })
    assert isinstance(pod, Pod)
    assert pod.spec.scheduler_name == "drasched"
    assert pod.spec.init_containers[0].restart_policy == "Always"
    assert pod.spec.containers[0].resources.requests == {"cpu": "500m", "nvidia.com/gpu": 2}
    assert pod.spec.resource_claims[0].resource_claim_template_name == "t"
    status = pod.status.extended_resource_claim_status
    assert status is not None and status.request_mappings[0].request_name == "container-0-request-1"


def test_queue_defaults_follow_the_crd() -> None:
    q = view({"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "Queue", "metadata": {"name": "q"},
              "spec": {"resources": {"nvidia.com/gpu": {"quota": "8"}}}})
    assert isinstance(q, Queue)
    assert q.spec.priority == 100
    assert q.spec.resources["nvidia.com/gpu"].over_quota_weight == 1.0
    assert q.spec.resources["nvidia.com/gpu"].limit is None


def test_wrong_type_names_the_field() -> None:
    with pytest.raises(Invalid) as err:
        view({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "spec": {"unschedulable": "yes"}},
             Node)
    assert err.value.causes[0].field == "spec.unschedulable"
    assert 'Node "n" is invalid' in str(err.value)


def test_bind_request_view() -> None:
    br = view({"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "BindRequest",
               "metadata": {"name": "p", "namespace": "ns"},
               "spec": {"podName": "p", "selectedNode": "n1",
                        "resourceClaimAllocations": [{"name": "c", "allocation": {"devices": {"results": []}}}]}})
    assert isinstance(br, BindRequest)
    assert br.spec.resource_claim_allocations[0].name == "c"
    assert br.status.phase == "Pending"
