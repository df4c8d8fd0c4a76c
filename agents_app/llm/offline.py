"""The offline model: a deterministic stand-in so Ongrid runs, demos and tests with no LLM at all.

It plays the same protocol as a real model, from the same inputs a real model sees:

- coordinator (AgentTool among its tools): reads the agent catalog in its system prompt, routes
  the user's words to the specialist whose name, description and when-to-use share the most words
  with them, and dispatches it with a self-contained brief; when the specialist's result comes
  back, it relays it.
- worker (or a coordinator with no specialist that fits): calls up to three of its own read tools
  whose names and descriptions fit the request, filling required arguments from the words (device
  names, paths, URLs, numbers, schema defaults); when the results come back it summarises them.
- nothing fits, or no tools: it answers plainly.

Every final answer says it comes from the offline model. It is not clever and never pretends to be.
It is also honest about what it did not do (docs/kernel.md, "The offline model"): asked for a change
("restart nginx on web-1") it says in words that nothing was changed and why; it reads device names
loosely (`web-1` is `web-01`) by listing the devices first, as a real model would; its fixed phrases
follow the user's language (English, Spanish, French, Simplified Chinese); an HTTP status
("returns 502") is never taken for an incident number; and its tool call ids never repeat within a
session, so the audit tree's dispatch → worker links stay right.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from agents_app.llm.base import LLMCompletion, LLMDelta, LLMEvent, ToolCall
from agents_app.llm.offline_review import offline_verdict, review_brief_call

LABEL = "(Answer from Ongrid's offline model — a deterministic stand-in, not a real LLM.)"
# The model's fixed phrases per language; `{…}` fields are filled in. English is the fallback.
PHRASES: dict[str, dict[str, str]] = {
    "en": {
        "label": LABEL,
        "found": "Here is what the specialist found:",
        "ran": "I ran {count} tool call(s). What they returned:",
        "ended": "(the specialist ended {status})",
        "hello": "Hello. Ask me about your systems.",
        "cannot": 'You asked: "{request}". I cannot answer that on my own because {why}; '
        "configure a real LLM (OPENAI_API_KEY) for open questions.",
        "why_tools": "none of my tools fits it",
        "why_none": "I have no tools here",
        "read_as": "I read `{asked}` as the device `{found}`.",
        "not_done": "**I did not {action}.** This is Ongrid's offline model, which never makes changes: "
        "a change goes through the review gate (the reviewer agent, and for some agents a person, must "
        "approve it) and needs a real LLM to propose it — configure OPENAI_API_KEY. Nothing was changed.",
    },
    "es": {
        "label": "(Respuesta del modelo sin conexión de Ongrid: un sustituto determinista, no un LLM real.)",
        "found": "Esto es lo que encontró el especialista:",
        "ran": "Hice {count} llamada(s) a herramientas. Esto devolvieron:",
        "ended": "(el especialista terminó con estado {status})",
        "hello": "Hola. Pregúntame por tus sistemas.",
        "cannot": "Preguntaste: «{request}». No puedo responder a eso por mí mismo porque {why}; "
        "configura un LLM real (OPENAI_API_KEY) para preguntas abiertas.",
        "why_tools": "ninguna de mis herramientas sirve para ello",
        "why_none": "aquí no tengo herramientas",
        "read_as": "Entiendo `{asked}` como el dispositivo `{found}`.",
        "not_done": "**No he hecho lo que pediste («{action}»).** Esto es el modelo sin conexión de Ongrid, "
        "que nunca hace cambios: un cambio pasa por la puerta de revisión (el agente revisor, y para algunos "
        "agentes una persona, debe aprobarlo) y necesita un LLM real que lo proponga; configura "
        "OPENAI_API_KEY. No se ha cambiado nada.",
    },
    "fr": {
        "label": "(Réponse du modèle hors ligne d'Ongrid : un substitut déterministe, pas un vrai LLM.)",
        "found": "Voici ce que le spécialiste a trouvé :",
        "ran": "J'ai fait {count} appel(s) d'outil. Voici ce qu'ils ont renvoyé :",
        "ended": "(le spécialiste s'est terminé avec l'état {status})",
        "hello": "Bonjour. Posez-moi une question sur vos systèmes.",
        "cannot": "Vous avez demandé : « {request} ». Je ne peux pas répondre seul, car {why} ; "
        "configurez un vrai LLM (OPENAI_API_KEY) pour les questions ouvertes.",
        "why_tools": "aucun de mes outils ne convient",
        "why_none": "je n'ai pas d'outils ici",
        "read_as": "Je comprends `{asked}` comme l'appareil `{found}`.",
        "not_done": "**Je n'ai pas fait ce que vous avez demandé (« {action} »).** Ceci est le modèle hors "
        "ligne d'Ongrid, qui ne fait jamais de changement : un changement passe par la porte de revue "
        "(l'agent relecteur, et pour certains agents une personne, doit l'approuver) et demande un vrai LLM "
        "pour le proposer ; configurez OPENAI_API_KEY. Rien n'a été modifié.",
    },
    "zh-hans": {
        "label": "（来自 Ongrid 离线模型的回答：一个确定性的替身，不是真正的 LLM。）",
        "found": "以下是专家智能体查到的情况：",
        "ran": "我调用了 {count} 次工具，返回结果如下：",
        "ended": "（专家智能体结束时的状态为 {status}）",
        "hello": "你好。可以问我任何关于你的系统的问题。",
        "cannot": "你问的是：“{request}”。我自己回答不了，因为{why}；开放性的问题请配置真正的 LLM"
        "（OPENAI_API_KEY）。",
        "why_tools": "我的工具都不适用",
        "why_none": "这里我没有任何工具",
        "read_as": "我把 `{asked}` 理解为设备 `{found}`。",
        "not_done": "**我没有执行你要求的操作（“{action}”）。** 这是 Ongrid 的离线模型，它从不做任何变更："
        "变更必须经过审核关卡（由审核智能体批准，部分智能体还需要人工批准），并且需要真正的 LLM 来提出；"
        "请配置 OPENAI_API_KEY。没有做任何更改。",
    },
}
LABELS = tuple(phrases["label"] for phrases in PHRASES.values())
# Small, distinctive stop words per language: enough to tell the three apart in one message.
_LANGUAGE_WORDS = {
    "en": {"the", "is", "are", "and", "why", "what", "how", "with", "on", "my", "it", "of", "to", "for",
           "this", "that", "returns", "please", "does", "not", "can", "you", "full", "server", "which"},
    "es": {"el", "los", "las", "del", "por", "para", "con", "una", "está", "están", "qué", "cómo", "hay",
           "mi", "se", "al", "lo", "pero", "muy", "y", "disco", "lleno", "servidor", "devuelve", "cuál",
           "dónde", "reinicia", "puedes", "es", "son", "tiene"},
    "fr": {"le", "les", "des", "du", "est", "et", "une", "pour", "avec", "sur", "pas", "ne", "je", "il",
           "pourquoi", "quoi", "comment", "au", "aux", "ce", "cette", "mon", "plein", "serveur", "renvoie",
           "qui", "où", "sont", "redémarre", "pouvez", "vous", "quel", "quelle"},
}  # fmt: skip
_LANGUAGE_LETTERS = {"es": "ñ¿¡áíóú", "fr": "çàèêùœâîôû"}
# Han ideographs (the CJK Unified Ideographs block and its extension A): a question written in
# Chinese, whatever Latin device or tool names it quotes.
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
CONTROL_TOOLS = {"AgentTool", "SendMessage", "TaskStop"}
MAX_TOOLS = 3
_MUTATING_WORDS = {
    "restart", "delete", "remove", "silence", "acknowledge", "ack", "resolve", "create", "update",
    "write", "kill", "stop", "apply", "set", "reboot", "drain", "scale",
}  # fmt: skip
_STOPWORDS = {
    "a", "an", "the", "is", "are", "was", "be", "on", "in", "at", "of", "to", "for", "and", "or", "it",
    "its", "this", "that", "with", "my", "our", "we", "i", "you", "me", "please", "can", "could", "what",
    "why", "how", "when", "who", "which", "there", "from", "by", "as", "do", "does", "did", "not", "no",
    "use", "used", "using", "any", "all", "about", "into", "has", "have", "had", "will", "would", "should",
    "el", "la", "los", "las", "de", "del", "en", "es", "un", "una", "y", "que", "le", "les", "des", "du",
    "et", "est", "specialist", "agent", "tool", "tools", "user", "asks", "ask",
}  # fmt: skip
_CATALOG_ENTRY = re.compile(r"^- \*\*(?P<name>[^*]+)\*\* — (?P<description>.*)$")
_DEVICE = re.compile(r"\b[a-z][a-z0-9]*(?:[-.][a-z0-9]+)*-\d+[a-z0-9-]*\b", re.IGNORECASE)
_IP = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}\b")
_URL = re.compile(r"https?://[^\s\"'<>)]+")
_PATH = re.compile(r"(?<![\w:/.])/(?:[\w.\-]+/?)*")
_DOMAIN = re.compile(r"\b(?:[a-z0-9-]+\.)+[a-z]{2,}\b", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w-])(#?)(\d+)\b")
# Words around a number that make it an HTTP status ("returns 502", "HTTP 500", "a 404", "502 errors")…
_STATUS_BEFORE = {"http", "status", "code", "error", "returns", "returned", "return", "returning", "got",
                  "gets", "get", "getting", "a", "an", "with", "throws", "devuelve", "devuelven", "da", "un",
                  "código", "estado", "renvoie", "renvoient", "retourne", "erreur", "une"}  # fmt: skip
_STATUS_AFTER = {"error", "errors", "status", "response", "responses", "page", "pages", "errores", "erreurs"}
# …and words that make it an identifier whatever its value ("incident 502", "port 443").
_ID_BEFORE = {"incident", "incidents", "incidente", "incidencia", "id", "number", "no", "nº", "n°", "número",
              "numéro", "ticket", "port", "puerto", "alert", "alerta", "alerte"}  # fmt: skip
_COMMON_STATUSES = {400, 401, 403, 404, 405, 408, 409, 410, 422, 429, 500, 501, 502, 503, 504}


def plain_numbers(text: str) -> list[int]:
    """The numbers in `text` that may fill an argument; HTTP statuses are not among them."""
    found = []
    for match in _NUMBER.finditer(text):
        value = int(match.group(2))
        before = re.findall(r"[\w°º]+", text[: match.start()].lower())[-1:]
        after = re.findall(r"\w+", text[match.end() :].lower())[:1]
        explicit_id = match.group(1) == "#" or (before and before[0] in _ID_BEFORE)
        if 100 <= value <= 599 and not explicit_id:
            cued = (before and before[0] in _STATUS_BEFORE) or (after and after[0] in _STATUS_AFTER)
            if cued or value in _COMMON_STATUSES:
                continue
        found.append(value)
    return found


# "on web", "host db-primary", "server ongrid-manager": the word after such a cue names a device even
# without the digits `_DEVICE` expects.
_DEVICE_CUE = re.compile(
    r"\b(?:on|host|server|device|node|machine)\s+([a-z][a-z0-9]*(?:[-.][a-z0-9]+)+)\b", re.IGNORECASE
)


def detect_language(text: str) -> str:
    """'en', 'es', 'fr' or 'zh-hans' for a message: Chinese when it holds at least two Han
    characters and they outnumber the Latin stop words (so "磁盘满了 on web-01" is Chinese and an
    English question quoting one Chinese word is not); otherwise by counting stop words and
    telltale letters; ties → 'en'."""
    han = len(_HAN.findall(text))
    lowered = text.lower()
    tokens = re.findall(r"\w+", lowered)
    scores = {
        language: sum(token in vocabulary for token in tokens)
        for language, vocabulary in _LANGUAGE_WORDS.items()
    }
    for language, letters in _LANGUAGE_LETTERS.items():
        scores[language] += 2 * sum(lowered.count(letter) for letter in letters)
    best = max(scores.values())
    if han >= 2 and han > best:
        return "zh-hans"
    if best == 0 or scores["en"] == best:
        return "en"
    return max(("es", "fr"), key=lambda language: scores[language])


def phrase(language: str, key: str, **fields: Any) -> str:
    text = PHRASES.get(language, PHRASES["en"])[key]
    return text.format(**fields) if fields else text


def device_key(name: str) -> tuple[str, ...]:
    """The parts of a device name that matter: letters lower-cased, numbers as numbers, separators
    dropped, so `web-1`, `WEB_01` and `web01` are one key."""
    return tuple(
        str(int(part)) if part.isdigit() else part for part in re.findall(r"[a-z]+|\d+", name.lower())
    )


def match_device(asked: str, known: list[str]) -> str | None:
    """The known device `asked` means: an exact name first, else one with the same `device_key`."""
    for name in known:
        if name == asked:
            return name
    key = device_key(asked)
    return next((name for name in known if device_key(name) == key), None)


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    description: str
    when_to_use: str


def words(text: str) -> set[str]:
    """Lower-cased content words, crudely singularised, so 'disks' meets 'disk'."""
    found = set()
    for word in re.findall(r"\w+", text.lower()):
        if word in _STOPWORDS or len(word) < 2:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        found.add(word)
    return found


# Symptoms people type, and the words the personas and tools use for them (matched after `words`
# singularises: "erreurs" is "erreur"). Domain concepts say *what* is wrong (a certificate, a name
# lookup, a full disk, memory)…
_DOMAIN_CONCEPTS = {
    frozenset(
        {
            "certificate",
            "cert",
            "ssl",
            "tls",
            "handshake",
            "x509",
            "expired",
            "expiry",
            "https",
            "certificado",
            "certificat",
        }
    ): {"tls", "http"},
    frozenset({"dns", "resolve", "resolution", "resolver", "nxdomain", "resolución", "résolution"}): {
        "dns",
        "reachability",
    },
    frozenset({"reach", "unreachable", "connect", "refused", "partition"}): {"reachability", "connectivity"},
    frozenset({"full", "space", "inode", "disco", "lleno", "espacio", "disque", "plein", "espace"}): {
        "disk",
        "filesystem",
    },
    frozenset(
        {
            "cpu",
            "memory",
            "oom",
            "load",
            "swap",
            "memoria",
            "mémoire",
            "carga",
            "charge",
            "processus",
            "proceso",
        }
    ): {"host", "load", "process"},
}
# …generic ones only that *something* is (it fails, errors, is slow).
_FAILURE_CONCEPTS = {
    frozenset(
        {
            "fail",
            "failing",
            "failed",
            "failure",
            "error",
            "down",
            "broken",
            "outage",
            "500",
            "502",
            "503",
            "5xx",
            "crash",
            "crashing",
            "firing",
            "alert",
            "page",
            "paged",
            "falla",
            "fallo",
            "errore",
            "caído",
            "erreur",
            "panne",
            "échoue",
        }
    ): {"incident", "root", "cause", "alert"},
    frozenset({"slow", "latency", "timeout", "timing", "lento", "lent", "lente"}): {"latency", "incident"},
}
_CONCEPTS = {**_DOMAIN_CONCEPTS, **_FAILURE_CONCEPTS}


def request_words(text: str) -> set[str]:
    """`words` plus the concepts its symptoms stand for, so "checkout is failing" meets "incident"."""
    found = words(text)
    for symptoms, concepts in _CONCEPTS.items():
        if found & symptoms:
            found |= concepts
    return found


def routing_words(text: str) -> set[str]:
    """The concepts a request implies for routing. A domain symptom outranks a generic one: in
    "certificate error" the error is the certificate's, so the request does not also read as an
    incident to investigate; "checkout is failing" alone does."""
    found = words(text)
    implied: set[str] = set()
    for symptoms, concepts in _DOMAIN_CONCEPTS.items():
        if found & symptoms:
            implied |= concepts
    if not implied:
        for symptoms, concepts in _FAILURE_CONCEPTS.items():
            if found & symptoms:
                implied |= concepts
    return implied - found


def parse_catalog(system_prompt: str) -> list[CatalogEntry]:
    """The specialists listed in the coordinator's system prompt (format fixed by the registry)."""
    entries: dict[str, CatalogEntry] = {}
    lines = system_prompt.splitlines()
    for index, line in enumerate(lines):
        match = _CATALOG_ENTRY.match(line.strip())
        if not match:
            continue
        when = ""
        following = lines[index + 1].strip() if index + 1 < len(lines) else ""
        if following.startswith("When to use:"):
            when = following.removeprefix("When to use:").strip()
        name = match.group("name").strip()
        entries.setdefault(name, CatalogEntry(name, match.group("description").strip(), when))
    return list(entries.values())


