"""Rendering the Helm chart with the helm binary the test setup builds (scripts/build-helm.sh)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

from drasched.testing.apiserver import REPO_ROOT, helm_binary

KUBE_VERSION = "v1.37.2"
"""The cluster version `helm template` renders for (the chart requires 1.34 or later)."""
CHART = REPO_ROOT / "deploy" / "helm" / "drasched"
Obj = dict[str, Any]


def helm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(helm_binary()), *args], capture_output=True, text=True, check=False,
                          env={"HOME": str(Path.home()), "PATH": "/usr/bin:/bin", "HELM_CACHE_HOME": "/tmp/helm-cache",
                               "HELM_CONFIG_HOME": "/tmp/helm-config", "HELM_DATA_HOME": "/tmp/helm-data"})


def render(*sets: str, namespace: str = "drasched-system", release: str = "drasched",
           include_crds: bool = False) -> list[Obj]:
    """``helm template`` of the chart with ``--set`` values; the objects, in the order helm writes them."""
    args = ["template", release, str(CHART), "--namespace", namespace, "--kube-version", KUBE_VERSION]
    if include_crds:
        args.append("--include-crds")
    for s in sets:
        args += ["--set", s]
    done = helm(*args)
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def by_kind(objs: list[Obj], kind: str) -> list[Obj]:
    return [o for o in objs if o["kind"] == kind]
