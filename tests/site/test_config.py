"""The two deployment shapes are chosen by the environment alone."""

from __future__ import annotations

import ipaddress
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ongrid_site import config
from ops_app.core.egress import AllowList

ROOT = Path(__file__).resolve().parents[2]


def test_embedded_default_is_sqlite_in_data_dir_with_in_memory_layer(tmp_path):
    cfg = config.load({"SECRET_KEY": "k", "ONGRID_DATA_DIR": str(tmp_path)})
    assert cfg.database["ENGINE"] == "django.db.backends.sqlite3"
    assert cfg.database["NAME"] == str(tmp_path / "ongrid.sqlite3")
    assert cfg.channel_layers()["default"]["BACKEND"] == "channels.layers.InMemoryChannelLayer"
    assert cfg.executor == "inline"
    assert cfg.llm == "offline"


def test_the_embedded_database_commits_without_waiting_for_fsync_and_survives_a_killed_writer(tmp_path):
    """WAL with synchronous=NORMAL: a writer killed right after its commit loses nothing."""
    cfg = config.load({"SECRET_KEY": "k", "ONGRID_DATA_DIR": str(tmp_path)})
    pragmas = cfg.database["OPTIONS"]["init_command"]
    writer = (
        "import os, sqlite3\n"
        f"c = sqlite3.connect({cfg.database['NAME']!r}, isolation_level=None)\n"
        f"for p in {pragmas!r}.split(';'):\n"
        "    p.strip() and c.execute(p)\n"
        "mode = c.execute('PRAGMA journal_mode').fetchone()[0]\n"
        "print(mode, c.execute('PRAGMA synchronous').fetchone()[0])\n"
        "c.execute('create table answers (text)')\n"
        "c.execute(\"insert into answers values ('disk is full')\")\n"
        "os.kill(os.getpid(), 9)\n"
    )
    proc = subprocess.run([sys.executable, "-c", writer], capture_output=True, text=True, timeout=30)
    assert proc.returncode == -9 and proc.stdout.split() == ["wal", "1"]  # 1 is NORMAL
    import sqlite3

    with sqlite3.connect(cfg.database["NAME"]) as reader:
        assert reader.execute("select text from answers").fetchall() == [("disk is full",)]


def test_static_files_live_in_the_data_dir_unless_a_static_root_is_named(tmp_path):
    """The image bakes collected static files outside its data volume, which would hide them."""
    default = config.load({"SECRET_KEY": "k", "ONGRID_DATA_DIR": str(tmp_path)})
    assert default.static_root == tmp_path / "staticfiles"
    baked = tmp_path / "baked"
    cfg = config.load({"SECRET_KEY": "k", "ONGRID_DATA_DIR": str(tmp_path), "ONGRID_STATIC_ROOT": str(baked)})
    assert cfg.static_root == baked


def test_scale_out_shape_uses_postgres_and_redis():
    cfg = config.load(
        {
            "SECRET_KEY": "k",
            "DATABASE_URL": "postgres://ongrid:pw@db.internal:5433/ongrid",
            "REDIS_URL": "redis://cache.internal:6380/2",
        }
    )
    db = cfg.database
    assert (db["ENGINE"], db["HOST"], db["PORT"], db["NAME"], db["USER"]) == (
        "django.db.backends.postgresql",
        "db.internal",
        5433,
        "ongrid",
        "ongrid",
    )
    layer = cfg.channel_layers()["default"]
    assert layer["BACKEND"] == "channels_redis.core.RedisChannelLayer"
    assert layer["CONFIG"]["hosts"][0]["address"] == "redis://cache.internal:6380/2"
    # Reads outwait channels_redis' 5 s blocking read, or an idle websocket dies at 5 s.
    host = layer["CONFIG"]["hosts"][0]
    assert host["socket_timeout"] > 5 and host["retry_on_timeout"]
    assert cfg.executor == "celery"


