"""Decode before validate: a wrongly typed field is refused before anything reads it.

Upstream: a built-in kind's body that does not decode into its Go type is a 400 BadRequest
``<Kind> in version "<v>" cannot be handled as a <Kind>: ...``
(k8s.io/apiserver/pkg/endpoints/handlers/rest.go, ``transformDecodeError``); a CRD's field
of the wrong type is a 422 Invalid from the OpenAPI schema validator
(``spec.x: Invalid value: "string": spec.x in body must be of type integer: "string"``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from drasched.api import kinds
from drasched.api.decode import MAX_DEPTH, decode_object
from drasched.api.errors import BadRequest, Invalid
from drasched.api.foreign import translate
from drasched.api.manifest import ManifestError, load_paths, parse_documents
from drasched.cli import main
from drasched.store.memory import MemoryStore

ROOT = Path(__file__).resolve().parents[3]


def claim(requests: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "default"}, "spec": {"devices": {"requests": requests}}}


def pod(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec}}


def write(tmp_path: Path, *docs: Any, name: str = "in.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


def test_a_string_where_a_request_object_belongs_is_refused_with_file_document_object_and_field(
        tmp_path: Path) -> None:
    path = write(tmp_path, claim(["gpu"]))
    with pytest.raises(ManifestError) as err:
        load_paths([str(path)])
    assert str(err.value) == (
        f'{path}: document 0: ResourceClaim default/c: ResourceClaim in version "v1" cannot be handled as a '
        "ResourceClaim: spec.devices.requests[0]: expected object, got string")


def test_simulate_exits_2_naming_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, pod(tolerations="all"))
    assert main(["simulate", str(path), "-q", "-o", str(tmp_path / "out.yaml")]) == 2
    assert "document 0: Pod default/p: " in capsys.readouterr().err
    assert not (tmp_path / "out.yaml").exists()


def test_the_memory_store_answers_400_bad_request_for_a_built_in_kind() -> None:
    store = MemoryStore(auto_namespaces=True)
    with pytest.raises(BadRequest) as err:
        store.create(claim({"name": "gpu"}))
    assert err.value.code == 400
    assert err.value.message == ('ResourceClaim in version "v1" cannot be handled as a ResourceClaim: '
                                 "spec.devices.requests: expected array, got object")


def test_a_crd_field_of_the_wrong_type_is_422_in_the_schema_validators_words() -> None:
    queue = {"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "Queue", "metadata": {"name": "q"},
             "spec": {"priority": "high"}}
    with pytest.raises(Invalid) as err:
        MemoryStore(auto_namespaces=True).create(queue)
    assert err.value.code == 422
    assert [str(c) for c in err.value.causes] == [
        'spec.priority: Invalid value: "string": spec.priority in body must be of type integer: "string"']


def test_an_update_and_a_status_write_are_decoded_too() -> None:
    store = MemoryStore(auto_namespaces=True)
    created = store.create(pod())
    bad_spec = {**created, "spec": {**created["spec"], "nodeSelector": ["a"]}}
    with pytest.raises(BadRequest, match=r"spec.nodeSelector: expected object, got array"):
        store.update(bad_spec)
    with pytest.raises(BadRequest, match=r"status: expected object, got integer"):
        store.update_status({**created, "status": 1})
    with pytest.raises(BadRequest, match=r"status.conditions\[0\]: expected object, got string"):
        store.patch(kinds.POD, "p", "default", {"status": {"conditions": ["Ready"]}}, subresource="status")


def test_restored_status_is_decoded(tmp_path: Path) -> None:
    bad = claim([{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}])
    bad["status"] = {"reservedFor": ["pod-a"]}
    with pytest.raises(ManifestError, match=r"status.reservedFor\[0\]: expected object, got string"):
        load_paths([str(write(tmp_path, bad))])


def test_configmap_data_must_be_strings_even_through_a_yaml_alias(tmp_path: Path) -> None:
    path = tmp_path / "cm.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: default}\n"
                    "data:\n  a: &x [lol, lol, lol]\n  b: *x\n")
    with pytest.raises(ManifestError, match=r"data.b: expected string, got array"):
        load_paths([str(path)])


@pytest.mark.parametrize(("spec", "field", "expected"), [
    ({"priority": True}, "spec.priority", "integer"),
    ({"affinity": {"nodeAffinity": "x"}}, "spec.affinity.nodeAffinity", "object"),
    ({"nodeName": 7}, "spec.nodeName", "string"),
    ({"containers": [{"name": "c", "image": 5}]}, "spec.containers[0].image", "string"),
    ({"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": ["1"]}}}]},
     "spec.containers[0].resources.requests.cpu", "a quantity (a string or a number)"),
    ({"overhead": {"cpu": "80 Gi"}}, "spec.overhead.cpu",
     "a quantity (quantities must match the regular expression"),
])
def test_wrong_types_in_a_pod(spec: dict[str, Any], field: str, expected: str) -> None:
    with pytest.raises(BadRequest) as err:
        decode_object(pod(**spec))
    assert f"{field}: expected {expected}" in err.value.message


def test_count_true_and_admin_access_yes_are_type_errors() -> None:
    request = {"name": "gpu", "exactly": {"deviceClassName": "c", "count": True, "adminAccess": "yes"}}
    with pytest.raises(BadRequest) as err:
        decode_object(claim([request]))
    assert {c.field for c in err.value.causes} == {"spec.devices.requests[0].exactly.count",
                                                    "spec.devices.requests[0].exactly.adminAccess"}


def test_an_int64_field_refuses_beyond_int64() -> None:
    with pytest.raises(BadRequest, match=r"spec.tolerations\[0\].tolerationSeconds: expected an integer that "
                                         r"fits in 64 bits, got 9223372036854775808"):
        decode_object(pod(tolerations=[{"key": "k", "operator": "Exists", "tolerationSeconds": 2**63}]))


def test_an_int32_field_refuses_beyond_int32_as_go_does() -> None:
    pc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "pc"}, "value": 2**40}
    with pytest.raises(BadRequest, match=r"value: expected an integer that fits in 32 bits, got 1099511627776"):
        decode_object(pc)
    queue = {"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "Queue", "metadata": {"name": "q"},
             "spec": {"priority": 2**40}}
    with pytest.raises(Invalid, match=r"spec.priority: Invalid value: 1099511627776: must be of type integer "
                                      r"with format int32"):
        decode_object(queue)


def test_pod_priority_is_int32_so_int64_max_plus_one_is_refused() -> None:
    with pytest.raises(BadRequest, match=r"spec.priority: expected an integer that fits in 32 bits, got 9223372"):
        decode_object(pod(priority=2**63))


def test_normalised_as_the_decoder_does_nulls_whole_floats_and_yaml_keys() -> None:
    obj = pod(priority=3.0, nodeSelector={2: "a", True: "b"}, tolerations=None)
    obj["metadata"]["labels"] = None
    obj["spec"]["containers"][0]["resources"] = {"requests": {"cpu": None}}
    decode_object(obj)
    assert obj["spec"]["priority"] == 3 and isinstance(obj["spec"]["priority"], int)
    assert obj["spec"]["nodeSelector"] == {"2": "a", "true": "b"}
    assert "tolerations" not in obj["spec"] and "labels" not in obj["metadata"]
    assert obj["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "0"}


def test_unknown_fields_stay_allowed_and_untouched() -> None:
    obj = pod(hostname="web-0", someFutureField={"deep": [1, {"x": None}]})
    decode_object(obj)
    assert obj["spec"]["someFutureField"] == {"deep": [1, {"x": None}]}
    assert MemoryStore(auto_namespaces=True).create(obj)["spec"]["someFutureField"] == {"deep": [1, {"x": None}]}


def test_deep_nesting_is_refused_not_a_recursion_error(tmp_path: Path) -> None:
    nested: Any = 1
    for _ in range(MAX_DEPTH + 10):
        nested = [nested]
    with pytest.raises(BadRequest, match=f"at most {MAX_DEPTH} levels of nesting"):
        MemoryStore(auto_namespaces=True).create(pod(extra=nested))
    deep = tmp_path / "deep.json"
    deep.write_text('{"apiVersion": "v1", "kind": "Pod", "x": ' + "[" * 5000 + "]" * 5000 + "}")
    with pytest.raises(ManifestError, match="nested too deeply"):
        load_paths([str(deep)])


def test_reader_errors_give_line_and_column() -> None:
    with pytest.raises(ManifestError, match=r"^a.yaml: line 3 column 2: malformed YAML"):
        parse_documents("x: 1\na: [1, 2\nb: c\n", "a.yaml")
    with pytest.raises(ManifestError, match=r"^b.json: line 1 column 10: malformed JSON"):
        parse_documents('{"a": 1, ', "b.json")
    with pytest.raises(ManifestError, match=r"^c.yaml: line 2 column 4: malformed YAML: control characters"):
        parse_documents("x: 1\na: \x07", "c.yaml")


def test_yaml_timestamps_stay_strings_as_kubectl_sends_them() -> None:
    [loaded] = parse_documents("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n"
                               "  creationTimestamp: 2024-01-01T00:00:00Z\n", "t.yaml")
    assert loaded.obj["metadata"]["creationTimestamp"] == "2024-01-01T00:00:00Z"


def _shipped_objects() -> list[tuple[str, dict[str, Any]]]:
    files = sorted([*ROOT.joinpath("examples").rglob("*.yaml"), *ROOT.joinpath("tests", "scenarios").rglob("*.yaml")])
    out = []
    for f in files:
        docs = [d for d in yaml.safe_load_all(f.read_text())
                if isinstance(d, dict) and d.get("apiVersion") != "test.drasched.io/v1" and "kind" in d]
        # other schedulers' objects are decoded as what they are read as (drasched.api.foreign)
        out += [(str(f.relative_to(ROOT)), doc) for doc in translate(docs).kept]
    return out


def test_every_shipped_example_and_scenario_object_decodes() -> None:
    """Except an object a scenario is about refusing: exit code 2, and its ``stderrContains`` naming the
    object (``gangapi/007``, ``008``: other schedulers' versions drasched does not read)."""
    refused = []
    for source, doc in _shipped_objects():
        try:
            decode_object(doc)
        except (BadRequest, Invalid) as exc:
            if not _expected_refusal(source, doc):
                refused.append(f"{source}: {exc.message}")
    assert refused == []


def _expected_refusal(source: str, doc: dict[str, Any]) -> bool:
    md = doc.get("metadata") or {}
    named = f"{doc.get('kind')} {md['namespace'] + '/' if md.get('namespace') else ''}{md.get('name')}: "
    heads = [d for d in yaml.safe_load_all(ROOT.joinpath(source).read_text())
             if isinstance(d, dict) and d.get("apiVersion") == "test.drasched.io/v1" and d.get("kind") == "Scenario"]
    return any(h.get("exitCode") == 2 and any(named in str(want) for want in h.get("stderrContains") or [])
               for h in heads)


def test_workload_kinds_are_decoded_with_their_pod_template() -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "default"},
           "spec": {"podFailurePolicy": {"rules": [{"action": "Ignore", "onExitCodes": {"operator": "In",
                                                                                         "values": [[1]]}}]},
                    "template": {"spec": {"containers": "busybox"}}}}
    with pytest.raises(BadRequest) as err:
        decode_object(job)
    assert {c.field for c in err.value.causes} == {"spec.podFailurePolicy.rules[0].onExitCodes.values[0]",
                                                    "spec.template.spec.containers"}
    jobset = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "js"},
              "spec": {"replicatedJobs": [{"name": "w", "replicas": "two"}]}}
    with pytest.raises(Invalid, match=r"spec.replicatedJobs\[0\].replicas in body must be of type integer"):
        decode_object(jobset)


