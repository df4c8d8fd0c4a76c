"""The egress policy: where the server may send a request it makes on an organization's behalf
(docs/security.md, "Egress"). The HTTP clients apply it when they connect
(`ops_app.core.outbound`), the models when a URL is saved; nothing else decides it.

- http and https only, with a host, and no user name or password in the URL (a URL such as
  `http://good.example@127.0.0.1/` reads differently to people and to parsers).
- Refused addresses: loopback, link-local (the cloud metadata services, 169.254.169.254 and
  fd00:ec2::254), private (RFC 1918, ULA), carrier-grade NAT, multicast, unspecified and reserved
  ones, and the IPv6 forms that carry such an IPv4 address (IPv4-mapped or -compatible, 6to4,
  NAT64, Teredo). `localhost` and its subdomains are loopback without asking DNS.
- An IPv4 literal is read the way the C resolver reads it (`127.1`, `0x7f.0.0.1`, `0177.0.0.1`,
  `2130706433` are all 127.0.0.1), so no spelling carries an address past the check.
- Platform staff allow hosts, host:port pairs and networks deployment-wide (`AllowList`, from
  ONGRID_EGRESS_ALLOW): an allowed name may resolve to anything, an allowed network lets its
  addresses through.

Pure: no settings, no models. Refusals are worded with gettext where they are raised, so a form
shows them in the admin's language and a background task writes English.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.utils.translation import gettext as _

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

SCHEMES = {"http": 80, "https": 443}
# Headers only a cloud metadata service reads (GCP, Azure, AWS IMDSv2, Alibaba): an integration
# never needs them, and with them a request to a metadata address would be answered.
METADATA_HEADERS = {"metadata-flavor", "metadata", "x-google-metadata-request"}
METADATA_HEADER_PREFIXES = ("x-aws-ec2-metadata-token", "x-aliyun-ecs-metadata-token")
HOST_NAME = re.compile(r"^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$")
UNSAFE_CHARACTERS = re.compile(r"[\x00-\x20\x7f\\]")
DIGITS = {8: "01234567", 10: "0123456789", 16: "0123456789abcdef"}

METADATA, LOOPBACK, LINK_LOCAL, PRIVATE, SHARED, MULTICAST, UNSPECIFIED, RESERVED = (
    "cloud metadata",
    "loopback",
    "link-local",
    "private",
    "carrier-grade NAT",
    "multicast",
    "unspecified",
    "reserved",
)
REFUSED_NETWORKS: tuple[tuple[IPNetwork, str], ...] = tuple(
    (ipaddress.ip_network(network), kind)
    for network, kind in (
        ("169.254.169.254/32", METADATA),  # AWS, GCP, Azure, OpenStack...
        ("fd00:ec2::254/128", METADATA),  # AWS over IPv6
        ("0.0.0.0/8", UNSPECIFIED),
        ("10.0.0.0/8", PRIVATE),
        ("100.64.0.0/10", SHARED),
        ("127.0.0.0/8", LOOPBACK),
        ("169.254.0.0/16", LINK_LOCAL),
        ("172.16.0.0/12", PRIVATE),
        ("192.0.0.0/24", RESERVED),  # IETF protocol assignments
        ("192.0.2.0/24", RESERVED),  # documentation
        ("192.88.99.0/24", RESERVED),  # 6to4 relays
        ("192.168.0.0/16", PRIVATE),
        ("198.18.0.0/15", RESERVED),  # benchmarking
        ("198.51.100.0/24", RESERVED),
        ("203.0.113.0/24", RESERVED),
        ("224.0.0.0/4", MULTICAST),
        ("240.0.0.0/4", RESERVED),  # with the broadcast address
        ("::/128", UNSPECIFIED),
        ("::1/128", LOOPBACK),
        ("::/96", RESERVED),  # IPv4-compatible (deprecated); its IPv4 address is checked first
        ("64:ff9b:1::/48", PRIVATE),  # local-use NAT64
        ("100::/64", RESERVED),  # discard-only
        ("2001:db8::/32", RESERVED),  # documentation
        ("fc00::/7", PRIVATE),  # unique local, with AWS's metadata fd00:ec2::254
        ("fe80::/10", LINK_LOCAL),
        ("fec0::/10", PRIVATE),  # site-local (deprecated)
        ("ff00::/8", MULTICAST),
    )
)
# IPv6 prefixes whose low 32 bits are an IPv4 address the packet ends up at.
EMBEDDING_NETWORKS = tuple(
    ipaddress.ip_network(network) for network in ("::/96", "::ffff:0:0/96", "::ffff:0:0:0/96", "64:ff9b::/96")
)


class EgressRefused(Exception):
    """The policy refuses a destination; `reason` says why in a few words. `allowable`: platform
    staff could let it through with ONGRID_EGRESS_ALLOW (an address or a host, not a scheme)."""

    def __init__(self, reason: str, *, allowable: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.allowable = allowable


@dataclass(frozen=True)
class Target:
    """A URL the policy accepted: its scheme, host (normalised) and port, and the address when
    the host is a literal one."""

    scheme: str
    host: str
    port: int
    address: IPAddress | None = None


@dataclass(frozen=True)
class AllowList:
    """What platform staff let through: host names (any port, or one) and networks (any port, or one)."""

    names: frozenset[tuple[str, int | None]] = frozenset()
    networks: tuple[tuple[IPNetwork, int | None], ...] = ()

    @classmethod
    def parse(cls, entries: Iterable[str]) -> AllowList:
        """`host`, `host:port`, an address, `address:port`, `[v6]:port` or a network (`10.0.0.0/8`).
        Raises ValueError naming the first entry that is none of these."""
        names, networks = set(), []
        for entry in entries:
            host, port = _allow_entry(entry)
            if isinstance(host, str):
                names.add((host, port))
            else:
                networks.append((host, port))
        return cls(frozenset(names), tuple(networks))

    def __or__(self, other: AllowList) -> AllowList:
        return AllowList(self.names | other.names, self.networks + other.networks)

    def allows_name(self, host: str, port: int) -> bool:
        return (host, None) in self.names or (host, port) in self.names

    def allows_address(self, address: IPAddress, port: int | None) -> bool:
        return any(address in network and wanted in (None, port) for network, wanted in self.networks)


NOTHING = AllowList()


def check_url(url: str, allow: AllowList = NOTHING) -> Target:
    """The URL's scheme, host and port, or EgressRefused. A literal address is checked here; a
    name is checked when it is resolved (`checked_addresses`, `check_destination`)."""
    if UNSAFE_CHARACTERS.search(url or ""):
        raise EgressRefused(_("the URL contains spaces, control characters or backslashes"))
    try:
        parts = urlsplit(url or "")
        port = parts.port
    except ValueError:
        raise EgressRefused(_("the URL is malformed")) from None
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise EgressRefused(
            _("only http and https URLs are allowed, not %(scheme)s") % {"scheme": scheme or "''"}
        )
    if "@" in parts.netloc:
        raise EgressRefused(_("the URL holds a user name or password; use the authentication fields instead"))
    host = normalise_host(parts.hostname or "")
    if not host:
        raise EgressRefused(_("the URL has no host"))
    port = port or SCHEMES[scheme]
    address = literal_address(host)
    if address is not None:
        check_address(address, port, allow)
    elif not allow.allows_name(host, port) and is_localhost(host):
        raise EgressRefused(_("%(host)s names this machine (loopback)") % {"host": host}, allowable=True)
    return Target(scheme, host, port, address)


def check_destination(url: str, allow: AllowList = NOTHING) -> Target:
    """`check_url`, then the addresses the host resolves to now (when saving a URL). A name that
    does not resolve yet is accepted: it is checked again, like every name, when connecting."""
    target = check_url(url, allow)
    if target.address is None:
        try:
            checked_addresses(target.host, target.port, allow)
        except OSError:
            pass
    return target


def checked_addresses(host: str, port: int, allow: AllowList = NOTHING) -> list[IPAddress]:
    """Resolve `host` once and check every address it resolves to: the addresses to connect to
    (never the name again, so a second DNS answer cannot differ from the checked one). Raises
    EgressRefused, or OSError when the name does not resolve."""
    host = normalise_host(host)
    if allow.allows_name(host, port):
        return resolve(host, port)
    address = literal_address(host)
    if address is not None:
        check_address(address, port, allow)
        return [address]
    if is_localhost(host):
        raise EgressRefused(_("%(host)s names this machine (loopback)") % {"host": host}, allowable=True)
    addresses = resolve(host, port)
    for address in addresses:
        check_address(address, port, allow, name=host)
    return addresses


def resolve(host: str, port: int) -> list[IPAddress]:
    """The addresses the system resolver gives for `host` (the hook the tests replace)."""
    answers = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    found = (ipaddress.ip_address(str(sockaddr[0]).split("%")[0]) for *_, sockaddr in answers)
    return list(dict.fromkeys(found))


def check_address(
    address: IPAddress, port: int | None = None, allow: AllowList = NOTHING, name: str = ""
) -> None:
    """EgressRefused when the policy refuses `address` (and the allow-list does not name it)."""
    embedded = embedded_ipv4(address)
    if allow.allows_address(address, port) or (embedded and allow.allows_address(embedded, port)):
        return
    kind = refused_kind(embedded) if embedded is not None else None
    kind = kind or refused_kind(address)
    if kind is not None:
        raise EgressRefused(_describe(kind, address, name), allowable=True)


def refused_kind(address: IPAddress) -> str | None:
    """Which refused range `address` is in (loopback, private...), or None for a public one."""
    for network, kind in REFUSED_NETWORKS:
        if address.version == network.version and address in network:
            return kind
    return None


def embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one delivers to (IPv4-mapped, -compatible, NAT64, 6to4, Teredo)."""
    if address.version == 4:
        return None
    if any(address in network for network in EMBEDDING_NETWORKS) and int(address) > 1:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.sixtofour is not None:
        return address.sixtofour
    return address.teredo[1] if address.teredo is not None else None


