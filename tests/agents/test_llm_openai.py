"""OpenAIProvider against the fake OpenAI-compatible server, through the real openai SDK."""

from __future__ import annotations

import dataclasses

import openai
import pytest
from django.conf import settings

from agents_app.llm import get_provider
from agents_app.llm.base import LLMCompletion, LLMDelta, LLMError, LLMRetrying
from agents_app.llm.offline import OfflineProvider
from agents_app.llm.openai_provider import OpenAIProvider
from fakes.openai_server import FakeLLM, Reply, call, error, text, tool_calls
from ongrid_site import config
from tests.support.agents import provider_for

USER = [{"role": "user", "content": "hello"}]
TOOL = [{"type": "function", "function": {"name": "query_promql", "parameters": {"type": "object"}}}]


async def collect(provider, messages=USER, tools=TOOL, model=None):
    deltas, completion = [], None
    async for event in provider.stream_chat(messages, tools, model=model):
        if isinstance(event, LLMDelta):
            deltas.append(event.text)
        elif not isinstance(event, LLMRetrying):
            assert isinstance(event, LLMCompletion)
            completion = event
    return deltas, completion


async def test_streams_text_in_pieces_and_reports_usage(fake_llm):
    fake_llm.script(
        text(
            "The disk on web-01 is 91% full.",
            chunk_size=4,
            usage={"prompt_tokens": 30, "completion_tokens": 9},
        )
    )
    deltas, completion = await collect(provider_for(fake_llm))
    assert len(deltas) > 3
    assert "".join(deltas) == completion.text == "The disk on web-01 is 91% full."
    assert completion.usage == {"prompt_tokens": 30, "completion_tokens": 9}
    assert completion.finish_reason == "stop"
    sent = fake_llm.chat_requests[0]
    assert sent.body["stream"] is True and sent.body["model"] == "fake-model"
    assert sent.messages == USER and sent.tool_names == ["query_promql"]
    assert sent.headers["authorization"] == "Bearer test-key"


async def test_the_request_body_is_exactly_what_the_runtime_built(fake_llm):
    """The body is sent as built (through `extra_body`, bench/README.md): every message, every
    tool schema and option arrive unchanged, and no typed placeholder leaks into the request."""
    messages = [
        {"role": "system", "content": "You are the `default` agent."},
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "query_promql", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"status": "success"}'},
    ]  # fmt: skip
    schema = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
    function = {"name": "query_promql", "description": "PromQL", "parameters": schema}
    tools = [{"type": "function", "function": function}]
    fake_llm.script(text("ok"))
    provider = provider_for(fake_llm)
    async for _event in provider.stream_chat(messages, tools, temperature=0.2):
        pass
    assert fake_llm.chat_requests[0].body == {
        "model": "fake-model",
        "stream": True,
        "messages": messages,
        "tools": tools,
        "stream_options": {"include_usage": True},
        "temperature": 0.2,
    }


async def test_tool_call_arguments_split_across_chunks_are_reassembled(fake_llm):
    arguments = {"query": 'sum(rate(http_requests_total{job="api"}[5m]))', "step": "30s"}
    fake_llm.script(
        tool_calls(
            call("query_promql", arguments, id="c1"), call("query_devices", {"name": "web-01"}), chunk_size=3
        )
    )
    _, completion = await collect(provider_for(fake_llm))
    assert [c.name for c in completion.tool_calls] == ["query_promql", "query_devices"]
    assert completion.tool_calls[0].id == "c1"
    import json

    assert json.loads(completion.tool_calls[0].arguments_raw) == arguments
    assert json.loads(completion.tool_calls[1].arguments_raw) == {"name": "web-01"}
    assert completion.finish_reason == "tool_calls"


async def test_malformed_arguments_are_passed_through_verbatim(fake_llm):
    fake_llm.script(tool_calls(call("query_promql", '{"query": "up"', id="bad")))
    _, completion = await collect(provider_for(fake_llm))
    assert completion.tool_calls[0].arguments_raw == '{"query": "up"'


