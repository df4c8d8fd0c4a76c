"""The local transport: commands on the Ongrid host itself, as asyncio subprocesses, no shell.

Pipelines are wired with OS pipes between the processes, chains are evaluated here with the
shell's rules, and every process runs in its own session so a timeout kills its children too.
The child environment is minimal on purpose: Ongrid's own environment holds its secrets.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time

from agents_app.toolsets.hosts.transport import (
    DEFAULT_MAX_OUTPUT,
    DEFAULT_TIMEOUT,
    CappedBuffer,
    CommandResult,
    Script,
    decode_capped,
)

CHILD_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LC_ALL": "C",
    "LANG": "C",
    "SYSTEMD_PAGER": "",
    "PAGER": "cat",
}


class LocalTransport:
    name = "local"

    async def run(
        self, script: Script, *, time_limit: float = DEFAULT_TIMEOUT, max_output: int = DEFAULT_MAX_OUTPUT
    ) -> CommandResult:
        started = time.monotonic()
        out, err = CappedBuffer(max_output), CappedBuffer(max_output)
        status: int | None = None
        timed_out = False
        try:
            async with asyncio.timeout(time_limit):
                for index, pipeline in enumerate(script.pipelines):
                    if index and not _should_run(script.operators[index - 1], status):
                        continue
                    status = await _run_pipeline(pipeline, out, err)
        except TimeoutError:
            timed_out, status = True, None
        stdout, cut_out = decode_capped(bytes(out.data), out.total)
        stderr, cut_err = decode_capped(bytes(err.data), err.total)
        return CommandResult(
            command=script.render(),
            exit_status=status,
            stdout=stdout,
            stderr=stderr,
            stdout_bytes=out.total,
            stderr_bytes=err.total,
            duration_ms=int((time.monotonic() - started) * 1000),
            timed_out=timed_out,
            truncated=cut_out or cut_err,
        )


def _should_run(operator: str, previous_status: int | None) -> bool:
    if operator == "&&":
        return previous_status == 0
    if operator == "||":
        return previous_status != 0
    return True


async def _pump(stream: asyncio.StreamReader | None, sink: CappedBuffer) -> None:
    if stream is None:
        return
    while chunk := await stream.read(65536):
        sink.feed(chunk)


async def _run_pipeline(pipeline: tuple[tuple[str, ...], ...], out: CappedBuffer, err: CappedBuffer) -> int:
    """Start every stage, connect them with pipes, and return the last stage's exit status.

    A stage whose program is missing behaves as in a shell: it reports on stderr, its reader sees
    end of input, and when it is the last stage the pipeline's status is 127."""
    procs: list[asyncio.subprocess.Process] = []
    previous_read: int | None = None
    last_missing = False
    try:
        for position, argv in enumerate(pipeline):
            last = position == len(pipeline) - 1
            read_end, write_end = (None, None) if last else os.pipe()
            previous_read, stdin = None, previous_read  # from here on, this stage owns it
            try:
                procs.append(
                    await asyncio.create_subprocess_exec(
                        *argv,
                        stdin=stdin if stdin is not None else asyncio.subprocess.DEVNULL,
                        stdout=asyncio.subprocess.PIPE if last else write_end,
                        stderr=asyncio.subprocess.PIPE,
                        env=CHILD_ENV,
                        cwd="/",
                        start_new_session=True,
                    )
                )
            except (FileNotFoundError, PermissionError) as exc:
                err.feed(f"{argv[0]}: {exc.strerror}\n".encode())
                last_missing = last
            except BaseException:
                if read_end is not None:
                    os.close(read_end)
                raise
            finally:
                for fd in (stdin, write_end):
                    if fd is not None:
                        os.close(fd)
            previous_read = read_end
        stdout = procs[-1].stdout if procs and not last_missing else None
        await asyncio.gather(_pump(stdout, out), *(_pump(p.stderr, err) for p in procs))
        statuses = [await proc.wait() for proc in procs]
    except BaseException:
        for proc in procs:
            _kill(proc)
        for proc in procs:
            await proc.wait()
        raise
    return 127 if last_missing or not statuses else statuses[-1]


def _kill(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
