"""``drasched driver gpu``: the example GPU driver, printed (``--print-slices``) or run.

Registered on the main parser by ``register(subparsers)`` so ``drasched.cli`` stays a thin
list of commands and the driver's options live next to the driver.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import threading
from typing import Any

from drasched.node import gpu_driver
from drasched.node.example_gpu import ExampleGpuDriver, example_config, example_device_classes, is_example_driver
from drasched.node.gpu_driver import GpuDriver, MockGpuConfig
from drasched.node.nvidia_gpu import NVIDIA_DRIVER_NAME, NvidiaGpuDriver, gpu_model, model_memory, nvidia_device_classes
from drasched.node.publisher import PublishError, SlicePublisher


def register(sub: Any) -> None:
    """Add ``driver gpu`` to the top-level subparsers (``argparse._SubParsersAction``)."""
    driver = sub.add_parser("driver", help="run or print an example DRA driver")
    drivers = driver.add_subparsers(dest="driver", required=True)
    gpu = drivers.add_parser("gpu", help="the example GPU driver (mock GPUs, or NVIDIA GPUs through NVML)",
                             description="Publishes GPUs as ResourceSlices and serves the kubelet plugin "
                                         "sockets; with --print-slices prints what it would publish.")
    gpu.add_argument("--node", default=os.environ.get("NODE_NAME"),
                     help="node name (default: $NODE_NAME)")
    gpu.add_argument("--print-slices", action="store_true",
                     help="print the DeviceClass(es) and ResourceSlices as YAML and exit (no cluster needed)")
    src = gpu.add_mutually_exclusive_group()
    src.add_argument("--mock", dest="source", action="store_const", const="mock",
                     help="mock GPUs (the default unless --nvml)")
    src.add_argument("--nvml", dest="source", action="store_const", const="nvml",
                     help="real NVIDIA GPUs through NVML (nvidia-ml-py)")
    src.add_argument("--auto", dest="source", action="store_const", const="auto",
                     help="NVML when a GPU is visible, mock otherwise")
    gpu.set_defaults(source="mock")
    gpu.add_argument("--count", type=int, default=8, help="mock GPUs per node (default 8)")
    gpu.add_argument("--model", help=f"mock GPU product name (default {MockGpuConfig.model}, or "
                                     "LATEST-GPU-MODEL under the DRA example driver's names)")
    gpu.add_argument("--memory", help="mock GPU memory (a quantity; default 80Gi, or the model's under "
                                      "--driver-name gpu.nvidia.com)")
    gpu.add_argument("--driver-version", help=f"mock driver version (default {MockGpuConfig.driver_version}, or "
                                              "1.0.0 under the DRA example driver's names)")
    gpu.add_argument("--compute-capability",
                     help="mock CUDA compute capability (default 9.0, or the model's under "
                          "--driver-name gpu.nvidia.com)")
    gpu.add_argument("--partitions", nargs="?", const=True, default=False, type=int, metavar="N",
                     help="offer MIG-like partitions as partitionable devices with shared counters (mock only); "
                          "under the DRA example driver's names, N partitions per GPU (default 4)")
    gpu.add_argument("--shared", action="store_true",
                     help="whole GPUs allow multiple allocations with consumable memory")
    gpu.add_argument("--driver-name", default=gpu_driver.DRIVER_NAME, help="DRA driver name")
    gpu.add_argument("--extended-resource-name", default=None,
                     help="set this extendedResourceName on the DeviceClass (e.g. nvidia.com/gpu)")
    gpu.add_argument("--kubeconfig", default=None, help="kubeconfig for run mode (default: $KUBECONFIG)")
    gpu.add_argument("--registry-dir", default="/var/lib/kubelet/plugins_registry",
                     help="kubelet plugin registry directory")
    gpu.add_argument("--plugins-dir", default="/var/lib/kubelet/plugins",
                     help="parent of this driver's plugin directory (DRA socket, checkpoint)")
    gpu.add_argument("--cdi-dir", default="/var/run/cdi", help="where CDI specs are written")
    gpu.add_argument("--resync", type=float, default=60.0, help="seconds between slice resyncs in run mode")
    gpu.add_argument("--create-device-class", action="store_true",
                     help="in run mode, create the DeviceClass(es) if missing")
    gpu.set_defaults(func=cmd_gpu)


def build_driver(args: argparse.Namespace) -> GpuDriver:
    """The driver the options describe (raises ValueError / ImportError with a clear message)."""
    source = args.source
    if source == "auto":
        source = "nvml" if gpu_driver.nvml_gpus_present() else "mock"
    common: dict[str, Any] = {"name": args.driver_name, "partitions": args.partitions, "shared": args.shared}
    if source == "nvml":
        return GpuDriver.from_nvml(**common)
    example = is_example_driver(args.driver_name)
    if args.partitions is not True and args.partitions and not example:
        raise ValueError("--partitions N (a number) is for the DRA example driver's names; "
                         "give --partitions alone")
    defaults = example_config() if example else MockGpuConfig()
    model_name = args.model or defaults.model
    memory, capability = args.memory, args.compute_capability
    model = gpu_model(model_name) if args.driver_name == NVIDIA_DRIVER_NAME else None
    if model is not None:  # NVML reports what the model has, as the simulated nodes' annotation reads it
        memory = memory or model_memory(model_name)
        capability = capability or model.compute_capability
    cfg = MockGpuConfig(count=args.count, model=model_name, memory=memory or defaults.memory,
                        driver_version=args.driver_version or defaults.driver_version,
                        compute_capability=capability or MockGpuConfig.compute_capability)
    # under NVIDIA's name the mock publishes and accepts what NVIDIA's driver does (nvidia_gpu.py), under
    # the example driver's what kubernetes-sigs/dra-example-driver does (example_gpu.py)
    mock = ExampleGpuDriver if example else NvidiaGpuDriver if args.driver_name == NVIDIA_DRIVER_NAME else GpuDriver
    return mock.mock(args.node, cfg, **common)


def cmd_gpu(args: argparse.Namespace) -> int:
    if not args.node:
        print("error: --node is required (or set NODE_NAME)", file=sys.stderr)
        return 2
    try:
        driver = build_driver(args)
    except (ValueError, ImportError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # NVML errors have their own class hierarchy
        print(f"error: cannot read GPUs through NVML: {exc}", file=sys.stderr)
        return 1
    if is_example_driver(driver.name):  # the one class its helm chart installs
        classes = example_device_classes(driver.name, extended_resource_name=args.extended_resource_name or "")
    elif driver.name == NVIDIA_DRIVER_NAME:  # its chart's gpu.nvidia.com and mig.nvidia.com (type gpu / mig)
        classes = nvidia_device_classes()
        if args.extended_resource_name:
            classes[0]["spec"]["extendedResourceName"] = args.extended_resource_name
    else:
        classes = gpu_driver.device_classes(driver.name, extended_resource_name=args.extended_resource_name,
                                            partitions=bool(args.partitions))
    if args.print_slices:
        from drasched.api.manifest import dump_yaml

        try:
            slices = SlicePublisher(None, driver.name, args.node).desired_slices(driver.pools(args.node))
        except PublishError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        sys.stdout.write(dump_yaml([*classes, *slices]))
        return 0
    return _run(args, driver, classes)


def _run(args: argparse.Namespace, driver: GpuDriver, classes: list[dict[str, Any]]) -> int:
    from drasched.api.errors import AlreadyExists
    from drasched.node.runner import DriverNode, NodePaths
    from drasched.store.kube import KubeStore

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        store = KubeStore.from_kubeconfig(args.kubeconfig)
    except Exception as exc:
        print(f"error: cannot load kubeconfig: {exc}", file=sys.stderr)
        return 2
    if args.create_device_class:
        for c in classes:
            with contextlib.suppress(AlreadyExists):  # someone made it first: keep theirs
                store.create(c)
    node = DriverNode(store, driver, args.node,
                      NodePaths(registry_dir=args.registry_dir, plugins_dir=args.plugins_dir, cdi_dir=args.cdi_dir))
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        node.run(stop, resync_seconds=args.resync)
    finally:
        store.close()
    return 0
