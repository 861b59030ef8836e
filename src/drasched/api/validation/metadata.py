"""ObjectMeta rules (apimachinery's ValidateObjectMeta) shared by every kind."""

from __future__ import annotations

from typing import Any

from drasched.api import kinds
from drasched.api.errors import Cause
from drasched.api.kinds import ResourceType
from drasched.api.validation.names import (
    bad,
    check_label,
    check_label_value,
    check_qualified_name,
    check_subdomain,
    qualified_name_errors,
    required,
    too_long,
)

Obj = dict[str, Any]


def validate_metadata(obj: Obj, rt: ResourceType) -> list[Cause]:
    md = obj.get("metadata")
    if not isinstance(md, dict):
        return [required("metadata")]
    causes: list[Cause] = []
    name = md.get("name")
    if name is None and not md.get("generateName"):
        causes.append(Cause("metadata.name", "Required value: name or generateName is required",
                            "FieldValueRequired"))
    elif name is not None:
        checker = check_label if rt in (kinds.NAMESPACE,) else check_subdomain
        causes += checker("metadata.name", name)
    for field in ("labels", "annotations"):
        value = md.get(field)
        if value is not None and (
            not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values())
        ):
            causes.append(Cause(f"metadata.{field}", "Invalid value: values must be strings"))
        elif value:
            causes += (check_labels if field == "labels" else check_annotations)(value)
    if rt.namespaced and md.get("namespace"):  # "" is unset: the request's namespace fills it in
        causes += check_label("metadata.namespace", md.get("namespace"))
    causes += _check_owner_references(md.get("ownerReferences"))
    if isinstance(md.get("finalizers"), list):
        causes += _check_finalizers(md["finalizers"], rt)
    return causes


STANDARD_FINALIZERS = frozenset({"kubernetes", "orphan", "foregroundDeletion"})
"""``helper.IsStandardFinalizerName``: the names a built-in kind's finalizer may have without a domain."""


def _check_finalizers(finalizers: list[Any], rt: ResourceType) -> list[Cause]:
    """apimachinery's ``ValidateFinalizers`` (each a qualified name, on the list's path; not both
    ``orphan`` and ``foregroundDeletion``), then, for built-in kinds, core's
    ``validateKubeFinalizerName`` on each item: a name without '/' must be a standard one."""
    names = [f for f in finalizers if isinstance(f, str)]
    causes = [bad("metadata.finalizers", f, msg) for f in names for msg in qualified_name_errors(f)]
    if "orphan" in names and "foregroundDeletion" in names:
        causes.append(bad("metadata.finalizers", names, "finalizer orphan and foregroundDeletion cannot be both set"))
    if rt.group == kinds.DRASCHED:  # CustomResourceDefinitions: apimachinery's rules only
        return causes
    for i, f in enumerate(finalizers):
        if isinstance(f, str) and "/" not in f and f not in STANDARD_FINALIZERS:
            causes.append(bad(f"metadata.finalizers[{i}]", f,
                              "name is neither a standard finalizer name nor is it fully qualified"))
    return causes


TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024


def check_labels(labels: dict[str, str], path: str = "metadata.labels") -> list[Cause]:
    """``ValidateLabels``: every key a qualified name, every value a label value."""
    causes: list[Cause] = []
    for key in sorted(labels):
        causes += check_qualified_name(path, key)
        causes += check_label_value(path, labels[key])
    return causes


def check_annotations(annotations: dict[str, str], path: str = "metadata.annotations") -> list[Cause]:
    """``ValidateAnnotations``: keys are qualified names (case-insensitive), 256 KiB in all."""
    causes = [bad(path, key, msg) for key in sorted(annotations) for msg in qualified_name_errors(key.lower())]
    size = sum(len(k) + len(v) for k, v in annotations.items())
    if size > TOTAL_ANNOTATION_SIZE_LIMIT:
        causes.append(too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT))
    return causes


def check_template_metadata(md: Any, path: str) -> list[Cause]:
    """``ValidateTemplateObjectMeta``: a template's labels and annotations."""
    if not isinstance(md, dict):
        return []
    causes: list[Cause] = []
    if isinstance(md.get("annotations"), dict):
        causes += check_annotations(md["annotations"], f"{path}.annotations")
    if isinstance(md.get("labels"), dict):
        causes += check_labels(md["labels"], f"{path}.labels")
    return causes


def _check_owner_references(refs: Any) -> list[Cause]:
    """``validateOwnerReference`` (apimachinery 1.37): each reference by its index; an empty
    field is required, an apiVersion ``schema.ParseGroupVersion`` refuses or that has no
    version is invalid."""
    causes: list[Cause] = []
    for i, ref in enumerate(refs if isinstance(refs, list) else []):
        if not isinstance(ref, dict):
            continue
        path = f"metadata.ownerReferences[{i}]"
        api_version = ref.get("apiVersion") or ""
        if not api_version:
            causes.append(required(f"{path}.apiVersion", "must not be empty"))
        elif api_version.count("/") > 1 or not api_version.rsplit("/", 1)[-1]:
            causes.append(bad(f"{path}.apiVersion", api_version, "must be <group>/<version> or <version>"))
        for key in ("kind", "name", "uid"):
            if not ref.get(key):
                causes.append(required(f"{path}.{key}", "must not be empty"))
    return causes
