"""A small multilingual runbook corpus (en/es/fr/zh-hans) and questions of every kind, for the
semantic search tests (k1's tests/knowledge/corpus supersedes it when the lead reconciles).

Each question names the runbook (`source`) that must be in the top 3. Decoys share words or
concepts with the right runbook so that "any runbook about disks" is not enough."""

from __future__ import annotations

RUNBOOKS: dict[str, tuple[str, str]] = {
    "en/replica-lag.md": (
        "PostgreSQL replica lag",
        "## Symptoms\n\nThe standby replica falls behind the primary; replication lag grows and reads "
        "return stale rows.\n\n## Fix\n\nCheck long transactions on the primary, network throughput "
        "and the WAL sender. Restart the replica only after checking the WAL archive.",
    ),
    "en/tls-certificate.md": (
        "TLS certificate expiry",
        "## Symptoms\n\nClients fail with x509 certificate has expired.\n\n## Fix\n\nRenew the "
        "certificate with cert-manager and reload the ingress controller.",
    ),
    "en/high-cpu.md": (
        "High CPU on the API pods",
        "## Symptoms\n\nThe API pods use all their CPU and requests queue up.\n\n## Fix\n\nProfile "
        "the hot path and scale the deployment out.",
    ),
    "es/disco-lleno.md": (
        "Disco lleno en los nodos",
        "## Síntomas\n\nEl disco del nodo está lleno y las escrituras fallan: no queda espacio.\n\n"
        "## Solución\n\nBorrar los registros antiguos y ampliar el volumen.",
    ),
    "es/memoria.md": (
        "Pods reiniciándose por falta de memoria",
        "## Síntomas\n\nLos contenedores se reinician: el kernel los mata por falta de memoria "
        "(OOMKilled).\n\n## Solución\n\nSubir el límite de memoria o corregir la fuga.",
    ),
    "es/certificados-vpn.md": (
        "Certificados de cliente de la VPN",
        "## Alta\n\nCada empleado recibe un certificado de cliente para la VPN corporativa.\n\n"
        "## Baja\n\nRevocar el certificado cuando el empleado se va.",
    ),
    "fr/dns.md": (
        "Échec de la résolution DNS",
        "## Symptômes\n\nLes pods n'arrivent plus à résoudre les noms de domaine : la résolution DNS "
        "échoue.\n\n## Correctif\n\nVérifier CoreDNS et redémarrer ses pods.",
    ),
    "fr/sauvegarde.md": (
        "Sauvegarde et restauration de la base",
        "## Sauvegarde\n\nUne sauvegarde complète des données part chaque nuit.\n\n## Restauration\n\n"
        "Restaurer la base depuis la dernière sauvegarde puis rejouer les journaux.",
    ),
    "fr/latence-api.md": (
        "Latence élevée de l'API",
        "## Symptômes\n\nL'API répond lentement, la latence p99 dépasse deux secondes.\n\n"
        "## Correctif\n\nRegarder les requêtes lentes et le cache.",
    ),
    "zh/kafka-consumer-lag.md": (
        "Kafka 消费者延迟",
        "## 症状\n\nKafka 消费者处理变慢，消息积压不断增长。\n\n## 处理\n\n增加消费者实例并检查分区分配。",
    ),
    "zh/connection-pool.md": (
        "数据库连接池耗尽",
        "## 症状\n\n应用无法获取数据库连接，连接池已耗尽。\n\n## 处理\n\n查找未释放的连接并调大连接池。",
    ),
    "zh/disk-io.md": (
        "磁盘 IO 慢",
        "## 症状\n\n磁盘读写很慢，iowait 很高。\n\n## 处理\n\n检查磁盘队列深度和存储类型。",
    ),
}

# (kind, question, the runbook that must be in the top 3)
QUESTIONS: list[tuple[str, str, str]] = [
    ("same-language", "postgres replica lag on the standby", "en/replica-lag.md"),
    ("same-language", "disco lleno en el nodo", "es/disco-lleno.md"),
    ("same-language", "renew the expired certificate", "en/tls-certificate.md"),
    ("same-language", "kafka 消费者延迟", "zh/kafka-consumer-lag.md"),
    ("same-language", "restaurer la base depuis une sauvegarde", "fr/sauvegarde.md"),
    ("cross-language", "¿por qué la réplica de postgres tiene retraso?", "en/replica-lag.md"),
    ("cross-language", "the node disk is full", "es/disco-lleno.md"),
    ("cross-language", "containers are killed when they run out of RAM", "es/memoria.md"),
    ("cross-language", "name lookups fail inside the cluster", "fr/dns.md"),
    ("cross-language", "how to restore the database from a backup", "fr/sauvegarde.md"),
    ("cross-language", "message consumers keep falling behind", "zh/kafka-consumer-lag.md"),
    ("paraphrase", "standby falling behind primary", "en/replica-lag.md"),
    ("paraphrase", "se acabó el espacio de almacenamiento", "es/disco-lleno.md"),
    ("paraphrase", "les noms de domaine ne se résolvent plus", "fr/dns.md"),
    ("paraphrase", "the TLS cert is outdated", "en/tls-certificate.md"),
    (
        "paraphrase",
        "the application gets no database connection, the pool is exhausted",
        "zh/connection-pool.md",
    ),
    ("accents", "reiniciandose por falta de memoria", "es/memoria.md"),
    ("accents", "echec de la resolution DNS", "fr/dns.md"),
    ("accents", "restauration des donnees", "fr/sauvegarde.md"),
    ("accents", "síntomas disco lleno", "es/disco-lleno.md"),
    ("accents", "latence elevee de l'API", "fr/latence-api.md"),
    ("chinese", "数据库副本延迟", "en/replica-lag.md"),
    ("chinese", "磁盘满了", "es/disco-lleno.md"),
    ("chinese", "证书过期", "en/tls-certificate.md"),
    ("chinese", "消费者积压", "zh/kafka-consumer-lag.md"),
    ("chinese", "连接池耗尽怎么办", "zh/connection-pool.md"),
    ("typos", "replcia lag postgres", "en/replica-lag.md"),
    ("typos", "certficate expird", "en/tls-certificate.md"),
    ("typos", "dsico lleno nodos", "es/disco-lleno.md"),
    ("typos", "sauvgarde restauraton", "fr/sauvegarde.md"),
    ("typos", "memroy oomkilled pods", "es/memoria.md"),
]
