"""A fast scripted OpenAI-compatible model for the peer comparison (bench/README.md).

`fakes/openai_server.py` is a threaded `http.server`, fine for tests but itself a bottleneck at
hundreds of concurrent turns. This one is one asyncio event loop on stdlib streams (HTTP/1.1
keep-alive, no framework), run in its own process so that its CPU is not charged to the side being
measured. It plays one script for both Ongrid and the OpenAI Agents SDK:

- the coordinator (its tools include `AgentTool` for Ongrid or `specialist_disk` for the SDK)
  dispatches 3 workers in one step, then answers once it has their results;
- a worker (any other request) calls `query_promql` 5 times, one per step, then answers.

That is 2 + 3 × 6 = 20 model calls per turn. `--delay` holds every reply that long (0.5 s is
"a realistic model": concurrency decides, not CPU). `GET /stats` reports the chat requests and
their body bytes since `POST /stats/reset`, so request bytes per call are measured on the wire.

    .venv/bin/python bench/fake_model.py serve --port 0 [--delay 0.5]   # prints "ready <port>"
    .venv/bin/python bench/fake_model.py capacity --port PORT           # its own requests/s
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fakes.openai_server import _chunks, _completion, call, text, tool_calls  # noqa: E402

WORKERS, TOOL_CALLS = 3, 5
COORDINATOR_TOOLS = {"AgentTool", "specialist_disk"}
BRIEFS = [f"On web-0{i} inspect the disk, step by step." for i in range(1, WORKERS + 1)]
_ids = itertools.count()


def reply_for(body: dict):
    """The script: who is asking (by its tools) and how far it got (by its tool results)."""
    names = {t.get("function", {}).get("name") for t in body.get("tools") or []}
    done = sum(1 for m in body.get("messages") or [] if m.get("role") == "tool")
    chunk = {"chunk_size": 256}
    if names & COORDINATOR_TOOLS:
        if done:
            return text("woven answer: the three hosts are fine", **chunk)
        if "AgentTool" in names:
            calls = [
                call("AgentTool", {"description": b[:20], "subagent_type": "specialist-disk", "prompt": b},
                     id=f"call_{next(_ids)}")
                for b in BRIEFS
            ]  # fmt: skip
        else:
            calls = [call("specialist_disk", {"input": b}, id=f"call_{next(_ids)}") for b in BRIEFS]
        return tool_calls(*calls, **chunk)
    if done < TOOL_CALLS:
        return tool_calls(call("query_promql", {"query": "up"}, id=f"call_{next(_ids)}"), **chunk)
    return text("worker answer: disk usage is normal", **chunk)


class Server:
    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.requests = 0
        self.bytes = 0
        self.largest = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path = lines[0].split(" ")[:2]
                length = 0
                for line in lines[1:]:
                    if line[:15].lower() == "content-length:":
                        length = int(line[15:].strip())
                raw = await reader.readexactly(length) if length else b""
                status, ctype, payload = await self.answer(method, path, raw)
                writer.write(
                    f"HTTP/1.1 {status} OK\r\nContent-Type: {ctype}\r\nContent-Length: {len(payload)}\r\n"
                    f"Connection: keep-alive\r\n\r\n".encode()
                    + payload
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def answer(self, method: str, path: str, raw: bytes) -> tuple[int, str, bytes]:
        if path.endswith("/stats/reset"):
            self.requests = self.bytes = self.largest = 0
            return 200, "application/json", b"{}"
        if path.endswith("/stats"):
            stats = {"requests": self.requests, "bytes": self.bytes, "largest": self.largest}
            return 200, "application/json", json.dumps(stats).encode()
        if method != "POST" or not path.endswith("/chat/completions"):
            return 404, "application/json", b'{"error": {"message": "no such route"}}'
        self.requests += 1
        self.bytes += len(raw)
        self.largest = max(self.largest, len(raw))
        body = json.loads(raw)
        reply = reply_for(body)
        if self.delay:
            await asyncio.sleep(self.delay)
        model = body.get("model", "fake-model")
        if not body.get("stream"):
            return 200, "application/json", json.dumps(_completion(reply, model)).encode()
        usage = bool((body.get("stream_options") or {}).get("include_usage"))
        events = [f"data: {json.dumps(c)}\n\n" for c in _chunks(reply, model, usage)] + ["data: [DONE]\n\n"]
        return 200, "text/event-stream", "".join(events).encode()


async def serve(port: int, delay: float) -> None:
    server = Server(delay)
    listener = await asyncio.start_server(server.handle, "127.0.0.1", port, backlog=1024)
    print(f"ready {listener.sockets[0].getsockname()[1]}", flush=True)
    async with listener:
        await listener.serve_forever()


async def capacity(port: int, connections: int, seconds: float) -> float:
    """Requests/s the server answers to a minimal keep-alive client (a worker's mid-run request)."""
    messages = [{"role": "system", "content": "You are a worker. " * 50}, {"role": "user", "content": "go"}]
    messages += [{"role": "tool", "tool_call_id": "c", "content": '{"status": "success"}'}] * 2
    tools = [{"type": "function", "function": {"name": "query_promql"}}]
    body = json.dumps({"model": "fake-model", "stream": True, "messages": messages, "tools": tools}).encode()
    request = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    deadline = time.perf_counter() + seconds
    done = 0

    async def client() -> None:
        nonlocal done
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        while time.perf_counter() < deadline:
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            await reader.readexactly(length)
            done += 1
        writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(connections)))
    return done / (time.perf_counter() - started)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["serve", "capacity"])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--connections", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    if args.mode == "serve":
        asyncio.run(serve(args.port, args.delay))
    else:
        print(
            json.dumps({"requests_per_s": asyncio.run(capacity(args.port, args.connections, args.seconds))})
        )
