"""The peer: the OpenAI Agents SDK (`openai-agents`, bench/requirements.txt) on the same script.

Agents-as-tools: the coordinator's only tool is the disk specialist as a tool (`Agent.as_tool`);
it calls it 3 times in one step (the SDK runs them concurrently) and each run calls the no-op
`query_promql` 5 times. The coordinator's run is streamed (`Runner.run_streamed`) and, with
`--session`, persisted in a `SQLiteSession` file (one session id per turn, as Ongrid starts one
chat per turn). With `--personas`, the two agents' instructions are the bodies of Ongrid's shipped
`default` and `specialist-disk` personas instead of one sentence each. Prints one JSON line
(bench/measure.py).

    .venv/bin/python bench/sdk_side.py --base-url http://127.0.0.1:PORT/v1 [--session] [--personas]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import frontmatter  # noqa: E402
from agents import (  # noqa: E402
    Agent,
    OpenAIChatCompletionsModel,
    Runner,
    SQLiteSession,
    function_tool,
    set_tracing_disabled,
)
from openai import AsyncOpenAI  # noqa: E402

from bench.measure import measure  # noqa: E402


@function_tool
async def query_promql(query: str) -> dict:
    """Run a PromQL query (a no-op for the benchmark)."""
    return {"status": "success", "series": []}


ROOT = Path(__file__).resolve().parent.parent
ONE_LINERS = {
    "specialist-disk": "You are the disk specialist. Inspect the host you are given with query_promql.",
    "default": "You are the coordinator. Dispatch one specialist per host, then weave their answers.",
}
PERSONA_FILES = {
    "specialist-disk": "personas/specialists/specialist-disk.md",
    "default": "personas/default.md",
}


def instructions(name: str, personas: bool) -> str:
    """One sentence, or the body of Ongrid's persona file of that name (its front matter left out)."""
    return frontmatter.load(ROOT / PERSONA_FILES[name]).content if personas else ONE_LINERS[name]


def build(base_url: str, personas: bool = False) -> Agent:
    set_tracing_disabled(True)
    model = OpenAIChatCompletionsModel(
        model="fake-model", openai_client=AsyncOpenAI(base_url=base_url, api_key="bench")
    )
    worker = Agent(
        name="specialist-disk",
        instructions=instructions("specialist-disk", personas),
        tools=[query_promql],
        model=model,
    )
    return Agent(
        name="default",
        instructions=instructions("default", personas),
        tools=[worker.as_tool(tool_name="specialist_disk", tool_description="Inspect one host's disk.")],
        model=model,
    )


async def main(args: argparse.Namespace) -> dict:
    coordinator = build(args.base_url, args.personas)
    database = str(Path(tempfile.mkdtemp(prefix="sdk-bench-")) / "sessions.sqlite3")
    ids = itertools.count()

    async def turn() -> float:
        session = SQLiteSession(f"chat-{next(ids)}", database) if args.session else None
        result = Runner.run_streamed(coordinator, "inspect the three web hosts", session=session)
        async for _event in result.stream_events():
            pass
        assert result.final_output, result
        return time.perf_counter()

    levels = [int(n) for n in args.levels.split(",") if n]
    return await measure(turn, base_url=args.base_url, repeat=args.repeat, levels=levels)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--session", action="store_true")
    parser.add_argument("--personas", action="store_true", help="Ongrid's persona bodies as instructions")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--levels", default="20,50,200")
    print(json.dumps(asyncio.run(main(parser.parse_args()))))