def check_headers(names: Iterable[str]) -> None:
    """EgressRefused for a header only a cloud metadata service reads (Metadata-Flavor...)."""
    for name in names:
        lowered = name.strip().lower()
        if lowered in METADATA_HEADERS or lowered.startswith(METADATA_HEADER_PREFIXES):
            raise EgressRefused(
                _("the header %(name)s is only for cloud metadata services") % {"name": name.strip()}
            )


def header_names(text: str) -> list[str]:
    """The names of `Name: value` lines (the custom headers of a data source or an MCP server)."""
    return [line.partition(":")[0] for line in (text or "").splitlines() if ":" in line]


def normalise_host(host: str) -> str:
    """Lower case, without IPv6 brackets and without the final dot of a fully qualified name."""
    host = host.strip().lower().removeprefix("[").removesuffix("]")
    return host[:-1] if host.endswith(".") and ":" not in host else host


def is_localhost(host: str) -> bool:
    return host == "localhost" or host.endswith(".localhost")


def literal_address(host: str) -> IPAddress | None:
    """The address `host` spells (IPv6, or IPv4 as inet_aton reads it), or None for a name."""
    if ":" in host:
        try:
            return ipaddress.IPv6Address(host.split("%")[0])
        except ValueError:
            return None
    return _inet_aton(host)


