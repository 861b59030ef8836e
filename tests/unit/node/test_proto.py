"""The committed stubs are what grpcio-tools makes of the committed protos."""

from __future__ import annotations

from pathlib import Path

from google.protobuf import descriptor_pb2

from drasched.node.proto import dra_v1_pb2, dra_v1beta1_pb2, gen, pluginregistration_v1_pb2


def test_committed_stubs_match_a_fresh_generation(tmp_path: Path) -> None:
    written = gen.generate(tmp_path)
    assert len(written) == 3 * len(gen.PROTOS)
    stale = [p.name for p in written if p.read_text() != (gen.PROTO_DIR / p.name).read_text()]
    assert stale == [], f"regenerate with scripts/gen-proto.sh: {stale} differ"


def test_services_and_packages_are_the_kubelets() -> None:
    def names(module: object) -> tuple[str, list[str]]:
        fd = descriptor_pb2.FileDescriptorProto.FromString(module.DESCRIPTOR.serialized_pb)  # type: ignore[attr-defined]
        return fd.package, [f"/{fd.package}.{s.name}/{m.name}" for s in fd.service for m in s.method]

    assert names(dra_v1_pb2) == ("k8s.io.kubelet.pkg.apis.dra.v1", [
        "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources",
        "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources"])
    assert names(dra_v1beta1_pb2)[0] == "k8s.io.kubelet.pkg.apis.dra.v1beta1"
    assert names(pluginregistration_v1_pb2) == ("pluginregistration", [
        "/pluginregistration.Registration/GetInfo", "/pluginregistration.Registration/NotifyRegistrationStatus"])
    # Upstream field numbers, so a Go kubelet decodes what we send.
    dev = dra_v1_pb2.Device.DESCRIPTOR
    assert {f.name: f.number for f in dev.fields} == {
        "request_names": 1, "pool_name": 2, "device_name": 3, "cdi_device_ids": 4, "share_id": 1000}
    claim = dra_v1_pb2.Claim.DESCRIPTOR
    assert {f.name: f.number for f in claim.fields} == {"namespace": 1, "uid": 2, "name": 3}
