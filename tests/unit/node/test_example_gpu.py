"""The mock GPU driver as kubernetes-sigs/dra-example-driver (``gpu.example.com`` and
``gpu.dra-example-driver.sigs.k8s.io``): its devices, partitions and shared GPUs, its opaque
``GpuConfig``, what prepare hands a container, its chart's DeviceClass, and the sim-gpus node
that runs it.

Upstream references (github.com/kubernetes-sigs/dra-example-driver): internal/profiles/gpu/gpu.go
(devices, partitions, ApplyConfig), pull request #236 (allowMultipleAllocations),
api/example.com/resource/gpu/v1alpha1 api.go, sharing.go, validate.go and
api/dra-example-driver.sigs.k8s.io/resource/gpu/v1alpha1/register.go (config),
cmd/dra-example-kubeletplugin/cdi.go (claim edits), deployments/helm/dra-example-driver/templates/
deviceclass.yaml (class), demo/examples/*/README.md (what the examples' containers see).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from drasched.api import kinds, validation
from drasched.cel import compile_selector, device_view_from_slice_device
from drasched.cli import main
from drasched.node.driver import AllocatedDevice, ClaimRef, ConfigError
from drasched.node.example_gpu import (
    DEFAULT_GPU_CONFIG,
    EXAMPLE_DRIVER_NAME,
    EXAMPLE_DRIVER_NAME_NEW,
    ExampleGpuConfig,
    ExampleGpuDriver,
    example_config,
    example_device_classes,
    parse_example_config,
)
from drasched.node.gpu_driver import DRIVER_NAME, GpuDriver, MockGpuConfig
from drasched.node.nvidia_gpu import NvidiaGpuDriver
from drasched.node.publisher import SlicePublisher
from drasched.node.sim_drivers import SIM_GPUS_ANNOTATION, parse_sim_gpus
from drasched.node.sim_kubelet import SimulatedKubelet
from drasched.sim.registry import build_default_controllers
from drasched.sim.runner import simulate
from tests.unit.controllers.helpers import decisions, new_ctx, settle

Obj = dict[str, Any]
OLD_GROUP = "gpu.resource.example.com/v1alpha1"
NEW_GROUP = "gpu.resource.dra-example-driver.sigs.k8s.io/v1alpha1"
SCENARIOS = Path(__file__).parents[2] / "scenarios" / "node"


def driver(spec: str = "count=1", node: str = "n") -> ExampleGpuDriver:
    d = parse_sim_gpus(f"driver={EXAMPLE_DRIVER_NAME},{spec}").driver(node)
    assert isinstance(d, ExampleGpuDriver)
    return d


def devices(d: GpuDriver, node: str = "n") -> dict[str, Obj]:
    return {dev["name"]: dev for dev in d.pools(node)[node].devices}


def published(d: GpuDriver, node: str = "n") -> list[Obj]:
    """The ResourceSlices the driver's pools make, each checked as the API server checks it."""
    out = SlicePublisher(None, d.name, node).desired_slices(d.pools(node))
    for s in out:
        validation.validate(s, kinds.RESOURCE_SLICE)
    return out


# ---- devices (gpu.go EnumerateDevices) --------------------------------------------------------------
def test_gpu_go_device_shape() -> None:
    d = driver("count=2")
    gpu0, gpu1 = devices(d).values()
    assert gpu0["name"] == "gpu-0" and gpu1["name"] == "gpu-1"
    assert set(gpu0) == {"name", "attributes", "capacity"}
    attrs = gpu1["attributes"]
    assert list(attrs) == ["index", "uuid", "model", "driverVersion"]
    assert attrs["index"] == {"int": 1} and attrs["model"] == {"string": "LATEST-GPU-MODEL"}
    assert attrs["driverVersion"] == {"version": "1.0.0"}
    assert re.fullmatch(r"gpu-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", attrs["uuid"]["string"])
    assert gpu1["capacity"] == {"memory": {"value": "80Gi"}}
    # one slice, one pool named after the node; UUIDs stable per node, distinct across nodes
    (slice_,) = published(d)
    assert slice_["spec"]["pool"] == {"name": "n", "generation": 1, "resourceSliceCount": 1}
    assert devices(driver("count=2"))["gpu-1"] == gpu1
    assert devices(driver("count=2", node="m"), "m")["gpu-1"]["attributes"]["uuid"] != attrs["uuid"]


