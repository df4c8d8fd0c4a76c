"""The HTTP clients of every request the server makes on an organization's behalf (data sources,
LLM endpoints, MCP servers, webhooks, IM platform APIs), with the egress policy
(`ops_app.core.egress`) applied where it cannot be talked around: when the connection is opened.

How: each client's transport gets a network backend that resolves the host once, checks every
address it resolves to, and opens the TCP connection to a checked address. The host name stays
the request's: the Host header, TLS SNI and certificate verification are for the name, never for
the address. So a name that resolved to a public address when it was saved and to 127.0.0.1 now
is refused now, and so is every redirect hop (each hop is a new connection through the same
backend). The transport also refuses a scheme other than http(s) and cloud-metadata headers on
every request. Proxies and ~/.netrc from the environment are not used.

Two HTTP stacks are installed: httpx (our own calls) and httpx2 (which the openai and mcp SDKs
take as their `http_client`); the same backend wraps both.

`refusal` and `failure_reason` word the policy's answer for people: a field error when a URL is
saved, a short reason (never the remote body) for the admin's "Test" actions.
"""

from __future__ import annotations

import contextlib
import functools
import re
import select
import socket
import ssl
from collections.abc import Callable
from typing import Any

import anyio
import httpcore
import httpcore2
import httpx
import httpx2
from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _

from ops_app.core import egress
from ops_app.core.egress import EgressRefused

# The openai SDK's own pool size: hundreds of concurrent turns stream over one client.
LLM_LIMITS = httpx2.Limits(max_connections=1000, max_keepalive_connections=100)


def allowed() -> egress.AllowList:
    """What platform staff let through (ONGRID_EGRESS_ALLOW and the deployment's own URLs)."""
    return settings.CONFIG.egress_allow


def refusal(url: str, *, base: bool = False) -> str | None:
    """Why the policy refuses `url` now (its scheme, or the address it spells or resolves to), in
    the active language; None when it is acceptable. `base`: a base URL, which the product
    extends with paths, so a query or fragment (which would swallow them) is refused too."""
    try:
        egress.check_destination(url, allowed())
    except EgressRefused as refused:
        if not refused.allowable:
            return refused.reason
        return _(
            "%(reason)s: the egress policy refuses it (platform staff may allow it with ONGRID_EGRESS_ALLOW)"
        ) % {"reason": refused.reason}
    if base and ("?" in url or "#" in url):
        return _("A base URL has no query (?) or fragment (#).")
    return None


def validate(**problems: str | None) -> None:
    """A model's `clean()`: one ValidationError with a field error per refusal found."""
    errors = {name: problem for name, problem in problems.items() if problem}
    if errors:
        raise ValidationError(errors)


def header_refusal(text: str) -> str | None:
    """Why the policy refuses one of these `Name: value` lines, or None."""
    try:
        egress.check_headers(egress.header_names(text))
    except EgressRefused as refused:
        return refused.reason
    return None


# --- the transports -------------------------------------------------------------------------------


def _check_request(request: httpx.Request | httpx2.Request) -> None:
    """Every request, redirect hops included: the scheme, and no cloud-metadata header."""
    if request.url.scheme not in egress.SCHEMES:
        egress.check_url(str(request.url))  # refuses the scheme, with the reason
    egress.check_headers(name.decode("latin-1") for name, _value in request.headers.raw)


