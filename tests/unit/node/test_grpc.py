"""A real gRPC round trip over unix sockets, with a client that behaves like the kubelet."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from drasched.node.client import KubeletPluginClient, RegistrationError, discover, get_info, register
from drasched.node.gpu_driver import DRIVER_NAME
from drasched.node.plugin import KubeletPlugin
from drasched.node.proto import dra_v1_pb2, dra_v1_pb2_grpc
from drasched.node.server import PluginServer
from drasched.store.memory import MemoryStore

from .helpers import NODE, add_claim, gpu_plugin, result, store_with_node


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A short temp dir: unix socket paths must fit in 107 bytes."""
    d = Path(tempfile.mkdtemp(prefix="drs-", dir="/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def served(short_dir: Path) -> Iterator[tuple[MemoryStore, KubeletPlugin, PluginServer]]:
    store = store_with_node()
    plugin = gpu_plugin(store, count=2, shared=False, cdi_dir=short_dir / "cdi", state_dir=short_dir / "plugin")
    server = PluginServer(plugin, registry_dir=short_dir / "registry", plugin_dir=short_dir / "plugin")
    with server:
        yield store, plugin, server


def test_registration_handshake(served: tuple[MemoryStore, KubeletPlugin, PluginServer]) -> None:
    _, _, server = served
    assert server.registration_socket.name == f"{DRIVER_NAME}-reg.sock"
    info = get_info(server.registration_socket)
    assert info.type == "DRAPlugin"
    assert info.name == DRIVER_NAME
    assert info.endpoint == str(server.dra_socket)
    assert info.supported_versions == ("v1.DRAPlugin", "v1beta1.DRAPlugin")
    assert not server.registered.is_set()
    clients = discover(server.registry_dir)  # the plugin watcher's scan
    assert list(clients) == [DRIVER_NAME] and clients[DRIVER_NAME].version == "v1"
    assert server.registered.wait(5) and server.registration_error == ""
    clients[DRIVER_NAME].close()


def test_kubelet_refusal_is_reported_to_the_plugin(served: tuple[MemoryStore, KubeletPlugin, PluginServer]) -> None:
    _, _, server = served
    server.dra_socket.unlink()  # GetInfo now names an endpoint that is not there
    with pytest.raises(RegistrationError, match="does not exist"):
        register(server.registration_socket)
    assert not server.registered.is_set()
    assert "does not exist" in server.registration_error


def test_prepare_unprepare_round_trip(served: tuple[MemoryStore, KubeletPlugin, PluginServer]) -> None:
    store, plugin, server = served
    a = add_claim(store, "a", [result("gpu-0")])
    b = add_claim(store, "b", [result("gpu-1", request="big")], namespace="team")
    clash = add_claim(store, "clash", [result("gpu-0")])
    foreign = add_claim(store, "foreign", [result("nic-0", driver="net.example.com")])
    with register(server.registration_socket) as kubelet:
        out = kubelet.node_prepare_resources([a, b, clash, foreign])
        assert set(out) == {a.uid, b.uid, clash.uid, foreign.uid}
        (dev,) = out[a.uid].devices
        assert (dev.request_names, dev.pool_name, dev.device_name) == (("gpu",), NODE, "gpu-0")
        assert dev.cdi_device_ids == (f"k8s.{DRIVER_NAME}/claim={a.uid}-gpu-0",)
        assert out[b.uid].devices[0].request_names == ("big",)
        assert "already prepared for ResourceClaim default/a" in out[clash.uid].error
        assert out[clash.uid].devices == ()
        assert "no device allocated by driver" in out[foreign.uid].error
        # The CDI spec a runtime would read is there, with the IDs the kubelet got.
        spec = json.loads(next((server.plugin_dir.parent / "cdi").glob(f"*{a.uid}.json")).read_text())
        assert f"{spec['kind']}={spec['devices'][0]['name']}" == dev.cdi_device_ids[0]

        # Repeated calls: same answers, nothing new held.
        assert kubelet.node_prepare_resources([a, b]) == {a.uid: out[a.uid], b.uid: out[b.uid]}
        assert kubelet.node_unprepare_resources([a, foreign]) == {a.uid: "", foreign.uid: ""}
        assert kubelet.node_unprepare_resources([a]) == {a.uid: ""}
        assert kubelet.node_prepare_resources([clash])[clash.uid].error == ""
        assert set(plugin.prepared_claims()) == {b.uid, clash.uid}


def test_v1beta1_and_raw_stub_speak_the_same_service(served: tuple[MemoryStore, KubeletPlugin, PluginServer]) -> None:
    store, _, server = served
    a = add_claim(store, "a", [result("gpu-0")])
    with KubeletPluginClient(DRIVER_NAME, server.dra_socket, version="v1beta1") as beta:
        assert beta.node_prepare_resources([a])[a.uid].devices[0].device_name == "gpu-0"
    # A client built from the published proto only (what a Go kubelet sends).
    with grpc.insecure_channel(f"unix://{server.dra_socket}") as ch:
        stub = dra_v1_pb2_grpc.DRAPluginStub(ch)
        resp = stub.NodePrepareResources(dra_v1_pb2.NodePrepareResourcesRequest(
            claims=[dra_v1_pb2.Claim(namespace="default", uid=a.uid, name="a")]), timeout=5)
        assert resp.claims[a.uid].devices[0].pool_name == NODE
        missing = stub.NodeUnprepareResources(dra_v1_pb2.NodeUnprepareResourcesRequest(
            claims=[dra_v1_pb2.Claim(namespace="default", uid="nope", name="nope")]), timeout=5)
        assert dict(missing.claims) == {"nope": dra_v1_pb2.NodeUnprepareResourceResponse()}


def test_shared_device_share_id_travels(short_dir: Path) -> None:
    store = store_with_node()
    plugin = gpu_plugin(store, count=1, shared=True)
    s = add_claim(store, "s", [result("gpu-0", shareID="0b3c", consumedCapacity={"memory": "8Gi"})])
    with PluginServer(plugin, registry_dir=short_dir / "r", plugin_dir=short_dir / "p") as server, \
            register(server.registration_socket) as kubelet:
        (dev,) = kubelet.node_prepare_resources([s])[s.uid].devices
        assert dev.share_id == "0b3c"
    assert not (short_dir / "r" / f"{DRIVER_NAME}-reg.sock").exists()  # stop removes the sockets
    assert not (short_dir / "p" / "dra.sock").exists()


def test_socket_paths_that_do_not_fit_are_refused_up_front() -> None:
    store = store_with_node()
    with pytest.raises(ValueError, match="unix socket path too long"):
        PluginServer(gpu_plugin(store), registry_dir="/tmp/" + "x" * 120)

