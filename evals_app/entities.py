"""The investigator's F1: which of the estate's entities a report claims as the root cause, scored
against the ones the scenario expects (docs/evals.md, "Investigator F1").

Pass/fail checks say whether the answer named patient zero first; they cannot tell an answer that
names the culprit and four innocent hosts from one that names the culprit alone, nor one that finds
patient zero but misses the change that broke it. Precision and recall over a small set of
entities can: the scenario lists the patient zero, the causal chain's components and the
triggering change (`expected.entities`), and the report's claims are read from the parts of it that
make claims (root cause, patient zero, causal chain, evidence), matched against the names and
aliases of the scenario's estate (`evals_app.estate.entity_names`). A report without those
sections is read by its sentences that state a cause; listing every host in passing claims nothing,
and naming every host as the cause costs precision.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

# Section headings that introduce claims, and those that introduce the opposite (hypotheses ruled
# out, symptoms not explained, what to do next): English, Spanish, French and Chinese, the
# languages of the suite's questions.
CLAIM_HEADINGS = (
    "root cause", "patient zero", "causal chain", "evidence", "trigger", "triggering change",
    "causa raíz", "causa raiz", "paciente cero", "cadena causal", "evidencia", "evidencias",
    "cause racine", "cause première", "patient zéro", "chaîne causale", "preuves", "éléments",
    "根因", "根本原因", "零号病人", "因果链", "证据", "触发变更",
)  # fmt: skip
OTHER_HEADINGS = (
    "ruled out", "not the cause", "symptoms", "symptoms not explained", "next steps", "next actions",
    "confidence", "remediation", "summary", "descartado", "descartadas", "síntomas", "próximos pasos",
    "confianza", "écarté", "écartées", "symptômes", "prochaines étapes", "confiance", "已排除",
    "症状", "下一步", "置信度",
)  # fmt: skip
REPORT_FIELDS = ("root_cause", "patient_zero", "causal_chain", "evidence")
# What a sentence of prose says when it states a cause, in the same four languages.
CAUSE_MARKERS = (
    "root cause", "caused by", "because", "due to", "patient zero", "the cause", "triggered by",
    "started when", "causa", "porque", "debido a", "provocado por", "cause", "parce que", "à cause",
    "dû à", "due à", "provoqué par", "根因", "原因", "导致", "由于", "因为",
)  # fmt: skip


@dataclass(frozen=True)
class EntityScore:
    expected: tuple[str, ...]
    claimed: tuple[str, ...]
    source: str  # "report" (a JSON report), "sections" (its claim sections), "sentences" (prose)

    @property
    def hits(self) -> int:
        return len(set(self.expected) & set(self.claimed))

    @property
    def precision(self) -> float:
        return round(self.hits / len(self.claimed), 3) if self.claimed else 0.0

    @property
    def recall(self) -> float:
        return round(self.hits / len(self.expected), 3) if self.expected else 0.0

    @property
    def f1(self) -> float:
        p, r = self.hits / len(self.claimed) if self.claimed else 0, self.hits / len(self.expected)
        return round(2 * p * r / (p + r), 3) if p + r else 0.0

    def as_dict(self) -> dict:
        return {
            "expected": list(self.expected),
            "claimed": list(self.claimed),
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "source": self.source,
        }


def mentions(text: str, names: dict[str, tuple[str, ...]]) -> list[str]:
    """The canonical names of the entities `text` mentions by any of their names, as whole words
    (a hyphen joins a word: "redis" is not a mention of "redis-01"), in order of first mention."""
    lowered = text.lower()
    found: list[tuple[int, str]] = []
    for canonical, aliases in names.items():
        spots = [
            m.start()
            for alias in aliases
            if (m := re.search(rf"(?<![\w-]){re.escape(alias.lower())}(?![\w-])", lowered))
        ]
        if spots:
            found.append((min(spots), canonical))
    return [name for _, name in sorted(found)]


def _json_report(text: str) -> dict | None:
    """A report object (the `submit_report` schema's fields) quoted in the text, if any."""
    for match in re.finditer(r"\{.*\}", text, re.DOTALL):
        try:
            data = json.loads(match.group(0))
        except ValueError:
            continue
        if isinstance(data, dict) and any(key in data for key in REPORT_FIELDS):
            return data
    return None


def _report_text(report: dict) -> str:
    parts = [str(report.get("root_cause") or "")]
    patient_zero = report.get("patient_zero")
    parts.append(
        str(patient_zero.get("name", "")) if isinstance(patient_zero, dict) else str(patient_zero or "")
    )
    parts.extend(str(step) for step in report.get("causal_chain") or [])
    for item in report.get("evidence") or []:
        parts.append(str(item.get("finding", "")) if isinstance(item, dict) else str(item))
    return "\n".join(parts)


def _heading_kind(line: str) -> str:
    """ "claim", "other" or "" (not a heading) for one line: a known title at the start (after any
    markdown marks or bullet), then a colon or the end of the line."""
    bare = re.sub(r"^[\s#>*_\-\d.]+", "", line).lower()
    for kind, titles in (("claim", CLAIM_HEADINGS), ("other", OTHER_HEADINGS)):
        for title in titles:
            rest = bare[len(title) :].lstrip("*_ ") if bare.startswith(title) else None
            if rest is not None and (not rest or rest[0] in ":："):
                return kind
    return ""


def claim_sections(text: str) -> str:
    """The lines under the report's claim headings ("Root cause: …", "## Causal chain"), up to
    the next heading of any kind; "" when the text has no claim heading."""
    kept: list[str] = []
    inside = False
    for line in text.splitlines():
        kind = _heading_kind(line)
        if kind:
            inside = kind == "claim"
        if inside:
            kept.append(line)
    return "\n".join(kept)


def cause_sentences(text: str) -> str:
    """The sentences of prose that state a cause ("… because …", "the root cause is …")."""
    sentences = re.split(r"(?<=[.!?])\s+|(?<=[。！？])|\n+", text)
    return "\n".join(s for s in sentences if any(marker in s.lower() for marker in CAUSE_MARKERS))


def claimed_text(texts: list[str]) -> tuple[str, str]:
    """(the text that makes claims, where it came from): a JSON report's fields if one is quoted,
    else the claim sections, else the sentences that state a cause. An answer that states none
    (a dump of tool results, say) claims nothing, however many hosts it lists."""
    for text in texts:
        report = _json_report(text)
        if report is not None:
            return _report_text(report), "report"
    sections = "\n".join(s for s in (claim_sections(t) for t in texts) if s)
    if sections:
        return sections, "sections"
    return "\n".join(s for s in (cause_sentences(t) for t in texts) if s), "sentences"


def score_entities(
    expected: tuple[str, ...], texts: list[str], names: dict[str, tuple[str, ...]]
) -> EntityScore:
    """Precision, recall and F1 of the entities `texts` claim against `expected` (canonical names)."""
    text, source = claimed_text([t for t in texts if t.strip()])
    return EntityScore(tuple(expected), tuple(mentions(text, names)), source)


def agrees_with_judge(score: EntityScore, expected_patient_zero: str, verdict: dict | None) -> bool | None:
    """Whether the extraction and the judge reach the same verdict; None when the judge gave none.

    The extraction's verdict is "right" when patient zero is among the claims and F1 ≥ 0.5, the
    judge's when it passed the root cause."""
    if verdict is None or verdict.get("verdict") not in ("pass", "fail"):
        return None
    right = expected_patient_zero in score.claimed and score.f1 >= 0.5
    return right == (verdict["verdict"] == "pass")
