"""Reading a container's log and cutting it to what a tool result may carry, keeping its END
(where a crash is) with a note of how much was left out."""

from __future__ import annotations

from django.conf import settings
from lightkube import AsyncClient
from lightkube.resources import core_v1

from agents_app.toolsets.contract import ToolError

# Room left in the tool result for the other fields and the JSON quoting of the lines.
HEADROOM = 1500


def container_of(pod: dict, container: str | None, previous: bool) -> str:
    """The container to read (default: the pod's first); with `previous`, one that has a
    previous instance, else a ToolError saying so (the API would only say "not found")."""
    names = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or []]
    name = container or (names[0] if names else "")
    if name not in names:
        raise ToolError(f"pod has no container {name!r} (its containers: {', '.join(names) or 'none'})")
    if previous:
        statuses = {s.get("name"): s for s in (pod.get("status") or {}).get("containerStatuses") or []}
        status = statuses.get(name) or {}
        if not (status.get("lastState") or {}).get("terminated"):
            raise ToolError(
                f"container {name!r} has no previous instance (restarts: {status.get('restartCount', 0)}); "
                "read its current log with previous=false"
            )
    return name


async def read(
    client: AsyncClient,
    pod: str,
    namespace: str,
    container: str,
    *,
    previous: bool,
    tail: int,
    since: int | None,
) -> str:
    """The log text. lightkube's `log()` has no `previous`, so the same request is built with
    its own request machinery plus that parameter (still lightkube's URL, auth and errors)."""
    generic = client._client
    request = generic.prepare_request(
        "get",
        core_v1.PodLog,
        name=pod,
        namespace=namespace,
        params={
            "container": container,
            "tailLines": tail,
            "sinceSeconds": since,
            "previous": "true" if previous else None,
        },
    )
    response = await generic.send(generic.build_adapter_request(request))
    generic.raise_for_status(response)
    return response.text


def limit() -> int:
    return max(settings.CONFIG.tool_result_limit - HEADROOM, 200)


def cut(text: str) -> dict:
    """`lines`, `line_count`, `truncated` and, when cut, a `note`: the end of the log kept."""
    lines = text.splitlines()
    budget = limit()
    if len(text) <= budget:
        return {"lines": text, "line_count": len(lines), "truncated": False}
    kept: list[str] = []
    size = 0
    for line in reversed(lines):
        if size + len(line) + 1 > budget:
            break
        kept.append(line)
        size += len(line) + 1
    if not kept:  # one line longer than the budget: its end
        kept = [lines[-1][-budget:]]
    kept.reverse()
    shown = "\n".join(kept)
    note = (
        f"cut to the last {len(kept)} of {len(lines)} lines ({len(shown)} of {len(text)} characters); "
        "ask for fewer tail_lines or a later `since` to see a specific part"
    )
    return {"lines": shown, "line_count": len(kept), "truncated": True, "note": note}
