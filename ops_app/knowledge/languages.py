"""The one tokenizer of knowledge retrieval, and which language a text is written in.

Indexing (the `search_text` the database engines index) and scoring (`vault.rank`) both call
`terms`, and questions go through `query_terms`, so a word means the same thing everywhere:

- Latin, Greek, Cyrillic… words are kept whole ("réplica", not "r" + "plica"), then folded to
  lower case without diacritics, so "réplica", "replica" and "RÉPLICA" are one term; passages
  still show the original text.
- Chinese, Japanese and Korean have no spaces: a run of such characters becomes its overlapping
  character bigrams ("磁盘空间" → 磁盘 盘空 空间), plus single characters in the index so a
  one-character question still finds something. Particles (的 了 吗 怎么 …) split runs.
- A small stemmer folds English, Spanish and French plural and feminine endings.
- Stop words (question words, articles) of en/es/fr are dropped from questions only.

`detect_language` is the single language detector of the project (the offline model uses it too).
"""

from __future__ import annotations

import re
import unicodedata

LANGUAGES = ("en", "es", "fr", "zh-hans")

# Han (with extension A and compatibility ideographs), Hiragana, Katakana, Hangul syllables.
_CJK_CLASS = r"\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_CJK = re.compile(f"[{_CJK_CLASS}]+")
_WORD = re.compile(r"[^\W_]+")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_LIGATURES = str.maketrans({"œ": "oe", "æ": "ae", "ø": "o", "đ": "d", "ł": "l", "ı": "i"})

# What tells the offline model's languages apart (stop words and telltale letters).
LANGUAGE_WORDS = {
    "en": {"the", "is", "are", "and", "why", "what", "how", "with", "on", "my", "it", "of", "to", "for",
           "this", "that", "returns", "please", "does", "not", "can", "you", "full", "server", "which"},
    "es": {"el", "los", "las", "del", "por", "para", "con", "una", "está", "están", "qué", "cómo", "hay",
           "mi", "se", "al", "lo", "pero", "muy", "y", "disco", "lleno", "servidor", "devuelve", "cuál",
           "dónde", "reinicia", "puedes", "es", "son", "tiene"},
    "fr": {"le", "les", "des", "du", "est", "et", "une", "pour", "avec", "sur", "pas", "ne", "je", "il",
           "pourquoi", "quoi", "comment", "au", "aux", "ce", "cette", "mon", "plein", "serveur", "renvoie",
           "qui", "où", "sont", "redémarre", "pouvez", "vous", "quel", "quelle"},
}  # fmt: skip
LANGUAGE_LETTERS = {"es": "ñ¿¡áíóú", "fr": "çàèêùœâîôû"}

_STOP_EN = """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had has
    have having he her here hers him his how i if in into is it its itself just let me more most my no nor
    not now of off on once only or other our ours out over own same she should so some such than that the
    their theirs them then there these they this those through to too under until up very was we were what
    when where which while who whom why will with would you your yours also get got im ive dont cant wont
    please tell know need want help happen happened happening going thing things"""
_STOP_ES = """el la los las un una unos unas de del al y o u e en es son ser que qué como cómo por para
    con sin se lo le les mi mis su sus cuál cuáles cual dónde donde cuándo cuando hay está están esta este
    esto estos estas ese esa eso hacer hago hace puedo puede debo debe qué porque muy pero mas más ya me
    nos yo tu tú si sí ha han hemos"""
_STOP_FR = """le la les l un une des de du d au aux et ou en est sont être que qu qui quoi quel quelle
    quels quelles comment pourquoi où quand pour par avec sans sur dans ce cet cette ces c mon ma mes ton ta
    tes son sa ses je j tu il elle nous vous ils elles on ne n pas plus faire fait dois doit peut peux y a
    s se si t"""


def fold(word: str) -> str:
    """Lower case without diacritics ("RÉPLICA" → "replica", "Œuvre" → "oeuvre")."""
    decomposed = unicodedata.normalize("NFKD", word.casefold().translate(_LIGATURES))
    return "".join(c for c in decomposed if not unicodedata.combining(c))


STOPWORDS = frozenset(fold(w) for w in f"{_STOP_EN} {_STOP_ES} {_STOP_FR}".split())
# Chinese particles and question words; longest first so 怎么办 goes before 怎么.
CJK_STOPWORDS = ("为什么", "怎么办", "怎么样", "怎样", "怎么", "如何", "什么", "哪里", "哪个", "哪些", "请问",
                 "应该", "我们", "的", "了", "是", "吗", "呢", "吧", "啊", "呀", "我", "你")  # fmt: skip
