"""The egress policy (ops_app/core/egress.py) and the clients that apply it when they connect
(ops_app/core/outbound.py): every refused range and spelling, the allow-list, metadata headers,
and real requests against loopback listeners that must see no connection, including a name that
resolves to loopback, a redirect to loopback and a DNS answer that changes after the URL was saved.
The surfaces that use them are tested in test_egress_surfaces.py."""

from __future__ import annotations

import asyncio
import ssl

import httpx
import httpx2
import pytest
from asgiref.sync import async_to_sync

from ops_app.core import egress, outbound
from ops_app.core.egress import AllowList, EgressRefused
from tests.support.egress import allow, loopback_listener
from tests.support.httpd import closed_port_url

REFUSED = [
    # loopback, in every spelling the C resolver reads as 127.0.0.1
    ("http://127.0.0.1/", "127.0.0.1 is a loopback address"),
    ("http://127.1/", "127.0.0.1 is a loopback address"),
    ("http://127.0.1/", "127.0.0.1 is a loopback address"),
    ("http://2130706433/", "127.0.0.1 is a loopback address"),
    ("http://0x7f000001/", "127.0.0.1 is a loopback address"),
    ("http://0x7f.0.0.1/", "127.0.0.1 is a loopback address"),
    ("http://0177.0.0.01/", "127.0.0.1 is a loopback address"),
    ("http://017700000001/", "127.0.0.1 is a loopback address"),
    ("http://127.255.255.254:8080/", "127.255.255.254 is a loopback address"),
    ("http://localhost/", "localhost names this machine"),
    ("http://localhost./", "localhost names this machine"),
    ("http://LOCALHOST:8000/admin/login/?", "localhost names this machine"),
    ("http://api.localhost/", "api.localhost names this machine"),
    ("http://[::1]/", "::1 is a loopback address"),
    ("http://[0:0:0:0:0:0:0:1]:9090/", "::1 is a loopback address"),
    # IPv6 forms that carry an IPv4 address
    ("http://[::ffff:127.0.0.1]/", "::ffff:7f00:1 is a loopback address"),
    ("http://[::ffff:7f00:1]/", "::ffff:7f00:1 is a loopback address"),
    ("http://[::127.0.0.1]/", "::7f00:1 is a loopback address"),
    ("http://[64:ff9b::127.0.0.1]/", "64:ff9b::7f00:1 is a loopback address"),
    ("http://[2002:7f00:1::]/", "2002:7f00:1:: is a loopback address"),
    ("http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", "is a loopback address"),  # Teredo
    ("http://[::ffff:10.0.0.1]/", "is a private address"),
    # cloud metadata
    ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a cloud metadata service"),
    ("http://0xa9fea9fe/", "169.254.169.254 is a cloud metadata service"),
    ("http://169.254.43518/", "169.254.169.254 is a cloud metadata service"),
    ("http://[::ffff:169.254.169.254]/", "is a cloud metadata service"),
    ("http://[fd00:ec2::254]/", "fd00:ec2::254 is a cloud metadata service"),
    # link-local, private, carrier-grade NAT, multicast, unspecified, reserved
    ("http://169.254.1.1/", "169.254.1.1 is a link-local address"),
    ("http://[fe80::1]/", "fe80::1 is a link-local address"),
    ("http://[fe80::1%25eth0]/", "fe80::1 is a link-local address"),
    ("http://10.0.0.1/", "10.0.0.1 is a private address"),
    ("http://172.16.5.4/", "172.16.5.4 is a private address"),
    ("http://172.31.255.255/", "172.31.255.255 is a private address"),
    ("http://192.168.1.1:8443/", "192.168.1.1 is a private address"),
    ("https://[fc00::1]/", "fc00::1 is a private address"),
    ("http://[fd12:3456::1]/", "fd12:3456::1 is a private address"),
    ("http://100.64.0.1/", "100.64.0.1 is a carrier-grade NAT address"),
    ("http://100.127.255.254/", "100.127.255.254 is a carrier-grade NAT address"),
    ("http://224.0.0.1/", "224.0.0.1 is a multicast address"),
    ("http://[ff02::1]/", "ff02::1 is a multicast address"),
    ("http://0.0.0.0/", "0.0.0.0 is the unspecified address"),
    ("http://0/", "0.0.0.0 is the unspecified address"),
    ("http://[::]/", ":: is the unspecified address"),
    ("http://255.255.255.255/", "255.255.255.255 is a reserved address"),
    ("http://240.0.0.1/", "240.0.0.1 is a reserved address"),
    ("http://192.0.2.10/", "192.0.2.10 is a reserved address"),
    ("http://198.18.0.1/", "198.18.0.1 is a reserved address"),
]
MALFORMED = [
    ("ftp://files.example.com/", "only http and https URLs are allowed, not ftp"),
    ("file:///etc/passwd", "only http and https URLs are allowed, not file"),
    ("gopher://example.com:70/", "only http and https URLs are allowed, not gopher"),
    ("//example.com/", "only http and https URLs are allowed"),
    ("http://user:pass@example.com/", "user name or password"),
    ("http://example.com@127.0.0.1/", "user name or password"),
    ("http://127.0.0.1\\@example.com/", "backslashes"),
    ("http://exa mple.com/", "spaces"),
    ("http:///just/a/path", "the URL has no host"),
    ("http://example.com:99999/", "the URL is malformed"),
]
ACCEPTED = [
    "http://8.8.8.8/",
    "https://[2001:4860:4860::8888]:8443/v1",
    "https://prometheus.example.com:9090",
    "http://[::ffff:8.8.8.8]/",
    "http://172.32.0.1/",  # just outside 172.16.0.0/12
    "http://100.128.0.1/",  # just outside 100.64.0.0/10
    "http://11.0.0.1/",
]


