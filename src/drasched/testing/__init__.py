"""Test support: a throwaway real control plane (etcd + kube-apiserver) for e2e and contract tests."""

from drasched.testing.apiserver import LocalCluster, ensure_namespace, etcd_binary, kube_apiserver_binary

__all__ = ["LocalCluster", "ensure_namespace", "etcd_binary", "kube_apiserver_binary"]
