"""The ``drasched`` command."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from drasched import __version__


def _cmd_simulate(args: argparse.Namespace) -> int:
    from drasched.api.manifest import ManifestError, dump_yaml, load_paths
    from drasched.sim.runner import SimulationError, simulate

    try:
        loaded = load_paths(args.paths)
    except ManifestError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        result = simulate([item.obj for item in loaded], sources=[item.where for item in loaded],
                          max_rounds=args.max_rounds, seed=args.seed)
    except SimulationError as exc:
        for line in exc.errors:
            print(f"error: {line}", file=sys.stderr)
        print(f"error: {len(exc.errors)} object(s) rejected; nothing was simulated", file=sys.stderr)
        return 2
    objects = result.objects
    if not args.include_events:
        objects = [o for o in objects if o.get("kind") != "Event"]
    text = dump_yaml(objects)
    if args.output and args.output != "-":
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    if args.decisions:
        Path(args.decisions).write_text(json.dumps(result.decisions, indent=1) + "\n", encoding="utf-8")
    if not args.quiet:
        _report(result)
    return 0 if result.quiescent else 3


def _report(result: object) -> None:
    """A short human summary on stderr: where pods went and what is still pending."""
    from drasched.sim.runner import SimResult

    assert isinstance(result, SimResult)
    pods = [o for o in result.objects if o.get("kind") == "Pod"]
    phases: Counter[str] = Counter()
    for p in pods:
        if (p.get("spec") or {}).get("nodeName"):
            phases[(p.get("status") or {}).get("phase") or "Bound"] += 1
        else:
            phases["Pending"] += 1
    summary = ", ".join(f"{n} {k}" for k, n in sorted(phases.items())) or "no pods"
    state = "quiescent" if result.quiescent else "stopped at the round limit"
    print(f"drasched simulate: {len(pods)} pods ({summary}); {result.rounds} rounds, {state}; "
          f"{len(result.decisions)} decisions", file=sys.stderr)
    for p in pods:
        if (p.get("spec") or {}).get("nodeName"):
            continue
        for c in (p.get("status") or {}).get("conditions") or []:
            if c.get("type") == "PodScheduled" and c.get("status") == "False":
                md = p["metadata"]
                print(f"  pending {md.get('namespace')}/{md.get('name')}: {c.get('message')}", file=sys.stderr)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="drasched", description=__doc__)
    parser.add_argument("--version", action="version", version=f"drasched {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    sim = sub.add_parser("simulate", help="run the embedded control plane over manifests")
    sim.add_argument("paths", nargs="+", metavar="FILE|DIR|-", help="manifests (YAML/JSON, directories, - for stdin)")
    sim.add_argument("-o", "--output", help="write the final objects here (default: stdout)")
    sim.add_argument("--decisions", help="write the decision record here (JSON)")
    sim.add_argument("--include-events", action="store_true", help="include Event objects in the output")
    sim.add_argument("--max-rounds", type=int, default=100_000, help="stop after this many control-loop rounds")
    sim.add_argument("--seed", type=int, default=0, help="seed for generated names and uids")
    sim.add_argument("-q", "--quiet", action="store_true", help="no summary on stderr")
    sim.set_defaults(func=_cmd_simulate)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