class _Guard:
    """A network backend that connects only to addresses the policy accepts (sync)."""

    def __init__(self, inner: Any, core: Any) -> None:
        self._inner, self._core = inner, core

    def _addresses(self, host: str, port: int, allow: egress.AllowList) -> list[egress.IPAddress]:
        try:
            return egress.checked_addresses(host, port, allow)
        except OSError as error:  # the name does not resolve: the library's own connect error
            raise self._core.ConnectError(str(error)) from error

    def connect_tcp(self, host: str, port: int, **options: Any) -> Any:
        """Each checked address in the resolver's order until one answers (the name is never
        resolved again, so the address dialled is one that was checked)."""
        *others, last = self._addresses(host, port, allowed())
        for address in others:
            with contextlib.suppress(self._core.ConnectError, self._core.ConnectTimeout):
                return self._inner.connect_tcp(str(address), port, **options)
        return self._inner.connect_tcp(str(last), port, **options)

    def connect_unix_socket(self, *args: Any, **kwargs: Any) -> Any:
        raise EgressRefused(_("only TCP connections are allowed"))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _AsyncGuard(_Guard):
    """The same for async clients; the name is resolved in a worker thread."""

    async def connect_tcp(self, host: str, port: int, **options: Any) -> Any:
        find = functools.partial(self._addresses, host, port, allowed())
        *others, last = await anyio.to_thread.run_sync(find)
        for address in others:
            with contextlib.suppress(self._core.ConnectError, self._core.ConnectTimeout):
                return _KeptSocket(await self._inner.connect_tcp(str(address), port, **options))
        return _KeptSocket(await self._inner.connect_tcp(str(last), port, **options))

    async def connect_unix_socket(self, *args: Any, **kwargs: Any) -> Any:
        raise EgressRefused(_("only TCP connections are allowed"))

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _KeptSocket:
    """An async connection that answers the pool's "is it readable?" from a socket looked up once.

    The pool asks before every request on a kept-alive connection (has the server closed it?), and
    the anyio stream answers by rebuilding its attribute table, a getpeername() system call
    included, each time: ~6 % of the event loop's CPU in a turn of 20 fast model calls.
    """

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._socket = inner.get_extra_info("socket")
        self.read, self.write, self.aclose = inner.read, inner.write, inner.aclose

    async def start_tls(self, *args: Any, **kwargs: Any) -> _KeptSocket:
        return _KeptSocket(await self._inner.start_tls(*args, **kwargs))

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable" and self._socket is not None:
            return _readable(self._socket)
        return self._inner.get_extra_info(info)


def _readable(sock: socket.socket) -> bool:
    """True when the socket has data or an end of file waiting (or is closed): not reusable idle."""
    if sock.fileno() == -1:
        return True
    poller = select.poll()  # not select(): it fails on a descriptor above 1023
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))


def _transports(http: Any, core: Any) -> tuple[type, type]:
    """Sync and async transports of one HTTP stack (httpx over httpcore, httpx2 over httpcore2)
    with the guard as their pool's network backend."""

    class Transport(http.HTTPTransport):
        def __init__(self, **options: Any) -> None:
            super().__init__(**options)
            # The pool hands its backend to every connection it opens; the transports take none.
            self._pool._network_backend = _Guard(self._pool._network_backend, core)

        def handle_request(self, request):
            _check_request(request)
            return super().handle_request(request)

    class AsyncTransport(http.AsyncHTTPTransport):
        def __init__(self, **options: Any) -> None:
            super().__init__(**options)
            self._pool._network_backend = _AsyncGuard(self._pool._network_backend, core)

        async def handle_async_request(self, request):
            _check_request(request)
            return await super().handle_async_request(request)

    return Transport, AsyncTransport


Transport, AsyncTransport = _transports(httpx, httpcore)
Transport2, AsyncTransport2 = _transports(httpx2, httpcore2)


def client(*, verify: bool | ssl.SSLContext = True, **options: Any) -> httpx.Client:
    """An httpx client under the policy (`verify` belongs to the transport, so it is taken here)."""
    return httpx.Client(transport=Transport(verify=verify), trust_env=False, **options)


def async_client(*, verify: bool | ssl.SSLContext = True, **options: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=AsyncTransport(verify=verify), trust_env=False, **options)