def _inet_aton(host: str) -> ipaddress.IPv4Address | None:
    """1 to 4 numbers in decimal, octal (leading 0) or hex (0x); the last fills the remaining bytes."""
    values = [_inet_number(part) for part in host.split(".")]
    if not 1 <= len(values) <= 4 or None in values:
        return None
    *head, last = values
    if any(value > 255 for value in head) or last >= 256 ** (5 - len(values)):
        return None
    number = last
    for position, value in enumerate(head):
        number |= value << (24 - 8 * position)
    return ipaddress.IPv4Address(number)


def _inet_number(part: str) -> int | None:
    if part[:2] in ("0x", "0X"):
        base, digits = 16, part[2:]
    elif len(part) > 1 and part.startswith("0"):
        base, digits = 8, part[1:]
    else:
        base, digits = 10, part
    if not digits or not all(digit in DIGITS[base] for digit in digits.lower()):
        return None
    return int(digits, base)


def _describe(kind: str, address: IPAddress, name: str) -> str:
    subject = f"{name} ({address})" if name else str(address)
    words = {
        METADATA: _("%(address)s is a cloud metadata service"),
        LOOPBACK: _("%(address)s is a loopback address"),
        LINK_LOCAL: _("%(address)s is a link-local address"),
        PRIVATE: _("%(address)s is a private address"),
        SHARED: _("%(address)s is a carrier-grade NAT address"),
        MULTICAST: _("%(address)s is a multicast address"),
        UNSPECIFIED: _("%(address)s is the unspecified address"),
        RESERVED: _("%(address)s is a reserved address"),
    }
    return words[kind] % {"address": subject}


def _allow_entry(entry: str) -> tuple[str | IPNetwork, int | None]:
    text = entry.strip().lower()
    problem = ValueError(f"{entry.strip()!r} is not a host, host:port, address or network")
    try:
        if "/" in text:
            return ipaddress.ip_network(text, strict=False), None
        host, port = _split_port(text)
        address = literal_address(host) if ":" in host else _dotted_ipv4(host)
    except ValueError:
        raise problem from None
    if address is not None:
        return ipaddress.ip_network(address), port
    host = normalise_host(host)
    if not HOST_NAME.match(host):
        raise problem
    return host, port


def _split_port(text: str) -> tuple[str, int | None]:
    if text.startswith("["):
        host, bracket, rest = text[1:].partition("]")
        if not bracket:
            raise ValueError(text)
        port = rest.removeprefix(":") if rest.startswith(":") else rest
    elif text.count(":") == 1:
        host, port = text.split(":")
    else:
        host, port = text, ""
    if port and not (port.isdigit() and 0 < int(port) < 65536):
        raise ValueError(text)
    return host, int(port) if port else None


def _dotted_ipv4(host: str) -> ipaddress.IPv4Address | None:
    try:
        return ipaddress.IPv4Address(host)
    except ValueError:
        return None