@pytest.mark.parametrize(("url", "reason"), REFUSED)
def test_each_refused_range_and_spelling_is_refused_and_may_be_allowed_by_staff(url, reason):
    with pytest.raises(EgressRefused, match=reason.replace("?", r"\?")) as refused:
        egress.check_url(url)
    assert refused.value.allowable


@pytest.mark.parametrize(("url", "reason"), MALFORMED)
def test_schemes_credentials_and_malformed_urls_are_refused_whatever_the_allow_list(url, reason):
    with pytest.raises(EgressRefused, match=reason) as refused:
        egress.check_url(url, AllowList.parse(["0.0.0.0/0", "::/0", "example.com"]))
    assert not refused.value.allowable


@pytest.mark.parametrize("url", ACCEPTED)
def test_public_addresses_and_names_are_accepted(url):
    assert egress.check_url(url).scheme in ("http", "https")


def test_the_allow_list_lets_through_exactly_the_hosts_ports_and_networks_it_names():
    allowed = AllowList.parse(
        ["127.0.0.1:9090", "10.0.0.0/8", "prometheus.monitoring", "[::1]:80", "fd00::/8"]
    )
    for url in [
        "http://127.0.0.1:9090/",
        "http://10.2.3.4/",
        "http://[::ffff:10.2.3.4]/",  # the same address, mapped
        "http://[::1]/",
        "http://[fd00:ec2::254]/",  # staff named the network: their call
        "http://prometheus.monitoring:9090/",
    ]:
        egress.check_url(url, allowed)
    for url, reason in [
        ("http://127.0.0.1:9091/", "loopback"),
        ("http://127.0.0.2:9090/", "loopback"),
        ("http://[::1]:81/", "loopback"),
        ("http://192.168.0.1/", "private"),
        ("http://169.254.169.254/", "cloud metadata"),
    ]:
        with pytest.raises(EgressRefused, match=reason):
            egress.check_url(url, allowed)


@pytest.mark.parametrize(
    "entry", ["a b", "host:0", "host:99999", "10.0.0.0/33", "[::1", "http://x", "x:y:z:"]
)
def test_a_malformed_allow_list_entry_is_refused(entry):
    with pytest.raises(ValueError, match="is not a host, host:port, address or network"):
        AllowList.parse([entry])


