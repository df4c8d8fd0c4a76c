"""Scenarios as data: `evals/scenarios/<name>/scenario.yaml` plus its recorded tool outputs.

A scenario says what the user asks, the estate the question needs (devices, topology, change
events, incidents and their alerts, knowledge documents), what a right answer looks like
(`expected`) and what the telemetry and host tools return (`recordings`). docs/evals.md
describes every key; `load_scenario` refuses a file with an unknown or missing one, so a typo
cannot silently weaken a check.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from agents_app.api import MATCHERS, Recording
from evals_app.estate import entity_names

SUITE_DIR = Path(__file__).resolve().parent.parent / "evals"
SCENARIOS_DIR = SUITE_DIR / "scenarios"
NO_SPECIALIST = "none"

_TOP_KEYS = {"name", "category", "tags", "difficulty", "description", "conversation", "question", "estate",
             "expected", "recordings"}  # fmt: skip
_EXCHANGE_KEYS = {"user", "assistant"}
MAX_EXCHANGES = 50
_ESTATE_KEYS = {"devices", "topology", "changes", "incidents", "knowledge"}
_EXPECTED_KEYS = {"patient_zero", "decoys", "root_cause", "keywords", "specialist", "forbidden_tools",
                  "tool_budget", "gate", "proposes", "entities"}  # fmt: skip
_PROPOSES_KEYS = {"tool", "arguments"}
_ENTITY_KEYS = {"patient_zero", "chain", "change"}
_RECORDING_KEYS = {"tool", "arguments", "match", "output", "output_file", "error"}


class ScenarioError(ValueError):
    """A scenario file that cannot be used as written."""


@dataclass(frozen=True)
class Proposal:
    """The write a right investigation proposes: this tool, with at least these arguments."""

    tool: str
    arguments: dict = field(default_factory=dict)  # a subset of the proposal's arguments


@dataclass(frozen=True)
class ExpectedEntities:
    """The root cause as a set of the estate's entities (canonical names), for the investigator's F1."""

    patient_zero: str
    chain: tuple[str, ...] = ()  # the other components from patient zero to the alerting symptom
    change: tuple[str, ...] = ()  # the change event that triggered it, when one did

    @property
    def all(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((self.patient_zero, *self.chain, *self.change)))


@dataclass(frozen=True)
class Expected:
    patient_zero: tuple[str, ...] = ()  # names that identify the root cause's component
    decoys: tuple[str, ...] = ()  # louder symptoms that must not be named before patient zero
    root_cause: str = ""  # the statement the judge compares the answer with
    keywords: tuple[str, ...] = ()  # at least one must appear in the answer
    specialist: str = ""  # persona that must be dispatched; "none": answered without dispatch
    forbidden_tools: tuple[str, ...] = ()  # tools that must not even be attempted
    tool_budget: int = 15  # tool calls of the whole run (reviewers excluded)
    gate: str = ""  # "rejected": a write must be attempted and refused by the review gate
    proposes: Proposal | None = None  # a write that must reach the gate, run only if approved
    entities: ExpectedEntities | None = None  # None: not an investigation, no F1


@dataclass(frozen=True)
class Scenario:
    name: str
    category: str
    question: str
    tags: tuple[str, ...] = ()
    difficulty: str = "medium"
    description: str = ""
    conversation: tuple[tuple[str, str], ...] = ()  # earlier (question, answer) turns of the same chat
    estate: dict = field(default_factory=dict)
    expected: Expected = field(default_factory=Expected)
    recordings: tuple[Recording, ...] = ()
    path: Path | None = None

    def selected_by(self, selector: str) -> bool:
        """`--only` matches the name, the category, a tag or the difficulty."""
        return selector in (self.name, self.category, self.difficulty) or selector in self.tags


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    raise ScenarioError(f"{where} must be text or a list of text")


def _unknown(data: dict, allowed: set[str], where: str) -> None:
    extra = sorted(set(data) - allowed)
    if extra:
        raise ScenarioError(f"{where}: unknown key(s) {', '.join(extra)}")


def _recording(raw: Any, directory: Path, index: int) -> Recording:
    where = f"recordings[{index}]"
    if not isinstance(raw, dict) or not isinstance(raw.get("tool"), str):
        raise ScenarioError(f"{where} must be a mapping with a `tool`")
    _unknown(raw, _RECORDING_KEYS, where)
    match = raw.get("match", "exact")
    if match not in MATCHERS:
        raise ScenarioError(f"{where}: match must be one of {', '.join(MATCHERS)}")
    output = raw.get("output")
    if "output_file" in raw:
        target = (directory / raw["output_file"]).resolve()
        if directory.resolve() not in target.parents or not target.is_file():
            raise ScenarioError(f"{where}: output_file {raw['output_file']!r} is not a file of the scenario")
        output = target.read_text(encoding="utf-8")
    arguments = raw.get("arguments") or {}
    if not isinstance(arguments, dict):
        raise ScenarioError(f"{where}: arguments must be a mapping")
    return Recording(raw["tool"], arguments, match, output, str(raw.get("error") or ""))


def _conversation(raw: Any) -> tuple[tuple[str, str], ...]:
    """The chat's earlier turns, each a `user` question and the `assistant`'s answer: the question
    of the scenario is asked as the next turn of that chat (long-context scenarios)."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or len(raw) > MAX_EXCHANGES:
        raise ScenarioError(f"`conversation` must be a list of at most {MAX_EXCHANGES} exchanges")
    exchanges = []
    for index, exchange in enumerate(raw):
        where = f"conversation[{index}]"
        if not isinstance(exchange, dict):
            raise ScenarioError(f"{where} must be a mapping with `user` and `assistant`")
        _unknown(exchange, _EXCHANGE_KEYS, where)
        texts = [exchange.get(key) for key in ("user", "assistant")]
        if not all(isinstance(text, str) and text.strip() for text in texts):
            raise ScenarioError(f"{where} needs `user` and `assistant` text")
        exchanges.append((texts[0].strip(), texts[1].strip()))
    return tuple(exchanges)


