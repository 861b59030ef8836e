"""``examples/migration`` does what its README says."""

from __future__ import annotations

from pathlib import Path

import yaml

from drasched.cli import main

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "migration"


def test_the_migration_example_runs_as_its_readme_says(tmp_path: Path) -> None:
    out = tmp_path / "out.yaml"
    assert main(["simulate", str(EXAMPLE), "-o", str(out), "-q"]) == 0
    objs = [o for o in yaml.safe_load_all(out.read_text()) if o]
    pods = {o["metadata"]["name"]: o for o in objs if o["kind"] == "Pod"}
    assert len(pods) == 8 and all(p["status"]["phase"] == "Running" for p in pods.values())
    claims = {o["metadata"]["name"]: o for o in objs if o["kind"] == "ResourceClaim"}
    for name, p in pods.items():
        on_dra = p["spec"]["nodeName"].startswith("gpu-dra-")
        status = p["status"].get("extendedResourceClaimStatus")
        assert bool(status) == on_dra, name
        if status:
            assert status["requestMappings"] == [{"containerName": "main", "resourceName": "nvidia.com/gpu",
                                                  "requestName": "container-0-request-2"}]
            claim = claims[status["resourceClaimName"]]
            assert claim["metadata"]["name"].startswith(f"{name}-extended-resources-")
            assert claim["metadata"]["annotations"] == {"resource.kubernetes.io/extended-resource-claim": "true"}
    assert sum(1 for p in pods.values() if p["spec"]["nodeName"].startswith("gpu-dra-")) == 4
    for q in (o for o in objs if o["kind"] == "Queue"):
        for table in ("allocated", "requested", "fairShare"):
            assert q["status"][table]["nvidia.com/gpu"] == "8", (q["metadata"]["name"], table)
