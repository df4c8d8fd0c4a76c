"""Local stand-ins that speak a documented wire format, for the test suite and the benchmarks.

`openai_server`: an OpenAI-compatible chat-completions server with scripted replies (streamed SSE
with tool-call arguments split across chunks, error injection, a record of every request), which
the product reaches through the real openai SDK via `OPENAI_BASE_URL`. Nothing in the product
imports this package.
"""
