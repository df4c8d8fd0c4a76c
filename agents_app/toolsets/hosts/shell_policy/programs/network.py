"""Programs that show sockets, interfaces, routes and name resolution.

They must not change the network (`ip link set`), switch namespaces, read commands from a file
or standard input (`ip -batch`, `nslookup -`, `dig -f`) or use keys. DNS queries stay allowed,
that is what a DNS probe is for, but only to port 53: over TCP (`+tcp`, `-T`, `-vc`) a DNS tool
would otherwise send its query to any line-based service on any port (Redis, SMTP...).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..grammar import FLAG, NEEDS_VALUE, REQUIRED, Custom, Grammar, Parsed, refuse_option
from ..refusal import PolicyRefusal
from .common import no_operands

# ip: options matched by prefix in the order iproute2 tries them (first match wins), objects and
# verbs as exact words. An option whose prefix could also mean a refused option is refused.
_IP_OPTIONS: tuple[tuple[str, int, str | None], ...] = (
    ("-loops", REQUIRED, None),
    ("-family", REQUIRED, None),
    ("-4", -1, None), ("-6", -1, None), ("-0", -1, None), ("-I", -1, None), ("-D", -1, None),
    ("-M", -1, None), ("-B", -1, None),
    ("-human", FLAG, None), ("-human-readable", FLAG, None), ("-iec", FLAG, None),
    ("-stats", FLAG, None), ("-statistics", FLAG, None), ("-details", FLAG, None),
    ("-resolve", FLAG, None), ("-oneline", FLAG, None), ("-timestamp", FLAG, None),
    ("-tshort", FLAG, None), ("-Version", FLAG, None), ("-force", FLAG, None),
    ("-batch", REQUIRED, "batch mode reads commands from a file or standard input"),
    ("-brief", FLAG, None), ("-json", FLAG, None), ("-pretty", FLAG, None),
    ("-rcvbuf", REQUIRED, None), ("-color", FLAG, None), ("-colour", FLAG, None), ("-help", FLAG, None),
    ("-netns", REQUIRED, "switching network namespaces is not allowed"),
    ("-Numeric", FLAG, None), ("-all", FLAG, None),
)  # fmt: skip
_IP_OBJECTS = {
    "a", "ad", "addr", "address", "r", "ro", "route", "ru", "rule", "n", "neigh", "neighbor",
    "neighbour", "l", "link", "m", "maddr", "maddress", "netconf", "ntable",
}  # fmt: skip
_IP_VERBS = {"show", "list", "lst", "ls", "get"}


def _parse_ip(program: str, args: Sequence[str]) -> Parsed:
    parsed = Parsed(program)
    words = list(args)
    while words and words[0].startswith("-"):
        word = words.pop(0)
        if word == "--":
            break
        option = word[1:] if word.startswith("--") else word
        if option.split("=", 1)[0] in {"-c", "-co", "-col", "-colo", "-color", "-colou", "-colour"}:
            parsed.options.append(("-color", None))
            continue
        if len(option) < 2:
            raise refuse_option(program, word)
        matches = [
            entry
            for entry in _IP_OPTIONS
            if (entry[0] == option if entry[1] < 0 else entry[0].startswith(option))
        ]
        for name, _, reason in matches:
            if reason:
                raise refuse_option(program, word, f"`ip {name}`: {reason}")
        if not matches:
            raise refuse_option(program, word)
        name, arity, _ = matches[0]
        value = None
        if arity == REQUIRED:
            if not words:
                raise refuse_option(program, word, NEEDS_VALUE)
            value = words.pop(0)
        parsed.options.append((name, value))
    if not words:
        return parsed
    obj = words.pop(0)
    if obj not in _IP_OBJECTS:
        raise PolicyRefusal(
            f"ip {obj}",
            "only the address, link, route, rule, neigh, maddr, netconf, ntable objects are allowed",
        )
    if words and words[0] not in _IP_VERBS:
        raise PolicyRefusal(
            f"ip {obj} {words[0]}", f"only read verbs are allowed ({', '.join(sorted(_IP_VERBS))})"
        )
    parsed.operands = [obj, *words]
    return parsed


DNS_PORT = "53"
_DNS_PORT_WHY = (
    "DNS tools may only reach port 53: on another port a query would go to another service "
    "(over TCP, a line-based one such as Redis would read it as commands)"
)


def check_dns_port(part: str, port: str | None) -> None:
    """Refuse a port for a DNS tool other than 53, written exactly so (no other spelling of it)."""
    if port != DNS_PORT:
        raise PolicyRefusal(part, _DNS_PORT_WHY)


def server_port(server: str) -> str | None:
    """The port written after a DNS server (`addr#port`, `[addr]:port`, `name:port`), or None; an
    IPv6 address without brackets has several colons and no port. An unclosed `[` gives ""."""
    host, hashed, port = server.partition("#")
    if hashed:
        return port
    if host.startswith("["):
        _, closed, rest = host.partition("]")
        if not closed:
            return ""
        return rest.removeprefix(":") if rest else None
    if host.count(":") == 1:
        return host.partition(":")[2]
    return None


def check_dns_server(part: str, server: str) -> None:
    """Refuse a server given with a port other than 53; `part` names it in the refusal."""
    port = server_port(server)
    if port is not None:
        check_dns_port(part, port)


# dig: `@server`, `+queryoption`, single-letter options, and name/type/class operands.
_DIG_FLAGS = set("46hmruvi")
_DIG_VALUES = set("bcpqtx")
_DIG_DENIED = {
    "-f": "batch mode reads queries from a file (and would send its lines to a DNS server)",
    "-k": "TSIG key files are secrets",
    "-y": "TSIG keys are secrets",
}
_DIG_QUERY_OPTIONS = (
    "aaflag aaonly additional adflag all answer authority badcookie besteffort bufsize cdflag class cmd "
    "comments cookie crypto defname dns64prefix dnssec domain edns ednsflags ednsnegotiation ednsopt "
    "expandaaaa expire fail header-only identify idnin idnout ignore keepalive keepopen mapped "
    "multiline ndots nsid nssearch onesoa opcode padding qid qr question raflag rdflag recurse "
    "retry rrcomments search short showbadcookie showsearch split stats subnet tcflag tcp time "
    "topdown trace tries ttlid ttlunits unknownformat vc yaml zflag"
).split()


def _parse_dig(program: str, args: Sequence[str]) -> Parsed:
    parsed = Parsed(program)
    words = list(args)
    while words:
        word = words.pop(0)
        if word.startswith("+"):
            name = word[1:].split("=", 1)[0]
            if name.startswith("no") and name[2:] in _DIG_QUERY_OPTIONS:
                name = name[2:]
            if name not in _DIG_QUERY_OPTIONS:
                raise refuse_option(
                    program, word.split("=", 1)[0], "unknown dig query option (write it in full)"
                )
            parsed.options.append((word, None))
        elif word.startswith("-") and len(word) > 1:
            option = word[:2]
            if option in _DIG_DENIED:
                raise refuse_option(program, option, _DIG_DENIED[option])
            if word[1] in _DIG_FLAGS and len(word) == 2:
                parsed.options.append((option, None))
            elif word[1] in _DIG_VALUES:
                value = word[2:] or (words.pop(0) if words else None)
                if value is None:
                    raise refuse_option(program, option, NEEDS_VALUE)
                if option == "-p":
                    check_dns_port(f"{program} -p", value)
                parsed.options.append((option, value))
            else:
                raise refuse_option(program, word)
        else:
            if word.startswith("@"):
                check_dns_server(f"{program} {word}", word[1:])
            parsed.operands.append(word)  # @server, name, type, class
    return parsed


def _host(parsed: Parsed) -> None:
    for port in parsed.values("-p"):
        check_dns_port("host -p", port)
    for server in parsed.operands[1:]:
        check_dns_server(f"host {server}", server)


_NSLOOKUP_OPTIONS = {
    "type", "query", "querytype", "q", "port", "timeout", "retry", "class", "domain", "ndots", "debug",
    "nodebug", "d2", "nod2", "vc", "novc", "recurse", "norecurse", "search", "nosearch", "fail", "nofail",
}  # fmt: skip
_NSLOOKUP_PORT = {"port", "po"}  # `po` is nslookup's own abbreviation


def _parse_nslookup(program: str, args: Sequence[str]) -> Parsed:
    parsed = Parsed(program)
    for word in args:
        if word == "-":
            raise PolicyRefusal("nslookup -", "interactive mode reads commands from standard input")
        if word.startswith("-"):
            name, _, value = word[1:].partition("=")
            if name.lower() in _NSLOOKUP_PORT:  # nslookup reads its options in any case
                check_dns_port(f"nslookup -{name}", value)
            if name not in _NSLOOKUP_OPTIONS:
                raise refuse_option(program, word.split("=", 1)[0])
            parsed.options.append((word, None))
        else:
            parsed.operands.append(word)
    if not 1 <= len(parsed.operands) <= 2:
        raise PolicyRefusal(
            "nslookup " + " ".join(args),
            "give a name (and optionally a server): without one nslookup reads commands from standard input",
        )
    for server in parsed.operands[1:]:
        check_dns_server(f"nslookup {server}", server)
    return parsed


PROGRAMS: dict[str, Grammar | Custom] = {
    "ss": Grammar(
        "hVHOnraloemipTsZzb460tudwxSMf:A:F:",
        "help version no-header oneline numeric resolve all listening options extended memory processes "
        "info threads summary context contexts bpf tcp udp dccp raw unix sctp packet xdp vsock tipc mptcp "
        "family= query= socket= filter= ipv4 ipv6 cgroup tos inet-sockopt",
        denied={
            "-K": "killing sockets is not allowed",
            "--kill": "killing sockets is not allowed",
            "-D": "--diag writes a raw dump to a file",
            "--diag": "--diag writes a raw dump to a file",
            "-E": "--events never ends",
            "--events": "--events never ends",
            "-N": "switching network namespaces is not allowed",
            "--net": "switching network namespaces is not allowed",
        },
        files=("-F", "--filter"),
        operands="data",
    ),
    "netstat": Grammar(
        "rigsMvWnNeoplaFCtuwx46A:",
        "route interfaces groups statistics masquerade verbose wide numeric numeric-hosts numeric-ports "
        "numeric-users symbolic extend programs timers listening all fib cache tcp udp udplite sctp raw "
        "unix inet inet6 protocol=",
        denied={"-c": "continuous output never ends", "--continuous": "continuous output never ends"},
        operands="data",
        rule=no_operands,
    ),
    "ip": Custom(_parse_ip),
    "dig": Custom(_parse_dig),
    "host": Grammar("aACdlnrsTUwvV46c:N:m:p:R:t:W:", "", operands="data", rule=_host),
    "nslookup": Custom(_parse_nslookup),
}
