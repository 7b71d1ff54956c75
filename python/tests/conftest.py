"""Shared fixtures: the corpus beside the repository, and the `fastfeed` binary for the
JSON that the Python side must agree with."""

import json
import os
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(os.environ.get("FASTFEED_CORPUS", ROOT.parent / "shared" / "corpus"))


def _binary():
    """The fastfeed CLI: $FASTFEED_BIN, else the cargo target dir's build, else PATH."""
    if os.environ.get("FASTFEED_BIN"):
        return os.environ["FASTFEED_BIN"]
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    for profile in ("release", "debug"):
        p = target / profile / "fastfeed"
        if p.exists():
            return str(p)
    found = shutil.which("fastfeed")
    if found is None:
        raise RuntimeError("no fastfeed binary: build it (cargo build) or set FASTFEED_BIN")
    return found


@pytest.fixture(scope="session")
def fastfeed_bin():
    return _binary()


@pytest.fixture(scope="session")
def cli():
    binary = _binary()

    def run(*args):
        out = subprocess.run([binary, *map(str, args)], capture_output=True, check=False)
        return out

    return run


def corpus(rel):
    p = CORPUS / rel
    if not p.exists():
        raise RuntimeError(f"corpus file missing: {p}")
    return p


def json_messages(cli, *args):
    """`fastfeed decode` JSON Lines, decimals exact."""
    out = cli("decode", *args)
    assert out.returncode == 0, out.stderr.decode()
    return [json.loads(line, parse_float=Decimal) for line in out.stdout.splitlines()]
