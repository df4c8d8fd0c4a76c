"""The words the offline model reads to recognise a request, in English, Spanish and French.

Recognition data, not phrases: nothing here is ever written into a reply, so none of it goes
through gettext. The nouns that name a kind of record belong to the tool that lists it and live
in `tool_knowledge`.
"""

from __future__ import annotations

import re

from ops_app.knowledge import languages

# Small, distinctive stop words per language: enough to tell the three apart in one message.
LANGUAGE_WORDS = languages.LANGUAGE_WORDS  # one list, kept with the one detector
LANGUAGE_LETTERS = languages.LANGUAGE_LETTERS

# Words that never carry the meaning of a request (nor of a persona's or a tool's description).
STOPWORDS = {
    "a", "an", "the", "is", "are", "was", "be", "on", "in", "at", "of", "to", "for", "and", "or", "it",
    "its", "this", "that", "with", "my", "our", "we", "i", "you", "me", "please", "can", "could", "what",
    "why", "how", "when", "who", "which", "there", "from", "by", "as", "do", "does", "did", "not", "no",
    "use", "used", "using", "any", "all", "about", "into", "has", "have", "had", "will", "would", "should",
    "el", "la", "los", "las", "de", "del", "en", "es", "un", "una", "y", "que", "le", "les", "des", "du",
    "et", "est", "specialist", "agent", "tool", "tools", "user", "asks", "ask",
}  # fmt: skip
# A tool whose name holds one of these changes something: the offline model never calls it.
MUTATING_WORDS = {
    "restart", "delete", "remove", "silence", "acknowledge", "ack", "resolve", "create", "update",
    "write", "kill", "stop", "apply", "set", "reboot", "drain", "scale",
}  # fmt: skip

# Words around a number that make it an HTTP status ("returns 502", "HTTP 500", "a 404", "502 errors")…
STATUS_BEFORE = {"http", "status", "code", "error", "returns", "returned", "return", "returning", "got",
                 "gets", "get", "getting", "a", "an", "with", "throws", "devuelve", "devuelven", "da", "un",
                 "código", "estado", "renvoie", "renvoient", "retourne", "erreur", "une"}  # fmt: skip
STATUS_AFTER = {"error", "errors", "status", "response", "responses", "page", "pages", "errores", "erreurs"}
# …and words that make it an identifier whatever its value ("incident 502", "port 443").
ID_BEFORE = {"incident", "incidents", "incidente", "incidencia", "id", "number", "no", "nº", "n°", "número",
             "numéro", "ticket", "port", "puerto", "alert", "alerta", "alerte"}  # fmt: skip
COMMON_STATUSES = {400, 401, 403, 404, 405, 408, 409, 410, 422, 429, 500, 501, 502, 503, 504}

# Symptoms people type, and the words the personas and tools use for them (matched after
# `reading.words` singularises: "erreurs" is "erreur"). Domain concepts say *what* is wrong (a
# certificate, a name lookup, a full disk, memory)…
DOMAIN_CONCEPTS = {
    frozenset({"certificate", "cert", "ssl", "tls", "handshake", "x509", "expired", "expiry", "https",
               "certificado", "certificat"}): {"tls", "http"},
    frozenset({"dns", "resolve", "resolution", "resolver", "nxdomain", "resolución", "résolution"}):
        {"dns", "reachability"},
    frozenset({"reach", "unreachable", "connect", "refused", "partition"}): {"reachability", "connectivity"},
    frozenset({"full", "space", "inode", "disco", "lleno", "espacio", "disque", "plein", "espace", "磁盘"}):
        {"disk", "filesystem"},
    frozenset({"cpu", "memory", "oom", "load", "swap", "memoria", "mémoire", "carga", "charge", "processus",
               "proceso", "内存", "负载", "进程"}): {"host", "load", "process"},
}  # fmt: skip
# …generic ones only that *something* is (it fails, errors, is slow).
FAILURE_CONCEPTS = {
    frozenset({"fail", "failing", "failed", "failure", "error", "down", "broken", "outage", "500", "502",
               "503", "5xx", "crash", "crashing", "firing", "alert", "page", "paged", "falla", "fallo",
               "errore", "caído", "erreur", "panne", "échoue", "alerta", "alertando", "alerte", "告警",
               "故障", "错误"}):
        {"incident", "root", "cause", "alert"},
    frozenset({"slow", "latency", "timeout", "timing", "lento", "lent", "lente"}): {"latency", "incident"},
}  # fmt: skip
CONCEPTS = {**DOMAIN_CONCEPTS, **FAILURE_CONCEPTS}

# Verbs (and their usual imperative forms) that ask for a change, per language.
CHANGE_VERBS = {
    "restart", "reboot", "delete", "remove", "kill", "stop", "silence", "mute", "acknowledge", "ack",
    "resolve", "close", "drain", "scale", "deploy", "rollback", "apply", "purge", "truncate", "start",
    "reinicia", "reiniciar", "reinicie", "rearranca", "borra", "borrar", "elimina", "eliminar", "mata",
    "detén", "detener", "silencia", "silenciar", "reconoce", "resuelve", "resolver", "cierra", "aplica",
    "despliega", "redémarre", "redémarrer", "redémarrez", "relance", "relancer", "relancez", "supprime",
    "supprimer", "supprimez", "arrête", "arrêter", "arrêtez", "tue", "acquitte", "acquitter", "résous",
    "résoudre", "ferme", "fermer", "applique", "déploie",
}  # fmt: skip
# A message that opens with one of these asks about something; it does not ask for a change…
QUESTION_OPENERS = {"why", "what", "when", "how", "who", "which", "where", "did", "was", "por", "qué",
                    "cuándo", "cómo", "pourquoi", "quand", "comment", "quoi", "qui"}  # fmt: skip
# …unless it asks someone to act ("can you restart …").
ASKS_TO_ACT = re.compile(
    r"\b(can you|could you|would you|please|puedes|podrías|por favor|pouvez-vous|peux-tu|pourriez-vous|"
    r"s'il vous plaît|stp|svp)\b",
    re.IGNORECASE,
)

# A question that asks to list or look up records of the estate opens with one of these…
LOOKUP_OPENERS = {"which", "what", "list", "show", "who", "how", "give", "cuál", "cuáles", "qué", "lista",
                  "muestra", "quel", "quels", "quelle", "quelles", "liste", "montre", "affiche"}  # fmt: skip
# …and is no look-up when it asks for a cause.
CAUSE_WORDS = {"why", "por", "pourquoi", "cause"}
# Words that ask for the open (active, firing) records only.
OPEN_WORDS = {"open", "active", "firing", "current", "unresolved", "abierto", "abierta", "activo", "ouvert",
              "ouverte", "actif"}  # fmt: skip