@pytest.mark.parametrize(
    "name",
    ["Metadata-Flavor", "metadata-flavor", "X-aws-ec2-metadata-token", "X-AWS-EC2-Metadata-Token-TTL-Seconds",
     "Metadata", "X-Google-Metadata-Request", "x-aliyun-ecs-metadata-token"],
)  # fmt: skip
def test_headers_only_metadata_services_read_are_refused(name):
    with pytest.raises(EgressRefused, match="only for cloud metadata services"):
        egress.check_headers(egress.header_names(f"X-Scope-OrgID: acme\n{name}: Google"))


def test_ordinary_headers_are_accepted():
    egress.check_headers(
        egress.header_names("Authorization: Bearer x\nX-Scope-OrgID: acme\nX-Metadata-Id: 3")
    )


def test_a_name_is_refused_when_any_address_it_resolves_to_is(fake_dns):
    fake_dns["internal.example"] = ["127.0.0.1"]
    fake_dns["mixed.example"] = ["8.8.8.8", "10.1.2.3"]
    fake_dns["public.example"] = ["8.8.8.8", "2001:4860:4860::8888"]
    with pytest.raises(EgressRefused, match=r"internal.example \(127.0.0.1\) is a loopback address"):
        egress.check_destination("http://internal.example/")
    with pytest.raises(EgressRefused, match=r"mixed.example \(10.1.2.3\) is a private address"):
        egress.check_destination("https://mixed.example/")
    assert [str(a) for a in egress.checked_addresses("public.example", 443)] == [
        "8.8.8.8",
        "2001:4860:4860::8888",
    ]
    egress.check_destination("http://not-yet-in-dns.invalid/")  # checked again when connecting


# --- the clients, connecting -----------------------------------------------------------------------


def _get(stack: str, url: str, **options) -> object:
    """A GET through one of the four clients the product builds (sync/async, httpx/httpx2)."""
    if stack == "httpx":
        with outbound.client(**options) as client:
            return client.get(url)
    if stack == "httpx-async":

        async def get():
            async with outbound.async_client(**options) as client:
                return await client.get(url)

        return async_to_sync(get)()
    if stack == "httpx2":
        with outbound.llm_client(**options) as client:
            return client.get(url)

    async def get2():
        async with outbound.async_llm_client(**options) as client:
            return await client.get(url)

    return async_to_sync(get2)()


STACKS = ["httpx", "httpx-async", "httpx2", "httpx2-async"]


@pytest.mark.parametrize("stack", STACKS)
def test_every_client_refuses_loopback_before_connecting(stack, egress_enforced, listener):
    with pytest.raises(EgressRefused, match="127.0.0.1 is a loopback address"):
        _get(stack, listener.url + "/admin/login/")
    assert listener.connections == 0


@pytest.mark.parametrize("spelling", ["2130706433", "0x7f.1", "127.1", "017700000001", "[::ffff:127.0.0.1]"])
def test_a_literal_spelling_of_loopback_is_refused_when_connecting(spelling, egress_enforced, listener):
    with pytest.raises(EgressRefused, match="loopback"):
        _get("httpx", f"http://{spelling}:{listener.port}/")
    assert listener.connections == 0


@pytest.mark.parametrize("stack", STACKS)
def test_a_name_that_resolves_to_loopback_is_refused_when_connecting(
    stack, egress_enforced, listener, fake_dns
):
    fake_dns["grafana.internal.example"] = ["127.0.0.1"]
    with pytest.raises(EgressRefused, match=r"grafana.internal.example \(127.0.0.1\) is a loopback address"):
        _get(stack, f"http://grafana.internal.example:{listener.port}/")
    with pytest.raises(EgressRefused, match="localhost names this machine"):
        _get(stack, f"http://localhost.:{listener.port}/")
    assert listener.connections == 0


def test_a_dns_answer_that_changes_after_the_url_was_saved_is_refused_at_connect(
    egress_enforced, listener, fake_dns
):
    fake_dns["rebind.example"] = ["93.184.216.34"]
    url = f"http://rebind.example:{listener.port}/"
    egress.check_destination(url)  # saving it: a public address
    fake_dns["rebind.example"] = ["127.0.0.1"]  # what DNS answers when the request is made
    with pytest.raises(EgressRefused, match="loopback"):
        _get("httpx-async", url)
    assert listener.connections == 0


