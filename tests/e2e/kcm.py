"""kube-controller-manager beside a test API server, running only the controllers a test names."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from drasched.testing.apiserver import KUBE_VERSION, LocalCluster, _cached_binary, _die_with_parent, cache_dir


def kube_controller_manager() -> Path:
    """kube-controller-manager of the API server's version, built once by scripts/build-kube.sh."""
    binary = cache_dir() / f"kube-{KUBE_VERSION}" / "bin" / "kube-controller-manager"
    return _cached_binary(f"kube-controller-manager {KUBE_VERSION}", binary, "build-kube.sh",
                          "kube-controller-manager")


@contextmanager
def running_kcm(cluster: LocalCluster, controllers: str, *args: str) -> Iterator[None]:
    """kube-controller-manager with ``--controllers=controllers`` (and ``args``) until the block
    ends; its log goes to ``kube-controller-manager.log`` in the cluster's directory."""
    binary = kube_controller_manager()
    with open(cluster.dir / "kube-controller-manager.log", "wb") as out:
        kcm = subprocess.Popen(
            [str(binary), f"--kubeconfig={cluster.kubeconfig_path}", "--leader-elect=false",
             f"--controllers={controllers}", "--secure-port=0", *args],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
    try:
        yield
    finally:
        kcm.terminate()
        try:
            kcm.wait(10)
        except subprocess.TimeoutExpired:
            kcm.kill()
            kcm.wait()