def test_both_driver_names_and_the_keys_that_replace_the_fixed_values() -> None:
    spec = parse_sim_gpus(f"driver={EXAMPLE_DRIVER_NAME_NEW}")
    assert (spec.count, spec.model, spec.memory, spec.driver_version) == (8, "LATEST-GPU-MODEL", "80Gi", "1.0.0")
    d = spec.driver("n")
    assert isinstance(d, ExampleGpuDriver) and d.name == EXAMPLE_DRIVER_NAME_NEW and len(d.gpus) == 8
    older = devices(driver("count=1,model=OLDER-GPU-MODEL,memory=40Gi,driverVersion=0.9"))["gpu-0"]
    assert older["attributes"]["model"] == {"string": "OLDER-GPU-MODEL"}
    assert older["attributes"]["driverVersion"] == {"version": "0.9.0"}
    assert older["capacity"] == {"memory": {"value": "40Gi"}}
    # the other drivers are as they were
    assert type(parse_sim_gpus("count=1").driver("n")) is GpuDriver
    assert type(parse_sim_gpus("driver=gpu.nvidia.com").driver("n")) is NvidiaGpuDriver
    assert parse_sim_gpus("count=1").model == MockGpuConfig.model


# ---- partitions (gpu.go, kubeletPlugin.gpuPartitions) -----------------------------------------------
def test_partitions_as_gpu_go_publishes_them() -> None:
    d = driver("count=2,partitions=4")
    pool = d.pools("n")["n"]
    assert pool.shared_counters == [
        {"name": f"gpu-{i}-counters", "counters": {"memory": {"value": "80Gi"}, "compute": {"value": "100"}}}
        for i in range(2)]
    names = [dev["name"] for dev in pool.devices]
    assert names == [*(f"gpu-0-partition-{j}" for j in range(4)), "gpu-0-full",
                     *(f"gpu-1-partition-{j}" for j in range(4)), "gpu-1-full"]
    part = devices(d)["gpu-1-partition-2"]
    assert part["attributes"] == {**devices(driver("count=2"))["gpu-1"]["attributes"],
                                  "partition": {"int": 2}, "partitionable": {"bool": True}}
    assert part["capacity"] == {"memory": {"value": "20Gi"}}
    assert part["consumesCounters"] == [{"counterSet": "gpu-1-counters", "counters": {
        "memory": {"value": "20Gi"}, "compute": {"value": "25"}}}]
    full = devices(d)["gpu-1-full"]
    assert full["attributes"]["partitionable"] == full["attributes"]["full"] == {"bool": True}
    assert "partition" not in full["attributes"] and full["capacity"] == {"memory": {"value": "80Gi"}}
    assert full["consumesCounters"] == [{"counterSet": "gpu-1-counters",
                                         "counters": pool.shared_counters[1]["counters"]}]
    # a counters-only slice, then the devices: resourceSliceCount 2
    counters, devs = published(d)
    assert set(counters["spec"]) >= {"sharedCounters"} and "devices" not in counters["spec"]
    assert len(devs["spec"]["devices"]) == 10 and "sharedCounters" not in devs["spec"]
    assert {s["spec"]["pool"]["resourceSliceCount"] for s in (counters, devs)} == {2}


