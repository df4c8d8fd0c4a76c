"""A real Git server for the vault's Git sync and packs fetched from Git: Debian's
`git http-backend` (the smart HTTP protocol) behind a small threaded HTTP server on a free
loopback port that asks for a token (or serves anyone, without one), and a bare repository in a
temporary directory with a work tree beside it to commit runbooks or a pack from, and tag.

Over SSH, the same bare repository is served by the test sshd (tests/support/sshd.py): git runs
`git-upload-pack <path>` there as the test user.
"""

from __future__ import annotations

import base64
import http.server
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.httpd import serving

HTTP_BACKEND = "/usr/lib/git-core/git-http-backend"
# The author of the test commits, and no configuration of the machine's user.
GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "Runbook Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Runbook Author",
    "GIT_COMMITTER_EMAIL": "author@example.com",
}


def _git(*args: str, cwd: Path) -> str:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


@dataclass
class Runbooks:
    """A bare repository (`bare`, what the servers serve, `<name>.git`) and a work tree that
    pushes to it."""

    root: Path
    branch: str = "main"
    name: str = "runbooks"

    @property
    def bare(self) -> Path:
        return self.root / f"{self.name}.git"

    @property
    def work(self) -> Path:
        return self.root / "work"

    def create(self) -> Runbooks:
        self.bare.mkdir(parents=True)
        _git("init", "--quiet", "--bare", f"--initial-branch={self.branch}", cwd=self.bare)
        self.work.mkdir()
        _git("init", "--quiet", f"--initial-branch={self.branch}", cwd=self.work)
        _git("remote", "add", "origin", str(self.bare), cwd=self.work)
        return self

    def write(self, path: str, text: str) -> None:
        target = self.work / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")

    def write_bytes(self, path: str, data: bytes) -> None:
        target = self.work / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    def symlink(self, path: str, points_to: str) -> None:
        target = self.work / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(points_to)

    def delete(self, path: str) -> None:
        (self.work / path).unlink()

    def commit(self, message: str = "runbooks") -> str:
        """Commit everything in the work tree and push it; the new commit's id."""
        _git("add", "--all", cwd=self.work)
        _git("commit", "--quiet", "--allow-empty", "-m", message, cwd=self.work)
        _git("push", "--quiet", "origin", self.branch, cwd=self.work)
        return _git("rev-parse", "HEAD", cwd=self.work).strip()

    def commit_of(self, ref: str) -> str:
        """The id of the commit `ref` (a branch, or a tag, annotated or not) points to."""
        return _git("rev-parse", f"{ref}^{{commit}}", cwd=self.work).strip()

    def switch(self, branch: str) -> None:
        """Commit on `branch` from now on (created from the current commit if new)."""
        _git("checkout", "--quiet", "-B", branch, cwd=self.work)
        self.branch = branch

    def tag(self, name: str, message: str = "") -> None:
        """Tag the current commit (annotated when `message` is given, as releases are) and push it."""
        _git("tag", *(["-a", "-m", message] if message else []), name, cwd=self.work)
        _git("push", "--quiet", "origin", f"refs/tags/{name}", cwd=self.work)


@dataclass
class GitHTTPServer:
    """Where the HTTP server listens, the token it wants, and what it saw of each request."""

    port: int
    token: str = field(repr=False)
    user: str = "x-access-token"
    repository: str = "runbooks"
    authorizations: list[str] = field(default_factory=list, repr=False)
    hosts: list[str] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)

    def url(self, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}/{self.repository}.git"

    @property
    def expected(self) -> str:
        """The Authorization header wanted ("" when the server serves anyone)."""
        if not self.token:
            return ""
        return "Basic " + base64.b64encode(f"{self.user}:{self.token}".encode()).decode()


@contextmanager
def git_http_server(
    runbooks: Runbooks, token: str = "", user: str = "x-access-token"
) -> Iterator[GitHTTPServer]:
    """`git http-backend` over HTTP on 127.0.0.1, answering 401 unless the request carries
    `Authorization: Basic <user:token>` (what GitHub and GitLab take with an access token); with
    no token, a public repository that serves anyone."""
    state = GitHTTPServer(port=0, token=token, user=user, repository=runbooks.name)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            state.hosts.append(self.headers.get("Host", ""))
            authorization = self.headers.get("Authorization", "")
            state.authorizations.append(authorization)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if state.token and authorization != state.expected:
                self._answer(401, {"WWW-Authenticate": 'Basic realm="git"'}, b"token required\n")
                return
            path, _, query = self.path.partition("?")
            env = {
                "PATH": os.environ["PATH"],
                "GIT_PROJECT_ROOT": str(runbooks.root),
                "GIT_HTTP_EXPORT_ALL": "1",
                "REQUEST_METHOD": self.command,
                "PATH_INFO": path,
                "QUERY_STRING": query,
                "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                "CONTENT_LENGTH": str(len(body)),
                "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
                "HTTP_GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
                "REMOTE_USER": state.user,
                "REMOTE_ADDR": self.client_address[0],
                "GIT_CONFIG_NOSYSTEM": "1",
                "GIT_CONFIG_GLOBAL": os.devnull,
            }
            done = subprocess.run([HTTP_BACKEND], input=body, env=env, capture_output=True, timeout=60)
            head, _, payload = done.stdout.partition(b"\r\n\r\n")
            headers, status = {}, 200
            for line in head.decode("latin-1").split("\r\n"):
                name, _, value = line.partition(":")
                if name.lower() == "status":
                    status = int(value.split()[0])
                elif name:
                    headers[name] = value.strip()
            self._answer(status, headers, payload)

        def _answer(self, status: int, headers: dict[str, str], payload: bytes) -> None:
            state.statuses.append(status)
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = _serve  # noqa: N815 - http.server's naming

        def log_message(self, format: str, *args) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.port = server.server_address[1]
    with serving(server):
        yield state
