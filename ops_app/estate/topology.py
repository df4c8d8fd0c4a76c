"""The service graph: fuzzy node lookup and bounded expansion.

An edge `source → target` means source calls / depends on target, so traffic flows downstream
along edges: `downstream` of a node are its dependencies, `upstream` are its callers. Expansion
runs one query per level (depth ≤ 3), never one per node.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from django.db.models import Q

from ops_app.models import TopologyEdge, TopologyNode

MAX_DEPTH = 3
DIRECTIONS = ("upstream", "downstream", "both")


class TopologyError(ValueError):
    """A bad lookup (unknown node, bad direction or depth); the message is for the caller."""


@dataclass(frozen=True)
class NodeMatch:
    node: TopologyNode
    score: float
    matched: str


def find_nodes(organization_id: int, query: str, kind: str | None = None, limit: int = 5) -> list[NodeMatch]:
    """Nodes whose name or labels resemble `query`, best first (exact > prefix > substring > similar)."""
    needle = query.strip().lower()
    if not needle:
        raise TopologyError("query must not be empty")
    nodes = TopologyNode.objects.filter(organization_id=organization_id).select_related("device")
    if kind:
        nodes = nodes.filter(kind=kind)
    matches = []
    for node in nodes:
        best = _score(needle, node.name.lower(), "name")
        for key, value in (node.labels or {}).items():
            for text, where in (
                (str(value).lower(), f"label {key}"),
                (f"{key}={value}".lower(), f"label {key}"),
            ):
                candidate = _score(needle, text, where)
                if candidate[0] * 0.9 > best[0]:
                    best = (candidate[0] * 0.9, candidate[1])
        if node.device is not None:
            candidate = _score(needle, node.device.name.lower(), "device")
            if candidate[0] * 0.9 > best[0]:
                best = (candidate[0] * 0.9, candidate[1])
        if best[0] >= 0.5:
            matches.append(NodeMatch(node, round(best[0], 3), best[1]))
    matches.sort(key=lambda m: (-m.score, m.node.name))
    return matches[:limit]


def _score(needle: str, text: str, where: str) -> tuple[float, str]:
    if not text:
        return 0.0, where
    if needle == text:
        return 1.0, where
    if text.startswith(needle):
        return 0.9, where
    if needle in text:
        return 0.8, where
    return difflib.SequenceMatcher(None, needle, text).ratio() * 0.75, where


def resolve_node(organization_id: int, node: str | int) -> TopologyNode:
    """A node of the organization by id or exact name (case-insensitive)."""
    nodes = TopologyNode.objects.filter(organization_id=organization_id)
    found = None
    if isinstance(node, int) or (isinstance(node, str) and node.isdigit()):
        found = nodes.filter(pk=int(node)).first()
    if found is None and isinstance(node, str):
        found = nodes.filter(name__iexact=node.strip()).first()
    if found is None:
        raise TopologyError(f"no topology node {node!r}; use find_topology_node to search by name or label")
    return found


def expand(organization_id: int, start: TopologyNode, direction: str = "both", depth: int = 1) -> dict:
    """Nodes reachable from `start` within `depth` hops, with the edges walked and each node's distance."""
    if direction not in DIRECTIONS:
        raise TopologyError(f"direction must be one of {', '.join(DIRECTIONS)}, not {direction!r}")
    if not 1 <= depth <= MAX_DEPTH:
        raise TopologyError(f"depth must be between 1 and {MAX_DEPTH}, not {depth}")
    distance = {start.pk: 0}
    relation = {start.pk: "self"}
    edges: dict[int, TopologyEdge] = {}
    frontier = {start.pk}
    for level in range(1, depth + 1):
        if not frontier:
            break
        condition = Q()
        if direction in ("downstream", "both"):
            condition |= Q(source_id__in=frontier)
        if direction in ("upstream", "both"):
            condition |= Q(target_id__in=frontier)
        found = TopologyEdge.objects.filter(condition, organization_id=organization_id)
        next_frontier = set()
        for edge in found:
            edges[edge.pk] = edge
            for here, there, rel in (
                (edge.source_id, edge.target_id, "downstream"),
                (edge.target_id, edge.source_id, "upstream"),
            ):
                if here in frontier and there not in distance and direction in (rel, "both"):
                    if relation.get(here) not in ("self", rel) and direction == "both":
                        continue  # stay on one side: a caller's other dependencies are not upstream of us
                    distance[there] = level
                    relation[there] = rel
                    next_frontier.add(there)
        frontier = next_frontier
    nodes = list(TopologyNode.objects.filter(pk__in=distance).select_related("device"))
    names = {n.pk: n.name for n in nodes}
    return {
        "nodes": sorted(
            ({**node_summary(n), "distance": distance[n.pk], "relation": relation[n.pk]} for n in nodes),
            key=lambda d: (d["distance"], d["name"]),
        ),
        "edges": sorted(
            (
                {"from": names[e.source_id], "to": names[e.target_id], "protocol": e.protocol}
                for e in edges.values()
                if e.source_id in names and e.target_id in names
            ),
            key=lambda d: (d["from"], d["to"]),
        ),
    }


def node_summary(node: TopologyNode) -> dict:
    summary = {"id": node.pk, "name": node.name, "kind": node.kind}
    if node.labels:
        summary["labels"] = node.labels
    if node.device_id:
        summary["device"] = node.device.name if "device" in node._state.fields_cache else node.device_id
    return summary