def best_specialist(request: str, catalog: list[CatalogEntry]) -> CatalogEntry | None:
    """Word overlap weighted name 3 / description 2 / when-to-use 1; the concepts a symptom stands
    for count half, so the user's own words win; ties go to the first name A→Z."""
    asked = words(request)
    implied = routing_words(request)

    def overlap(found: set[str], entry: CatalogEntry) -> int:
        return (
            3 * len(found & words(entry.name.replace("-", " ").replace("_", " ")))
            + 2 * len(found & words(entry.description))
            + len(found & words(entry.when_to_use))
        )

    scored = []
    for entry in catalog:
        score = overlap(asked, entry) + overlap(implied, entry) / 2
        if score:
            scored.append((-score, entry.name, entry))
    return min(scored)[2] if scored else None


@dataclass(frozen=True)
class Facts:
    """What the request mentions that a tool argument could need."""

    text: str
    devices: list[str]
    urls: list[str]
    paths: list[str]
    domains: list[str]
    numbers: list[int]

    @classmethod
    def of(cls, text: str) -> Facts:
        urls = _URL.findall(text)
        without_urls = _URL.sub(" ", text)
        return cls(
            text=text,
            devices=list(
                dict.fromkeys(
                    _DEVICE.findall(without_urls)
                    + _IP.findall(without_urls)
                    + _DEVICE_CUE.findall(without_urls)
                )
            ),
            urls=urls,
            paths=_PATH.findall(without_urls),
            domains=[d for d in _DOMAIN.findall(without_urls) if not _IP.fullmatch(d)],
            numbers=plain_numbers(_DEVICE.sub(" ", without_urls)),
        )