def test_every_kind_drasched_serves_has_a_decode_shape() -> None:
    from drasched.api.shapes import VIEW_OF

    assert [rt.kind for rt in kinds.ALL if rt.kind not in VIEW_OF] == []


def test_a_billion_laughs_alias_tree_is_refused_at_once(tmp_path: Path) -> None:
    levels = ['  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, cur in zip("abcdefgh", "bcdefghi"):
        levels.append(f"  {cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    path = tmp_path / "laughs.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: default}\nextra:\n"
                    + "\n".join(levels) + "\n")
    with pytest.raises(ManifestError, match=r"document 0: YAML aliases expand to more than 1,000,000 values"):
        load_paths([str(path)])


def test_a_recursive_alias_is_refused() -> None:
    with pytest.raises(ManifestError, match="refers to its own ancestor"):
        parse_documents("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\nx: &a [*a]\n", "r.yaml")


def test_a_few_shared_aliases_are_fine() -> None:
    [loaded] = parse_documents("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n"
                               "data:\n  a: &x hello\n  b: *x\n", "ok.yaml")
    assert loaded.obj["data"] == {"a": "hello", "b": "hello"}


def test_a_time_that_is_not_rfc3339_is_refused_as_metav1_time_refuses_it() -> None:
    obj = pod()
    obj["status"] = {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "1e999"}]}
    with pytest.raises(BadRequest, match=r"status.conditions\[0\].lastTransitionTime: expected a time in RFC 3339"):
        decode_object(obj)
    ok = pod()
    ok["metadata"]["creationTimestamp"] = "2024-01-01T00:00:00Z"
    decode_object(ok)


