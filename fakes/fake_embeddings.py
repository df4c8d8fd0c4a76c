"""The fake model server's `/v1/embeddings`: a deterministic "bag of concepts".

A table maps words of English, Spanish, French and Chinese to concept ids (replica / réplica /
réplique / 副本 → REPLICATION; lag / retraso / retard / 延迟 → LAG ...). A text's vector counts
its concepts (Latin words match a concept by prefix, accents ignored; Chinese terms by
substring), plus a small hashed bag of the character trigrams of its other words (so a typo
still lands near the word it misspells), normalised. Texts about the same thing in different
languages or words get close vectors; that is all the tests need to tell fused ranking from
full-text alone. Deterministic: the same text always gives the same vector.
"""

from __future__ import annotations

import math
import re
import unicodedata
import zlib

DIMENSION = 256
_HASHED = 128  # the last _HASHED dimensions hold the trigram bag
_TRIGRAM_WEIGHT = 0.12

CONCEPTS: dict[str, tuple[str, ...]] = {
    "REPLICATION": ("replic", "standby", "primary", "primari", "副本", "复制", "备库", "从库"),
    "LAG": ("lag", "retras", "atras", "retard", "behind", "延迟", "落后", "积压", "backlog"),
    "DISK": ("disk", "disco", "disque", "almacenamiento", "storage", "stockage", "volume", "磁盘", "存储"),
    "FULL": ("full", "llen", "plein", "space", "espacio", "espace", "lleno", "满", "空间"),
    "MEMORY": ("memor", "oom", "ram", "内存"),
    "RESTART": ("restart", "reinici", "redemarr", "killed", "matad", "tue", "重启", "被杀"),
    "CERTIFICATE": ("certif", "cert", "tls", "ssl", "证书"),
    "EXPIRE": ("expir", "caduc", "vencid", "outdated", "perime", "过期", "到期"),
    "DNS": ("dns", "resol", "lookup", "domain", "domin", "nombre", "noms", "解析", "域名"),
    "FAIL": ("fail", "echec", "echou", "fallo", "falla", "error", "erreur", "失败", "错误"),
    "DATABASE": ("database", "postgres", "datos", "donnees", "base", "数据库"),
    "BACKUP": ("backup", "respald", "copia", "sauvegard", "备份"),
    "RESTORE": ("restor", "restaur", "recuper", "恢复", "还原"),
    "QUEUE": ("kafka", "queue", "cola", "consum", "consomm", "topic", "消费", "队列"),
    "CONNECTION": ("connect", "conexion", "连接"),
    "POOL": ("pool", "exhaust", "agotad", "epuis", "池", "耗尽"),
    "CPU": ("cpu", "processor", "procesador", "processeur", "处理器"),
    "LATENCY": ("latenc", "slow", "lent", "慢", "延时", "响应"),
    "NODE": ("node", "nodo", "noeud", "节点"),
    "POD": ("pod", "contenedor", "conteneur", "container", "容器"),
    "VPN": ("vpn", "client", "cliente"),
    "API": ("api", "接口"),
    # General operations vocabulary, as any multilingual embedding model knows it.
    "CLOCK": (
        "clock",
        "ntp",
        "chrony",
        "reloj",
        "horloge",
        "tiempo",
        "hora",
        "heure",
        "timestamp",
        "时钟",
        "时间",
        "时间戳",
    ),
    "DRIFT": ("drift", "desfas", "desincron", "derive", "decal", "skew", "sync", "漂移", "偏差", "同步"),
    "LEAK": ("leak", "fuga", "fuite", "泄漏", "泄露"),
    "HEAP": ("java", "jvm", "heap", "garbage", "montic", "堆"),
    "HEALTH": (
        "health",
        "alive",
        "salud",
        "sante",
        "vivant",
        "healthy",
        "rojo",
        "rouge",
        "健康",
        "存活",
    ),
    "BALANCER": ("balanc", "equilibr", "target", "destino", "cible", "负载", "均衡"),
    "PROXY": ("proxy", "nginx", "gateway", "upstream", "502", "passerelle", "pasarela", "网关", "反向代理"),
    "WRITE": ("write", "escrib", "escritur", "ecri", "写入", "写"),
    "LOG": ("log", "journal", "registro", "日志"),
    "SNAPSHOT": ("snapshot", "instantan", "nightly", "nocturn", "nuit", "快照", "每晚"),
    "CACHE": ("redis", "cache", "evict", "expuls", "expulse", "缓存", "驱逐", "淘汰"),
    "SEARCH": ("elastic", "search", "busqueda", "recherche", "shard", "indice", "index", "搜索", "分片"),
    "KUBERNETES": ("kubernetes", "k8s", "kubelet", "notready", "集群"),
    "SECURE": ("secure", "segur", "securis", "https", "安全"),
    "CRASH": ("crash", "fallen", "crashloop", "崩溃"),
}
_CONCEPT_INDEX = {name: index for index, name in enumerate(CONCEPTS)}
_STOP = frozenset(
    "the and for with from how why what que por con los las une des les dans pour est sur".split()
)


def plain(text: str) -> str:
    """Lower case without accents (é → e, ñ → n); CJK untouched."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def vector(text: str, dimension: int = DIMENSION) -> list[float]:
    """The text's unit vector; another `dimension` (a misbehaving server) cuts or pads it."""
    values = _values(text)
    values = (values + [0.0] * dimension)[:dimension]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    if not any(values):
        values[-1], norm = 1.0, 1.0
    return [round(v / norm, 6) for v in values]


def _values(text: str) -> list[float]:
    dimension = DIMENSION
    values = [0.0] * dimension
    flat = plain(text)
    for name, terms in CONCEPTS.items():
        for term in terms:
            if not term.isascii():
                values[_CONCEPT_INDEX[name]] += flat.count(term)
    for word in re.findall(r"[a-z0-9]+", flat):
        concept = next(
            (n for n, terms in CONCEPTS.items() if any(word.startswith(t) for t in terms if t.isascii())),
            None,
        )
        if concept is not None:
            values[_CONCEPT_INDEX[concept]] += 1
        elif len(word) > 3 and word not in _STOP:
            for i in range(len(word) - 2):
                slot = dimension - _HASHED + zlib.crc32(word[i : i + 3].encode()) % _HASHED
                values[slot] += _TRIGRAM_WEIGHT
    return values
