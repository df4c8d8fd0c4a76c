"""Placeholder while the Kubernetes toolset is built (branch k8s)."""

from agents_app.toolsets.contract import ToolError


async def k8s_rollout_restart(ctx, **arguments):
    raise ToolError("not built yet")


async def k8s_rollout_undo(ctx, **arguments):
    raise ToolError("not built yet")


async def k8s_scale(ctx, **arguments):
    raise ToolError("not built yet")