def test_a_bind_request_allocation_has_the_claim_allocation_shape() -> None:
    br = {"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "BindRequest",
          "metadata": {"name": "b", "namespace": "default"},
          "spec": {"podName": "p", "selectedNode": "n",
                   "resourceClaimAllocations": [{"name": "c", "allocation": {"devices": {"results": ["gpu-0"]}}}]}}
    with pytest.raises(Invalid, match=r"spec.resourceClaimAllocations\[0\].allocation.devices.results\[0\]"):
        decode_object(br)


def test_foreign_objects_are_decoded_before_translation(tmp_path: Path) -> None:
    kai = {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": "team"},
           "spec": {"resources": {"gpu": "lots"}}}
    with pytest.raises(ManifestError, match=r"document 0: Queue team: spec.resources.gpu: Invalid value: \"string\""):
        load_paths([str(write(tmp_path, kai))])


def test_an_unknown_kind_is_refused_before_any_translation_reads_it(tmp_path: Path) -> None:
    odd = {"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": ["Queue"], "metadata": {"name": ["q"]}}
    with pytest.raises(ManifestError, match=r"document 0: <list> <list>: Object 'Kind' is missing"):
        load_paths([str(write(tmp_path, odd))])


def test_the_gang_api_fields_of_a_pod_are_typed() -> None:
    with pytest.raises(BadRequest, match=r"spec.schedulingGroup.podGroupName: expected string, got array"):
        decode_object(pod(schedulingGroup={"podGroupName": ["g"]}))
