"""A helper process of benchmarks/load.py, spoken to in JSON lines over its stdin and
stdout: `Child` on the benchmark's side, `say` on the helper's."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
# The helpers start as the benchmark itself with a hidden flag, so that they set up
# Django and the path as it does.
SCRIPT = ROOT / "benchmarks" / "load.py"


class Child:
    """A helper process of the benchmark (`--publisher`, `--socket-clients`)."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, str(SCRIPT), self.mode, cwd=ROOT, env=os.environ.copy(),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=2**24,
        )  # fmt: skip

    async def ask(self, message: Any) -> Any:
        assert self.proc is not None and self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        await self.proc.stdin.drain()
        line = await self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"the {self.mode} process exited")
        return json.loads(line)

    async def stop(self) -> None:
        if self.proc is not None and self.proc.stdin:
            self.proc.stdin.close()
            await self.proc.wait()


def say(message: Any) -> None:
    """The helper's answer: one JSON line on stdout."""
    print(json.dumps(message), flush=True)
