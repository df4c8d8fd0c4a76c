"""Text to vectors through the organization's own model endpoint (`/v1/embeddings`).

Semantic search is on for an organization when its DEFAULT `LLMEndpoint` names an
`embedding_model`; otherwise everything is full-text. Calls use the openai SDK on the same
egress-checked HTTP client as the endpoint's other calls (`ops_app.core.outbound.llm_client`), so
an endpoint the egress policy refuses is refused here too.

A failure never raises into a search: it becomes `EmbeddingFailure` with a short fixed reason
(HTTP status, timeout, refused by the egress policy, malformed answer, wrong dimension) which is
also saved in `LLMEndpoint.embedding_error` for the admin. The server's own text is never kept.
"""

from __future__ import annotations

import math
import sys
from array import array
from dataclasses import dataclass

import openai
from django.utils.translation import gettext

from ops_app.core import outbound
from ops_app.core.egress import EgressRefused
from ops_app.models import LLMEndpoint

BATCH_SIZE = 64  # inputs per request: what every OpenAI-compatible server accepts
MAX_INPUT_CHARS = 8000  # a passage is <= 1400 characters; a question is cut, not refused
# A question is embedded while someone waits (a tool call, the incident page): it gets at most this
# long, whatever the endpoint's timeout for chat answers, before the search goes on with full-text.
QUESTION_TIMEOUT = 10.0


class EmbeddingFailure(Exception):
    """The endpoint did not give usable vectors; `reason` is short and safe to show."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Embedder:
    """The organization's embedding model on its default endpoint."""

    endpoint: LLMEndpoint

    @property
    def model(self) -> str:
        return self.endpoint.embedding_model

    def embed(
        self, texts: list[str], dimension: int | None = None, timeout: float | None = None
    ) -> list[array]:
        """Unit vectors for `texts`, in order, in batches of BATCH_SIZE. `dimension`, when known
        (the stored vectors'), is what every vector must have; `timeout` caps the endpoint's."""
        vectors: list[array] = []
        client = _client(self.endpoint, timeout)
        try:
            for start in range(0, len(texts), BATCH_SIZE):
                batch = [(t or " ")[:MAX_INPUT_CHARS] for t in texts[start : start + BATCH_SIZE]]
                vectors.extend(_request(client, self.model, batch, dimension or _dimension(vectors)))
        finally:
            client.close()
        return vectors


def embedder_for(organization_id: int) -> Embedder | None:
    """The organization's embedder, or None when semantic search is off (no default endpoint
    with an embedding model)."""
    endpoint = (
        LLMEndpoint.objects.for_organization(organization_id)
        .filter(is_default=True)
        .exclude(embedding_model="")
        .first()
    )
    return Embedder(endpoint) if endpoint is not None else None


def record_outcome(endpoint: LLMEndpoint, reason: str) -> None:
    """Save the last embedding error (or clear it) without touching the endpoint's other fields."""
    reason = reason[:300]
    if endpoint.embedding_error != reason:
        endpoint.embedding_error = reason
        LLMEndpoint.objects.filter(pk=endpoint.pk).update(embedding_error=reason)


def to_bytes(vector: array) -> bytes:
    """Little-endian float32, as `KnowledgePassage.embedding` stores it."""
    copy = array("f", vector)
    if copy.itemsize != 4:  # pragma: no cover - every supported platform has 4-byte floats
        raise RuntimeError("float32 arrays are required")
    if sys.byteorder != "little":  # pragma: no cover
        copy.byteswap()
    return copy.tobytes()


def from_bytes(data: bytes | memoryview) -> array:
    vector = array("f")
    vector.frombytes(bytes(data))
    if sys.byteorder != "little":  # pragma: no cover
        vector.byteswap()
    return vector


def _client(endpoint: LLMEndpoint, timeout: float | None = None) -> openai.OpenAI:
    return openai.OpenAI(
        api_key=endpoint.api_key or "not-set",
        base_url=endpoint.base_url or None,
        timeout=min(endpoint.timeout, timeout) if timeout else endpoint.timeout,
        max_retries=0,
        http_client=outbound.llm_client(),
    )


def _dimension(vectors: list[array]) -> int | None:
    return len(vectors[0]) if vectors else None


def _request(client: openai.OpenAI, model: str, batch: list[str], dimension: int | None) -> list[array]:
    try:
        answer = client.embeddings.create(model=model, input=batch, encoding_format="float")
    except openai.AuthenticationError:
        raise EmbeddingFailure(gettext("the endpoint refused the API key")) from None
    except openai.APIStatusError as error:
        raise EmbeddingFailure(outbound.status_reason(error.status_code)) from None
    except (openai.APIConnectionError, EgressRefused) as error:  # timeouts too; the cause says which
        raise EmbeddingFailure(outbound.failure_reason(error)) from None
    except (openai.APIError, ValueError, TypeError, AttributeError, KeyError):
        raise EmbeddingFailure(_malformed()) from None
    return _vectors(answer, len(batch), dimension)


def _vectors(answer: object, expected: int, dimension: int | None) -> list[array]:
    """The answer's vectors in input order, normalised; a malformed answer or one of the wrong
    dimension is an EmbeddingFailure."""
    try:
        rows = sorted(answer.data, key=lambda row: row.index)  # type: ignore[attr-defined]
        raw = [[float(x) for x in row.embedding] for row in rows]
    except (AttributeError, TypeError, ValueError):
        raise EmbeddingFailure(_malformed()) from None
    if len(raw) != expected or not raw or not raw[0]:
        raise EmbeddingFailure(_malformed())
    size = dimension or len(raw[0])
    if any(len(values) != size for values in raw):
        raise EmbeddingFailure(gettext("the vectors have the wrong dimension"))
    return [normalised(values) for values in raw]


def normalised(values: list[float]) -> array:
    norm = math.sqrt(sum(x * x for x in values))
    if not math.isfinite(norm):
        raise EmbeddingFailure(_malformed())
    return array("f", [x / norm for x in values] if norm else values)


def _malformed() -> str:
    return gettext("the answer is not an OpenAI-compatible list of embeddings")