def test_llm_defaults_to_openai_only_when_a_key_is_set():
    assert config.load({"SECRET_KEY": "k", "OPENAI_API_KEY": "sk-x"}).llm == "openai"
    assert (
        config.load({"SECRET_KEY": "k", "OPENAI_API_KEY": "sk-x", "ONGRID_LLM": "offline"}).llm == "offline"
    )
    with pytest.raises(config.ConfigError, match="ONGRID_LLM"):
        config.load({"SECRET_KEY": "k", "ONGRID_LLM": "gpt"})


def test_agents_dirs_are_colon_separated():
    cfg = config.load({"SECRET_KEY": "k", "ONGRID_AGENTS_DIRS": "/a:/b/c:"})
    assert cfg.agents_dirs == [Path("/a"), Path("/b/c")]


def test_missing_secret_key_is_refused_unless_debug():
    with pytest.raises(config.ConfigError, match="SECRET_KEY is not set"):
        config.load({})
    assert config.load({"DEBUG": "1"}).secret_key


def test_process_refuses_to_start_without_secret_key(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG"}}
    env["ONGRID_DATA_DIR"] = str(tmp_path)
    proc = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode != 0
    assert "SECRET_KEY is not set" in proc.stderr


def test_running_suite_uses_the_database_the_environment_names(db):
    from django.db import connection

    expected = "postgresql" if os.environ.get("DATABASE_URL", "").startswith("postgres") else "sqlite"
    assert connection.vendor == expected


def test_the_public_url_for_im_links_defaults_to_the_local_server_and_loses_a_trailing_slash():
    assert config.load({"SECRET_KEY": "k"}).public_url == "http://127.0.0.1:8000"
    assert config.load({"SECRET_KEY": "k", "ONGRID_PUBLIC_URL": "https://ops.example/"}).public_url == (
        "https://ops.example"
    )
    # Whether it was given: the IM admin shows absolute webhook URLs only then (docs/im.md).
    assert not config.load({"SECRET_KEY": "k"}).public_url_set
    assert config.load({"SECRET_KEY": "k", "ONGRID_PUBLIC_URL": "https://ops.example"}).public_url_set


def test_the_egress_allow_list_comes_from_the_setting_and_the_deployments_own_urls():
    cfg = config.load(
        {
            "SECRET_KEY": "k",
            "ONGRID_EGRESS_ALLOW": "prometheus.monitoring:9090, 10.20.0.0/16",
            "PROMETHEUS_URL": "http://localhost:9090",
            "OPENAI_BASE_URL": "https://[fd00::5]/v1",
        }
    )
    allow = cfg.egress_allow
    assert allow.allows_name("prometheus.monitoring", 9090)
    assert not allow.allows_name("prometheus.monitoring", 80)
    assert allow.allows_address(ipaddress.ip_address("10.20.1.2"), 443)
    # What platform staff configured themselves is theirs to reach, on its port only.
    assert allow.allows_name("localhost", 9090) and not allow.allows_name("localhost", 8000)
    assert allow.allows_address(ipaddress.ip_address("fd00::5"), 443)
    assert config.load({"SECRET_KEY": "k"}).egress_allow == AllowList()


def test_a_malformed_egress_allow_entry_stops_startup_naming_it():
    with pytest.raises(config.ConfigError, match="ONGRID_EGRESS_ALLOW: 'http://x' is not a host"):
        config.load({"SECRET_KEY": "k", "ONGRID_EGRESS_ALLOW": "10.0.0.0/8,http://x"})


def test_tool_search_is_on_past_fifteen_tools_unless_switched_off():
    default = config.load({"SECRET_KEY": "k"})
    assert (default.tool_search, default.deferred_tools_above) == (True, 15)
    tuned = config.load({"SECRET_KEY": "k", "ONGRID_TOOL_SEARCH": "off", "ONGRID_DEFERRED_TOOLS_ABOVE": "40"})
    assert (tuned.tool_search, tuned.deferred_tools_above) == (False, 40)
