"""The ``drasched`` command."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from drasched import __version__

if TYPE_CHECKING:
    from drasched.api.manifest import Loaded, ManifestError


def _print_errors(errors: list[str]) -> None:
    """The objects a run refused, one ``error:`` line each, on stderr."""
    for line in errors:
        print(f"error: {line}", file=sys.stderr)


def _print_manifest_error(exc: ManifestError, outcome: str = "nothing was simulated") -> int:
    """Every refusal of the manifests read, one ``error:`` line each, then how many there were
    (as a refused store load ends); the exit code of bad input."""
    _print_errors(exc.errors)
    print(f"error: {exc.summary()}; {outcome}", file=sys.stderr)
    return 2


def _cmd_simulate(args: argparse.Namespace) -> int:
    from drasched.api.manifest import ManifestError, dump_yaml, load_paths
    from drasched.sim.progress import Progress
    from drasched.sim.runner import SimulationError, simulate

    try:
        steps = _load_steps(args.paths) if args.sequential else [load_paths(args.paths)]
    except ManifestError as exc:
        return _print_manifest_error(exc)
    loaded, later = steps[0], [([item.obj for item in step], [item.where for item in step]) for step in steps[1:]]
    html = bool(args.report) and str(args.report).endswith((".html", ".htm"))
    timeline = None
    try:
        if html:  # the same run, sampled at every quiet point for the charts
            from drasched.plan.timeline import run_sampled

            timeline = run_sampled([item.obj for item in loaded], sources=[item.where for item in loaded],
                                   max_rounds=args.max_rounds, seed=args.seed, later=later)
            result = timeline.result
        else:
            progress = None if args.quiet else Progress(sys.stderr)  # a status line on a terminal only
            result = simulate([item.obj for item in loaded], sources=[item.where for item in loaded],
                              max_rounds=args.max_rounds, seed=args.seed, progress=progress, later=later)
    except SimulationError as exc:
        _print_errors(exc.errors)
        print(f"error: {len(exc.errors)} object(s) rejected; nothing was simulated", file=sys.stderr)
        return 2
    objects = result.objects
    if not args.include_events:
        objects = [o for o in objects if o.get("kind") != "Event"]
    fmt = "json" if str(args.output).endswith(".json") else "yaml"
    if args.output in ("yaml", "json"):
        fmt = args.output
    text = json.dumps(objects, indent=1) + "\n" if fmt == "json" else dump_yaml(objects)
    if args.output in ("yaml", "json", "-"):
        sys.stdout.write(text)
    else:
        if args.output:
            Path(args.output).write_text(text, encoding="utf-8")
        from drasched.sim.summary import summary_table

        sys.stdout.write(summary_table(result))
    if args.decisions:
        Path(args.decisions).write_text(json.dumps(result.decisions, indent=1) + "\n", encoding="utf-8")
    if timeline is not None:
        from drasched.plan.html_report import html_report

        Path(args.report).write_text(html_report(timeline), encoding="utf-8")
    elif args.report:
        from drasched.sim.report import markdown_report

        Path(args.report).write_text(markdown_report(result), encoding="utf-8")
    if not args.quiet:
        from drasched.sim.report import summary_lines

        for line in summary_lines(result):
            print(line, file=sys.stderr)
    return 0 if result.quiescent else 3


def _load_steps(paths: list[str]) -> list[list[Loaded]]:
    """``simulate --sequential``: each manifest file on its own (a directory's files by name),
    every file's refusals collected before any is raised."""
    from drasched.api.manifest import ManifestError, load_paths, manifest_files

    steps: list[list[Loaded]] = []
    refused: list[ManifestError] = []
    for f in manifest_files(paths):
        try:
            steps.append(load_paths([f]))
        except ManifestError as exc:
            refused.append(exc)
    if refused:
        lines = [line for exc in refused for line in exc.errors]
        raise ManifestError(*lines, unread=sum(exc.unread for exc in refused))
    return steps or [[]]


def _cmd_serve(args: argparse.Namespace) -> int:
    import logging
    import signal
    import threading
    import time

    from drasched.controllers.workloads.gangs import settings_from_file
    from drasched.scheduler.config import ConfigError, load_config
    from drasched.serve.fencing import LeadershipLost
    from drasched.serve.leader import LeaderElector
    from drasched.serve.main import (
        _Health,
        build_controllers,
        run,
        served_foreign_kinds,
        served_taint_rules,
        start_http,
    )
    from drasched.serve.metrics import Metrics
    from drasched.store.credentials import CredentialsError
    from drasched.store.kube import KubeStore

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per request otherwise
    try:  # a bad --config stops serve before anything starts, in one line (as kube-scheduler)
        load_config(args.config)
        settings_from_file(args.config)
    except ConfigError as exc:
        print(f"drasched serve: {exc}", file=sys.stderr)
        return 2
    try:
        store = KubeStore.from_kubeconfig(args.kubeconfig, args.context, qps=args.kube_api_qps,
                                          burst=args.kube_api_burst)
    except CredentialsError as exc:
        print(f"drasched serve: {exc}", file=sys.stderr)
        return 2
    metrics, health, stop = Metrics(), _Health(), threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    server = start_http(args.metrics_port, metrics, health, host=args.bind_address)
    elector = None
    if args.leader_elect:
        try:
            elector = LeaderElector(store, name=args.lease_name, namespace=args.lease_namespace,
                                    lease_duration=args.leader_elect_lease_duration,
                                    renew_deadline=args.leader_elect_renew_deadline,
                                    retry_period=args.leader_elect_retry_period, monotonic=time.monotonic)
        except ValueError as exc:
            print(f"drasched serve: {exc}", file=sys.stderr)
            return 2
    try:
        controllers = build_controllers(args.enable_claim_controller, args.config, served_taint_rules(store),
                                        served_foreign_kinds(store), config_map=args.config_map)
    except ConfigError as exc:  # a bad --config: one line, as kube-scheduler refuses to start
        print(f"drasched serve: {exc}", file=sys.stderr)
        server.shutdown()
        store.close()
        return 2
    try:
        run(store, controllers, metrics=metrics, elector=elector, period=args.period, stop=stop, health=health)
    except LeadershipLost:
        # as kube-scheduler (klog.Fatal): exit now, without waiting for writers still in flight
        # (fenced, they write nothing), and come back as a standby
        logging.shutdown()
        os._exit(1)
    finally:
        server.shutdown()
        store.close()
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    from drasched.bench.workloads import DEFAULT_NODES, WORKLOADS

    if args.workload in ("replay", "churn"):
        return _cmd_bench_long(args)
    names = list(WORKLOADS) if args.workload == "all" else [args.workload]
    if args.profile and not args.log_dir:
        print("drasched bench: --profile needs --log-dir (where the samples go)", file=sys.stderr)
        return 2
    if args.api_ceiling:
        from drasched.bench.cluster import api_write_ceiling

        print(api_write_ceiling(), flush=True)
    cluster_results = []
    for name in names:
        nodes = args.nodes or DEFAULT_NODES[name]
        workload = WORKLOADS[name](nodes)
        if args.embedded:
            from drasched.bench.embedded import run_embedded

            print(run_embedded(workload, nodes).line(), flush=True)
            continue
        from drasched.bench.cluster import run_cluster

        schedulers = ["drasched", "kube-scheduler"] if args.scheduler == "both" else [args.scheduler]
        for sched in schedulers:
            if sched == "kube-scheduler" and workload.drasched_only:
                print(f"{name:<18} kube-scheduler     not run: the workload uses gangs and queues", flush=True)
                continue
            result = run_cluster(workload, sched, timeout=args.timeout, log_dir=args.log_dir, profile=args.profile,
                                 arrival_rate=args.arrival_rate)
            cluster_results.append(result)
            print(result.line(), flush=True)
            print(f"{'':<18} {sched:<15} API writes per pod: {result.request_breakdown()}", flush=True)
    if cluster_results:
        from drasched.bench.cluster import summarize

        for line in summarize(cluster_results):
            print(line)
    return 0


def _cmd_bench_long(args: argparse.Namespace) -> int:
    """``replay`` (a scheduler's cycles over a large cluster, embedded) and ``churn`` (RSS over a long run)."""
    if args.workload == "replay":
        from drasched.bench.replay import DEFAULT_NODES, DEFAULT_PODS, run_replay

        lines = run_replay(args.nodes or DEFAULT_NODES, args.pods or DEFAULT_PODS).lines()
    else:
        from drasched.bench.churn import run_churn

        result = run_churn(args.nodes or 50, args.duration, args.interval, args.in_flight, args.log_dir,
                           setup_timeout=args.timeout)
        lines = result.lines()
    for line in lines:
        print(line, flush=True)
    return 0


def _cmd_snapshot(args: argparse.Namespace) -> int:
    from drasched.plan.anonymize import anonymize
    from drasched.plan.snapshot import take_snapshot, write_snapshot
    from drasched.store.credentials import CredentialsError
    from drasched.store.kube import KubeStore

    try:
        store = KubeStore.from_kubeconfig(args.kubeconfig, args.context)
    except CredentialsError as exc:
        print(f"drasched snapshot: {exc}", file=sys.stderr)
        return 2
    with store:
        objects = take_snapshot(store)
    if args.anonymize:
        objects = anonymize(objects)
    for path in write_snapshot(objects, Path(args.output)):
        print(path, file=sys.stderr)
    return 0


def _cmd_what_if(args: argparse.Namespace) -> int:
    from drasched.api.manifest import ManifestError, load_paths
    from drasched.plan.whatif import Change, ChangeError, what_if
    from drasched.sim.runner import SimulationError

    try:
        base = [item.obj for item in load_paths(args.base)]
        adds = [item.obj for item in load_paths(args.add)] if args.add else []
        comparison = what_if(base, Change(adds, args.remove, args.set), default_duration=args.default_duration,
                             max_rounds=args.max_rounds)
    except ManifestError as exc:
        return _print_manifest_error(exc)
    except ChangeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except SimulationError as exc:
        _print_errors(exc.errors)
        return 2
    print("\n".join(comparison.lines()))
    return 0


def _cmd_explain(args: argparse.Namespace) -> int:
    from drasched.api.manifest import ManifestError, load_paths
    from drasched.plan.explain import ExplainError, explain
    from drasched.sim.runner import SimulationError

    try:
        if args.paths:
            objects = [item.obj for item in load_paths(args.paths)]
        else:
            from drasched.plan.snapshot import take_snapshot
            from drasched.store.kube import KubeStore

            with KubeStore.from_kubeconfig(args.kubeconfig, args.context) as store:
                objects = take_snapshot(store)
        print("\n".join(explain(objects, args.pod).lines()))
    except ManifestError as exc:
        return _print_manifest_error(exc)
    except ExplainError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except SimulationError as exc:
        _print_errors(exc.errors)
        return 2
    return 0


def _cmd_convert(args: argparse.Namespace) -> int:
    from drasched.api.foreign import translate
    from drasched.api.manifest import ManifestError, dump_yaml, load_paths

    try:
        loaded = load_paths(args.paths, validate=False, translate=False)
    except ManifestError as exc:
        return _print_manifest_error(exc, "nothing was converted")
    result = translate(item.obj for item in loaded)
    for line in result.warnings:
        print(f"warning: {line}", file=sys.stderr)
    sys.stdout.write(dump_yaml(result.kept))
    return 0


def _positive_rate(text: str) -> float:
    """``--arrival-rate``: a number of pods a second above zero."""
    try:
        rate = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of pods a second") from None
    if not rate > 0 or rate == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: the rate must be a number of pods a second above 0")
    return rate


def build_parser() -> argparse.ArgumentParser:
    from drasched.control import SCHEDULER_CONFIG_MAP

    parser = argparse.ArgumentParser(prog="drasched", description=__doc__)
    parser.add_argument("--version", action="version", version=f"drasched {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    sim = sub.add_parser("simulate", help="run the embedded control plane over manifests")
    sim.add_argument("paths", nargs="+", metavar="FILE|DIR|-", help="manifests (YAML/JSON, directories, - for stdin)")
    sim.add_argument("-o", "--output", metavar="yaml|json|FILE",
                     help="yaml or json: the final objects on stdout instead of the table; FILE: the objects "
                          "written there (JSON if it ends in .json), the table on stdout")
    sim.add_argument("--decisions", help="write the decision record here (JSON)")
    sim.add_argument("--report", help="write a report here: Markdown (pods, pending reasons, nodes, claims, queues), "
                     "or HTML with charts when the name ends in .html")
    sim.add_argument("--include-events", action="store_true", help="include Event objects in the output")
    sim.add_argument("--max-rounds", type=int, default=100_000, help="stop after this many control-loop rounds")
    sim.add_argument("--seed", type=int, default=0, help="seed for generated names and uids")
    sim.add_argument("--sequential", action="store_true",
                     help="apply each file (a directory's files by name) once the run has settled on the files "
                          "before it, as kubectl apply -f run file after file (default: all files at once)")
    sim.add_argument("-q", "--quiet", action="store_true", help="no summary on stderr")
    sim.set_defaults(func=_cmd_simulate)

    snap = sub.add_parser("snapshot", help="read a cluster's scheduling objects into manifests simulate accepts")
    snap.add_argument("--kubeconfig", help="kubeconfig of the cluster (default: $KUBECONFIG, ~/.kube/config)")
    snap.add_argument("--context", help="kubeconfig context to use (default: its current-context)")
    snap.add_argument("-o", "--output", default="snapshot", metavar="DIR", help="directory to write")
    snap.add_argument("--anonymize", action="store_true",
                      help="replace namespace, node, pod and claim names (and references to them)")
    snap.set_defaults(func=_cmd_snapshot)

    wi = sub.add_parser("what-if", help="simulate manifests and a changed copy of them, print the difference")
    wi.add_argument("base", nargs="+", metavar="BASE", help="manifests of the cluster as it is (files, directories)")
    wi.add_argument("--add", action="append", default=[], metavar="FILE",
                    help="objects to add (replacing any of the same kind and name)")
    wi.add_argument("--remove", action="append", default=[], metavar="KIND/[NS/]NAME", help="an object to remove")
    wi.add_argument("--set", action="append", default=[], metavar="queue/NAME.spec.resources.X.quota=V",
                    help="set a queue's quota, limit or overQuotaWeight for resource X")
    wi.add_argument("--default-duration", metavar="DURATION",
                    help="pods without drasched.io/sim-duration finish after this virtual time (e.g. 1h)")
    wi.add_argument("--max-rounds", type=int, default=100_000, help="stop each run after this many rounds")
    wi.set_defaults(func=_cmd_what_if)

    exp = sub.add_parser("explain", help="why a pod is pending, node by node and claim by claim")
    exp.add_argument("pod", metavar="NS/POD")
    exp.add_argument("paths", nargs="*", metavar="FILE|DIR",
                     help="simulate output or input manifests (none: the cluster of --kubeconfig)")
    exp.add_argument("--kubeconfig", help="read the cluster instead (default: $KUBECONFIG, ~/.kube/config)")
    exp.add_argument("--context", help="kubeconfig context to use (default: its current-context)")
    exp.set_defaults(func=_cmd_explain)

    conv = sub.add_parser("convert", help="print drasched's equivalents of KAI-Scheduler and scheduling.k8s.io "
                          "gang objects (a warning per field with no meaning here)")
    conv.add_argument("paths", nargs="+", metavar="FILE|DIR|-", help="manifests (YAML/JSON, directories, - for stdin)")
    conv.set_defaults(func=_cmd_convert)

    from drasched.node.cli import register as register_driver

    register_driver(sub)

    srv = sub.add_parser("serve", help="schedule pods with schedulerName drasched in a real cluster")
    srv.add_argument("--kubeconfig", help="kubeconfig of the cluster (default: $KUBECONFIG, ~/.kube/config, "
                     "else the pod's in-cluster ServiceAccount)")
    srv.add_argument("--context", help="kubeconfig context to use (default: its current-context)")
    srv.add_argument("--kube-api-qps", type=float, default=500.0,
                     help="client-side request rate limit (token bucket; 0 = none)")
    srv.add_argument("--kube-api-burst", type=int, default=1000, help="requests allowed above the rate in a burst")
    srv.add_argument("--config", help="scheduler configuration (YAML)")
    srv.add_argument("--config-map", default=SCHEDULER_CONFIG_MAP, metavar="NAMESPACE/NAME",
                     help="a ConfigMap whose data[config.yaml] is applied on top of --config as it changes, "
                          f"without a restart (default {SCHEDULER_CONFIG_MAP}; the Helm chart passes its own)")
    srv.add_argument("--enable-claim-controller", action="store_true",
                     help="also run drasched's ResourceClaim controller (kube-controller-manager runs its own)")
    srv.add_argument("--leader-elect", action=argparse.BooleanOptionalAction, default=True,
                     help="hold a coordination.k8s.io Lease before scheduling (default: on)")
    srv.add_argument("--lease-name", default="drasched")
    srv.add_argument("--leader-elect-lease-duration", type=float, default=15.0, metavar="SECONDS",
                     help="how long a standby waits after the last renewal it saw before taking over")
    srv.add_argument("--leader-elect-renew-deadline", type=float, default=10.0, metavar="SECONDS",
                     help="the leader writes only this long after its last renewal; past it, it exits")
    srv.add_argument("--leader-elect-retry-period", type=float, default=2.0, metavar="SECONDS",
                     help="how often the leader renews and standbys try to acquire")
    srv.add_argument("--lease-namespace", default="kube-system")
    srv.add_argument("--metrics-port", type=int, default=8080, help="port of /healthz and /metrics")
    srv.add_argument("--bind-address", default="0.0.0.0")
    srv.add_argument("--period", type=float, default=1.0, help="seconds between idle cycles")
    srv.set_defaults(func=_cmd_serve)

    from drasched.bench.workloads import WORKLOADS

    bench = sub.add_parser("bench", help="measure scheduling throughput on fixed workloads")
    bench.add_argument("workload", choices=[*WORKLOADS, "all", "replay", "churn"],
                       help="replay: a scheduler's cycles over 4,000 nodes x 8 GPUs and 140,000 pods, embedded "
                            "(cold start, arrival of the waiting gangs, quiet, restart with a backlog); "
                            "churn: pods created and completed for --duration, drasched serve's RSS over time")
    bench.add_argument("--scheduler", choices=["drasched", "kube-scheduler", "both"], default="both")
    bench.add_argument("--embedded", action="store_true", help="drasched alone on the in-memory store")
    bench.add_argument("--nodes", type=int, help="cluster size (default: the workload's own)")
    bench.add_argument("--timeout", type=float, default=900.0, help="seconds to wait for the pods of one run")
    bench.add_argument("--log-dir", help="keep each scheduler's log here (default: discarded)")
    bench.add_argument("--profile", action="store_true",
                       help="run drasched under py-spy; samples go to --log-dir (pip install py-spy)")
    bench.add_argument("--arrival-rate", type=_positive_rate, metavar="PODS_PER_S",
                       help="create a burst's measured pods at this rate, not as fast as possible: both "
                            "schedulers meet the same arrivals, so their latencies compare")
    bench.add_argument("--api-ceiling", action="store_true", help="also measure the API server's write ceiling")
    bench.add_argument("--pods", type=int, help="replay: pods in all (default 140,000)")
    bench.add_argument("--duration", type=float, default=1800.0, help="churn: seconds to run (default 30 minutes)")
    bench.add_argument("--interval", type=float, default=30.0, help="churn: seconds between RSS samples")
    bench.add_argument("--in-flight", type=int, default=10, help="churn: pods kept waiting to be placed")
    bench.set_defaults(func=_cmd_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
