"""The Kubernetes toolset (docs/kubernetes.md): reads of an organization's clusters, shaped for a
model, and three writes that go through the review gate with a server-side dry-run.

Every tool takes `cluster`, the organization's data source of kind `kubernetes` by name (default:
its default cluster). Secrets are never read: the kind is refused, and environment values taken
from a Secret are shown as references.
"""

from agents_app.toolsets.manifest import REASON, TIME_HELP, Toolset, ToolSpec

OWNER = "specialist-k8s"
READ_REASON = "cluster reads belong to the Kubernetes specialist"
WRITE_REASON = "cluster changes belong to the Kubernetes specialist, through the review gate"
DEFAULT_ROWS = 50
MAX_ROWS = 200
DEFAULT_TAIL = 200
MAX_TAIL = 2000
KINDS = (
    "pod, deployment, replicaset, statefulset, daemonset, job, cronjob, service, ingress, configmap, "
    "horizontalpodautoscaler (hpa), persistentvolumeclaim (pvc), node, namespace, event"
)

CLUSTER = {
    "type": "string",
    "description": "The organization's cluster, by name (default: its default cluster).",
}
NAMESPACE = {"type": "string", "description": "The namespace (default: every namespace this cluster allows)."}
WRITE_NAMESPACE = {"type": "string", "minLength": 1, "description": "The workload's namespace."}


def _spec(name: str, description: str, properties: dict, required: list[str], **extra) -> ToolSpec:
    """A Kubernetes tool: owned by the specialist, its `cluster` picking the data source."""
    parameters = {
        "type": "object",
        "properties": {**properties, "cluster": CLUSTER},
        "required": required,
        "additionalProperties": False,
    }
    reason = WRITE_REASON if extra.get("tool_class") == "write" else READ_REASON
    return ToolSpec(
        name,
        description,
        parameters,
        datasource="kubernetes",
        owner=OWNER,
        redirect_reason=reason,
        **extra,
    )


K8S_GET = _spec(
    "k8s_get",
    "List or get Kubernetes objects as compact rows (what `kubectl get -o wide` shows: status, "
    f"ready, restarts, age, node, reason). Kinds: {KINDS}. Secrets are never read.",
    {
        "kind": {"type": "string", "minLength": 1, "default": "pod", "description": f"One of: {KINDS}."},
        "namespace": NAMESPACE,
        "name": {"type": "string", "description": "One object by name (omit to list)."},
        "label_selector": {"type": "string", "description": "e.g. app=payments,tier!=cache"},
        "field_selector": {"type": "string", "description": "e.g. status.phase!=Running"},
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_ROWS,
            "description": f"Default {DEFAULT_ROWS}.",
        },
    },
    ["kind"],
    also_redirects=("kubectl", "kubectl_get", "k8s_list"),
)

K8S_DESCRIBE = _spec(
    "k8s_describe",
    "Describe one Kubernetes object, condensed: its spec and status fields an SRE reads (containers, "
    "images, limits, probes, conditions, last termination), its owner chain and its recent events.",
    {
        "kind": {"type": "string", "minLength": 1, "description": f"One of: {KINDS}."},
        "name": {"type": "string", "minLength": 1},
        "namespace": {"type": "string", "description": "Required for namespaced kinds."},
    },
    ["kind", "name"],
    also_redirects=("kubectl_describe",),
)

K8S_EVENTS = _spec(
    "k8s_events",
    "Recent Kubernetes events, warnings first: of a namespace, or of one object (kind + name). "
    "Default window: the last hour.",
    {
        "namespace": NAMESPACE,
        "kind": {"type": "string", "description": "With name: only the events of that object."},
        "name": {"type": "string"},
        "since": {"type": "string", "description": f"Default now-1h. {TIME_HELP}."},
        "warnings_only": {"type": "boolean", "description": "Default false."},
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_ROWS,
            "description": f"Default {DEFAULT_ROWS}.",
        },
    },
    [],
)

