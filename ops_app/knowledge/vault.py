"""The knowledge vault: turning runbooks and uploads into passages, and finding the right one.

Writes go through `save_document` (store the text; a no-op when nothing changed) and
`index_document` (chunk and index; a no-op when the passages already match the text). Vault
directories are mirrored by `sync_vault`. The Celery tasks in `ops_app.tasks` call these.

Retrieval (`search`) asks the database's full-text engine for candidates (see
`ops_app.knowledge.fulltext`) and scores them here with one engine-independent formula:

    score = 0.55 × coverage(passage) + 0.20 × coverage(whole document) + 0.25 × coverage(title, heading)

where coverage is the IDF-weighted share of the question's words the text contains. A score of
1.0 means every word of the question is in the passage and in its headings; a question about
something the vault never mentions scores low however long the vault is. That is why the
specialists' rule "follow the runbook when its score is at least 0.6" behaves the same on
SQLite and PostgreSQL. "Words" are the terms of `ops_app.knowledge.languages` (accents folded,
es/fr/en endings stemmed, CJK as character bigrams), the same for indexing and scoring.
"""

from __future__ import annotations

import hashlib
import io
import math
import re
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

import frontmatter
from django.db import connection, transaction
from pypdf import PdfReader, apply_configuration
from pypdf.errors import LimitReachedError, PyPdfError

from ops_app.knowledge import background, fulltext, languages
from ops_app.knowledge.languages import STOPWORDS, stem  # noqa: F401 - re-exported
from ops_app.models import KnowledgeDocument, KnowledgePassage, Organization

MAX_PASSAGE_CHARS = 1400
MAX_UPLOAD_BYTES = 5 * 1024 * 1024
MAX_PDF_STREAM_BYTES = 16 * 1024 * 1024  # decompressed, per stream
MAX_PDF_CONTENT_BYTES = 64 * 1024 * 1024  # decompressed page contents, the whole document
MAX_PDF_PAGES = 1000
MAX_EXTRACTED_CHARS = 5 * 1024 * 1024
# A JSON upload carries up to MAX_UPLOAD_BYTES of text, which JSON escaping can double.
MAX_JSON_UPLOAD_BODY = 2 * MAX_UPLOAD_BYTES + 64 * 1024
CANDIDATE_LIMIT = 300
SNIPPET_CHARS = 280
UPLOAD_SUFFIXES = {".md", ".markdown", ".txt", ".text", ".log", ".pdf"}


class KnowledgeInputError(ValueError):
    """An upload that cannot become a document (wrong type, too big, no text)."""


# --- text processing shared by indexing and scoring ----------------------------------------------


def words_of(text: str) -> list[str]:
    """The terms of a text as indexing and scoring see them (see `ops_app.knowledge.languages`)."""
    return languages.terms(text)


def query_words(query: str, limit: int = 24) -> list[str]:
    """The searchable terms of a question, in order, without stop words or repeats (already
    folded and stemmed: what the index holds)."""
    return languages.query_terms(query, limit)


def search_text_of(title: str, heading: str, text: str) -> str:
    """What the database engines index: the folded terms, space-separated, so SQLite's plain
    `unicode61` and PostgreSQL's `simple` configuration see the very same terms."""
    return languages.search_text(title, heading, text)


def content_hash(title: str, content: str) -> str:
    return hashlib.sha256(f"{title}\0{content}".encode()).hexdigest()


# --- chunking -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Chunk:
    heading: str
    text: str


_HEADING = re.compile(r"^(#{1,4})\s+(.+?)\s*#*\s*$")


def chunk_markdown(markdown: str) -> list[Chunk]:
    """One chunk per section (H2-H4; the H1 is the title), long sections split by paragraphs."""
    chunks: list[Chunk] = []
    heading, lines = "", []
    in_code = False
    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            in_code = not in_code
        match = None if in_code else _HEADING.match(line)
        if match:
            chunks.extend(_split_section(heading, "\n".join(lines)))
            heading, lines = (match.group(2) if len(match.group(1)) > 1 else ""), []
            continue
        lines.append(line)
    chunks.extend(_split_section(heading, "\n".join(lines)))
    return chunks