_MISSING = object()
_TEXT_KEYS = {"q", "query", "question", "text", "search", "prompt", "brief", "message", "keyword", "keywords",
              "topic", "description", "pattern", "reason"}  # fmt: skip


def fill_argument(key: str, spec: dict, facts: Facts) -> Any:
    """A plausible value for one argument, or _MISSING when the request does not supply one."""
    if "default" in spec:
        return spec["default"]
    if spec.get("enum"):
        return spec["enum"][0]
    name = key.lower()
    kind = spec.get("type", "string")
    hint = f"{name} {spec.get('description', '')}".lower()
    if any(part in name for part in ("device", "host", "server", "node", "target", "instance", "machine")):
        if facts.devices:
            return facts.devices[0]
        if facts.domains and "probe" not in name:
            return facts.domains[0]
    if "url" in name:
        return facts.urls[0] if facts.urls else _MISSING
    if any(part in name for part in ("domain", "hostname", "fqdn")):
        return facts.domains[0] if facts.domains else _MISSING
    if "path" in name or name in {"file", "dir", "directory"}:
        return facts.paths[0] if facts.paths else "/"
    if "promql" in hint:
        return "up"
    if "logql" in hint:
        return '{job=~".+"}'
    if "traceql" in hint:
        return "{}"
    if kind in ("integer", "number"):
        if facts.numbers:
            return facts.numbers[0]
        # An id nobody mentioned is not guessed: "incident 1" would be a made-up answer.
        return _MISSING if "incident" in name or name.endswith("_id") else spec.get("minimum", 1)
    if kind == "boolean":
        return False
    if kind == "array":
        return []
    if kind == "string" and (name in _TEXT_KEYS or name.endswith("_query")):
        return facts.text
    return _MISSING