async def test_retries_429_and_500_then_succeeds(fake_llm):
    fake_llm.script(error(429, "slow down"), error(500), text("recovered"))
    _, completion = await collect(provider_for(fake_llm, max_retries=3))
    assert completion.text == "recovered"
    assert len(fake_llm.chat_requests) == 3


async def test_retries_exhausted_raise_a_clear_retryable_error(fake_llm):
    fake_llm.script(error(503), error(503), error(503), text("never reached"))
    with pytest.raises(LLMError) as caught:
        await collect(provider_for(fake_llm, max_retries=2))
    assert caught.value.retryable
    assert "HTTP 503" in caught.value.message and "3 attempts" in caught.value.message
    assert len(fake_llm.chat_requests) == 3
    assert fake_llm.pending() == 1


async def test_a_slow_endpoint_times_out_and_is_not_retried(fake_llm):
    """ONGRID_LLM_TIMEOUT is the whole wait for a silent endpoint, not the wait per attempt."""
    fake_llm.script(Reply(text="too late", delay=2.0), text("in time"))
    with pytest.raises(LLMError) as caught:
        await collect(provider_for(fake_llm, timeout=0.5, max_retries=1))
    assert "did not answer within 0.5 s (ONGRID_LLM_TIMEOUT)" in caught.value.message
    assert not caught.value.retryable
    assert len(fake_llm.chat_requests) == 1


async def test_bad_api_key_is_not_retried_and_names_the_setting():
    with FakeLLM(api_key="the-right-key") as fake:
        with pytest.raises(LLMError) as caught:
            await collect(provider_for(fake, max_retries=3))
        assert len(fake.chat_requests) == 1
    assert not caught.value.retryable
    assert "OPENAI_API_KEY" in caught.value.message and caught.value.status == 401


async def test_unknown_model_is_not_retried_and_names_the_model(fake_llm):
    fake_llm.strict_models = True
    with pytest.raises(LLMError) as caught:
        await collect(provider_for(fake_llm), model="gpt-nonexistent")
    assert "'gpt-nonexistent' was not found" in caught.value.message
    assert "ONGRID_MODEL" in caught.value.message
    assert len(fake_llm.chat_requests) == 1


async def test_unreachable_endpoint_is_a_retryable_connection_error(fake_llm):
    provider = provider_for(fake_llm, max_retries=1)
    fake_llm.stop()
    with pytest.raises(LLMError) as caught:
        await collect(provider)
    assert caught.value.retryable and "cannot reach" in caught.value.message


async def test_fake_serves_plain_json_and_models_to_the_sdk(fake_llm):
    fake_llm.script(tool_calls(call("query_devices", {"name": "db-02"}), text="checking"))
    client = openai.AsyncOpenAI(api_key="x", base_url=fake_llm.base_url, max_retries=0)
    reply = await client.chat.completions.create(model="fake-model", messages=USER)
    assert reply.choices[0].message.content == "checking"
    assert reply.choices[0].message.tool_calls[0].function.arguments == '{"name": "db-02"}'
    models = await client.models.list()
    assert [m.id for m in models.data] == ["fake-model"]
    await client.close()


def test_get_provider_follows_settings(monkeypatch):
    base = settings.CONFIG
    monkeypatch.setattr(
        settings,
        "CONFIG",
        dataclasses.replace(
            base, llm="openai", openai_api_key="k", openai_base_url="http://127.0.0.1:9/v1", model="m1"
        ),
    )
    chosen = get_provider()
    assert isinstance(chosen, OpenAIProvider)
    assert (chosen.base_url, chosen.default_model(), chosen.api_key) == ("http://127.0.0.1:9/v1", "m1", "k")
    assert isinstance(get_provider("offline"), OfflineProvider)
    monkeypatch.setattr(settings, "CONFIG", dataclasses.replace(base, llm="offline"))
    assert isinstance(get_provider(), OfflineProvider)