def chunk_text(text: str) -> list[Chunk]:
    return _split_section("", text)


def _split_section(heading: str, body: str) -> list[Chunk]:
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", body) if p.strip()]
    chunks: list[Chunk] = []
    current: list[str] = []
    for paragraph in paragraphs:
        for piece in _hard_wrap(paragraph):
            if current and sum(len(p) + 2 for p in current) + len(piece) > MAX_PASSAGE_CHARS:
                chunks.append(Chunk(heading, "\n\n".join(current)))
                current = []
            current.append(piece)
    if current:
        chunks.append(Chunk(heading, "\n\n".join(current)))
    return chunks


def _hard_wrap(paragraph: str) -> list[str]:
    if len(paragraph) <= MAX_PASSAGE_CHARS:
        return [paragraph]
    return [paragraph[i : i + MAX_PASSAGE_CHARS] for i in range(0, len(paragraph), MAX_PASSAGE_CHARS)]


def title_of(markdown: str, fallback: str) -> tuple[str, str]:
    """(title, body): front matter `title`, else the first H1, else the fallback."""
    try:
        post = frontmatter.loads(markdown)
        body, meta_title = post.content, str(post.metadata.get("title") or "").strip()
    except Exception:  # malformed front matter: treat the whole text as the body
        body, meta_title = markdown, ""
    if meta_title:
        return meta_title[:300], body
    for line in body.splitlines():
        match = _HEADING.match(line)
        if match and len(match.group(1)) == 1:
            return match.group(2)[:300], body
    return fallback[:300], body


# --- uploads --------------------------------------------------------------------------------------


def extract_text(filename: str, data: bytes) -> str:
    """The text of an uploaded Markdown, plain-text or PDF file, or a KnowledgeInputError."""
    suffix = Path(filename).suffix.lower()
    if suffix not in UPLOAD_SUFFIXES:
        raise KnowledgeInputError(
            f"unsupported file type {suffix or '(none)'}; upload Markdown (.md), text (.txt) or PDF (.pdf)"
        )
    if len(data) > MAX_UPLOAD_BYTES:
        raise KnowledgeInputError(f"the file is {len(data)} bytes; the limit is {MAX_UPLOAD_BYTES} bytes")
    if suffix == ".pdf":
        text = _pdf_text(data)
    else:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise KnowledgeInputError("the file is not UTF-8 text") from None
    if not text.strip():
        raise KnowledgeInputError("the file contains no text")
    return text


def _pdf_text(data: bytes) -> str:
    """The text of a PDF, bounded: every stream decompresses to at most MAX_PDF_STREAM_BYTES and
    all page contents together to MAX_PDF_CONTENT_BYTES, at most MAX_PDF_PAGES pages are read, and
    the text stops at MAX_EXTRACTED_CHARS."""
    if not data.startswith(b"%PDF-"):
        raise KnowledgeInputError("the file is not a PDF")
    limits = {
        name: MAX_PDF_STREAM_BYTES
        for name in (
            "zlib_maximum_output_length",
            "lzw_maximum_output_length",
            "run_length_maximum_output_length",
            "jbig2_maximum_output_length",
            "brotli_maximum_output_length",
            "array_based_stream_maximum_output_length",
            "image_maximum_buffer_size",
            "maximum_declared_stream_length",
        )
    }
    pages: list[str] = []
    total = 0
    try:
        with apply_configuration(**limits):
            reader = PdfReader(io.BytesIO(data))
            count = len(reader.pages)
            if count > MAX_PDF_PAGES:
                raise KnowledgeInputError(f"the PDF has {count} pages; the limit is {MAX_PDF_PAGES}")
            decoded = 0
            for page in reader.pages:
                contents = page.get_contents()
                decoded += len(contents.get_data()) if contents is not None else 0
                if decoded > MAX_PDF_CONTENT_BYTES:
                    raise LimitReachedError("page contents")
                text = page.extract_text() or ""
                total += len(text)
                if total > MAX_EXTRACTED_CHARS:
                    raise KnowledgeInputError(
                        f"the PDF's text is longer than {MAX_EXTRACTED_CHARS} characters; split the document"
                    )
                pages.append(text)
    except KnowledgeInputError:
        raise
    except LimitReachedError:
        raise KnowledgeInputError(
            f"the PDF decompresses to more than {MAX_PDF_STREAM_BYTES} bytes in one stream or "
            f"{MAX_PDF_CONTENT_BYTES} bytes of page contents; it is refused (a compression bomb, "
            "or far too large for the vault)"
        ) from None
    except (PyPdfError, ValueError, KeyError, TypeError, RecursionError, OverflowError) as exc:
        raise KnowledgeInputError(f"the PDF cannot be read ({exc})") from None
    text = "\n\n".join(p.strip() for p in pages if p.strip())
    if not text:
        raise KnowledgeInputError("the PDF has no extractable text (a scanned image?)")
    return text


