"""The kubelet's side of the plugin sockets: discover, register, call prepare/unprepare.

Used by tests (a client that behaves like the kubelet) and by the simulated kubelet when
asked to go over real sockets. It follows the kubelet's plugin watcher: a socket appears
in the registry directory, ``GetInfo`` must say ``DRAPlugin`` with a supported version,
the kubelet connects to the returned endpoint and then reports the outcome with
``NotifyRegistrationStatus``. ``KubeletPluginClient`` has the same two methods as
``KubeletPlugin``, so callers do not care whether a driver is in process or behind a socket.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import grpc

from drasched.node.driver import ClaimRef
from drasched.node.plugin import PreparedDevice, PrepareResult
from drasched.node.proto import (
    dra_v1_pb2,
    dra_v1_pb2_grpc,
    dra_v1beta1_pb2,
    dra_v1beta1_pb2_grpc,
    pluginregistration_v1_pb2,
    pluginregistration_v1_pb2_grpc,
)
from drasched.node.server import PLUGIN_TYPE

_VERSIONS: dict[str, tuple[ModuleType, Any]] = {
    "v1": (dra_v1_pb2, dra_v1_pb2_grpc),
    "v1beta1": (dra_v1beta1_pb2, dra_v1beta1_pb2_grpc),
}
KUBELET_PREFERENCE = ("v1", "v1beta1")


class RegistrationError(RuntimeError):
    """A plugin the kubelet would refuse; the message is what it would report to the plugin."""


@dataclass(frozen=True)
class PluginInfo:
    type: str
    name: str
    endpoint: str
    supported_versions: tuple[str, ...]


def _unix(path: str | os.PathLike[str]) -> str:
    return f"unix://{os.fspath(path)}"


def get_info(registration_socket: str | os.PathLike[str], timeout: float = 5.0) -> PluginInfo:
    """Call ``GetInfo`` on a registration socket."""
    with grpc.insecure_channel(_unix(registration_socket)) as ch:
        stub = pluginregistration_v1_pb2_grpc.RegistrationStub(ch)
        info = stub.GetInfo(pluginregistration_v1_pb2.InfoRequest(), timeout=timeout)
    return PluginInfo(info.type, info.name, info.endpoint, tuple(info.supported_versions))


def notify_registration_status(registration_socket: str | os.PathLike[str], registered: bool, error: str = "",
                               timeout: float = 5.0) -> None:
    with grpc.insecure_channel(_unix(registration_socket)) as ch:
        stub = pluginregistration_v1_pb2_grpc.RegistrationStub(ch)
        stub.NotifyRegistrationStatus(
            pluginregistration_v1_pb2.RegistrationStatus(plugin_registered=registered, error=error), timeout=timeout)


class KubeletPluginClient:
    """A DRA plugin behind a socket, called as the kubelet calls it."""

    def __init__(self, driver_name: str, endpoint: str | os.PathLike[str], version: str = "v1",
                 timeout: float = 30.0) -> None:
        if version not in _VERSIONS:
            raise ValueError(f"unknown DRAPlugin version {version!r}")
        self.driver_name = driver_name
        self.endpoint = os.fspath(endpoint)
        self.version = version
        self.timeout = timeout
        self._pb2, grpc_mod = _VERSIONS[version]
        self._channel = grpc.insecure_channel(_unix(self.endpoint))
        self._stub = grpc_mod.DRAPluginStub(self._channel)

    def _claims(self, claims: Sequence[ClaimRef]) -> list[Any]:
        return [self._pb2.Claim(namespace=c.namespace, uid=c.uid, name=c.name) for c in claims]

    def node_prepare_resources(self, claims: Sequence[ClaimRef]) -> dict[str, PrepareResult]:
        resp = self._stub.NodePrepareResources(self._pb2.NodePrepareResourcesRequest(claims=self._claims(claims)),
                                               timeout=self.timeout)
        out: dict[str, PrepareResult] = {}
        for uid, r in resp.claims.items():
            if r.error:
                out[uid] = PrepareResult(error=r.error)
            else:
                out[uid] = PrepareResult(devices=tuple(
                    PreparedDevice(tuple(d.request_names), d.pool_name, d.device_name, tuple(d.cdi_device_ids),
                                   d.share_id) for d in r.devices))
        return out

    def node_unprepare_resources(self, claims: Sequence[ClaimRef]) -> dict[str, str]:
        resp = self._stub.NodeUnprepareResources(
            self._pb2.NodeUnprepareResourcesRequest(claims=self._claims(claims)), timeout=self.timeout)
        return {uid: r.error for uid, r in resp.claims.items()}

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> KubeletPluginClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def register(registration_socket: str | os.PathLike[str], timeout: float = 5.0) -> KubeletPluginClient:
    """The kubelet's handshake with one plugin: GetInfo, check, connect, NotifyRegistrationStatus.

    A refused plugin is told why (as the kubelet does) and ``RegistrationError`` is raised.
    """
    info = get_info(registration_socket, timeout)
    problem = ""
    versions = [v.split(".", 1)[0] for v in info.supported_versions if v.endswith("." + PLUGIN_TYPE)]
    chosen = next((v for v in KUBELET_PREFERENCE if v in versions), None)
    if info.type != PLUGIN_TYPE:
        problem = f"plugin type {info.type!r} is not {PLUGIN_TYPE}"
    elif not info.name:
        problem = "plugin name is empty"
    elif chosen is None:
        problem = f"none of the versions {list(info.supported_versions)} is supported"
    elif not Path(info.endpoint).exists():
        problem = f"endpoint {info.endpoint} does not exist"
    if problem:
        notify_registration_status(registration_socket, False, problem, timeout)
        raise RegistrationError(problem)
    assert chosen is not None
    client = KubeletPluginClient(info.name, info.endpoint, chosen)
    notify_registration_status(registration_socket, True, "", timeout)
    return client


def discover(registry_dir: str | os.PathLike[str], timeout: float = 5.0) -> dict[str, KubeletPluginClient]:
    """Register every plugin socket in ``registry_dir`` (the plugin watcher's scan), by driver name."""
    out: dict[str, KubeletPluginClient] = {}
    for sock in sorted(Path(registry_dir).glob("*.sock")):
        client = register(sock, timeout)
        out[client.driver_name] = client
    return out
