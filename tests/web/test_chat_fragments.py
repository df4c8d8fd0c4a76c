"""What the chat socket sends: fragments for each runtime event, escaped, with charts."""

from __future__ import annotations

from django.utils import translation

from agents_app.runtime import events
from web_app.charts import chart_for_tool, series_label
from web_app.chat import fragments

RANGE_RESULT = {
    "resultType": "matrix",
    "series": [
        {
            "labels": {"__name__": "node_load1", "instance": "web-01"},
            "points": [[0, 0.5], [60, 1.5], [120, 1.0]],
        },
        {
            "labels": {"__name__": "node_load1", "instance": "web-02"},
            "points": [[0, 0.1], [60, None], [120, 0.2]],
        },
    ],
}


def test_streamed_text_is_redrawn_as_sanitised_markdown_in_the_turn_bubble():
    model = '## Load\n\n**busy** <img src=x onerror="alert(1)"><script>alert(2)</script> & more'
    html = fragments.stream_so_far(7, model + "\n\n| a |\n|---|\n| 1 |")
    assert html.startswith('<div id="stream-7" hx-swap-oob="innerHTML">')
    assert "<h2>Load</h2>" in html and "<strong>busy</strong>" in html and "<td>1</td>" in html
    assert "<img" not in html and "<script" not in html and "onerror" not in html and "&amp; more" in html


def test_a_lead_in_becomes_its_own_bubble_and_empties_the_stream():
    html = fragments.lead_in(7, "I'll ask the **disk** specialist.")
    assert 'hx-swap-oob="beforeend:#activity-7"><div class="bubble assistant lead">' in html
    assert "<strong>disk</strong>" in html
    assert html.endswith('<div id="stream-7" hx-swap-oob="innerHTML"></div>')


def test_tool_chip_escapes_tool_output_and_shows_status_and_duration():
    started = fragments.tool_started(
        3, events.ToolStarted(1, call_id="c1", tool="query_incidents", arguments_raw='{"status": "firing"}')
    )
    assert 'hx-swap-oob="beforeend:#activity-3"' in started and 'id="chip-c1"' in started
    assert "status=firing" in started and "running" in started
    ended = fragments.tool_ended(
        3,
        events.ToolEnded(
            1,
            call_id="c1",
            tool="query_incidents",
            status="ok",
            content="<img src=x onerror=alert(1)>",
            duration_ms=12,
        ),
    )
    assert 'id="chip-c1"' in ended and 'hx-swap-oob="true"' in ended
    assert "<img" not in ended and "&lt;img src=x onerror=alert(1)&gt;" in ended
    assert "12 ms" in ended


def test_control_tools_get_tiles_not_chips_unless_deduped_or_refused():
    assert (
        fragments.tool_started(1, events.ToolStarted(1, call_id="a", tool="AgentTool", arguments_raw="{}"))
        == ""
    )
    done = {"call_id": "a", "tool": "AgentTool", "content": "{}", "duration_ms": 3}
    assert fragments.tool_ended(1, events.ToolEnded(1, **done, status="ok")) == ""
    deduped = fragments.tool_ended(
        1, events.ToolEnded(1, **{**done, "content": '{"hint": "already dispatched"}'}, status="deduped")
    )
    assert "beforeend:#activity-1" in deduped and "deduped" in deduped and "already dispatched" in deduped


def test_worker_tile_lifecycle_and_result_rendered_as_safe_markdown():
    worker = events.WorkerStarted(9, persona="specialist-disk", description="Check /var")
    tile = fragments.tile_context(worker)
    new = fragments.worker_started(4, worker, 2)
    assert "beforeend:#activity-4" in new and 'id="tile-9"' in new and "specialist-disk" in new
    assert "/chat/2/workers/9/stop/" in new
    tile.update(
        status="completed", result=fragments.render_markdown("**38G** in /var/log <script>x</script>")
    )
    done = fragments.worker_changed(tile, 2)
    assert "<strong>38G</strong>" in done and "<script>" not in done
    assert "/workers/9/stop/" not in done  # no Stop once finished


