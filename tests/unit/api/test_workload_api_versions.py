"""Workload kinds in the apiVersions published examples use: JobSet ``jobset.x-k8s.io/v1`` is
accepted as v1alpha2 is; Kubeflow's training kinds are refused with a message that says what to
give instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from drasched.api import kinds
from drasched.api.errors import BadRequest
from drasched.api.manifest import ManifestError, load_paths
from drasched.controllers.workloads.gangs import staged
from drasched.controllers.workloads.jobset import starts_in_order

JOBSET = """
apiVersion: jobset.x-k8s.io/{version}
kind: JobSet
metadata: {{name: js, namespace: default}}
spec:
  {extra}
  replicatedJobs:
  - name: workers
    replicas: 2
    template:
      spec:
        parallelism: 2
        template:
          spec:
            restartPolicy: Never
            containers: [{{name: c, image: busybox}}]
"""


# sigs.k8s.io/jobset api/jobset/v1/groupversion_info.go: Group "jobset.x-k8s.io", Version "v1"
@pytest.mark.parametrize("version", ["v1alpha2", "v1"])
def test_jobset_v1_and_v1alpha2_are_one_kind_and_keep_their_api_version(tmp_path: Path, version: str) -> None:
    f = tmp_path / "js.yaml"
    f.write_text(JOBSET.format(version=version, extra=""))
    [item] = load_paths([str(f)])
    assert item.obj["apiVersion"] == f"jobset.x-k8s.io/{version}"
    assert kinds.for_object(item.obj) is kinds.JOB_SET


def test_a_jobset_version_never_served_names_the_served_ones() -> None:
    with pytest.raises(BadRequest, match=r'version "jobset.x-k8s.io/v1beta1" \(drasched serves JobSet as '
                                         r"jobset.x-k8s.io/v1alpha2, jobset.x-k8s.io/v1\)"):
        kinds.for_object({"apiVersion": "jobset.x-k8s.io/v1beta1", "kind": "JobSet"})


# sigs.k8s.io/jobset api/jobset/v1/jobset_types.go: JobSetSpec has no StartupPolicy (the
# v1alpha2 conversion keeps it in the jobset.sigs.k8s.io/startup-policy annotation only)
def test_jobset_v1_has_no_startup_policy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "js.yaml"
    f.write_text(JOBSET.format(version="v1", extra="startupPolicy: {startupPolicyOrder: InOrder}"))
    [item] = load_paths([str(f)])
    assert 'JobSet default/js: unknown field "spec.startupPolicy" (ignored: jobset.x-k8s.io/v1 has no ' \
           "startupPolicy; use dependsOn, or jobset.x-k8s.io/v1alpha2)" in capsys.readouterr().err
    assert not starts_in_order(item.obj) and not staged(item.obj)
    item.obj["apiVersion"] = "jobset.x-k8s.io/v1alpha2"
    assert starts_in_order(item.obj) and staged(item.obj)


KUBEFLOW = [
    ("kubeflow.org/v1", "PyTorchJob"), ("kubeflow.org/v1", "TFJob"), ("kubeflow.org/v1", "MPIJob"),
    ("kubeflow.org/v2beta1", "MPIJob"), ("kubeflow.org/v1", "XGBoostJob"), ("kubeflow.org/v1", "PaddleJob"),
    ("kubeflow.org/v1", "JAXJob"),
]


@pytest.mark.parametrize(("api_version", "kind"), KUBEFLOW)
def test_a_kubeflow_training_job_is_refused_saying_what_to_give_instead(tmp_path: Path, api_version: str,
                                                                         kind: str) -> None:
    f = tmp_path / "job.yaml"
    f.write_text(f"apiVersion: {api_version}\nkind: {kind}\nmetadata: {{name: train, namespace: default}}\n"
                 "spec: {}\n")
    with pytest.raises(ManifestError) as err:
        load_paths([str(f)])
    message = str(err.value)
    assert f'{kind} default/train: no kind "{kind}" is registered for version "{api_version}": drasched does ' \
           f"not run the Kubeflow training operator embedded, so a {kind} makes no pods here" in message
    assert f"In a cluster the operator creates the {kind}'s pods and drasched schedules them" in message
    assert "to simulate, give those pods as the operator makes them (label training.kubeflow.org/job-name and " \
           f"a controller ownerReference to the {kind}), or the same work as a batch/v1 Job or a JobSet" in message


def test_a_trainjob_is_refused_pointing_at_the_jobset_trainer_makes(tmp_path: Path) -> None:
    f = tmp_path / "tj.yaml"
    f.write_text("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                 "metadata: {name: tj, namespace: default}\nspec: {runtimeRef: {name: torch-distributed}}\n")
    with pytest.raises(ManifestError) as err:
        load_paths([str(f)])
    message = str(err.value)
    assert 'TrainJob default/tj: no kind "TrainJob" is registered for version "trainer.kubeflow.org/v1alpha1": ' \
           "drasched does not run Kubeflow Trainer embedded, so a TrainJob makes no pods here" in message
    assert "to simulate, give that JobSet (jobset.x-k8s.io/v1alpha2 or v1), or its Jobs or pods" in message


def test_an_nvidia_compute_domain_is_refused_saying_what_its_controller_would_create(tmp_path: Path) -> None:
    f = tmp_path / "cd.yaml"
    f.write_text("apiVersion: resource.nvidia.com/v1beta1\nkind: ComputeDomain\n"
                 "metadata: {name: imex, namespace: default}\n"
                 "spec: {numNodes: 2, channel: {resourceClaimTemplate: {name: imex-channel-0}}}\n")
    with pytest.raises(ManifestError) as err:
        load_paths([str(f)])
    message = str(err.value)
    assert 'ComputeDomain default/imex: no kind "ComputeDomain" is registered for version ' \
           '"resource.nvidia.com/v1beta1": a ComputeDomain is NVIDIA\'s DRA driver\'s multi-node NVLink (IMEX) ' \
           "domain, which drasched does not run embedded" in message
    assert "DeviceClass compute-domain-default-channel.nvidia.com" in message


def test_other_unknown_kinds_keep_the_plain_message() -> None:
    with pytest.raises(BadRequest) as err:
        kinds.for_object({"apiVersion": "example.com/v1", "kind": "Widget"})
    assert err.value.message == 'no kind "Widget" is registered for version "example.com/v1"'
