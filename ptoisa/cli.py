"""The ``ptoisa`` command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .errors import PtoError


def _cmd_conformance(ns: argparse.Namespace) -> int:
    from .conformance import run_pack

    root = Path(ns.dir)
    if not root.exists():
        print(f"ptoisa conformance: {root}: no such directory", file=sys.stderr)
        return 2
    summary = run_pack(root, ns.target, only=ns.only or ())
    return 1 if summary.count("FAIL") else 0


def _cmd_ops(ns: argparse.Namespace) -> int:
    from .support import render_matrix, support_matrix

    rows = support_matrix(ns.target)
    if ns.json:
        import json

        print(json.dumps(rows, indent=1))
    else:
        print(render_matrix(rows, ns.target))
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ptoisa", description="The PTO tile ISA, executable.")
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("conformance", help="run the upstream conformance pack")
    c.add_argument("dir", help="pack directory (e.g. ../shared/conformance) or one case")
    c.add_argument("--target", default="cpu", choices=["cpu", "a2a3", "a5"])
    c.add_argument("--only", nargs="*", help="instruction folders or case ids to run")
    c.set_defaults(fn=_cmd_conformance)
    o = sub.add_parser("ops", help="the instruction support matrix, from the registry")
    o.add_argument("--target", choices=["cpu", "a2a3", "a5"], default=None,
                   help="one target (default: all three)")
    o.add_argument("--json", action="store_true", help="machine-readable output")
    o.set_defaults(fn=_cmd_ops)
    return p


def main(argv: list[str] | None = None) -> int:
    ns = build_parser().parse_args(argv)
    try:
        return int(ns.fn(ns))
    except PtoError as e:
        print(f"ptoisa: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
