"""What the API server does to a batch/v1 Job on create once its uid exists.

Upstream ``pkg/registry/batch/job/strategy.go``: ``PrepareForCreate`` calls
``generateSelector`` unless ``spec.manualSelector`` is true. It adds to the pod template the
labels ``job-name`` and ``batch.kubernetes.io/job-name`` (the Job's name) and
``controller-uid`` and ``batch.kubernetes.io/controller-uid`` (its uid), each unless the
template sets it already, and ``spec.selector.matchLabels[batch.kubernetes.io/controller-uid]``
unless the selector has it. ``SetDefaults_Job`` copies the template's labels to a Job that has
none; in Go that is the same map, so such a Job shows the generated labels too (a Job created
on kube-apiserver 1.36 without labels reads back with all four). Then
``ValidateGeneratedSelector`` (pkg/apis/batch/validation) checks that the template carries
the four labels with the Job's values and that the selector matches them:
```spec.selector: Invalid value: ...: `selector` not auto-generated``` for a selector written
by hand without ``manualSelector: true``.

Run by the memory store after validation (where the uid is assigned), so the checks here come
after the others; the server reports them all at once.
"""

from __future__ import annotations

from typing import Any

from drasched.api.errors import Cause, invalid
from drasched.api.selectors import match_label_selector_object
from drasched.api.validation.names import bad

Obj = dict[str, Any]

JOB_NAME_LABELS = ("job-name", "batch.kubernetes.io/job-name")
CONTROLLER_UID_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid")
SELECTOR_LABEL = "batch.kubernetes.io/controller-uid"


def prepare_job_for_create(job: Obj) -> None:
    """Generate the selector and template labels (unless ``manualSelector``), copy the
    template's labels to a Job without labels, and raise Invalid if a selector written by
    hand does not select the generated labels."""
    md = job.setdefault("metadata", {})
    spec = job.get("spec")
    if not isinstance(spec, dict):
        return
    template = spec.setdefault("template", {})
    tmd = template.setdefault("metadata", {}) if isinstance(template, dict) else {}
    if not isinstance(tmd, dict):
        return
    if spec.get("manualSelector") is not True:
        _generate_selector(spec, tmd, str(md.get("name", "")), str(md.get("uid", "")))
        causes = _generated_selector_causes(spec, tmd, str(md.get("name", "")), str(md.get("uid", "")))
        if causes:
            raise invalid("Job.batch", str(md.get("name", "")), causes)
    if not md.get("labels") and tmd.get("labels"):
        md["labels"] = dict(tmd["labels"])


def _generate_selector(spec: Obj, tmd: Obj, name: str, uid: str) -> None:
    labels = tmd.get("labels")
    if not isinstance(labels, dict):
        labels = tmd["labels"] = {}
    for key in JOB_NAME_LABELS:
        labels.setdefault(key, name)  # a label the user set is kept: validation says if it conflicts
    for key in CONTROLLER_UID_LABELS:
        labels.setdefault(key, uid)
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        selector = spec["selector"] = {}
    match = selector.get("matchLabels")
    if not isinstance(match, dict):
        match = selector["matchLabels"] = {}
    match.setdefault(SELECTOR_LABEL, uid)


def _generated_selector_causes(spec: Obj, tmd: Obj, name: str, uid: str) -> list[Cause]:
    labels = tmd.get("labels") or {}
    expected = {**dict.fromkeys(CONTROLLER_UID_LABELS, uid), **dict.fromkeys(JOB_NAME_LABELS, name)}
    causes: list[Cause] = []
    for key, value in expected.items():  # ValidateHasLabel
        if labels.get(key) != value:
            causes.append(bad(f"spec.template.metadata.labels[{key}]", dict(sorted(labels.items())),
                              f"must be '{value}'"))
    selector = spec.get("selector") or {}
    if not match_label_selector_object(selector, expected):
        shown = {k: dict(sorted(v.items())) if isinstance(v, dict) else v for k, v in sorted(selector.items())}
        causes.append(bad("spec.selector", shown, "`selector` not auto-generated"))
    return causes


def restorable_job(job: Obj) -> Obj:
    """A Job as an output that restores a cluster writes it: a selector the server generated
    from the Job's uid is kept with ``manualSelector: true``. A restore gets a new uid, and
    the server refuses a generated-looking selector of another uid (`selector` not
    auto-generated); kept by hand, it still selects the pods the output restores with it."""
    spec = job.get("spec")
    if job.get("kind") != "Job" or not isinstance(spec, dict) or spec.get("manualSelector") is True:
        return job
    uid = (job.get("metadata") or {}).get("uid")
    match = (spec.get("selector") or {}).get("matchLabels") or {}
    if uid and match.get(SELECTOR_LABEL) == uid:
        spec["manualSelector"] = True
    return job
