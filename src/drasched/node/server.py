"""The kubelet plugin's gRPC side: registration and DRAPlugin services over unix sockets.

Layout as the kubelet expects it (paths configurable for tests and non-default kubelets):

* ``<registry_dir>/<driver>-reg.sock`` serves ``pluginregistration.Registration``; the
  kubelet's plugin watcher finds it there, calls ``GetInfo`` and then
  ``NotifyRegistrationStatus``;
* ``<plugin_dir>/dra.sock`` serves ``DRAPlugin`` in both ``v1`` and ``v1beta1`` (the
  versions ``GetInfo`` advertises); ``GetInfo`` returns this path as the endpoint.

Two gRPC servers, one per socket, so the registration socket serves nothing but
registration. The servicers translate messages and call ``KubeletPlugin``, which holds
the lock that serializes calls.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from concurrent import futures
from pathlib import Path
from types import ModuleType
from typing import Any

import grpc

from drasched.node.driver import ClaimRef
from drasched.node.plugin import KubeletPlugin, PrepareResult
from drasched.node.proto import (
    dra_v1_pb2,
    dra_v1_pb2_grpc,
    dra_v1beta1_pb2,
    dra_v1beta1_pb2_grpc,
    pluginregistration_v1_pb2,
    pluginregistration_v1_pb2_grpc,
)

log = logging.getLogger(__name__)

DEFAULT_REGISTRY_DIR = "/var/lib/kubelet/plugins_registry"
DEFAULT_PLUGINS_DIR = "/var/lib/kubelet/plugins"
PLUGIN_TYPE = "DRAPlugin"
SUPPORTED_VERSIONS = ("v1.DRAPlugin", "v1beta1.DRAPlugin")
MAX_UNIX_PATH = 107  # sockaddr_un.sun_path holds 108 bytes with the NUL


def claims_from_proto(msgs: Any) -> list[ClaimRef]:
    return [ClaimRef(namespace=c.namespace, uid=c.uid, name=c.name) for c in msgs]


def prepare_response(pb2: ModuleType, results: dict[str, PrepareResult]) -> Any:
    """A ``NodePrepareResourcesResponse`` of the given API version from kit results."""
    resp = pb2.NodePrepareResourcesResponse()
    for uid, r in results.items():
        entry = resp.claims[uid]
        if r.error:
            entry.error = r.error
            continue
        for d in r.devices:
            entry.devices.add(request_names=list(d.request_names), pool_name=d.pool_name,
                              device_name=d.device_name, cdi_device_ids=list(d.cdi_device_ids),
                              share_id=d.share_id)
    return resp


class _DRAServicer:
    """One servicer class for both API versions: the messages have the same shapes."""

    def __init__(self, plugin: KubeletPlugin, pb2: ModuleType) -> None:
        self.plugin = plugin
        self.pb2 = pb2

    def NodePrepareResources(self, request: Any, context: grpc.ServicerContext) -> Any:
        results = self.plugin.node_prepare_resources(claims_from_proto(request.claims))
        return prepare_response(self.pb2, results)

    def NodeUnprepareResources(self, request: Any, context: grpc.ServicerContext) -> Any:
        results = self.plugin.node_unprepare_resources(claims_from_proto(request.claims))
        resp = self.pb2.NodeUnprepareResourcesResponse()
        for uid, err in results.items():
            resp.claims[uid].error = err
        return resp


class _RegistrationServicer(pluginregistration_v1_pb2_grpc.RegistrationServicer):
    def __init__(self, server: PluginServer) -> None:
        self.server = server

    def GetInfo(self, request: Any, context: grpc.ServicerContext) -> Any:
        return pluginregistration_v1_pb2.PluginInfo(
            type=PLUGIN_TYPE, name=self.server.plugin.driver_name, endpoint=str(self.server.dra_socket),
            supported_versions=list(SUPPORTED_VERSIONS))

    def NotifyRegistrationStatus(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.server.on_registration_status(bool(request.plugin_registered), request.error)
        return pluginregistration_v1_pb2.RegistrationStatusResponse()


class PluginServer:
    """Serves one ``KubeletPlugin`` on its two sockets; ``start``/``stop`` or a context manager."""

    def __init__(
        self,
        plugin: KubeletPlugin,
        *,
        registry_dir: str | os.PathLike[str] = DEFAULT_REGISTRY_DIR,
        plugin_dir: str | os.PathLike[str] | None = None,
        max_workers: int = 4,
    ) -> None:
        self.plugin = plugin
        self.registry_dir = Path(registry_dir)
        self.plugin_dir = Path(plugin_dir) if plugin_dir is not None else Path(DEFAULT_PLUGINS_DIR) / plugin.driver_name
        self.registration_socket = self.registry_dir / f"{plugin.driver_name}-reg.sock"
        self.dra_socket = self.plugin_dir / "dra.sock"
        for p in (self.registration_socket, self.dra_socket):
            if len(str(p)) > MAX_UNIX_PATH:
                raise ValueError(f"unix socket path too long ({len(str(p))} > {MAX_UNIX_PATH}): {p}")
        self.max_workers = max_workers
        self.registered = threading.Event()
        self.registration_error = ""
        self._servers: list[grpc.Server] = []

    def on_registration_status(self, registered: bool, error: str) -> None:
        """The kubelet's verdict; a refusal is logged (the kubelet retries on its own)."""
        self.registration_error = error
        if registered:
            self.registered.set()
            log.info("driver %s registered with the kubelet", self.plugin.driver_name)
        else:
            self.registered.clear()
            log.error("kubelet refused driver %s: %s", self.plugin.driver_name, error)

    def start(self) -> None:
        # The DRA socket first: once the registration socket exists the kubelet may call GetInfo
        # and then connect to the endpoint it returned at once.
        dra = grpc.server(futures.ThreadPoolExecutor(max_workers=self.max_workers))
        dra_v1_pb2_grpc.add_DRAPluginServicer_to_server(_DRAServicer(self.plugin, dra_v1_pb2), dra)
        dra_v1beta1_pb2_grpc.add_DRAPluginServicer_to_server(
            _DRAServicer(self.plugin, dra_v1beta1_pb2), dra)
        self._listen(dra, self.dra_socket)
        reg = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        pluginregistration_v1_pb2_grpc.add_RegistrationServicer_to_server(_RegistrationServicer(self), reg)
        self._listen(reg, self.registration_socket)

    def _listen(self, server: grpc.Server, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)  # a stale socket from a previous run
        if server.add_insecure_port(f"unix://{path}") == 0:
            raise OSError(f"cannot listen on {path}")
        server.start()
        self._servers.append(server)

    def stop(self, grace: float | None = 1.0) -> None:
        """Stop serving and remove the sockets (registration first: the kubelet then deregisters)."""
        for server in reversed(self._servers):
            server.stop(grace).wait()
        self._servers.clear()
        for p in (self.registration_socket, self.dra_socket):
            with contextlib.suppress(FileNotFoundError):
                p.unlink()

    def __enter__(self) -> PluginServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