_CJK_STOP = re.compile("|".join(CJK_STOPWORDS))

_SUFFIXES = (
    ("ational", "ate"), ("ization", "ize"), ("iones", "ion"), ("ies", "y"), ("ied", "y"), ("ing", ""),
    ("ment", ""), ("ness", ""), ("edly", ""), ("euses", "eur"), ("euse", "eur"), ("aux", "al"),
    ("ees", "e"), ("ee", "e"), ("ed", ""), ("er", ""), ("ly", ""), ("es", ""), ("s", ""),
)  # fmt: skip


def stem(word: str) -> str:
    """A deliberately small suffix stripper for folded words: English endings plus the Spanish and
    French plural and feminine ones ("réplicas", "réplica" → "replic"; "pleine", "plein" → "plein").
    The same in every engine, good enough for runbooks; CJK terms pass through."""
    if not word.isascii():
        return word
    for _ in range(2):
        for suffix, replacement in _SUFFIXES:
            if word.endswith(suffix) and len(word) - len(suffix) >= 3:
                word = word[: -len(suffix)] + replacement
                break
    if len(word) > 4 and word[-1] in "eyao":
        word = word[:-1]
    return word


def _cjk_terms(run: str, *, unigrams: bool) -> list[str]:
    """Bigrams of a CJK run split at particles; single characters too when asked (the index) or
    when a piece is one character long (a one-character question)."""
    found: list[str] = []
    for piece in _CJK_STOP.split(run):
        if len(piece) == 1:
            found.append(piece)
            continue
        found.extend(piece[i : i + 2] for i in range(len(piece) - 1))
        if unigrams:
            found.extend(piece)
    return found


def _tokens(text: str, *, unigrams: bool) -> list[tuple[str, bool]]:
    """(term, is_cjk) in order of appearance; Latin words folded and stemmed."""
    found: list[tuple[str, bool]] = []
    for match in _WORD.finditer(text):
        word = match.group(0)
        position = 0
        for run in _CJK.finditer(word):
            if run.start() > position:
                found.append((stem(fold(word[position : run.start()])), False))
            found.extend((t, True) for t in _cjk_terms(run.group(0), unigrams=unigrams))
            position = run.end()
        if position < len(word):
            found.append((stem(fold(word[position:])), False))
    return found


def terms(text: str) -> list[str]:
    """Every indexed term of a text, in order (what `search_text` stores and scoring counts)."""
    return [term for term, _ in _tokens(text, unigrams=True) if term]


def search_text(title: str, heading: str, text: str) -> str:
    """What the database engines index for a passage: its terms, space-separated."""
    return " ".join(terms(f"{title}\n{heading}\n{text}"))


def query_terms(query: str, limit: int = 24) -> list[str]:
    """The searchable terms of a question, in order, without stop words or repeats."""
    seen: list[str] = []
    for match in _WORD.finditer(query):
        for term, is_cjk in _tokens(match.group(0), unigrams=False):
            if not is_cjk and (len(term) < 2 or fold(match.group(0)) in STOPWORDS):
                continue
            if term and term not in seen:
                seen.append(term)
    return seen[:limit]


def is_cjk(term: str) -> bool:
    return bool(_CJK.fullmatch(term))


def detect_language(text: str, fallback: str = "") -> str:
    """'en', 'es', 'fr' or 'zh-hans', cheaply: Chinese when the text holds at least two Han
    characters and they outnumber the Latin stop words (so "磁盘满了 on web-01" is Chinese and an
    English text quoting one Chinese word is not); otherwise by counting stop words and telltale
    letters, ties → 'en'. `fallback` when there is nothing to tell by (an empty text, a bare
    command): the offline model answers in English then, a document stays "unknown" ("")."""
    han = len(_HAN.findall(text))
    lowered = text.lower()
    tokens = re.findall(r"\w+", lowered)
    scores = {
        language: sum(token in vocabulary for token in tokens)
        for language, vocabulary in LANGUAGE_WORDS.items()
    }
    for language, letters in LANGUAGE_LETTERS.items():
        scores[language] += 2 * sum(lowered.count(letter) for letter in letters)
    best = max(scores.values())
    if han >= 2 and han > best:
        return "zh-hans"
    if best == 0:
        return fallback
    if scores["en"] == best:
        return "en"
    return max(("es", "fr"), key=lambda language: scores[language])