def plan_arguments(schema: dict, facts: Facts) -> dict | None:
    arguments = {}
    properties = schema.get("properties", {})
    for key in schema.get("required", []):
        value = fill_argument(key, properties.get(key, {}), facts)
        if value is _MISSING:
            return None
        arguments[key] = value
    return arguments


def pick_tool_calls(request: str, tools: list[dict], first_id: int = 1) -> list[ToolCall]:
    """Up to three read-looking tools whose names/descriptions share words with the request;
    their ids are `offline_<n>` from `first_id` on."""
    asked, facts = request_words(request), Facts.of(request)
    ranked = []
    for spec in tools:
        function = spec.get("function", {})
        name = function.get("name", "")
        name_words = words(name.replace("_", " "))
        if name in CONTROL_TOOLS or name_words & _MUTATING_WORDS:
            continue
        score = 2 * len(asked & name_words) + len(asked & words(function.get("description", "")))
        if not score:
            continue
        arguments = plan_arguments(function.get("parameters") or {}, facts)
        if arguments is not None:
            ranked.append((-score, name, arguments))
    ranked.sort(key=lambda item: (item[0], item[1]))
    return [
        ToolCall(
            id=f"offline_{first_id + index}",
            name=name,
            arguments_raw=json.dumps(arguments, ensure_ascii=False),
        )
        for index, (_, name, arguments) in enumerate(ranked[:MAX_TOOLS])
    ]


