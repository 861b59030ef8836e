"""The declared fields drasched names unknown ones from (``openapi_fields.json``) are the API
server's own: the file is regenerated from the server the tests run
(``scripts/gen-openapi-fields.py``), and this test fails when the two drift apart."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from drasched.testing.apiserver import LocalCluster

pytestmark = pytest.mark.e2e

SHIPPED = json.loads(resources.files("drasched.api").joinpath("openapi_fields.json").read_text())
CHECKED = [("api/v1", "io.k8s.api.core.v1.PodSpec"), ("api/v1", "io.k8s.api.core.v1.Container"),
           ("apis/resource.k8s.io/v1", "io.k8s.api.resource.v1.ExactDeviceRequest"),
           ("apis/resource.k8s.io/v1", "io.k8s.api.resource.v1.Device"),
           ("apis/batch/v1", "io.k8s.api.batch.v1.JobSpec")]


@pytest.mark.parametrize(("group_version", "schema"), CHECKED)
def test_the_shipped_fields_are_the_servers(local_cluster: LocalCluster, group_version: str, schema: str) -> None:
    doc = local_cluster.store()._request("GET", f"/openapi/v3/{group_version}").json()
    served = set(doc["components"]["schemas"][schema]["properties"])
    assert set(SHIPPED["schemas"][schema]["fields"]) == served
