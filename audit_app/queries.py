"""What auditors may see, and the session list they browse.

Every audit page and API endpoint starts from `audit_sessions(user)` / `audit_calls(user)`, so
tenancy and the role check live in the querysets, not in templates: a member gets nothing, an
auditor or org admin gets their organization, a superuser gets every organization.

The session list pages by keyset over (created_at, id): a page costs the same on the first and
the thousandth screen and never counts the whole table. Filters map onto indexed columns
(chat_app migration 0005) and text search onto the full-text index of `audit_app.search`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django import forms
from django.conf import settings
from django.db.models import Count, Q, QuerySet, Sum
from django.utils.translation import gettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from audit_app.costs import estimate_cost
from audit_app.models import AuditLog, LLMCall, ToolStatus
from audit_app.search import matching_sessions
from chat_app.channels import channel_choices
from chat_app.models import ChatSession, SessionKind, SessionStatus
from ops_app.core import tracing
from ops_app.tenancy import roles
from ops_app.tenancy.scoping import sees_all_tenants

AUDIT_ROLES = (roles.AUDITOR, roles.ORG_ADMIN)
PAGE_SIZE = 50
MAX_PAGE_SIZE = 200
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def can_audit(user) -> bool:
    """Auditors and org admins of an organization, and platform staff (superusers)."""
    if user is None or not user.is_authenticated:
        return False
    if sees_all_tenants(user):
        return True
    cached = getattr(user, "_ongrid_can_audit", None)  # one lookup per request, however many checks
    if cached is None:
        cached = user.groups.filter(name__in=AUDIT_ROLES).exists() and hasattr(user, "membership")
        user._ongrid_can_audit = cached
    return cached


def audit_sessions(user) -> QuerySet[ChatSession]:
    if not can_audit(user):
        return ChatSession.objects.none()
    return ChatSession.objects.for_user(user)


def audit_calls(user) -> QuerySet[AuditLog]:
    if not can_audit(user):
        return AuditLog.objects.none()
    return AuditLog.objects.for_user(user)


def _choices(choices) -> list[tuple[str, str]]:
    return [("", pgettext_lazy("any value of a filter", "any")), *choices]


class SessionFilterForm(forms.Form):
    """The list's filters, shared by the page and the API so both answer the same question."""

    # Every label is given (a field's default label is its English name) and lazy, like the
    # choices: the page draws them in the reader's language (docs/i18n.md).
    q = forms.CharField(required=False, max_length=200, label=_("Search"))
    user = forms.CharField(required=False, max_length=150, label=_("User"), help_text=_("username"))
    persona = forms.CharField(required=False, max_length=100, label=_("Persona"))
    kind = forms.ChoiceField(required=False, choices=_choices(SessionKind.choices), label=_("Kind"))
    status = forms.ChoiceField(required=False, choices=_choices(SessionStatus.choices), label=_("Status"))
    # A callable: the IM platforms' channels are registered when their app is ready.
    channel = forms.ChoiceField(
        required=False, choices=lambda: _choices(channel_choices()), label=_("Channel")
    )
    tool = forms.CharField(required=False, max_length=200, label=_("Tool used"))
    rejected = forms.BooleanField(required=False, label=_("Has a rejected proposal"))
    since = forms.DateTimeField(
        required=False,
        label=pgettext_lazy("start of a time filter", "Since"),
        help_text=_("created at or after"),
    )
    until = forms.DateTimeField(
        required=False, label=pgettext_lazy("end of a time filter", "Until"), help_text=_("created before")
    )
    top = forms.BooleanField(required=False, label=_("Coordinator sessions only"))

    def clean(self):
        data = super().clean()
        since, until = data.get("since"), data.get("until")
        if since and until and since >= until:
            raise forms.ValidationError(gettext("'since' must be earlier than 'until'."))
        return data