# A question that asks to list or look up records of the estate ("which incidents are open?", "what
# role does node-07 have?") is answered by the coordinator with one inventory call, not dispatched.
_LOOKUP_OPENERS = {"which", "what", "list", "show", "who", "how", "give", "cuál", "cuáles", "qué", "lista",
                   "muestra", "quel", "quels", "quelle", "quelles", "liste", "montre", "affiche"}  # fmt: skip
_OPEN_WORDS = {"open", "active", "firing", "current", "unresolved", "abierto", "abierta", "activo", "ouvert",
               "ouverte", "actif"}  # fmt: skip
# (words that name the record, the tool that lists it), first match wins.
_LOOKUPS = (
    ({"incident", "incidente", "incidencia"}, "query_incidents"),
    ({"rule", "regla", "règle"}, "query_alert_rules"),
    (
        {
            "device",
            "host",
            "server",
            "role",
            "address",
            "ip",
            "label",
            "owner",
            "own",
            "dispositivo",
            "servidor",
            "rol",
            "dirección",
            "appareil",
            "serveur",
            "rôle",
            "adresse",
        },
        "query_devices",
    ),  # fmt: skip
    ({"change", "changed", "cambio", "changement"}, "query_change_events"),
)


def direct_lookup(request: str, tools: list[dict], first_id: int = 1) -> list[ToolCall]:
    """The one inventory call that answers a plain look-up question, or [] when the request is not
    one: it must open like a question or a "list/show", name a kind of record, and carry no symptom
    or "why" (those are investigations for a specialist)."""
    tokens = re.findall(r"\w+", request.lower())
    asked = words(request)
    if not tokens or tokens[0] not in _LOOKUP_OPENERS or {"why", "por", "pourquoi", "cause"} & set(tokens):
        return []
    symptoms = set().union(*_CONCEPTS)
    names = {spec.get("function", {}).get("name") for spec in tools}
    facts = Facts.of(request)
    for nouns, tool in _LOOKUPS:
        if not asked & nouns or (asked - nouns) & symptoms:
            continue
        arguments: dict = {}
        if tool == "query_incidents" and asked & _OPEN_WORDS and "get_active_incidents" in names:
            tool = "get_active_incidents"
        elif tool == "query_devices" and facts.devices:
            arguments = {"name": facts.devices[0]}
        if tool in names:
            raw = json.dumps(arguments, ensure_ascii=False)
            return [ToolCall(id=f"offline_{first_id}", name=tool, arguments_raw=raw)]
    return []


def dispatch(entry: CatalogEntry, request: str, call_id: str = "offline_1") -> ToolCall:
    facts = Facts.of(request)
    context = ""
    if facts.devices:
        context = f"\nDevices mentioned: {', '.join(dict.fromkeys(facts.devices))}."
    brief = (
        f'The user wrote: "{request.strip()}"\n'
        f"Investigate this as {entry.name} ({entry.description}) and report what you find, "
        f"with the evidence behind each finding.{context}\n"
        "You cannot see the conversation: everything known is in this brief."
    )
    summary = request.strip().splitlines()[0] if request.strip() else "the request"
    arguments = {
        "description": f"Investigate: {summary[:60]}",
        "subagent_type": entry.name,
        "prompt": brief,
    }
    return ToolCall(id=call_id, name="AgentTool", arguments_raw=json.dumps(arguments, ensure_ascii=False))


def _content(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, list):  # multi-part content: keep the text parts
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def _call_names(conversation: list[dict]) -> dict[str, str]:
    return {
        call.get("id", ""): call.get("function", {}).get("name", "tool")
        for message in conversation
        if message.get("role") == "assistant"
        for call in message.get("tool_calls") or []
    }


def _trailing_results(conversation: list[dict]) -> list[tuple[str, str]]:
    """(tool name, content) of the tool messages answering the last assistant tool-call step."""
    results = []
    for message in reversed(conversation):
        if message.get("role") != "tool":
            break
        results.append(message)
    names = _call_names(conversation)
    return [(names.get(m.get("tool_call_id", ""), "tool"), _content(m)) for m in reversed(results)]


def _current_turn(conversation: list[dict]) -> list[dict]:
    """The messages after the last user message: this turn's steps so far."""
    for index in range(len(conversation) - 1, -1, -1):
        if conversation[index].get("role") == "user":
            return conversation[index + 1 :]
    return list(conversation)


def next_call_number(conversation: list[dict]) -> int:
    """The next free `offline_<n>`: past every id the session's history shows, so two dispatches of
    one session never share an id (the audit tree links a dispatch to its worker by it)."""
    highest = 0
    for message in conversation:
        for call in message.get("tool_calls") or []:
            found = re.fullmatch(r"offline_(\d+)", str(call.get("id", "")))
            highest = max(highest, int(found.group(1)) if found else 0)
    calls = sum(len(message.get("tool_calls") or []) for message in conversation)
    return max(highest, calls) + 1


_BRIEF_QUOTE = re.compile(r'^The user wrote: "(?P<words>.*?)"\n', re.DOTALL)