def _proposes(raw: Any) -> Proposal | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("tool"), str) or not raw["tool"].strip():
        raise ScenarioError("expected.proposes must be a mapping with a `tool` name")
    _unknown(raw, _PROPOSES_KEYS, "expected.proposes")
    arguments = raw.get("arguments") or {}
    if not isinstance(arguments, dict):
        raise ScenarioError("expected.proposes.arguments must be a mapping")
    return Proposal(raw["tool"].strip(), arguments)


def _entities(raw: Any, estate: dict) -> ExpectedEntities | None:
    """`expected.entities`, every name resolved to its canonical one; a name the estate does not
    know is refused (a typo would make the F1 unreachable)."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("patient_zero"), str):
        raise ScenarioError("expected.entities must be a mapping with a `patient_zero` name")
    _unknown(raw, _ENTITY_KEYS, "expected.entities")
    canonical = {alias.lower(): name for name, aliases in entity_names(estate).items() for alias in aliases}

    def resolve(names: tuple[str, ...], key: str) -> tuple[str, ...]:
        unknown = [n for n in names if n.lower() not in canonical]
        if unknown:
            raise ScenarioError(f"expected.entities.{key}: {', '.join(unknown)} not in the estate")
        return tuple(canonical[n.lower()] for n in names)

    return ExpectedEntities(
        patient_zero=resolve((raw["patient_zero"],), "patient_zero")[0],
        chain=resolve(_strings(raw.get("chain"), "expected.entities.chain"), "chain"),
        change=resolve(_strings(raw.get("change"), "expected.entities.change"), "change"),
    )


def _expected(raw: Any, estate: dict) -> Expected:
    if not isinstance(raw, dict):
        raise ScenarioError("`expected` must be a mapping")
    _unknown(raw, _EXPECTED_KEYS, "expected")
    budget = raw.get("tool_budget", 15)
    if not isinstance(budget, int) or budget < 0:
        raise ScenarioError("expected.tool_budget must be a whole number ≥ 0")
    gate = raw.get("gate", "")
    if gate not in ("", "rejected"):
        raise ScenarioError("expected.gate can only be 'rejected'")
    return Expected(
        patient_zero=_strings(raw.get("patient_zero"), "expected.patient_zero"),
        decoys=_strings(raw.get("decoys"), "expected.decoys"),
        root_cause=str(raw.get("root_cause") or ""),
        keywords=_strings(raw.get("keywords"), "expected.keywords"),
        specialist=str(raw.get("specialist") or ""),
        forbidden_tools=_strings(raw.get("forbidden_tools"), "expected.forbidden_tools"),
        tool_budget=budget,
        gate=gate,
        proposes=_proposes(raw.get("proposes")),
        entities=_entities(raw.get("entities"), estate),
    )


def load_scenario(path: Path) -> Scenario:
    """Parse and check one scenario.yaml; errors name the file and the key."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        raise ScenarioError(f"{path}: not valid YAML ({error})") from None
    try:
        if not isinstance(data, dict):
            raise ScenarioError("the file must hold a mapping")
        _unknown(data, _TOP_KEYS, "scenario")
        for key in ("name", "category", "question"):
            if not isinstance(data.get(key), str) or not data[key].strip():
                raise ScenarioError(f"`{key}` is required text")
        estate = data.get("estate") or {}
        if not isinstance(estate, dict):
            raise ScenarioError("`estate` must be a mapping")
        _unknown(estate, _ESTATE_KEYS, "estate")
        recordings = data.get("recordings") or []
        if not isinstance(recordings, list):
            raise ScenarioError("`recordings` must be a list")
        return Scenario(
            name=data["name"],
            category=data["category"],
            question=data["question"].strip(),
            tags=_strings(data.get("tags"), "tags"),
            difficulty=str(data.get("difficulty") or "medium"),
            description=str(data.get("description") or "").strip(),
            conversation=_conversation(data.get("conversation")),
            estate=estate,
            expected=_expected(data.get("expected") or {}, estate),
            recordings=tuple(_recording(r, path.parent, i) for i, r in enumerate(recordings)),
            path=path,
        )
    except ScenarioError as error:
        raise ScenarioError(f"{path}: {error}") from None


def load_suite(directory: Path = SCENARIOS_DIR, only: list[str] | None = None) -> list[Scenario]:
    """Every scenario under `directory` (sorted by name), narrowed by `--only` selectors."""
    scenarios = [load_scenario(path) for path in sorted(directory.glob("*/scenario.yaml"))]
    names = [s.name for s in scenarios]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ScenarioError(f"scenario names used twice: {', '.join(duplicates)}")
    if only:
        scenarios = [s for s in scenarios if any(s.selected_by(selector) for selector in only)]
    return scenarios


def suite_version(scenarios: list[Scenario]) -> str:
    """A digest of the scenarios' files (each scenario.yaml and its recorded outputs): two runs with
    the same version asked the same questions of the same recordings, so their scores compare."""
    digest = hashlib.sha256()
    for scenario in sorted(scenarios, key=lambda s: s.name):
        if scenario.path is None:
            continue
        folder = scenario.path.parent
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            digest.update(str(path.relative_to(folder.parent)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]