class CallFilterForm(forms.Form):
    session = forms.IntegerField(required=False, min_value=1)
    tool = forms.CharField(required=False, max_length=200)
    tool_class = forms.CharField(required=False, max_length=20)
    status = forms.ChoiceField(required=False, choices=_choices(ToolStatus.choices))
    persona = forms.CharField(required=False, max_length=100)
    since = forms.DateTimeField(required=False)
    until = forms.DateTimeField(required=False)


def _in_tree(calls: QuerySet[AuditLog]) -> Q:
    """Sessions that made one of `calls` themselves, or whose worker did (its coordinator).

    Uncorrelated IN subqueries on purpose: both databases compute each set once. A correlated
    EXISTS per listed session took minutes on SQLite at 100 000 sessions.
    """
    made = calls.values("session_id")
    return Q(pk__in=made) | Q(pk__in=ChatSession.objects.filter(pk__in=made).values("root_session_id"))


def filter_sessions(
    sessions: QuerySet[ChatSession], data: dict, calls: QuerySet[AuditLog]
) -> QuerySet[ChatSession]:
    """Apply cleaned `SessionFilterForm` data; `calls` is the caller's audit scope (same tenants)."""
    if data.get("user"):
        sessions = sessions.filter(user__username=data["user"])
    if data.get("persona"):
        sessions = sessions.filter(agent_id=data["persona"])
    for field in ("kind", "status", "channel"):
        if data.get(field):
            sessions = sessions.filter(**{field: data[field]})
    if data.get("since"):
        sessions = sessions.filter(created_at__gte=data["since"])
    if data.get("until"):
        sessions = sessions.filter(created_at__lt=data["until"])
    if data.get("top"):
        sessions = sessions.filter(parent_session__isnull=True)
    if data.get("tool"):
        sessions = sessions.filter(_in_tree(calls.filter(tool=data["tool"])))
    if data.get("rejected"):
        sessions = sessions.filter(_in_tree(calls.filter(status=ToolStatus.REJECTED)))
    text = (data.get("q") or "").strip()
    if text:
        sessions = sessions.filter(matching_sessions(text, sessions.db))
    return sessions


def filter_calls(calls: QuerySet[AuditLog], data: dict) -> QuerySet[AuditLog]:
    for field in ("tool", "tool_class", "status", "persona"):
        if data.get(field):
            calls = calls.filter(**{field: data[field]})
    if data.get("session"):
        calls = calls.filter(session_id=data["session"])
    if data.get("since"):
        calls = calls.filter(started_at__gte=data["since"])
    if data.get("until"):
        calls = calls.filter(started_at__lt=data["until"])
    return calls


# -- keyset pages ------------------------------------------------------------------------------


class BadCursor(ValueError):
    """The `cursor` parameter was not one this server handed out."""


def encode_cursor(moment: datetime, pk: int) -> str:
    return f"{(moment - _EPOCH) // timedelta(microseconds=1)}-{pk}"


def decode_cursor(cursor: str) -> tuple[datetime, int]:
    try:
        micros, pk = (int(part) for part in cursor.split("-", 1))
    except ValueError:
        raise BadCursor(
            gettext("cursor %(cursor)s is not valid; use the 'next' link of the previous page")
            % {"cursor": repr(cursor)}
        ) from None
    return _EPOCH + timedelta(microseconds=micros), pk


@dataclass
class Page:
    rows: list
    next_cursor: str | None


def keyset_page(rows: QuerySet, field: str, cursor: str | None, size: int = PAGE_SIZE) -> Page:
    """Newest first by (`field`, id), `size` rows after `cursor`; one query, no COUNT."""
    if cursor:
        moment, pk = decode_cursor(cursor)
        # The plain `<=` bound lets the index range-scan start at the cursor; the OR breaks ties.
        rows = rows.filter(**{f"{field}__lte": moment})
        rows = rows.filter(Q(**{f"{field}__lt": moment}) | Q(**{field: moment, "pk__lt": pk}))
    batch = list(rows.order_by(f"-{field}", "-pk")[: size + 1])
    more = len(batch) > size
    batch = batch[:size]
    following = encode_cursor(getattr(batch[-1], field), batch[-1].pk) if more else None
    return Page(batch, following)