def safe_filename(name: str) -> str:
    base = Path(name.replace("\\", "/")).name.strip()
    return re.sub(r"[^\w.\- ]", "_", base)[:200] or "upload.txt"


# --- writes ---------------------------------------------------------------------------------------


def save_document(
    organization: Organization | int,
    *,
    kind: str,
    source: str,
    title: str,
    content: str,
    url: str = "",
    repository_id: int | None = None,
    incident_id: int | None = None,
) -> tuple[KnowledgeDocument, bool]:
    """Store the document's text. Returns (document, changed); unchanged text writes nothing.

    `url`, `repository_id` and `incident_id` say where a document comes from (a Git repository's
    file, a past incident's page); they are part of what "unchanged" compares."""
    org_id = organization if isinstance(organization, int) else organization.pk
    digest = content_hash(title, content)
    existing = KnowledgeDocument.objects.filter(
        organization_id=org_id, source_kind=kind, source=source
    ).first()
    links = {"url": url[:1000], "repository_id": repository_id, "incident_id": incident_id}
    if (
        existing is not None
        and existing.content_hash == digest
        and all(getattr(existing, name) == value for name, value in links.items())
    ):
        return existing, False
    document, _ = KnowledgeDocument.objects.update_or_create(
        organization_id=org_id,
        source_kind=kind,
        source=source,
        defaults={"title": title, "content": content, "content_hash": digest, **links},
    )
    return document, True


def index_document(document_id: int) -> int:
    """(Re)build a document's passages; a no-op when they already match its text. Returns the count."""
    with transaction.atomic():
        document = KnowledgeDocument.objects.select_for_update().get(pk=document_id)
        if document.is_indexed:
            return document.passages.count()
        is_markdown = (
            document.source_kind == KnowledgeDocument.Source.VAULT
            or document.source.lower().endswith((".md", ".markdown"))
        )
        chunks = chunk_markdown(document.content) if is_markdown else chunk_text(document.content)
        kept = background.vectors_by_hash(document)  # unchanged passages keep their vectors
        document.passages.all().delete()
        KnowledgePassage.objects.bulk_create(
            background.with_kept_vector(
                KnowledgePassage(
                    organization_id=document.organization_id,
                    document=document,
                    position=position,
                    heading=chunk.heading[:300],
                    text=chunk.text,
                    search_text=search_text_of(document.title, chunk.heading, chunk.text),
                ),
                kept,
            )
            for position, chunk in enumerate(chunks)
        )
        document.indexed_hash = document.content_hash
        document.language = languages.detect_language(f"{document.title}\n{document.content[:20000]}")
        document.save(update_fields=["indexed_hash", "language", "updated_at"])
        background.schedule(document.organization_id)  # the new passages' vectors, after the commit
        return len(chunks)


def ingest(
    organization: Organization | int, *, kind: str, source: str, title: str, content: str, **links
) -> dict:
    """Save and index in one go (what the Celery task runs). Reports what happened."""
    document, changed = save_document(
        organization, kind=kind, source=source, title=title, content=content, **links
    )
    if not changed and document.is_indexed:
        return {"document_id": document.pk, "status": "unchanged", "passages": document.passages.count()}
    passages = index_document(document.pk)
    return {"document_id": document.pk, "status": "indexed", "passages": passages}


@dataclass
class VaultReport:
    indexed: list[str]
    unchanged: list[str]
    removed: list[str]
    errors: list[str]


