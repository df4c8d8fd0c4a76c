"""Placeholder while the Kubernetes toolset is built (branch k8s)."""

from agents_app.toolsets.contract import ToolError


async def k8s_get(ctx, **arguments):
    raise ToolError("not built yet")


async def k8s_describe(ctx, **arguments):
    raise ToolError("not built yet")


async def k8s_events(ctx, **arguments):
    raise ToolError("not built yet")


async def k8s_logs(ctx, **arguments):
    raise ToolError("not built yet")


async def k8s_rollout_history(ctx, **arguments):
    raise ToolError("not built yet")


async def k8s_top(ctx, **arguments):
    raise ToolError("not built yet")
