"""Hot reload of the mounted persona and skill directories (`ONGRID_AGENTS_DIRS`, docs/personas.md).

Each process (daphne, every Celery worker process, `manage.py ongrid_im`) runs one daemon thread
that watches the mounted directories recursively (their `skills/` folders included) and, a moment
after a burst of changes settles, re-reads the whole file set aside and swaps it in
(`registry.reload_files`). There is no broadcast between processes: each one watches the same
files, so all of them are live within a few seconds of an edit.

`ONGRID_AGENTS_RELOAD` picks how changes are noticed: `watch` (file-system events, the default),
`poll` (a periodic scan, for network or container mounts that deliver no events) or `off`.

The thread never takes the process down: an error while watching or reloading is logged and the
watcher goes on (a broken file is the registry's business: it keeps its last good version and
shows a warning in the admin). It holds no database connection.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from django.conf import settings
from django.db import connection

from agents_app.personas import registry

log = logging.getLogger(__name__)

DEBOUNCE_MS = 300  # one reload for an editor's save (write temp file, rename, chmod...)
POLL_MS = 300  # `poll` mode: how often the directories are scanned
RETRY_SECONDS = 2.0  # after an error in the watcher itself (a directory unmounted, ...)


class Watcher:
    """One thread that calls `on_change` after files under `roots` change, until `stop()`."""

    def __init__(
        self,
        roots: Iterable[Path],
        on_change: Callable[[], object] = registry.reload_files,
        force_polling: bool = False,
    ) -> None:
        self.roots = [Path(root) for root in roots]
        self.on_change = on_change
        self.force_polling = force_polling
        self.pid = os.getpid()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ongrid-agents-reload", daemon=True)

    def start(self) -> Watcher:
        self._thread.start()
        return self

    def alive(self) -> bool:
        """Running in this process (a forked child inherits the object, not the thread)."""
        return self.pid == os.getpid() and self._thread.is_alive()

    def wait_ready(self, timeout: float) -> bool:
        """True once the watcher watches and has re-read the files once (an edit made between
        the first load and the watch is not missed)."""
        return self._ready.wait(timeout)

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    self._watch()
                except Exception:  # noqa: BLE001 - the watcher must outlive any error; it retries
                    log.exception("watching the mounted agents directories failed; retrying")
                    self._stop.wait(RETRY_SECONDS)
        finally:
            connection.close()  # reloading needs no database, but nothing may leak a connection

    def _watch(self) -> None:
        import watchfiles

        roots = [str(root) for root in self.roots if root.is_dir()]
        if not roots:  # nothing mounted yet: look again later (a directory may appear)
            self._ready.set()
            self._stop.wait(RETRY_SECONDS)
            return
        changes = watchfiles.watch(
            *roots,
            stop_event=self._stop,
            debounce=DEBOUNCE_MS,
            step=50,
            force_polling=self.force_polling,
            poll_delay_ms=POLL_MS,
            recursive=True,
            raise_interrupt=False,
            yield_on_timeout=True,
            rust_timeout=1000,
        )
        first = True
        for batch in changes:
            if first:  # watching now: re-read once, so an edit made before the watch is not missed
                first = False
                self._reload(batch or {"start"})
                self._ready.set()
            elif batch:
                self._reload(batch)

    def _reload(self, batch: set) -> None:
        try:
            generation = self.on_change()
        except Exception:  # noqa: BLE001 - a failed reload keeps the registry as it was
            log.exception("reloading the agent files after %d change(s) failed", len(batch))
            return
        log.info("agent files reloaded after %d change(s) (generation %s)", len(batch), generation)


_watcher: Watcher | None = None
_start_lock = threading.Lock()


def mode() -> str:
    return getattr(settings.CONFIG, "agents_reload", "watch")


def start() -> Watcher | None:
    """Start this process's watcher once (idempotent, fork-aware); None when there is nothing to
    watch (`ONGRID_AGENTS_RELOAD=off` or no mounted directory configured)."""
    global _watcher
    roots = registry.mounted_dirs()
    if mode() == "off" or not roots:
        return None
    with _start_lock:
        if _watcher is not None and _watcher.alive():
            return _watcher
        _watcher = Watcher(roots, force_polling=mode() == "poll").start()
        log.info("watching %s for persona and skill changes (%s)", ", ".join(map(str, roots)), mode())
        return _watcher


def stop(timeout: float = 5.0) -> None:
    """Stop this process's watcher and wait for its thread (tests; process exit needs nothing)."""
    global _watcher
    with _start_lock:
        watcher, _watcher = _watcher, None
    if watcher is not None:
        watcher.stop(timeout)