def sync_vault(organization: Organization | int, directory: Path) -> VaultReport:
    """Mirror every Markdown file under `directory` into the organization's vault documents."""
    org_id = organization if isinstance(organization, int) else organization.pk
    report = VaultReport([], [], [], [])
    seen: set[str] = set()
    files = sorted(directory.rglob("*.md")) if directory.is_dir() else []
    for path in files:
        relative = path.relative_to(directory).as_posix()
        seen.add(relative)
        try:
            raw = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            report.errors.append(f"{relative}: {exc}")
            continue
        title, body = title_of(raw, fallback=path.stem.replace("-", " ").capitalize())
        outcome = ingest(
            org_id, kind=KnowledgeDocument.Source.VAULT, source=relative, title=title, content=body
        )
        (report.indexed if outcome["status"] == "indexed" else report.unchanged).append(relative)
    stale = KnowledgeDocument.objects.filter(
        organization_id=org_id, source_kind=KnowledgeDocument.Source.VAULT
    )
    stale = stale.exclude(source__in=seen)
    report.removed = sorted(stale.values_list("source", flat=True))
    stale.delete()
    return report


# --- retrieval ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hit:
    """One retrieved passage. `passage` is the matching excerpt (never the whole document); `why`
    says which list found it: "full-text", "semantic" or "both"."""

    document_id: int
    title: str
    source: str
    source_kind: str
    heading: str
    score: float
    passage: str
    passage_id: int
    url: str = ""
    language: str = ""
    why: str = "full-text"

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class PassageView:
    """What ranking needs of a passage, whichever engine found it."""

    id: int
    document_id: int
    title: str
    source: str
    source_kind: str
    heading: str
    text: str
    url: str = ""
    language: str = ""


# What `kinds=` filters on: a runbook is anything that is not a past incident.
KIND_SOURCES = {
    "runbook": (
        KnowledgeDocument.Source.VAULT,
        KnowledgeDocument.Source.UPLOAD,
        KnowledgeDocument.Source.REPOSITORY,
    ),
    "past-incident": (KnowledgeDocument.Source.PAST_INCIDENT,),
}


def source_kinds_for(kinds: list[str] | tuple[str, ...] | None) -> list[str] | None:
    """The document source kinds behind `kinds` (None: every kind)."""
    if not kinds:
        return None
    return sorted({source for kind in kinds for source in KIND_SOURCES[kind]})


def passage_views(organization_id: int, ids: list[int]) -> list[PassageView]:
    """The passages `ids` of the organization, as ranking sees them (one query)."""
    rows = (
        KnowledgePassage.objects.filter(organization_id=organization_id, pk__in=ids)
        .select_related("document")
        .only("id", "heading", "text", "document__id", "document__title", "document__source",
              "document__source_kind", "document__url", "document__language")
    )  # fmt: skip
    return [
        PassageView(p.pk, p.document_id, p.document.title, p.document.source, p.document.source_kind,
                    p.heading, p.text, p.document.url, p.document.language)
        for p in rows
    ]  # fmt: skip


def search(organization_id: int, query: str, top_k: int = 5, kinds: list[str] | None = None) -> list[Hit]:
    """The best passages of the organization's knowledge for `query` by full-text, scores in 0..1.

    `kinds` ("runbook", "past-incident") restricts the documents searched. A misspelt word that no
    passage holds is replaced by the closest word of the organization's titles (see `fix_typos`)."""
    words = fix_typos(organization_id, query_words(query))
    if not words:
        return []
    ids = fulltext.candidates(connection, organization_id, words, CANDIDATE_LIMIT)
    if not ids:
        return []
    views = passage_views(organization_id, ids)
    allowed = source_kinds_for(kinds)
    if allowed is not None:
        views = [v for v in views if v.source_kind in allowed]
    total = KnowledgePassage.objects.filter(organization_id=organization_id).count()
    return rank(words, views, total)[:top_k]


TYPO_MIN_LENGTH = 4
TYPO_SIMILARITY = 0.3  # pg_trgm's own default threshold (pg_trgm.similarity_threshold)
TYPO_MAX_TITLES = 5000


