from __future__ import annotations

from agents_app.runtime.control_tools import redirect_payload
from agents_app.runtime.dedupe import DispatchCache, canonical, dispatch_key
from agents_app.toolsets.registry import redirects


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_identical_dispatch_within_ttl_is_a_hit_and_after_is_a_miss():
    clock = FakeClock()
    cache = DispatchCache(ttl=120, clock=clock)
    key = dispatch_key(7, "specialist-disk", "Check /var\n on   web-01")
    cache.put(key, worker_session_id=42, status="completed", text="/var/log is 38G")
    clock.now += 119
    again = cache.get(dispatch_key(7, "specialist-disk", "Check /var on web-01"))
    assert again is not None and again.worker_session_id == 42 and again.text == "/var/log is 38G"
    clock.now += 2  # 121 s after the put: a read does not extend the TTL
    assert cache.get(key) is None


def test_dedupe_keys_separate_personas_prompts_and_chats():
    base = dispatch_key(1, "specialist-disk", "p")
    assert base != dispatch_key(1, "specialist-compute", "p")
    assert base != dispatch_key(1, "specialist-disk", "q")
    assert base != dispatch_key(2, "specialist-disk", "p")
    assert canonical("  a \n b  ") == "a b"


def test_cache_is_bounded_least_recently_used_first():
    cache = DispatchCache(max_entries=2, clock=FakeClock())
    cache.put("a", 1, "completed", "A")
    cache.put("b", 2, "completed", "B")
    assert cache.get("a") is not None  # a is now most recent
    cache.put("c", 3, "completed", "C")
    assert cache.get("b") is None and cache.get("a") is not None and cache.get("c") is not None


# The stubs come from the manifests (each tool's `owner` and `also_redirects`): the coordinator is
# steered to the same specialist for the same names as when they were a hand-written list.
KUBERNETES_TOOLS = (
    "k8s_get",
    "k8s_describe",
    "k8s_events",
    "k8s_logs",
    "k8s_rollout_history",
    "k8s_top",
    "k8s_rollout_restart",
    "k8s_rollout_undo",
    "k8s_scale",
    "kubectl",
    "kubectl_get",
    "k8s_list",
    "kubectl_describe",
    "kubectl_logs",
)
EXPECTED_STUBS = {
    "get_host_load": "specialist-compute",
    "get_host_processes": "specialist-compute",
    "host_du_summary": "specialist-disk",
    "host_find_large_files": "specialist-disk",
    "host_stat_file": "specialist-disk",
    "host_probe_http": "specialist-network",
    "host_probe_dns": "specialist-network",
    "host_probe_tcp": "specialist-network",
    "host_bash": "specialist-ops",
    "host_restart_service": "specialist-ops",
    "correlate_incident": "incident-investigator",
    "query_logql": "incident-investigator",
    "query_traceql": "incident-investigator",
    "restart_service": "specialist-ops",
    "run_command": "specialist-ops",
    **{name: "specialist-k8s" for name in KUBERNETES_TOOLS},
}


def test_the_stubs_derived_from_the_manifests_send_each_name_to_its_owner():
    stubs = redirects()
    assert {stub.name: stub.specialist for stub in stubs} == EXPECTED_STUBS
    assert len(stubs) == len(EXPECTED_STUBS)  # no name twice
    assert all(stub.reason for stub in stubs)


def test_every_stub_redirects_to_a_specialist_with_a_ready_call():
    by_name = {stub.name: stub for stub in redirects()}

    payload = redirect_payload(by_name["host_du_summary"], {"device": "web-01", "path": "/var"})
    assert set(payload) == {"status", "hint", "reason", "suggested_call", "why_stub_exists"}
    assert payload["status"] == "redirect"
    assert 'subagent_type="specialist-disk"' in payload["suggested_call"]
    assert payload["suggested_call"].startswith("AgentTool(")
    assert "background" not in payload["suggested_call"]
    assert "web-01" in payload["suggested_call"]
    assert all(stub.specialist not in ("default", "reviewer") for stub in by_name.values())
