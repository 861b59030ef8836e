"""The long fuzz run: many seeds, every distinct crash site counted, hangs cut by an alarm.

    .venv/bin/python -m tests.fuzz.long_run --count 10000 [--start 0] [--limit 20] [--json out.json] [--keep DIR]

Prints the exit codes seen and, per distinct crash site (exception type, innermost drasched
frame), how many inputs hit it and the first seed that did; ``tests.fuzz.mutate.simulate``
with that seed reproduces it while the corpus and the mutations stay as they are; ``--keep``
saves every failing input file for good. Exit status 1 if any input crashed or hung.
"""

from __future__ import annotations

import argparse
import collections
import json
import shutil
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path
from types import FrameType

from tests.fuzz.mutate import simulate


class Hang(Exception):
    """One input ran past the per-input limit."""


def _alarm(_sig: int, _frame: FrameType | None) -> None:
    raise Hang


def _site(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "/drasched/" in f.filename] or frames
    f = ours[-1]
    return f"{type(exc).__name__} at {f.filename.rsplit('/src/', 1)[-1]}:{f.lineno} ({f.name})"


def _keep(keep: str | None, tmp: Path, seed: int) -> None:
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(tmp / f"fuzz-{seed}.yaml", Path(keep) / f"fuzz-{seed}.yaml")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--limit", type=int, default=20, help="seconds per input before it counts as a hang")
    ap.add_argument("--json", help="write the summary here")
    ap.add_argument("--keep", help="copy every input that crashed or hung into this directory")
    args = ap.parse_args(argv)
    signal.signal(signal.SIGALRM, _alarm)
    codes: collections.Counter[int] = collections.Counter()
    sites: dict[str, list[int]] = {}
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.start, args.start + args.count):
            signal.alarm(args.limit)
            try:
                codes[simulate(seed, Path(tmp)).code] += 1
            except Hang:
                sites.setdefault("hang", []).append(seed)
                _keep(args.keep, Path(tmp), seed)
            except BaseException as exc:  # every crash is a finding
                if isinstance(exc, KeyboardInterrupt):
                    raise
                sites.setdefault(_site(exc), []).append(seed)
                _keep(args.keep, Path(tmp), seed)
            finally:
                signal.alarm(0)
    summary = {
        "inputs": args.count, "first_seed": args.start, "seconds": round(time.monotonic() - started, 1),
        "exit_codes": dict(sorted(codes.items())),
        "crashes": {site: {"inputs": len(seeds), "first_seed": seeds[0]} for site, seeds in
                    sorted(sites.items(), key=lambda kv: -len(kv[1]))},
    }
    text = json.dumps(summary, indent=1)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    return 1 if sites else 0


if __name__ == "__main__":
    sys.exit(main())
