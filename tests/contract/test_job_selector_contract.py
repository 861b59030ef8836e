"""A batch/v1 Job as written by people (no selector, no labels) reads back the same from the
memory store (what ``drasched simulate`` runs on) and from kube-apiserver: the selector and
the template labels generated from its uid (``generateSelector`` in upstream
pkg/registry/batch/job/strategy.go), the labels copied to the Job, and the
```selector` not auto-generated`` refusal of a selector written without ``manualSelector``."""

from __future__ import annotations

from typing import Any

import pytest

from drasched.api import kinds
from drasched.api.errors import Invalid
from drasched.store.base import ClusterStore

Obj = dict[str, Any]


def job(ns: str, name: str = "train", *, labels: dict[str, str] | None = None,
        template_labels: dict[str, str] | None = None, **spec: Any) -> Obj:
    template: Obj = {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}
    if template_labels is not None:
        template["metadata"] = {"labels": template_labels}
    md: Obj = {"name": name, "namespace": ns}
    if labels is not None:
        md["labels"] = labels
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": md,
            "spec": {"parallelism": 2, "completions": 2, "template": template, **spec}}


def generated(name: str, uid: str) -> dict[str, str]:
    return {"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": name,
            "controller-uid": uid, "job-name": name}


def test_a_job_without_selector_or_labels_gets_them_from_its_uid(store: ClusterStore, ns: str) -> None:
    created = store.create(job(ns))
    uid = created["metadata"]["uid"]
    assert created["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert created["spec"]["manualSelector"] is False
    assert created["spec"]["template"]["metadata"]["labels"] == generated("train", uid)
    assert created["metadata"]["labels"] == generated("train", uid)
    assert store.get(kinds.JOB, "train", ns)["spec"]["selector"] == created["spec"]["selector"]


def test_template_labels_are_kept_and_go_to_a_job_without_labels(store: ClusterStore, ns: str) -> None:
    created = store.create(job(ns, template_labels={"app": "trainer"}))
    want = {"app": "trainer", **generated("train", created["metadata"]["uid"])}
    assert created["spec"]["template"]["metadata"]["labels"] == want
    assert created["metadata"]["labels"] == want


def test_a_job_with_labels_of_its_own_keeps_them(store: ClusterStore, ns: str) -> None:
    created = store.create(job(ns, labels={"team": "a"}))
    assert created["metadata"]["labels"] == {"team": "a"}
    assert created["spec"]["template"]["metadata"]["labels"] == generated("train", created["metadata"]["uid"])


def test_a_selector_written_without_manual_selector_is_refused(store: ClusterStore, ns: str) -> None:
    with pytest.raises(Invalid) as err:
        store.create(job(ns, "sel", template_labels={"app": "y"}, selector={"matchLabels": {"app": "y"}}))
    assert [c.field for c in err.value.causes] == ["spec.selector"]
    assert err.value.causes[0].message.endswith("`selector` not auto-generated")


def test_manual_selector_leaves_selector_and_labels_as_written(store: ClusterStore, ns: str) -> None:
    created = store.create(job(ns, "manual", template_labels={"app": "y"}, selector={"matchLabels": {"app": "y"}},
                               manualSelector=True))
    assert created["spec"]["selector"] == {"matchLabels": {"app": "y"}}
    assert created["spec"]["template"]["metadata"]["labels"] == {"app": "y"}
    assert created["metadata"]["labels"] == {"app": "y"}
