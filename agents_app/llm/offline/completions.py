"""The two kinds of step the offline model takes: call tools, or give the final answer."""

from __future__ import annotations

from agents_app.llm.base import LLMCompletion, ToolCall


def final(text: str) -> LLMCompletion:
    return LLMCompletion(text=text, finish_reason="stop")


def calling(calls: list[ToolCall]) -> LLMCompletion:
    return LLMCompletion(text="", tool_calls=calls, finish_reason="tool_calls")
