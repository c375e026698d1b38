"""`python -m fleetsim serve | history | targets`: see fleetsim/README.md.

Bad input (unknown scenario, dialect or option, a port in use, no replicas)
prints one line on stderr and exits with status 2 before anything starts.

Nothing is written to the current directory unasked: `serve` writes its file_sd and
manifest under the output directory (`--out-dir`, else FleetScope's var dir:
$FLEETSCOPE_VAR_DIR or ./var); `history` and `targets` write only where `--out` says.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from fleetsim.api import start_fleet
from fleetsim.config import DIALECTS, check_options
from fleetsim.fleet import FleetModel
from fleetsim.history import History
from fleetsim.scenarios import SCENARIOS, ScenarioError
from fleetsim.server import PortInUseError
from fleetsim.targets import DEFAULT_BASE_PORT, file_sd, make_target, port_plan, write_json

EXIT_USAGE = 2
# The project's var dir, read from the environment as the dashboard reads it (no Django here).
VAR_DIR_ENV = "FLEETSCOPE_VAR_DIR"
SERVE_FILE_SD = "fleetsim-targets.json"
SERVE_MANIFEST = "fleetsim-manifest.json"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"fleetsim: error: {message}\n")


def _targets_list(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected replica indices like 0,2 not {text!r}"
        ) from None


def _dialect_of(text: str) -> dict[int, str]:
    """`1=v0,2=v1-0.8` -> {1: "v0", 2: "v1-0.8"} (names are checked with the fleet's size)."""
    mapping: dict[int, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        index, sep, dialect = part.partition("=")
        if not sep or not index.strip().isdigit() or not dialect.strip():
            raise argparse.ArgumentTypeError(
                f"expected REPLICA=DIALECT pairs like 1=v0,2=v1-0.8 not {text!r}"
            )
        if int(index) in mapping:
            raise argparse.ArgumentTypeError(f"replica {int(index)} is named twice in {text!r}")
        mapping[int(index)] = dialect.strip()
    return mapping


def hide_pairs(text: str) -> dict[int, tuple[str, ...]]:
    """`0=vllm:num_preemptions_total,0=vllm:num_requests_waiting_by_reason,2=...` -> {0: (...),
    2: (...)}: a replica may be named more than once (names are checked with the fleet)."""
    mapping: dict[int, tuple[str, ...]] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        index, sep, name = part.partition("=")
        if not sep or not index.strip().isdigit() or not name.strip():
            raise argparse.ArgumentTypeError(
                f"expected REPLICA=FAMILY pairs like 0=vllm:num_preemptions_total not {text!r}"
            )
        mapping[int(index)] = (*mapping.get(int(index), ()), name.strip())
    return mapping


def _fleet_options(p: argparse.ArgumentParser, *, scenario: bool = True) -> None:
    p.add_argument("--replicas", type=int, required=True, help="number of vLLM replicas")
    p.add_argument("--dialect", choices=DIALECTS, default="current", help="vLLM version to mimic")
    p.add_argument("--dialect-of", type=_dialect_of, default={}, metavar="I=DIALECT,...",
                   help="a dialect per replica for a mixed fleet, e.g. 1=v0,2=v1-0.8 "
                   "(the others speak --dialect)")  # fmt: skip
    p.add_argument("--dp", type=int, default=1, help="data-parallel engines per replica")
    p.add_argument("--hide", type=hide_pairs, default={}, metavar="I=FAMILY,...",
                   help="build replica I without these families (vLLM or DCGM), e.g. "
                   "0=vllm:num_preemptions_total; repeat I for more")  # fmt: skip
    p.add_argument("--seed", type=int, default=0)
    if scenario:
        p.add_argument("--scenario", choices=list(SCENARIOS), default="steady")
        p.add_argument("--at", type=float, help="scenario start, seconds after the fleet starts")
        p.add_argument("--duration", type=float, help="scenario length in seconds")
        p.add_argument("--on", type=_targets_list, help="affected replicas, e.g. 0,2")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m fleetsim", description="A simulated vLLM fleet.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    serve = sub.add_parser("serve", help="serve the fleet's /metrics endpoints")
    _fleet_options(serve)
    serve.add_argument("--base-port", type=int, default=DEFAULT_BASE_PORT,
                       help="vLLM on P+i, DCGM on P+1000+i, gateway P+2000, prober P+2001; "
                       "0 picks free ports")  # fmt: skip
    serve.add_argument("--speed", type=float, default=1.0, help="simulated seconds per second")
    serve.add_argument("--out-dir", type=Path,
                       help=f"where the file_sd and manifest go (default: ${VAR_DIR_ENV} "
                       "or ./var; created if missing)")  # fmt: skip
    serve.add_argument("--file-sd", type=Path,
                       help=f"file_sd JSON path (default: OUT_DIR/{SERVE_FILE_SD})")  # fmt: skip
    serve.add_argument("--manifest", type=Path,
                       help=f"ground truth path (default: OUT_DIR/{SERVE_MANIFEST})")  # fmt: skip

    history = sub.add_parser("history", help="write the fleet's past as OpenMetrics")
    _fleet_options(history)
    history.add_argument("--hours", type=float, required=True)
    history.add_argument("--step", type=float, default=15.0, help="scrape interval, seconds")
    history.add_argument("--out", required=True, help="OpenMetrics file to write")
    history.add_argument("--manifest", help="ground truth path (default: OUT.manifest.json)")
    history.add_argument("--end", type=float, help="unix time of the last sample (default: now)")
    history.add_argument("--base-port", type=int, default=DEFAULT_BASE_PORT,
                         help="port base the `instance` labels pretend to")  # fmt: skip

    targets = sub.add_parser("targets", help="print the file_sd JSON for a served fleet")
    _fleet_options(targets, scenario=False)
    targets.add_argument("--base-port", type=int, default=DEFAULT_BASE_PORT)
    targets.add_argument("--out", help="write here instead of stdout")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "serve":
            return _serve(args)
        if args.command == "history":
            return _history(args)
        return _targets(args)
    except (ValueError, ScenarioError, PortInUseError) as exc:
        print(f"fleetsim: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except _CannotWrite as exc:
        print(f"fleetsim: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


class _CannotWrite(Exception):
    """An output file could not be written; the message names it and says why."""


def default_out_dir() -> Path:
    """FleetScope's var dir: $FLEETSCOPE_VAR_DIR when set and not empty, else ./var."""
    return Path(os.environ.get(VAR_DIR_ENV) or "var")


def _serve_paths(args: argparse.Namespace) -> tuple[Path, Path]:
    """(file_sd, manifest): paths given on the command line stay as given; the others go
    under the output directory."""
    out_dir = args.out_dir if args.out_dir is not None else default_out_dir()
    file_sd_path = args.file_sd if args.file_sd is not None else out_dir / SERVE_FILE_SD
    manifest_path = args.manifest if args.manifest is not None else out_dir / SERVE_MANIFEST
    return file_sd_path, manifest_path


def _write_outputs(files: dict[Path, object]) -> None:
    for path, data in files.items():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_json(path, data)
        except OSError as exc:
            raise _CannotWrite(f"cannot write {path}: {exc.strerror or exc}") from None


def _serve(args: argparse.Namespace) -> int:
    file_sd_path, manifest_path = _serve_paths(args)
    fleet = start_fleet(
        replicas=args.replicas,
        scenario=args.scenario,
        at=60.0 if args.at is None else args.at,
        dialect=args.dialect,
        dp=args.dp,
        seed=args.seed,
        base_port=args.base_port,
        speed=args.speed,
        duration=args.duration,
        targets=args.on,
        dialect_of=args.dialect_of,
        hide=args.hide,
    )
    with fleet:
        # The manifest last: a reader waiting for it finds the file_sd already there.
        _write_outputs({file_sd_path: file_sd(fleet.targets), manifest_path: fleet.manifest})
        m = fleet.manifest
        print(f"fleetsim: {args.replicas} replicas, scenario {m['incident']} "
              f"at {m['window']['start_offset_s']:g}s for "
              f"{m['window']['end_offset_s'] - m['window']['start_offset_s']:g}s, "
              f"dialect {_dialects_line(args)}, speed {args.speed:g}x")  # fmt: skip
        for t in fleet.targets:
            name = f"r{t.replica}" if t.replica is not None else ""
            extra = ""
            if t.kind == "vllm" and t.replica is not None:
                r = m["replicas"][t.replica]
                extra = f"  {r['model_name']} on {r['tensor_parallel_size']}x {r['gpu']}"
                if args.dialect_of:
                    extra += f", {r['dialect']}"
            print(f"{t.kind:8s}{name:5s}{t.url}{extra}")
        print(f"file_sd: {file_sd_path}  manifest: {manifest_path}  (Ctrl-C stops)", flush=True)
        _wait_for_signal()
    return 0


def _dialects_line(args: argparse.Namespace) -> str:
    if not args.dialect_of:
        return str(args.dialect)
    others = ", ".join(f"r{i} {d}" for i, d in sorted(args.dialect_of.items()))
    return f"{args.dialect} ({others})"


def _wait_for_signal() -> None:
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    while not done.wait(1.0):
        pass


def _history(args: argparse.Namespace) -> int:
    history = History(
        replicas=args.replicas,
        scenario=args.scenario,
        hours=args.hours,
        step=args.step,
        at=args.at,
        duration=args.duration,
        targets=args.on,
        dialect=args.dialect,
        dialect_of=args.dialect_of,
        dp=args.dp,
        seed=args.seed,
        end=args.end,
        base_port=args.base_port,
        hide=args.hide,
    )
    manifest = history.write_openmetrics(args.out)
    manifest_path = args.manifest or f"{args.out}.manifest.json"
    write_json(manifest_path, manifest)
    print(f"fleetsim: wrote {Path(args.out)} ({history.steps + 1} scrapes) and {manifest_path}")
    return 0


def _targets(args: argparse.Namespace) -> int:
    check_options(
        replicas=args.replicas, dialect=args.dialect, dp=args.dp, dialect_of=args.dialect_of
    )
    if args.base_port == 0:
        raise ValueError("targets needs a fixed --base-port (free ports are only known to serve)")
    model = FleetModel(
        replicas=args.replicas,
        dialect=args.dialect,
        dialect_of=args.dialect_of,
        dp=args.dp,
        seed=args.seed,
        hide=args.hide,
    )
    slots = port_plan(args.replicas, args.base_port)
    text = json.dumps(file_sd([make_target(model, s, s.port) for s in slots]), indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    else:
        print(text)
    return 0