def test_partition_sizes_divide_as_go_integers_and_bare_partitions_is_four() -> None:
    part = devices(driver("partitions=3"))["gpu-0-partition-2"]
    assert part["capacity"] == {"memory": {"value": str(80 * 1024**3 // 3)}}
    assert part["consumesCounters"][0]["counters"]["compute"] == {"value": "33"}
    assert driver("partitions").partition_count == 4 == driver("partitions=true").partition_count
    assert driver("partitions=0").partition_count == 0 and "gpu-0" in devices(driver("partitions=0"))
    assert "gpu-0" in devices(driver("partitions=false"))


@pytest.mark.parametrize(("text", "message"), [
    ("partitions=4", "partitions=4: a number of partitions is for the DRA example driver"),
    (f"driver={EXAMPLE_DRIVER_NAME},partitions=101", "partitions must be at most 100 per GPU"),
    (f"driver={EXAMPLE_DRIVER_NAME},partitions=many",
     "partitions must be true, false or a number of partitions per GPU, not 'many'"),
    ("extendedResourceName=example.com/gpu", "extendedResourceName is the DRA example driver's chart value"),
    (f"driver={EXAMPLE_DRIVER_NAME},extendedResourceName=gpu", "a name must be a domain-prefixed path"),
    (f"driver={EXAMPLE_DRIVER_NAME},extendedResourceName=", "extendedResourceName must not be empty"),
])
def test_annotation_refusals_name_the_key(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_sim_gpus(text)


# ---- allowMultipleAllocations (pull request #236, gpuAllowMultipleAllocations) ----------------------
def test_shared_gpus_have_consumable_memory_and_compute() -> None:
    gpu = devices(driver("shared"))["gpu-0"]
    assert gpu["allowMultipleAllocations"] is True
    assert gpu["capacity"] == {
        "memory": {"value": "80Gi", "requestPolicy": {"default": "80Gi",
                                                      "validRange": {"min": "8Gi", "max": "80Gi", "step": "8Gi"}}},
        "compute": {"value": "100", "requestPolicy": {"default": "100",
                                                      "validRange": {"min": "10", "max": "100", "step": "10"}}},
    }
    published(driver("count=2,shared"))


def test_shared_partitions_are_the_multi_allocatable_devices() -> None:
    d = driver("count=1,partitions=4,shared")
    part, full = devices(d)["gpu-0-partition-0"], devices(d)["gpu-0-full"]
    assert part["allowMultipleAllocations"] is True and "allowMultipleAllocations" not in full
    assert part["capacity"]["memory"] == {"value": "20Gi", "requestPolicy": {
        "default": "20Gi", "validRange": {"min": "2Gi", "max": "20Gi", "step": "2Gi"}}}
    assert part["capacity"]["compute"] == {"value": "25", "requestPolicy": {
        "default": "25", "validRange": {"min": "1", "max": "25", "step": "1"}}}  # a tenth of 25 is not whole
    assert part["consumesCounters"][0]["counters"] == {"memory": {"value": "20Gi"}, "compute": {"value": "25"}}
    for spec in ("partitions=4,shared", "partitions=3,shared", "partitions=7,shared"):
        published(driver(spec))  # every policy passes the API server's requestPolicy checks


# ---- opaque configuration (api.go, sharing.go, validate.go) -----------------------------------------
def _cfg(version: str = OLD_GROUP, **sharing: Any) -> Obj:
    out: Obj = {"apiVersion": version, "kind": "GpuConfig"}
    if sharing:
        out["sharing"] = sharing
    return out


@pytest.mark.parametrize(("params", "parsed"), [
    (_cfg(), DEFAULT_GPU_CONFIG),  # Normalize: no sharing is TimeSlicing Default
    ({**_cfg(), "sharing": None}, DEFAULT_GPU_CONFIG),
    (_cfg(strategy="TimeSlicing"), ExampleGpuConfig("TimeSlicing", interval="Default")),
    (_cfg(strategy="TimeSlicing", timeSlicingConfig=None), ExampleGpuConfig("TimeSlicing", interval="Default")),
    (_cfg(strategy="TimeSlicing", timeSlicingConfig={"interval": "Long"}), ExampleGpuConfig("TimeSlicing", "Long")),
    (_cfg(NEW_GROUP, strategy="TimeSlicing", timeSlicingConfig={"interval": "Short"}),
     ExampleGpuConfig("TimeSlicing", "Short")),
    (_cfg(strategy="SpacePartitioning"), ExampleGpuConfig("SpacePartitioning", partition_count=1)),
    (_cfg(strategy="SpacePartitioning", spacePartitioningConfig={"partitionCount": 10}),
     ExampleGpuConfig("SpacePartitioning", partition_count=10)),
    (_cfg(strategy="SpacePartitioning", spacePartitioningConfig={}),  # omitempty: 0, and 0 is valid
     ExampleGpuConfig("SpacePartitioning", partition_count=0)),
    (_cfg(NEW_GROUP, strategy="SpacePartitioning", spacePartitioningConfig={"partitionCount": 4.0}),
     ExampleGpuConfig("SpacePartitioning", partition_count=4)),
])
def test_config_accepted_and_normalized(params: Obj, parsed: ExampleGpuConfig) -> None:
    assert parse_example_config(params) == parsed


@pytest.mark.parametrize(("params", "message"), [
    (["sharing"], "parameters must be an object with apiVersion gpu.resource.example.com/v1alpha1 or "
                  "gpu.resource.dra-example-driver.sigs.k8s.io/v1alpha1 and kind GpuConfig, not list"),
    (_cfg("gpu.drasched.io/v1alpha1"), "apiVersion must be gpu.resource.example.com/v1alpha1 or "
                                       "gpu.resource.dra-example-driver.sigs.k8s.io/v1alpha1, not 'gpu.drasched.io"),
    ({"apiVersion": OLD_GROUP, "kind": "MigDeviceConfig"}, 'kind: no kind \'MigDeviceConfig\' is registered'),
    ({**_cfg(), "metadata": {}}, 'strict decoding error: unknown field "metadata"'),
    (_cfg(strategy="TimeSlicing", timeSlicing={"interval": "Long"}), 'unknown field "sharing.timeSlicing"'),
    (_cfg(strategy="TimeSlicing", timeSlicingConfig={"intervall": "Long"}),
     'unknown field "sharing.timeSlicingConfig.intervall"'),
    ({**_cfg(), "sharing": "TimeSlicing"}, "sharing must be an object, not str"),
    (_cfg(strategy="MPS"), "sharing.strategy: unknown GPU sharing strategy: MPS"),
    (_cfg(timeSlicingConfig={"interval": "Long"}), "sharing.strategy: unknown GPU sharing strategy:  "),
    (_cfg(strategy=1), "sharing.strategy must be a string, not 1"),
    (_cfg(strategy="TimeSlicing", timeSlicingConfig={"interval": "Forever"}),
     "sharing.timeSlicingConfig.interval: unknown time-slice interval: Forever"),
    (_cfg(strategy="TimeSlicing", timeSlicingConfig={}),  # Normalize leaves a given config's interval alone
     "sharing.timeSlicingConfig.interval: unknown time-slice interval:  "),
    (_cfg(strategy="SpacePartitioning", spacePartitioningConfig={"partitionCount": -1}),
     "sharing.spacePartitioningConfig.partitionCount: invalid partition count: -1"),
    (_cfg(strategy="SpacePartitioning", spacePartitioningConfig={"partitionCount": "10"}),
     "sharing.spacePartitioningConfig.partitionCount must be an integer, not '10'"),
    (_cfg(strategy="SpacePartitioning", spacePartitioningConfig={"partitionCount": 2.5}),
     "partitionCount must be an integer, not 2.5"),
    (_cfg(strategy="TimeSlicing", spacePartitioningConfig={"partitionCount": 2}),
     "sharing.spacePartitioningConfig: cannot use SpacePartitioningConfig with the 'TimeSlicing' strategy"),
    (_cfg(strategy="SpacePartitioning", timeSlicingConfig={"interval": "Bogus"}),
     "sharing.timeSlicingConfig: cannot use TimeSlicingConfig with the 'SpacePartitioning' strategy"),
])
def test_config_refused_naming_the_field(params: Any, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_example_config(params)
    assert message in str(info.value)


# ---- prepare (gpu.go applyGpuConfig, cdi.go) --------------------------------------------------------
def _allocated(d: ExampleGpuDriver, name: str, config: Any = None, *, admin: bool = False) -> AllocatedDevice:
    return AllocatedDevice(request="gpu", pool="n", device=name, published=devices(d)[name], config=config,
                           admin_access=admin)


def test_prepare_sets_the_drivers_environment() -> None:
    d = driver("count=2,partitions=2")
    ref = ClaimRef("default", "uid-1", "c")
    edits = d.prepare(ref, _allocated(d, "gpu-1-partition-1"))  # no config: DefaultGpuConfig()
    assert edits.env == {"GPU_DEVICE_1_PARTITION_1": "gpu-1-partition-1",
                         "GPU_DEVICE_1_PARTITION_1_SHARING_STRATEGY": "TimeSlicing",
                         "GPU_DEVICE_1_PARTITION_1_TIMESLICE_INTERVAL": "Default",
                         "GPU_DEVICE_GPU_1_PARTITION_1_RESOURCE_CLAIM": "uid-1",
                         "DRA_ADMIN_ACCESS": "false", "DRA_RESOURCE_DRIVER_NAME": EXAMPLE_DRIVER_NAME}
    sp = parse_example_config(_cfg(strategy="SpacePartitioning", spacePartitioningConfig={"partitionCount": 10}))
    edits = d.prepare(ref, _allocated(d, "gpu-0-full", sp, admin=True))
    assert {k: v for k, v in edits.env.items() if k.startswith("GPU_DEVICE_0_FULL")} == {
        "GPU_DEVICE_0_FULL": "gpu-0-full", "GPU_DEVICE_0_FULL_SHARING_STRATEGY": "SpacePartitioning",
        "GPU_DEVICE_0_FULL_PARTITION_COUNT": "10"}
    assert edits.env["DRA_ADMIN_ACCESS"] == "true"
    assert d.prepared == {"uid-1": ["gpu-1-partition-1", "gpu-0-full"]}


def _run(scenario: str) -> tuple[SimulatedKubelet, Any]:
    docs = [d for d in yaml.safe_load_all((SCENARIOS / scenario).read_text()) if d and d.get("kind") != "Scenario"]
    controllers = [c for c in build_default_controllers() if not isinstance(c, SimulatedKubelet)]
    kubelet = SimulatedKubelet()
    result = simulate(docs, [*controllers, kubelet])
    assert result.quiescent
    return kubelet, result


def _container_env(kubelet: SimulatedKubelet, result: Any, namespace: str, prefix: str, driver_name: str,
                   node: str = "worker-1") -> list[dict[str, str]]:
    """The environment each device of the claim named ``prefix...`` hands its containers, in result order."""
    (claim,) = [c for c in result.store.list(kinds.RESOURCE_CLAIM, namespace).items
                if c["metadata"]["name"].startswith(prefix)]
    plugin = kubelet.registry.plugin(node, driver_name)
    spec = plugin.cdi.specs[claim["metadata"]["uid"]]  # type: ignore[union-attr]
    return [dict(e.split("=", 1) for e in dev["containerEdits"]["env"]) for dev in spec["devices"]]


def test_opaque_config_example_containers_see_what_its_readme_says() -> None:
    """demo/examples/basic-resourceclaim-opaque-config/README.md: ts-ctr* see TimeSlicing Long, sp-ctr*
    SpacePartitioning with PARTITION_COUNT 10, on two distinct GPUs (scenario 021)."""
    kubelet, result = _run("021-dra-example-driver-opaque-config-time-slicing-and-space-partitioning.yaml")
    ts, sp = _container_env(kubelet, result, "basic-resourceclaim-opaque-config", "pod0-shared-gpus-",
                            EXAMPLE_DRIVER_NAME)
    assert {k: v for k, v in ts.items() if k.startswith("GPU_DEVICE_1")} == {
        "GPU_DEVICE_1": "gpu-1", "GPU_DEVICE_1_SHARING_STRATEGY": "TimeSlicing",
        "GPU_DEVICE_1_TIMESLICE_INTERVAL": "Long"}
    assert {k: v for k, v in sp.items() if k.startswith("GPU_DEVICE_2")} == {
        "GPU_DEVICE_2": "gpu-2", "GPU_DEVICE_2_SHARING_STRATEGY": "SpacePartitioning",
        "GPU_DEVICE_2_PARTITION_COUNT": "10"}
    (short,) = _container_env(kubelet, result, "new-api-group", "short", EXAMPLE_DRIVER_NAME)
    assert short["GPU_DEVICE_3_TIMESLICE_INTERVAL"] == "Short"


def test_shared_gpu_example_gives_both_pods_gpu_0_with_their_own_share() -> None:
    """demo/examples/gpu-allow-multiple-allocations/README.md: both pods see GPU_DEVICE_0=gpu-0 (scenario 023)."""
    kubelet, result = _run("023-dra-example-driver-gpu-allow-multiple-allocations.yaml")
    ns = "gpu-allow-multiple-allocations"
    envs = [_container_env(kubelet, result, ns, f"shared-gpu-pod{i}", EXAMPLE_DRIVER_NAME_NEW) for i in (0, 1)]
    assert [e[0]["GPU_DEVICE_0"] for e in envs] == ["gpu-0", "gpu-0"]
    shares = [c["status"]["allocation"]["devices"]["results"][0].get("shareID")
              for c in result.store.list(kinds.RESOURCE_CLAIM, ns).items]
    assert len(set(shares)) == 2 and all(shares)


# ---- the chart's DeviceClass (templates/deviceclass.yaml) -------------------------------------------
def test_chart_device_class_selects_every_device_of_the_driver() -> None:
    (cls,) = example_device_classes(EXAMPLE_DRIVER_NAME_NEW, extended_resource_name="example.com/gpu")
    validation.validate(cls, kinds.DEVICE_CLASS)
    assert cls["metadata"]["name"] == EXAMPLE_DRIVER_NAME_NEW
    assert cls["spec"] == {"selectors": [{"cel": {"expression": f"device.driver == '{EXAMPLE_DRIVER_NAME_NEW}'"}}],
                           "extendedResourceName": "example.com/gpu"}
    assert "extendedResourceName" not in example_device_classes()[0]["spec"]
    sel = compile_selector(cls["spec"]["selectors"][0]["cel"]["expression"])
    devs = devices(ExampleGpuDriver.mock("n", example_config(2), name=EXAMPLE_DRIVER_NAME_NEW, partitions=2))
    assert all(sel.evaluate(device_view_from_slice_device(EXAMPLE_DRIVER_NAME_NEW, d)) for d in devs.values())
    assert not sel.evaluate(device_view_from_slice_device(DRIVER_NAME, devs["gpu-0-full"]))


def _node(ctx: Any, name: str, spec: str) -> None:
    ctx.store.restore({"apiVersion": "v1", "kind": "Node",
                       "metadata": {"name": name, "annotations": {SIM_GPUS_ANNOTATION: spec}}})


def test_node_installs_the_charts_class_before_the_users_and_keeps_theirs() -> None:
    ctx = new_ctx()
    mine = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": EXAMPLE_DRIVER_NAME},
            "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]}}
    ctx.store.restore(mine)
    _node(ctx, "a", f"count=1,driver={EXAMPLE_DRIVER_NAME}")
    _node(ctx, "b", f"count=1,driver={EXAMPLE_DRIVER_NAME_NEW},extendedResourceName=example.com/gpu,partitions=2")
    _node(ctx, "c", f"count=1,driver={EXAMPLE_DRIVER_NAME_NEW},extendedResourceName=example.com/other")
    settle(ctx, [SimulatedKubelet()])
    classes = {c["metadata"]["name"]: c for c in ctx.store.list(kinds.DEVICE_CLASS).items}
    assert sorted(classes) == sorted([EXAMPLE_DRIVER_NAME, EXAMPLE_DRIVER_NAME_NEW])
    assert classes[EXAMPLE_DRIVER_NAME]["spec"] == mine["spec"]  # the user's, untouched
    new = classes[EXAMPLE_DRIVER_NAME_NEW]
    assert new["spec"]["extendedResourceName"] == "example.com/gpu"  # the first node's: once per run
    assert new["metadata"]["creationTimestamp"] < classes[EXAMPLE_DRIVER_NAME]["metadata"]["creationTimestamp"]
    (created,) = decisions(ctx, "create-device-class")
    assert created.object == f"DeviceClass/{EXAMPLE_DRIVER_NAME_NEW}" and "extendedResourceName example.com/gpu" \
        in created.message
    (kept,) = decisions(ctx, "keep-device-class")
    assert kept.object == f"DeviceClass/{EXAMPLE_DRIVER_NAME}" and f"driver {EXAMPLE_DRIVER_NAME}'s helm chart" \
        in kept.message
    starts = {d.object: d.message for d in decisions(ctx, "start-driver")}
    assert starts["Node/b"] == (f"driver {EXAMPLE_DRIVER_NAME_NEW} publishes 1 mock GPU(s) (LATEST-GPU-MODEL, 80Gi), "
                                "each as 2 partitions and a full device over counter set gpu-<i>-counters")


# ---- drasched driver gpu --driver-name gpu.example.com ----------------------------------------------
def test_print_slices_under_the_example_drivers_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["driver", "gpu", "--node", "n", "--print-slices", "--count", "2", "--driver-name",
                 EXAMPLE_DRIVER_NAME, "--partitions", "2", "--shared", "--extended-resource-name",
                 "example.com/gpu"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    for doc in docs:
        validation.validate(doc, kinds.for_object(doc))
    (cls,) = [d for d in docs if d["kind"] == "DeviceClass"]
    assert cls == example_device_classes(EXAMPLE_DRIVER_NAME, extended_resource_name="example.com/gpu")[0]
    slices = [d for d in docs if d["kind"] == "ResourceSlice"]
    assert [d["name"] for d in slices[1]["spec"]["devices"]] == [
        "gpu-0-partition-0", "gpu-0-partition-1", "gpu-0-full", "gpu-1-partition-0", "gpu-1-partition-1", "gpu-1-full"]
    assert slices[1]["spec"]["devices"][0]["attributes"]["model"] == {"string": "LATEST-GPU-MODEL"}
    assert main(["driver", "gpu", "--node", "n", "--print-slices", "--partitions", "2"]) == 2
    assert "--partitions N (a number) is for the DRA example driver" in capsys.readouterr().err