def users_words(request: str) -> str:
    """The user's own words: a worker's brief (written by `dispatch`) quotes them."""
    found = _BRIEF_QUOTE.match(request)
    return found.group("words") if found else request


def _worker_report(content: str, language: str = "en") -> str:
    """The specialist's own answer out of AgentTool's JSON envelope, without a second label."""
    try:
        payload = json.loads(content)
    except ValueError:
        return content.strip()
    if not isinstance(payload, dict):
        return content.strip()
    text = str(payload.get("result") or payload.get("error") or content)
    for label in LABELS:
        text = text.replace(label, "")
    text = text.strip()
    status = payload.get("worker_status") or payload.get("status")
    if status and status not in ("completed", "ok"):
        text = f"{phrase(language, 'ended', status=status)} {text}"
    return text


_TARGET_KEYS = ("device", "host", "server", "node", "target", "instance")


def call_targets(conversation: list[dict]) -> list[str]:
    """The device each call of the last tool-call step ran on ("" for none), in the order of its
    results, so a summary can say where each reading comes from."""
    step = next(
        (m for m in reversed(conversation) if m.get("role") == "assistant" and m.get("tool_calls")), None
    )
    targets = []
    for call in (step or {}).get("tool_calls") or []:
        try:
            arguments = json.loads(call.get("function", {}).get("arguments") or "{}")
        except ValueError:
            arguments = {}
        found = next(
            (arguments[k] for k in _TARGET_KEYS if isinstance(arguments, dict) and arguments.get(k)), ""
        )
        targets.append(str(found))
    return targets


def summarise(results: list[tuple[str, str]], language: str = "en", targets: list[str] | None = None) -> str:
    label = phrase(language, "label")
    if results and all(name == "AgentTool" for name, _ in results):
        body = "\n\n".join(_worker_report(content, language)[:3000] for _, content in results)
        return f"{phrase(language, 'found')}\n\n{body}\n\n{label}"
    lines = [phrase(language, "ran", count=len(results)), ""]
    targets = targets or []
    for index, (name, content) in enumerate(results):
        where = f" — {targets[index]}" if index < len(targets) and targets[index] else ""
        lines.extend([f"**`{name}`**{where}", ""])  # the blank line makes the bullets a Markdown list
        lines.extend(describe(content))
        lines.append("")
    lines.append(label)
    return "\n".join(lines)


_LABEL_KEYS = ("title", "name", "summary", "event", "path", "message", "line", "resource_name", "status")
MAX_FIELDS, MAX_ITEMS, MAX_TEXT = 8, 3, 160


def _label(value: Any) -> str:
    """One short line for a value: a record's title/name/… rather than its whole JSON."""
    if isinstance(value, dict):
        for key in _LABEL_KEYS:
            if value.get(key) not in (None, "", [], {}):
                extra = next((value[k] for k in ("size", "severity", "at", "started_at") if k in value), None)
                text = f"{value[key]}" + (f" ({extra})" if extra not in (None, "") else "")
                return text[:MAX_TEXT]
        return json.dumps(value, ensure_ascii=False)[:MAX_TEXT]
    if isinstance(value, list):
        return f"{len(value)} item(s)"
    return str(value)[:MAX_TEXT]


def _record(value: Any) -> str:
    """A single record in full (its name, then its other fields): the answer to "what role does
    node-07 have?" is in the fields a one-line label leaves out."""
    if not isinstance(value, dict):
        return _label(value)
    fields = []
    for key, item in value.items():
        if item in (None, "", [], {}) or key in ("id", "name", "title"):
            continue
        if isinstance(item, dict):
            item = ", ".join(f"{k}={v}" for k, v in item.items())
        elif isinstance(item, list):
            item = ", ".join(_label(i) for i in item[:MAX_ITEMS])
        fields.append(f"{key} {item}")
    if not fields:
        return _label(value)
    head = value.get("name") or value.get("title")
    return (f"{head} ({'; '.join(fields)})" if head else "; ".join(fields))[: 3 * MAX_TEXT]


def describe(content: str) -> list[str]:
    """A tool result as a few Markdown bullets a person can read; plain text is excerpted."""
    try:
        data = json.loads(content)
    except ValueError:
        excerpt = [line.strip() for line in content.splitlines() if line.strip()][:6]
        return [f"- {line[:MAX_TEXT]}" for line in excerpt] or ["- (empty result)"]
    if not isinstance(data, dict):
        data = {"result": data}
    bullets = []
    for key, value in list(data.items())[:MAX_FIELDS]:
        if isinstance(value, list) and len(value) == 1:
            bullets.append(f"- {key}: {_record(value[0])}")
        elif isinstance(value, list):
            shown = "; ".join(_label(item) for item in value[:MAX_ITEMS])
            more = f" (+{len(value) - MAX_ITEMS} more)" if len(value) > MAX_ITEMS else ""
            bullets.append(f"- {key}: {shown or 'none'}{more}")
        else:
            bullets.append(f"- {key}: {_label(value)}")
    return bullets or ["- (empty result)"]