def test_llm_and_tool_limits_come_from_the_environment():
    loaded = config.load(
        {
            "SECRET_KEY": "x",
            "ONGRID_LLM_TIMEOUT": "12.5",
            "ONGRID_LLM_MAX_RETRIES": "0",
            "ONGRID_TOOL_RESULT_LIMIT": "4000",
            "ONGRID_METRICS_TOKEN": "t",
        }
    )
    assert (loaded.llm_timeout, loaded.llm_max_retries, loaded.tool_result_limit) == (12.5, 0, 4000)
    assert loaded.metrics_token == "t"
    defaults = config.load({"SECRET_KEY": "x"})
    assert (defaults.llm_timeout, defaults.llm_max_retries, defaults.tool_result_limit) == (60.0, 3, 16000)
    with pytest.raises(config.ConfigError, match="ONGRID_LLM_TIMEOUT must be a number"):
        config.load({"SECRET_KEY": "x", "ONGRID_LLM_TIMEOUT": "soon"})
    with pytest.raises(config.ConfigError, match="ONGRID_TOOL_RESULT_LIMIT must be at least 200"):
        config.load({"SECRET_KEY": "x", "ONGRID_TOOL_RESULT_LIMIT": "10"})


async def test_the_fake_serves_other_processes(fake_llm):
    import asyncio
    import sys

    fake_llm.script(text("hello from another process"))
    program = (
        "import openai, sys\n"
        "client = openai.OpenAI(api_key='x', base_url=sys.argv[1], max_retries=0)\n"
        "ask = [{'role': 'user', 'content': 'hi'}]\n"
        "reply = client.chat.completions.create(model='fake-model', messages=ask)\n"
        "print(reply.choices[0].message.content)\n"
    )
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", program, fake_llm.base_url, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await asyncio.wait_for(child.communicate(), timeout=60)
    assert child.returncode == 0
    assert out.decode().strip() == "hello from another process"
    assert fake_llm.chat_requests[0].messages == [{"role": "user", "content": "hi"}]


class _RawStream:
    """The lines of a server-sent event stream, as the SDK's raw response hands them over."""

    http_request = None

    def __init__(self, *lines: str):
        self.lines = lines

    async def iter_lines(self):
        for line in self.lines:
            yield line


async def _read(*lines: str) -> list[dict]:
    from agents_app.llm.openai_provider import _events

    return [event async for event in _events(_RawStream(*lines))]


async def test_the_event_stream_is_read_line_by_line_without_the_sdks_chunk_models():
    events = await _read(
        ": keep-alive comment",
        'data: {"choices": [{"delta": {"content": "Hel"}}]}',
        "",
        'data: {"choices": [{"delta":',
        'data: {"content": "lo"}}]}',
        "",
        "data: [DONE]",
        'data: {"choices": [{"delta": {"content": "after the end"}}]}',
    )
    assert [e["choices"][0]["delta"]["content"] for e in events] == ["Hel", "lo"]


async def test_an_error_event_mid_stream_is_the_sdks_api_error():
    with pytest.raises(openai.APIError, match="model overloaded"):
        await _read('data: {"choices": []}', 'data: {"error": {"message": "model overloaded"}}')


async def test_model_calls_reuse_one_keep_alive_connection(fake_llm):
    """The stream is read past [DONE] to its end, so its connection goes back to the pool: no new
    TCP (on a real endpoint, TLS) handshake per model call."""
    provider = provider_for(fake_llm)
    fake_llm.script(text("one"), tool_calls(call("query_promql", {"query": "up"})), text("three"))
    answers = [(await collect(provider))[1] for _ in range(3)]
    assert [a.text for a in answers] == ["one", "", "three"] and answers[1].tool_calls
    assert fake_llm.connections == 1


async def test_a_stream_left_open_after_done_still_ends_the_call_with_its_answer(fake_llm, monkeypatch):
    """A server that holds the stream open after [DONE] costs its connection, not the reply."""
    monkeypatch.setattr("agents_app.llm.openai_provider.DRAIN_SECONDS", 0.2)
    provider = provider_for(fake_llm)
    fake_llm.script(text("complete answer", linger=5.0), text("next"))
    _, first = await collect(provider)
    _, second = await collect(provider)
    assert (first.text, second.text) == ("complete answer", "next")
    assert fake_llm.connections == 2  # the lingering stream's connection was given up