@pytest.mark.parametrize("stack", STACKS)
def test_a_redirect_to_loopback_is_refused_at_its_hop(stack, settings, listener):
    with loopback_listener(status=302, location=f"{listener.url}/latest/meta-data/") as redirector:
        allow(settings, f"127.0.0.1:{redirector.port}")  # staff allowed the first hop only
        with pytest.raises(EgressRefused, match="127.0.0.1 is a loopback address"):
            _get(stack, redirector.url + "/", follow_redirects=True)
    assert redirector.connections == 1 and listener.connections == 0


def test_the_allow_list_lets_one_host_and_port_through(settings, listener):
    with loopback_listener() as other:
        allow(settings, f"127.0.0.1:{listener.port}")
        assert _get("httpx", listener.url + "/").status_code == 200
        with pytest.raises(EgressRefused):
            _get("httpx", other.url + "/")
    assert listener.connections == 1 and other.connections == 0


def test_the_host_header_and_the_tls_name_stay_the_urls_while_the_checked_address_is_dialled(
    settings, fake_dns, tmp_path
):
    with loopback_listener(tls_dir=tmp_path) as server:
        fake_dns["ongrid-test.local"] = ["127.0.0.1"]
        fake_dns["impostor.example"] = ["127.0.0.1"]
        allow(settings, "ongrid-test.local", "impostor.example")
        trust = ssl.create_default_context(cadata=server.certificate)
        url = f"https://ongrid-test.local:{server.port}/"
        assert _get("httpx", url, verify=trust).status_code == 200
        assert server.hosts == [f"ongrid-test.local:{server.port}"]
        # Same address, another name: the certificate is checked against the name, and refused.
        with pytest.raises(httpx.ConnectError) as failed:
            _get("httpx", f"https://impostor.example:{server.port}/", verify=trust)
        assert outbound.failure_reason(failed.value) == "TLS error: the certificate was not accepted"


@pytest.mark.parametrize("stack", ["httpx", "httpx2-async"])
def test_metadata_headers_are_refused_on_every_request(stack, listener):
    with pytest.raises(EgressRefused, match="Metadata-Flavor is only for cloud metadata services"):
        _get(stack, listener.url + "/", headers={"Metadata-Flavor": "Google"})
    assert listener.connections == 0


def test_a_failure_is_told_in_a_few_words(settings):
    allow(settings)  # a deployment that allows nothing
    with pytest.raises(EgressRefused) as refused:
        _get("httpx", "http://169.254.169.254/")
    assert outbound.failure_reason(refused.value) == (
        "refused by the egress policy: 169.254.169.254 is a cloud metadata service"
    )
    allow(settings, "127.0.0.0/8")
    with pytest.raises(httpx.ConnectError) as down:
        _get("httpx", closed_port_url())
    assert outbound.failure_reason(down.value) == "connection refused"
    with pytest.raises(httpx2.ConnectError) as unknown:
        _get("httpx2", "http://does-not-exist.invalid/")
    assert outbound.failure_reason(unknown.value) == "the host name does not resolve"


@pytest.mark.parametrize("client", [outbound.async_llm_client, outbound.async_client])
async def test_a_kept_alive_connection_is_reused_until_the_server_closes_it(settings, client):
    """The model client asks the same endpoint over and over: one connection while the server keeps
    it open, a fresh one (not a failed request) once the server has hung up on the idle one."""
    opened, hung_up = [], asyncio.Event()

    async def serve(reader, writer):
        opened.append(writer)
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                break
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok")
            await writer.drain()
            if head.split()[1] == b"/then-hang-up":
                writer.close()
                await writer.wait_closed()
                hung_up.set()
                break

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    allow(settings, f"127.0.0.1:{port}")
    async with server, client() as http:
        answers = [await http.get(f"http://127.0.0.1:{port}{path}") for path in ("/a", "/b", "/then-hang-up")]
        assert len(opened) == 1
        await hung_up.wait()
        answers.append(await http.get(f"http://127.0.0.1:{port}/after"))
    assert [answer.text for answer in answers] == ["ok"] * 4
    assert len(opened) == 2
