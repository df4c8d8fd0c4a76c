"""Browser tests: a real daphne serving the product (embedded shape: in-memory channel layer,
turns in-process) on the test database, the fake LLM behind it, and headless Chromium."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.support.django_subprocess import ROOT, child_env
from tests.support.procs import free_port, stop, wait_until
from tests.support.required import require

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync",
]  # fmt: skip
ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture
def daphne_server(fake_llm, tmp_path) -> str:
    """Base URL of a daphne running Ongrid against this test's database and the fake LLM."""
    yield from run_daphne(
        tmp_path,
        ONGRID_LLM="openai",
        OPENAI_API_KEY="test-key",
        OPENAI_BASE_URL=fake_llm.base_url,
        ONGRID_MODEL="fake-model",
        ONGRID_LLM_MAX_RETRIES="0",
    )


@pytest.fixture
def offline_daphne_server(tmp_path) -> str:
    """Base URL of a daphne with no LLM configured: every page carries the "Offline model" banner,
    as in the embedded demo."""
    yield from run_daphne(tmp_path, ONGRID_LLM="offline")


def run_daphne(tmp_path: Path, **settings: str):
    """Start daphne (embedded shape) with these settings, yield its base URL, stop it."""
    port = free_port()
    env = child_env(ONGRID_DATA_DIR=str(tmp_path), **settings)
    env.pop("REDIS_URL", None)  # the embedded shape: the turn runs inside this daphne
    log = (tmp_path / "daphne.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "ongrid_site.asgi:application"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: urllib.request.urlopen(base + "/healthz", timeout=2).status == 200, 60, "daphne")
        yield base
    finally:
        stop(process)
        log.close()


@pytest.fixture
def browser():
    require(os.access(CHROMIUM, os.X_OK), "Chromium (/usr/bin/chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield instance
        finally:
            instance.close()


def screenshot(page, name: str) -> Path:
    """Saved for people to look at (not compared pixel by pixel)."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def log_in(page, base: str, username: str, password: str) -> None:
    page.goto(base + "/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url("**/chat/*/")
