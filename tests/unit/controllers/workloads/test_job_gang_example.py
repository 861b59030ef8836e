"""``examples/job-gang`` does what its comments say, the same way every run."""

from __future__ import annotations

from pathlib import Path

import yaml

from drasched.cli import main

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "job-gang"


def _run(out: Path) -> list[dict]:
    assert main(["simulate", str(EXAMPLE), "-o", str(out), "-q"]) == 0
    return [o for o in yaml.safe_load_all(out.read_text()) if o]


def test_the_indexed_job_starts_as_one_gang_and_completes(tmp_path: Path) -> None:
    objects = _run(tmp_path / "out.yaml")
    [job] = [o for o in objects if o["kind"] == "Job"]
    assert [c["type"] for c in job["status"]["conditions"]] == ["SuccessCriteriaMet", "Complete"]
    assert job["status"]["succeeded"] == 8 and job["status"]["completedIndexes"] == "0-7"
    [group] = [o for o in objects if o["kind"] == "PodGroup"]
    assert group["metadata"]["name"] == "train" and group["spec"]["minMember"] == 8
    assert group["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"]
    pods = [o for o in objects if o["kind"] == "Pod"]
    assert len(pods) == 8
    assert {p["status"]["startTime"] for p in pods} == {job["status"]["startTime"]}  # all together
    assert sorted(p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] for p in pods) == [
        str(i) for i in range(8)]
    assert {p["metadata"]["labels"]["drasched.io/pod-group"] for p in pods} == {"train"}
    # each pod got its own claim from the template (deleted again once the pod finished, as upstream)
    claim_names = {p["status"]["resourceClaimStatuses"][0]["resourceClaimName"] for p in pods}
    assert len(claim_names) == 8


def test_the_run_is_byte_identical(tmp_path: Path) -> None:
    _run(tmp_path / "a.yaml")
    _run(tmp_path / "b.yaml")
    assert (tmp_path / "a.yaml").read_bytes() == (tmp_path / "b.yaml").read_bytes()