# Verbs (and their usual imperative forms) that ask for a change, per language.
_CHANGE_VERBS = {
    "restart", "reboot", "delete", "remove", "kill", "stop", "silence", "mute", "acknowledge", "ack",
    "resolve", "close", "drain", "scale", "deploy", "rollback", "apply", "purge", "truncate", "start",
    "reinicia", "reiniciar", "reinicie", "rearranca", "borra", "borrar", "elimina", "eliminar", "mata",
    "detén", "detener", "silencia", "silenciar", "reconoce", "resuelve", "resolver", "cierra", "aplica",
    "despliega", "redémarre", "redémarrer", "redémarrez", "relance", "relancer", "relancez", "supprime",
    "supprimer", "supprimez", "arrête", "arrêter", "arrêtez", "tue", "acquitte", "acquitter", "résous",
    "résoudre", "ferme", "fermer", "applique", "déploie",
}  # fmt: skip
# A message that opens with one of these asks about something; it does not ask for a change…
_QUESTION_OPENERS = {"why", "what", "when", "how", "who", "which", "where", "did", "was", "por", "qué",
                     "cuándo", "cómo", "pourquoi", "quand", "comment", "quoi", "qui"}  # fmt: skip
# …unless it asks someone to act ("can you restart …").
_ASKS_TO_ACT = re.compile(
    r"\b(can you|could you|would you|please|puedes|podrías|por favor|pouvez-vous|peux-tu|pourriez-vous|"
    r"s'il vous plaît|stp|svp)\b",
    re.IGNORECASE,
)


def requested_change(request: str) -> str | None:
    """The words asking for a change ("restart nginx on web-1"), or None when the message asks none."""
    tokens = re.findall(r"[\w'-]+", request.lower())
    if tokens and tokens[0] in _QUESTION_OPENERS and not _ASKS_TO_ACT.search(request):
        return None
    for match in re.finditer(r"[\w'-]+", request):
        if match.group(0).lower() in _CHANGE_VERBS:
            clause = re.split(r"[.?!\n;]", request[match.start() :], maxsplit=1)[0]
            return clause.strip()[:160]
    return None


def _known_devices(results: list[tuple[str, str]]) -> list[str]:
    """Device names that tool results mention (a device list, a specialist's report)."""
    names: list[str] = []
    for _, content in results:
        try:
            data = json.loads(content)
        except ValueError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("devices"), list):
            names.extend(str(d.get("name")) for d in data["devices"] if isinstance(d, dict) and d.get("name"))
        names.extend(_DEVICE.findall(content))
    return list(dict.fromkeys(names))


def device_readings(request: str, results: list[tuple[str, str]]) -> dict[str, str]:
    """Devices the request names loosely (`web-1`) → the known device they mean (`web-01`)."""
    mentioned = Facts.of(request).devices
    known = [name for name in _known_devices(results) if name not in mentioned]
    readings = {}
    for asked in mentioned:
        found = match_device(asked, known)
        if found is not None and found != asked:
            readings[asked] = found
    return readings


def _with_devices(text: str, readings: dict[str, str]) -> str:
    for asked, found in readings.items():
        text = re.sub(rf"(?<![\w-]){re.escape(asked)}(?![\w-])", found, text)
    return text


def _turn_results(turn: list[dict]) -> list[tuple[str, str]]:
    names = _call_names(turn)
    return [
        (names.get(m.get("tool_call_id", ""), "tool"), _content(m)) for m in turn if m.get("role") == "tool"
    ]


def respond(messages: list[dict], tools: list[dict]) -> LLMCompletion:
    """The offline model's whole decision for one request."""
    system = "\n".join(_content(m) for m in messages if m.get("role") == "system")
    conversation = [m for m in messages if m.get("role") != "system"]
    names = {spec.get("function", {}).get("name") for spec in tools}
    users = [_content(m) for m in conversation if m.get("role") == "user"]
    request = users[-1] if users else ""
    if "submit_report" in names:
        return investigate_offline(conversation)
    held = review_brief_call(request)
    if held is not None:
        return _final(offline_verdict(held))
    language = detect_language(users_words(request))
    turn = _current_turn(conversation)
    results = _turn_results(turn)
    readings = device_readings(request, results)
    first_id = next_call_number(conversation)
    coordinator = "AgentTool" in names
    steps = [m for m in turn if m.get("role") == "assistant" and m.get("tool_calls")]
    if turn and turn[-1].get("role") == "tool":
        looked_up = [c.get("function", {}).get("arguments") for c in steps[0]["tool_calls"]] if steps else []
        if not coordinator and looked_up == ["{}"] and [n for n, _ in results] == ["query_devices"]:
            # The device list asked for below is in: now the real look, with the names it gave.
            others = [spec for spec in tools if spec.get("function", {}).get("name") != "query_devices"]
            calls = pick_tool_calls(_with_devices(request, readings), others, first_id)
            if calls:
                return LLMCompletion(text="", tool_calls=calls, finish_reason="tool_calls")
        summary = summarise(_trailing_results(conversation), language, call_targets(conversation))
        return _final(_answer(summary, request, readings, language, coordinator))
    if coordinator:
        lookup = direct_lookup(request, tools, first_id)
        if lookup:
            return LLMCompletion(text="", tool_calls=lookup, finish_reason="tool_calls")
        entry = best_specialist(request, parse_catalog(system))
        if entry is not None:
            call = dispatch(entry, request, f"offline_{first_id}")
            return LLMCompletion(text="", tool_calls=[call], finish_reason="tool_calls")
    elif Facts.of(request).devices and "query_devices" in names:
        # A real model checks the names it was given before using them: list the devices first.
        call = ToolCall(id=f"offline_{first_id}", name="query_devices", arguments_raw="{}")
        return LLMCompletion(text="", tool_calls=[call], finish_reason="tool_calls")
    calls = pick_tool_calls(request, tools, first_id)
    if calls:
        return LLMCompletion(text="", tool_calls=calls, finish_reason="tool_calls")
    return _final(
        _answer(_plain_answer(request, bool(tools), language), request, readings, language, coordinator)
    )