def test_final_answer_is_markdown_and_errors_are_plain():
    ok = fragments.turn_ended(5, events.TurnEnded(2, status="completed", text="Use `df -h`"), 2)
    assert 'id="stream-5"' in ok and "<code>df -h</code>" in ok
    failed = fragments.turn_ended(5, events.TurnEnded(2, status="failed", error="LLM unreachable <b>"), 2)
    assert 'role="alert"' in failed and "LLM unreachable &lt;b&gt;" in failed


def test_promql_range_results_become_a_chart_with_a_legend():
    svg = chart_for_tool("query_promql", RANGE_RESULT)
    assert svg.count("<polyline") == 2
    assert 'node_load1{instance="web-01"}' in svg.replace("&quot;", '"')
    assert chart_for_tool("query_promql", {"series": []}) == ""
    assert chart_for_tool("query_incidents", RANGE_RESULT) == ""
    assert series_label({}) == "{}"


def test_a_worker_tile_lists_each_tool_call_as_it_starts_and_ends_even_with_a_reused_id():
    tile = fragments.tile_context(
        events.WorkerStarted(9, persona="specialist-disk", description="Check /var")
    )
    first = fragments.worker_tool_started(
        tile,
        events.ToolStarted(
            9, worker=True, call_id="c", tool="host_du_summary", arguments_raw='{"device": "web-01"}'
        ),
        2,
    )
    assert "beforeend:#tile-tools-9" in first and 'id="tile-9-tool-0"' in first and "running" in first
    assert "device=web-01" in first
    fragments.worker_tool_started(tile, events.ToolStarted(9, worker=True, call_id="c", tool="host_df"), 2)
    ended = fragments.worker_tool_ended(
        tile,
        events.ToolEnded(9, worker=True, call_id="c", tool="host_df", status="error", duration_ms=41),
        audit=True,
    )
    assert 'id="tile-9-tool-1"' in ended and "error · 41 ms" in ended  # the newest running one
    assert "/audit/sessions/9/calls/c/" in ended
    assert [t["status"] for t in tile["tools"]] == ["running", "error"]
    member_view = fragments.worker_tool_ended(
        tile,
        events.ToolEnded(9, worker=True, call_id="c", tool="host_du_summary", status="ok", duration_ms=5),
    )
    assert "ok · 5 ms" in member_view and "/audit/" not in member_view  # no audit link for members


def test_the_turn_end_folds_the_worker_results():
    tile = fragments.tile_context(events.WorkerStarted(9, persona="specialist-disk"))
    tile.update(status="completed", result=fragments.render_answer("38G in /var/log"))
    assert '<details class="tile-result" open>' in fragments.worker_changed(tile, 2)
    ended = fragments.turn_ended(
        5, events.TurnEnded(2, status="completed", text="Rotated logs."), 2, tiles=(tile,)
    )
    assert '<details class="tile-result">' in ended and "Rotated logs." in ended


def test_the_words_the_server_puts_in_the_chat_follow_the_active_language():
    """Statuses, stop lines and the queued notice are shown in the reader's language (the socket
    renders them with the viewer's language active); the stored English reason is only parsed."""
    ended = events.ToolEnded(1, call_id="c1", tool="query_incidents", status="timeout", duration_ms=5)
    note = "Stopped by alice before the answer was complete. Cut off: nothing was running."
    with translation.override("es"):
        chip = fragments.tool_ended(3, ended)
        assert "tiempo agotado · 5 ms" in chip and 'class="chip timeout"' in chip
        assert fragments.for_viewer(note, "alice") == (
            "Detenido por ti antes de completar la respuesta. Se interrumpió: no había nada en curso."
        )
        assert fragments.stopped_label("killed", "stopped by bob") == "Detenido por bob"
        assert "En cola: todos los workers están ocupados" in fragments.turn_queued()
    with translation.override("zh-hans"):
        tile = fragments.tile_context(events.WorkerStarted(9, status="running"))
        assert ">运行中<" in fragments.worker_changed(tile, 1)
    with translation.override("en"):
        assert fragments.for_viewer(note, "alice") == (
            "Stopped by you before the answer was complete. Cut off: nothing was running."
        )
        assert fragments.for_viewer("stopped by bob", "alice") == "Stopped by bob"
