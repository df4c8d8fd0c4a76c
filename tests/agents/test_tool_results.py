"""What the model reads of a tool's answer (agents_app/tools/results.py): compact JSON, and long
lists shortened with their counts so the answer stays valid JSON within ONGRID_TOOL_RESULT_LIMIT."""

from __future__ import annotations

import dataclasses
import json

import pytest

from agents_app.tools.invoke import invoke_tool
from agents_app.tools.results import render
from tests.support.agents import context, make_tool

ROWS = [{"pod": f"api-{index:03d}", "phase": "Running", "restarts": index % 4} for index in range(500)]


def test_structures_are_sent_as_json_without_padding():
    assert render({"a": [1, 2], "b": "é"}) == '{"a":[1,2],"b":"é"}'
    assert render("as it is") == "as it is" and render(None) == "" and render(3) == "3"


def test_a_long_list_is_cut_with_its_count_and_the_answer_stays_valid_json():
    text = render({"cluster": "prod", "pods": ROWS, "total": 500}, 4000)
    assert len(text) <= 4000
    shaped = json.loads(text)
    assert shaped["cluster"] == "prod" and shaped["total"] == 500
    assert shaped["pods"][0] == ROWS[0]
    shown = len(shaped["pods"]) - 1
    assert shaped["pods"][-1] == f"… {500 - shown} more items (500 in all)"


def test_the_longest_list_is_cut_first():
    shaped = json.loads(render({"few": list(range(10)), "many": list(range(2000))}, 600))
    assert shaped["few"] == list(range(10)) and shaped["many"][-1].endswith("(2000 in all)")


@pytest.mark.django_db
async def test_a_tool_answer_past_the_limit_reaches_the_model_shortened_and_whole_strings_are_cut(
    org, settings
):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, tool_result_limit=3000)

    async def pods(ctx):
        return {"pods": ROWS}

    async def log(ctx):
        return {"log": "x" * 10_000}

    listed = await invoke_tool(make_tool("list_pods", pods), context(org), "{}")
    assert listed.status == "ok" and len(listed.content) <= 3000
    assert json.loads(listed.content)["pods"][-1].endswith("more items (500 in all)")

    cut = await invoke_tool(make_tool("read_log", log), context(org), "{}")
    assert "[truncated: showing 3000 of" in cut.content  # no list to shorten: cut as before
