"""What every module of the harness uses: the repository's root, the error
that makes a run invalid, and the progress lines for the person running it."""

import sys
from pathlib import Path

# benches/harness/base.py, two folders below the root.
ROOT = Path(__file__).resolve().parent.parent.parent


class BenchError(Exception):
    """Something broke: the run is invalid and the script exits 1 with this message."""


def progress(message):
    """Tells the person running the benchmark what it is doing (stderr)."""
    print(f"bench: {message}", file=sys.stderr, flush=True)