def _answer(text: str, request: str, readings: dict[str, str], language: str, coordinator: bool) -> str:
    """A final answer led by what a worker read loosely (`web-1` as `web-01`) or — from the
    coordinator, who speaks to the user — by a plain statement that a requested change was not made
    (with the device names as the specialist resolved them)."""
    lead = [] if coordinator else [phrase(language, "read_as", asked=a, found=f) for a, f in readings.items()]
    change = requested_change(users_words(request)) if coordinator else None
    if change:
        lead.insert(0, phrase(language, "not_done", action=_with_devices(change, readings)))
    return "\n\n".join([*lead, text]) if lead else text


def _plain_answer(request: str, had_tools: bool, language: str = "en") -> str:
    label = phrase(language, "label")
    if not request.strip():
        return f"{phrase(language, 'hello')} {label}"
    why = phrase(language, "why_tools" if had_tools else "why_none")
    return f"{phrase(language, 'cannot', request=request.strip()[:500], why=why)} {label}"


def _final(text: str) -> LLMCompletion:
    return LLMCompletion(text=text, finish_reason="stop")


class OfflineProvider:
    name = "offline"

    def default_model(self) -> str:
        return "offline"

    async def stream_chat(
        self, messages: list[dict], tools: list[dict], model: str | None = None, **options: Any
    ) -> AsyncIterator[LLMEvent]:
        completion = respond(messages, tools)
        for piece in re.findall(r"\S+\s*", completion.text):
            yield LLMDelta(piece)
        prompt_chars = sum(len(_content(m)) for m in messages) + len(json.dumps(tools))
        completion_chars = len(completion.text) + sum(len(c.arguments_raw) for c in completion.tool_calls)
        yield LLMCompletion(
            text=completion.text,
            tool_calls=completion.tool_calls,
            usage={"prompt_tokens": prompt_chars // 4, "completion_tokens": completion_chars // 4},
            finish_reason=completion.finish_reason,
            model="offline",
        )


# ---- automatic investigations (docs/investigations.md): kept apart from the chat paths ----------

_INCIDENT_REF = re.compile(r"incident #(\d+)")


def investigate_offline(conversation: list[dict]) -> LLMCompletion:
    """The investigator's run without a model: read the incident with `get_incident_detail`, then
    submit a low-confidence report filled from what it returned, then say so in one line."""
    users = [_content(m) for m in conversation if m.get("role") == "user"]
    found = _INCIDENT_REF.search(users[0] if users else "")
    steps = [m for m in conversation if m.get("role") == "assistant" and m.get("tool_calls")]
    if found is None:
        return _final(f"No incident id in the brief; nothing to investigate. {LABEL}")
    if not steps:
        arguments = json.dumps({"incident_id": int(found.group(1))})
        call = ToolCall(id="offline_detail", name="get_incident_detail", arguments_raw=arguments)
        return LLMCompletion(text="", tool_calls=[call], finish_reason="tool_calls")
    results = _trailing_results(conversation)
    if results and results[0][0] == "get_incident_detail" and len(steps) == 1:
        report = _offline_report(results[0][1])
        if report is not None:
            call = ToolCall(id="offline_report", name="submit_report", arguments_raw=json.dumps(report))
            return LLMCompletion(text="", tool_calls=[call], finish_reason="tool_calls")
    told = results[0][1][:500] if results else ""
    return _final(f"Investigation finished by the offline stand-in. {told} {LABEL}".strip())


def _offline_report(detail_json: str) -> dict | None:
    try:
        detail = json.loads(detail_json)
        incident = detail["incident"]
    except (ValueError, KeyError, TypeError):
        return None
    devices, nodes = detail.get("devices") or [], detail.get("topology_nodes") or []
    services = incident.get("services") or []
    if devices:
        patient_zero = {"kind": "device", "name": devices[0]}
    elif nodes and isinstance(nodes[0], dict) and nodes[0].get("name"):
        patient_zero = {"kind": "topology_node", "name": nodes[0]["name"]}
    elif services:
        patient_zero = {"kind": "service", "name": services[0]}
    else:
        return None
    alerts = detail.get("alerts") or []
    changes = detail.get("recent_changes") or []
    finding = f"{len(alerts)} alert(s) in the group, {len(changes)} change event(s) around the start"
    return {
        "summary": f"{incident.get('title', 'The incident')}: a first read by the offline stand-in. {LABEL}",
        "root_cause": f"Not established by the offline stand-in; the alerts point at {patient_zero['name']}.",
        "patient_zero": patient_zero,
        "causal_chain": [f"{patient_zero['name']} alerting"],
        "symptoms": [str(a.get("name") or a)[:200] for a in alerts[:5] if isinstance(a, dict)],
        "evidence": [{"tool_call_id": "offline_detail", "finding": finding}],
        "confidence": 0.2,
        "confidence_word": "low",
        "next_actions": [{"action": "Configure a real LLM (OPENAI_API_KEY) for a full investigation."}],
        "ruled_out": [],
    }