def fix_typos(organization_id: int, words: list[str]) -> list[str]:
    """Each word found in no passage of the organization replaced by its most similar title word
    (trigram similarity >= TYPO_SIMILARITY), so "kafak" still finds the Kafka runbook. Not for
    CJK terms (bigrams have no spelling) nor short words; words already found stay as they are."""
    missing = [
        w
        for w in words
        if len(w) >= TYPO_MIN_LENGTH
        and not languages.is_cjk(w)
        and not fulltext.candidates(connection, organization_id, [w], 1)
    ]
    if not missing:
        return words
    titles = KnowledgeDocument.objects.filter(organization_id=organization_id).values_list("title", flat=True)
    vocabulary = sorted({t for title in titles[:TYPO_MAX_TITLES] for t in languages.terms(title)
                         if len(t) >= TYPO_MIN_LENGTH and not languages.is_cjk(t)})  # fmt: skip
    fixed = {}
    for word in missing:
        best = fulltext.most_similar(connection, word, vocabulary)
        if best is not None and best[1] >= TYPO_SIMILARITY:
            fixed[word] = best[0]
    return list(dict.fromkeys(fixed.get(w, w) for w in words))


def rank(words: list[str], passages: list[PassageView], total_passages: int) -> list[Hit]:
    """Score candidates with the engine-independent formula (see the module docstring). `words`
    are query terms (`query_words`), compared with the passages' terms (`words_of`)."""
    terms = list(dict.fromkeys(words))
    bodies = {p.id: Counter(words_of(f"{p.title}\n{p.heading}\n{p.text}")) for p in passages}
    headings = {p.id: set(words_of(f"{p.title}\n{p.heading}")) for p in passages}
    document_frequency = {t: sum(1 for counts in bodies.values() if t in counts) for t in terms}
    n = max(total_passages, len(passages), 1)
    idf = {t: math.log(1 + (n - document_frequency[t] + 0.5) / (document_frequency[t] + 0.5)) for t in terms}
    weight = sum(idf.values()) or 1.0
    average_length = sum(sum(c.values()) for c in bodies.values()) / max(len(bodies), 1)
    in_document: dict[int, set[str]] = {}
    for passage in passages:
        in_document.setdefault(passage.document_id, set()).update(t for t in terms if t in bodies[passage.id])
    scored = []
    for passage in passages:
        counts = bodies[passage.id]
        matched = [t for t in terms if t in counts]
        if not matched:
            continue
        coverage = sum(idf[t] for t in matched) / weight
        document_coverage = sum(idf[t] for t in in_document[passage.document_id]) / weight
        heading_coverage = sum(idf[t] for t in terms if t in headings[passage.id]) / weight
        score = round(min(1.0, 0.55 * coverage + 0.2 * document_coverage + 0.25 * heading_coverage), 3)
        length = sum(counts.values())
        strength = sum(
            idf[t] * counts[t] / (counts[t] + 1.2 * (0.25 + 0.75 * length / (average_length or 1)))
            for t in matched
        )
        scored.append((score, strength, -passage.id, passage, matched))
    scored.sort(key=lambda item: (item[0], item[1], item[2]), reverse=True)
    return [
        Hit(
            p.document_id,
            p.title,
            p.source,
            p.source_kind,
            p.heading,
            score,
            _snippet(p.text, matched),
            p.id,
            p.url,
            p.language,
        )
        for score, _, _, p, matched in scored
    ]


def _snippet(text: str, matched: list[str]) -> str:
    """The passage's original text (accents, case, CJK as written) around its first matching term."""
    flat = re.sub(r"\s+", " ", text).strip()
    if len(flat) <= SNIPPET_CHARS:
        return flat
    wanted = set(matched)
    positions = [flat.find(t) for t in wanted if languages.is_cjk(t) and t in flat]
    positions += [m.start() for m in re.finditer(r"[^\W_]+", flat) if wanted & set(words_of(m.group(0)))][:1]
    first = min(positions) if positions else 0
    start = max(0, first - SNIPPET_CHARS // 4)
    piece = flat[start : start + SNIPPET_CHARS]
    return ("…" if start else "") + piece + ("…" if start + SNIPPET_CHARS < len(flat) else "")