def page_size(raw: str | None) -> int:
    try:
        return max(1, min(MAX_PAGE_SIZE, int(raw))) if raw else PAGE_SIZE
    except ValueError:
        return PAGE_SIZE


# -- list rows ---------------------------------------------------------------------------------


def session_page(sessions: QuerySet[ChatSession], cursor: str | None, size: int = PAGE_SIZE) -> Page:
    """A page of sessions with their call counts, tokens and cost: three queries whatever the size."""
    page = keyset_page(sessions.select_related("user"), "created_at", cursor, size)
    ids = [row.pk for row in page.rows]
    calls = dict(
        AuditLog.objects.filter(session_id__in=ids)
        .values_list("session_id")
        .annotate(n=Count("id"))
        .values_list("session_id", "n")
    )
    usage = llm_usage_by_session(ids)
    page.rows = [session_summary(row, calls.get(row.pk, 0), usage.get(row.pk)) for row in page.rows]
    return page


Usage = dict[str, dict[str, int]]  # {model: {prompt, completion, calls}}


def llm_usage_by_session(session_ids: list[int]) -> dict[int, dict[str, Usage]]:
    """{session: {endpoint: {model: {prompt, completion, calls}}}} from the LLMCall rows, in one
    query. The endpoint is the organization's LLM endpoint by name ("" is the deployment's own)."""
    usage: dict[int, dict[str, Usage]] = {}
    rows = (
        LLMCall.objects.filter(session_id__in=session_ids)
        .values("session_id", "endpoint", "model")
        .annotate(prompt=Sum("prompt_tokens"), completion=Sum("completion_tokens"), calls=Count("id"))
        .order_by()
    )
    for row in rows:
        usage.setdefault(row["session_id"], {}).setdefault(row["endpoint"], {})[row["model"]] = {
            "prompt": row["prompt"] or 0,
            "completion": row["completion"] or 0,
            "calls": row["calls"],
        }
    return usage


def by_model(by_endpoint: dict[str, Usage] | None) -> Usage:
    """One session's usage per model, whatever endpoint served it."""
    merged: Usage = {}
    for models in (by_endpoint or {}).values():
        for model, used in models.items():
            total = merged.setdefault(model, {"prompt": 0, "completion": 0, "calls": 0})
            for key in total:
                total[key] += used[key]
    return merged


def endpoint_usage(by_endpoint: dict[str, Usage] | None) -> list[dict]:
    """[{endpoint, calls, prompt, completion, cost}], one per LLM endpoint, by name, so an
    organization sees which endpoint its tokens (and money) went to."""
    return [
        {
            "endpoint": name,
            "calls": sum(m["calls"] for m in models.values()),
            "prompt": sum(m["prompt"] for m in models.values()),
            "completion": sum(m["completion"] for m in models.values()),
            "cost": estimate_cost(models),
        }
        for name, models in sorted((by_endpoint or {}).items())
    ]


def merge_endpoint_usage(entries: list[dict]) -> list[dict]:
    """`endpoint_usage` entries of several sessions summed per endpoint (a tree's totals).

    Costs are linear in tokens, so summing the sessions' dollars is the estimate of the summed
    tokens; "unpriced" (usd None) stays None only when no session's usage there had a price.
    """
    merged: dict[str, dict] = {}
    for entry in entries:
        total = merged.setdefault(
            entry["endpoint"],
            {
                "endpoint": entry["endpoint"],
                "calls": 0,
                "prompt": 0,
                "completion": 0,
                "cost": {"usd": None, "unpriced": []},
            },
        )
        for key in ("calls", "prompt", "completion"):
            total[key] += entry[key]
        if entry["cost"]["usd"] is not None:
            total["cost"]["usd"] = round((total["cost"]["usd"] or 0.0) + entry["cost"]["usd"], 6)
        total["cost"]["unpriced"] = sorted(set(total["cost"]["unpriced"]) | set(entry["cost"]["unpriced"]))
    return [merged[name] for name in sorted(merged)]