K8S_LOGS = _spec(
    "k8s_logs",
    "The last lines of a pod's container log; `previous` reads the container's previous (crashed) "
    "instance, where a CrashLoopBackOff's cause is. Long output is cut with a note.",
    {
        "pod": {"type": "string", "minLength": 1},
        "namespace": {"type": "string", "minLength": 1},
        "container": {"type": "string", "description": "Default: the pod's only (or first) container."},
        "previous": {"type": "boolean", "description": "Default false."},
        "tail_lines": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_TAIL,
            "description": f"Default {DEFAULT_TAIL}.",
        },
        "since": {"type": "string", "description": f"Only lines after this time. {TIME_HELP}."},
    },
    ["pod", "namespace"],
    timeout=30,
    also_redirects=("kubectl_logs",),
)

K8S_ROLLOUT_HISTORY = _spec(
    "k8s_rollout_history",
    "A deployment's revisions (from its ReplicaSets), newest first: when, images, and what changed "
    "from the revision before (image, environment, ConfigMap/Secret references, resources).",
    {
        "deployment": {"type": "string", "minLength": 1},
        "namespace": {"type": "string", "minLength": 1},
    },
    ["deployment", "namespace"],
)

K8S_TOP = _spec(
    "k8s_top",
    "CPU and memory in use now (metrics.k8s.io, like `kubectl top`), of pods or nodes, with the "
    "pods' requests and limits beside them. Says so when metrics-server is not installed.",
    {
        "kind": {"type": "string", "enum": ["pod", "node"]},
        "namespace": NAMESPACE,
        "label_selector": {"type": "string"},
    },
    ["kind"],
)

K8S_ROLLOUT_RESTART = _spec(
    "k8s_rollout_restart",
    "Restart a deployment's pods with a rolling update (`kubectl rollout restart`). Reviewed before "
    "it runs; the review sees a server-side dry run of the change.",
    {"deployment": {"type": "string", "minLength": 1}, "namespace": WRITE_NAMESPACE, "reason": REASON},
    ["deployment", "namespace", "reason"],
    tool_class="write",
)

K8S_ROLLOUT_UNDO = _spec(
    "k8s_rollout_undo",
    "Roll a deployment back to an earlier revision (default: the one before the current), as "
    "`kubectl rollout undo` does. Reviewed before it runs; the review sees a server-side dry run "
    "and the diff of the pod template.",
    {
        "deployment": {"type": "string", "minLength": 1},
        "namespace": WRITE_NAMESPACE,
        "to_revision": {"type": "integer", "minimum": 1, "description": "Default: the previous revision."},
        "reason": REASON,
    },
    ["deployment", "namespace", "reason"],
    tool_class="write",
)

K8S_SCALE = _spec(
    "k8s_scale",
    "Set the replicas of a deployment or statefulset (the scale subresource). Reviewed before it "
    "runs, with a server-side dry run.",
    {
        "kind": {
            "type": "string",
            "enum": ["deployment", "statefulset"],
            "description": "Default deployment.",
        },
        "name": {"type": "string", "minLength": 1},
        "namespace": WRITE_NAMESPACE,
        "replicas": {"type": "integer", "minimum": 0, "maximum": 1000},
        "reason": REASON,
    },
    ["name", "namespace", "replicas", "reason"],
    tool_class="write",
)

READS = (K8S_GET, K8S_DESCRIBE, K8S_EVENTS, K8S_LOGS, K8S_ROLLOUT_HISTORY, K8S_TOP)
WRITES = (K8S_ROLLOUT_RESTART, K8S_ROLLOUT_UNDO, K8S_SCALE)

TOOLSET = Toolset(
    "kubernetes",
    "Kubernetes clusters: objects, events, logs, rollouts, usage; rollout restart/undo and scale",
    READS + WRITES,
    handlers=("reads", "writes"),
)
