"""`openssl`, for inspecting certificates, revocation lists and ASN.1 structures.

Only inspection subcommands are accepted; connections (`s_client`), output files, keys and
pass phrases, engines and providers (which load code) are refused.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..grammar import NEEDS_VALUE, Custom, Grammar, Parsed, refuse_option
from ..refusal import PolicyRefusal
from .common import WRITES

# openssl: one subcommand, options with one dash (OpenSSL 3 also takes `--opt` and `-opt=value`),
# names matched exactly. s_client/s_server, engines, providers and output files are refused.
_OPENSSL_COMMON_DENIED = {
    "-out": WRITES,
    "-keyout": WRITES,
    "-engine": "loading engines runs code",
    "-provider": "loading providers runs code",
    "-provider-path": "loading providers runs code",
    "-propquery": "provider selection is not allowed",
    "-passin": "pass phrases are secrets",
    "-writerand": WRITES,
    "-rand": "random seed files are not needed for inspection",
}
_OPENSSL_X509_VALUES = "-in -inform -nameopt -certopt -ext -checkend -checkhost -checkemail -checkip"
_OPENSSL_X509_FLAGS = (
    "-noout -text -subject -issuer -dates -startdate -enddate -serial -fingerprint -sha1 -sha256 -md5 "
    "-hash -subject_hash -issuer_hash -subject_hash_old -issuer_hash_old -email -ocspid -ocsp_uri "
    "-pubkey -modulus -purpose -alias -trustout -nocert -help"
)
_OPENSSL_COMMANDS: dict[str, tuple[str, str, str]] = {
    # subcommand: (value options, flag options, file-valued options)
    "x509": (_OPENSSL_X509_VALUES, _OPENSSL_X509_FLAGS, "-in"),
    "verify": (
        "-CAfile -CApath -untrusted -trusted -CRLfile -purpose -verify_hostname -verify_email -verify_ip "
        "-attime -verify_depth -auth_level",
        "-verbose -show_chain -crl_check -crl_check_all -x509_strict -partial_chain -no-CAfile -no-CApath "
        "-issuer_checks -check_ss_sig -no_check_time -help",
        "-CAfile -CApath -untrusted -trusted -CRLfile",
    ),
    "crl": (
        "-in -inform -nameopt -CAfile -CApath",
        "-noout -text -hash -hash_old -issuer -lastupdate -nextupdate -fingerprint -crlnumber -verify -help",
        "-in -CAfile -CApath",
    ),
    "asn1parse": ("-in -inform -offset -length -dlimit -strparse", "-i -dump -noout -help", "-in"),
    "version": ("", "-a -b -o -f -p -d -e -m -r -c -v -help", ""),
}
_OPENSSL_REFUSED = {
    "s_client": "opens a connection that can send data anywhere; use host_probe_http for certificates",
    "s_server": "starts a server",
    "s_time": "opens connections",
    "enc": "writes and decrypts data",
}


def _parse_openssl(program: str, args: Sequence[str]) -> Parsed:
    parsed = Parsed(program)
    if not args or args[0] not in _OPENSSL_COMMANDS:
        sub = args[0] if args else ""
        reason = _OPENSSL_REFUSED.get(sub, f"only {', '.join(sorted(_OPENSSL_COMMANDS))} are allowed")
        raise PolicyRefusal(f"openssl {sub}".strip(), reason)
    sub = args[0]
    values, flags, file_values = (set(spec.split()) for spec in _OPENSSL_COMMANDS[sub])
    words = list(args[1:])
    while words:
        word = words.pop(0)
        if not word.startswith("-") or word == "-":
            parsed.operands.append(word)
            parsed.files.append(word)
            continue
        name, has_value, value = (word[1:] if word.startswith("--") else word).partition("=")
        if name in _OPENSSL_COMMON_DENIED:
            raise refuse_option(program, name, _OPENSSL_COMMON_DENIED[name])
        if name in flags and not has_value:
            parsed.options.append((name, None))
        elif name in values:
            if not has_value:
                if not words:
                    raise refuse_option(program, name, NEEDS_VALUE)
                value = words.pop(0)
            parsed.options.append((name, value))
            if name in file_values:
                parsed.files.append(value)
        else:
            raise refuse_option(
                program, name, "unknown or refused option (output files, keys, signing and code loading)"
            )
    return parsed


PROGRAMS: dict[str, Grammar | Custom] = {
    "openssl": Custom(_parse_openssl),
}