def usage_from_calls(calls: list[LLMCall]) -> dict[int, dict[str, Usage]]:
    """`llm_usage_by_session` computed from rows already loaded (the tree lists them per call):
    {session: {endpoint: {model: {prompt, completion, calls}}}}."""
    usage: dict[int, dict[str, Usage]] = {}
    for call in calls:
        item = (
            usage.setdefault(call.session_id, {})
            .setdefault(call.endpoint, {})
            .setdefault(call.model, {"prompt": 0, "completion": 0, "calls": 0})
        )
        item["prompt"] += call.prompt_tokens
        item["completion"] += call.completion_tokens
        item["calls"] += 1
    return usage


def model_call_entry(call: LLMCall) -> dict:
    """One model request as the audit pages list it."""
    return {
        "id": call.pk,
        "model": call.model,
        "endpoint": call.endpoint,
        "at": call.started_at,
        "prompt_tokens": call.prompt_tokens,
        "cached_tokens": call.cached_tokens,
        "completion_tokens": call.completion_tokens,
        "latency_ms": call.latency_ms,
        "finish_reason": call.finish_reason,
        "error": call.error,
        "trace": trace_link(call.trace_id),
    }


def trace_link(trace_id: str) -> dict | None:
    """The OpenTelemetry trace a row was written in, with its page in the trace UI when
    ONGRID_TRACE_URL_TEMPLATE names one (docs/observability.md); None for rows of untraced turns."""
    if not trace_id:
        return None
    return {"id": trace_id, "url": tracing.trace_url(trace_id, settings.CONFIG.trace_url_template)}


def distinct_traces(entries: list[dict]) -> list[dict]:
    """The traces of a node's calls, each once, in the order they first appear: one per turn."""
    seen: dict[str, dict] = {}
    for entry in entries:
        trace = entry.get("trace")
        if trace is not None:
            seen.setdefault(trace["id"], trace)
    return list(seen.values())


def session_summary(row: ChatSession, call_count: int, by_endpoint: dict[str, Usage] | None) -> dict:
    """The facts one list row or tree node shows about a session (`by_endpoint` is its entry of
    `llm_usage_by_session`)."""
    tokens, cost = tokens_and_cost(row, by_model(by_endpoint))
    return {
        "id": row.pk,
        "persona": row.agent_id,
        "kind": row.kind,
        "channel": row.channel,
        "status": row.status,
        "title": row.title,
        "description": row.description,
        "user": row.user.get_username() if row.user_id and row.user else None,
        "organization_id": row.organization_id,
        "parent_session": row.parent_session_id,
        "root_session": row.root_session_id,
        "spawned_by_call": row.spawned_by_call,
        "created_at": row.created_at,
        "started_at": row.started_at,
        "closed_at": row.closed_at,
        "duration_ms": duration_ms(row),
        "tool_calls": call_count,
        "tokens": tokens,
        "cost": cost,
        "endpoints": endpoint_usage(by_endpoint),
    }


def duration_ms(row: ChatSession) -> int | None:
    if row.started_at and row.closed_at:
        return int((row.closed_at - row.started_at).total_seconds() * 1000)
    return None


def tokens_and_cost(row: ChatSession, by_model: dict | None) -> tuple[dict, dict]:
    """Tokens from the LLMCall rows when there are any, else from the session's own usage."""
    if not by_model:
        usage = row.usage or {}
        by_model = {}
        if usage.get("prompt_tokens") or usage.get("completion_tokens"):
            by_model[""] = {
                "prompt": int(usage.get("prompt_tokens", 0)),
                "completion": int(usage.get("completion_tokens", 0)),
                "calls": int(usage.get("llm_calls", 0)),
            }
    prompt = sum(item["prompt"] for item in by_model.values())
    completion = sum(item["completion"] for item in by_model.values())
    tokens = {"prompt": prompt, "completion": completion, "total": prompt + completion}
    return tokens, estimate_cost(by_model)