def llm_client(**options: Any) -> httpx2.Client:
    """The openai SDK's synchronous client (the admin's Test), as the SDK configures its own."""
    options.setdefault("follow_redirects", True)
    return httpx2.Client(transport=Transport2(limits=LLM_LIMITS), trust_env=False, **options)


def async_llm_client(**options: Any) -> httpx2.AsyncClient:
    options.setdefault("follow_redirects", True)
    return httpx2.AsyncClient(transport=AsyncTransport2(limits=LLM_LIMITS), trust_env=False, **options)


def mcp_client(
    headers: dict[str, str] | None = None,
    timeout: httpx2.Timeout | None = None,
    auth: httpx2.Auth | None = None,
) -> httpx2.AsyncClient:
    """The mcp SDK's `httpx_client_factory`, with the SDK's own defaults (30 s, reads 300 s; no
    redirects: the SDK follows those that stay on the server's origin)."""
    options: dict[str, Any] = {"headers": headers, "timeout": timeout or httpx2.Timeout(30.0, read=300.0)}
    if auth is not None:
        options["auth"] = auth
    return httpx2.AsyncClient(transport=AsyncTransport2(), trust_env=False, **options)


async def websocket_address(url: str) -> str:
    """The checked address to open a websocket URL's connection to (ws and wss are checked as http
    and https): give it to the websocket client as the host to connect to, which keeps the URL's
    name for the Host header and TLS. Raises EgressRefused, or OSError for a name that does not resolve."""
    target = egress.check_url(re.sub(r"^ws", "http", url, flags=re.IGNORECASE), allowed())
    find = functools.partial(egress.checked_addresses, target.host, target.port, allowed())
    return str((await anyio.to_thread.run_sync(find))[0])


# --- what a person reads --------------------------------------------------------------------------


def failure_reason(error: BaseException) -> str:
    """Why a request failed, in a few words (refused by the egress policy, connection refused, TLS
    error, timed out...), in the active language. Never the remote answer: only the kind of
    failure, found along the exception's causes."""
    chain = list(_causes(error))
    for check, words in _REASONS:
        found = next((cause for cause in chain if check(cause)), None)
        if found is not None:
            return words(found)
    return _("failed (%(error)s)") % {"error": type(error).__name__}


def status_reason(status: int) -> str:
    return _("HTTP %(status)s") % {"status": status}


def cause_of(error: BaseException, kind: type[BaseException]) -> BaseException | None:
    """The first exception of `kind` along `error`'s causes (a transport wraps what it caught)."""
    return next((cause for cause in _causes(error) if isinstance(cause, kind)), None)


def _causes(error: BaseException):
    seen: set[int] = set()
    pending = [error]
    while pending:
        current = pending.pop(0)
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        pending.extend(getattr(current, "exceptions", ()) or ())
        pending += [current.__cause__, current.__context__]


def _is(*kinds: type) -> Callable[[BaseException], bool]:
    return lambda error: isinstance(error, kinds)


_REASONS: tuple[tuple[Callable[[BaseException], bool], Callable[[BaseException], str]], ...] = (
    (
        _is(EgressRefused),
        lambda error: _("refused by the egress policy: %(reason)s") % {"reason": error.reason},
    ),
    (_is(ssl.SSLCertVerificationError), lambda error: _("TLS error: the certificate was not accepted")),
    (_is(ssl.SSLError), lambda error: _("TLS error")),
    (
        _is(httpx.TimeoutException, httpx2.TimeoutException, httpcore.TimeoutException, TimeoutError),
        lambda error: _("timed out"),
    ),
    (_is(ConnectionRefusedError), lambda error: _("connection refused")),
    (_is(socket.gaierror), lambda error: _("the host name does not resolve")),
    (_is(httpx.ConnectError, httpx2.ConnectError, OSError), lambda error: _("cannot connect")),
    (
        _is(httpx.TransportError, httpx2.TransportError),
        lambda error: _("the connection broke (%(error)s)") % {"error": type(error).__name__},
    ),
)
