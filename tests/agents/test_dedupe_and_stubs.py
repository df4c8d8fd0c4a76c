from __future__ import annotations

from agents_app.runtime.dedupe import DispatchCache, canonical, dispatch_key
from agents_app.runtime.redirect_stubs import STUBS, STUBS_BY_NAME, redirect_payload


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


def test_every_stub_redirects_to_a_specialist_with_a_ready_call():
    assert len(STUBS_BY_NAME) == len(STUBS)
    payload = redirect_payload(STUBS_BY_NAME["host_du_summary"], {"device": "web-01", "path": "/var"})
    assert set(payload) == {"status", "hint", "reason", "suggested_call", "why_stub_exists"}
    assert payload["status"] == "redirect"
    assert 'subagent_type="specialist-disk"' in payload["suggested_call"]
    assert payload["suggested_call"].startswith("AgentTool(")
    assert "background" not in payload["suggested_call"]
    assert "web-01" in payload["suggested_call"]
    assert all(stub.specialist not in ("default", "reviewer") for stub in STUBS)
