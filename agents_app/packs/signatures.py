"""minisign (ed25519) public keys, signatures and unencrypted secret keys.

The formats are minisign's own (https://jedisct1.github.io/minisign/), so an author can sign a pack
with the `minisign` CLI or with `manage.py ongrid_pack build --sign`, and an organization trusts
the same public key either way:

- public key: an "untrusted comment:" line, then base64(b"Ed" + key number (8) + public key (32));
- signature: an "untrusted comment:" line; base64(algorithm (2) + key number (8) + signature (64)),
  where b"ED" signs the BLAKE2b-512 hash of the file (minisign's default) and b"Ed" the file itself
  (legacy); a "trusted comment:" line; base64(ed25519 over signature + trusted comment), so the
  trusted comment cannot be changed without the secret key;
- secret key (unencrypted, as `minisign -G -W` writes it): base64(b"Ed" + KDF (2, zero: none) +
  b"B2" + salt (32) + ops limit (8) + memory limit (8) + key number (8) + secret key (64: seed and
  public key) + checksum (32, BLAKE2b-256 of algorithm, key number and secret key)).

A key id is the key number read as a little-endian 64-bit integer in 16 upper-case hex digits, as
minisign prints it. Every malformed input is a SignatureError in words fit for the admin.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import time
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from django.utils.translation import gettext as _

UNTRUSTED_PREFIX = "untrusted comment: "
TRUSTED_PREFIX = "trusted comment: "
ALGORITHM = b"Ed"  # the key's algorithm, and the legacy signature's (the raw message)
ALGORITHM_HASHED = b"ED"  # a signature over the BLAKE2b-512 of the message
KDF_NONE = b"\x00\x00"
KDF_SCRYPT = b"Sc"
CHECKSUM_ALGORITHM = b"B2"
KEYNUM_BYTES = 8
_PUBLIC_KEY_BYTES = 2 + KEYNUM_BYTES + 32
_SIGNATURE_BYTES = 2 + KEYNUM_BYTES + 64
_SECRET_KEY_BYTES = 2 + 2 + 2 + 32 + 8 + 8 + KEYNUM_BYTES + 64 + 32
_KEYNUM_AT = 2 + 2 + 2 + 32 + 8 + 8
# minisign's limit on a trusted comment (TRUSTEDCOMMENTMAXBYTES, with its prefix and newline).
MAX_TRUSTED_COMMENT_BYTES = 8192 - len(TRUSTED_PREFIX) - 2


class SignatureError(Exception):
    """A key or signature that is malformed or does not verify, in words fit for the admin."""


@dataclass(frozen=True)
class PublicKey:
    key_id: str  # 16 hex digits, as minisign prints it
    raw: bytes  # the 32-byte ed25519 public key


@dataclass(frozen=True)
class Signature:
    """A .minisig file read (not verified): what `ongrid_pack verify` and the preview show."""

    key_id: str
    prehashed: bool  # False: a legacy signature over the message itself
    trusted_comment: str
    signature: bytes  # 64 bytes
    global_signature: bytes  # 64 bytes, over signature + trusted comment


def key_id_of(keynum: bytes) -> str:
    """minisign's spelling of a key number: little-endian, 16 upper-case hex digits."""
    return keynum[::-1].hex().upper()


def _lines(text: object, not_text: str) -> list[str]:
    """The non-blank lines, each without its line ending (minisign reads them so)."""
    if not isinstance(text, str):
        raise SignatureError(not_text)
    lines = [line.removesuffix("\r") for line in text.removeprefix("\ufeff").split("\n")]
    return [line for line in lines if line.strip()]


def _decode(line: str, size: int, malformed: str) -> bytes:
    """A base64 line of exactly `size` bytes, or SignatureError(malformed)."""
    try:
        data = base64.b64decode(line.strip(), validate=True)
    except (binascii.Error, ValueError):
        data = None
    if data is None or len(data) != size:
        raise SignatureError(malformed)
    return data


def _key_line(text: object, not_text: str, empty: str) -> str:
    """A key's base64 line: the line after the untrusted comment, or the only line given."""
    lines = _lines(text, not_text)
    if lines and lines[0].startswith("untrusted comment:"):
        lines = lines[1:]
    if not lines:
        raise SignatureError(empty)
    return lines[0]


# ---------------------------------------------------------------------------------------------
# Public keys and signatures


def parse_public_key(text: str) -> PublicKey:
    """A minisign public key: the whole .pub file or just its base64 line."""
    line = _key_line(text, _("the public key must be text"), _("the public key is empty"))
    data = _decode(
        line, _PUBLIC_KEY_BYTES, _("this is not a minisign public key (it does not decode to one)")
    )
    if data[:2] != ALGORITHM:
        raise SignatureError(_("the public key is for an algorithm other than ed25519"))
    return PublicKey(key_id=key_id_of(data[2 : 2 + KEYNUM_BYTES]), raw=data[2 + KEYNUM_BYTES :])


def parse_signature(text: str) -> Signature:
    """A .minisig file's four lines, decoded; SignatureError when any is malformed."""
    lines = _lines(text, _("the signature must be text"))
    if len(lines) < 4:
        raise SignatureError(
            _(
                "the signature file is incomplete: minisign writes four lines (untrusted comment, "
                "signature, trusted comment, comment signature)"
            )
        )
    untrusted, encoded, trusted, encoded_global = lines[:4]
    if not untrusted.startswith(UNTRUSTED_PREFIX):
        raise SignatureError(_("the signature's first line must start with 'untrusted comment: '"))
    if not trusted.startswith(TRUSTED_PREFIX):
        raise SignatureError(_("the signature's third line must start with 'trusted comment: '"))
    data = _decode(
        encoded,
        _SIGNATURE_BYTES,
        _("this is not a minisign signature (its second line does not decode to one)"),
    )
    if data[:2] not in (ALGORITHM, ALGORITHM_HASHED):
        raise SignatureError(_("the signature uses an unknown algorithm (neither minisign's ED nor Ed)"))
    global_signature = _decode(
        encoded_global, 64, _("the signature's fourth line (the trusted comment's signature) does not decode")
    )
    return Signature(
        key_id=key_id_of(data[2 : 2 + KEYNUM_BYTES]),
        prehashed=data[:2] == ALGORITHM_HASHED,
        trusted_comment=trusted[len(TRUSTED_PREFIX) :],
        signature=data[2 + KEYNUM_BYTES :],
        global_signature=global_signature,
    )


def _signed_bytes(message: bytes, prehashed: bool) -> bytes:
    return hashlib.blake2b(message, digest_size=64).digest() if prehashed else message


def _valid(key: PublicKey, signature: bytes, data: bytes) -> bool:
    try:
        Ed25519PublicKey.from_public_bytes(key.raw).verify(signature, data)
    except (InvalidSignature, ValueError):
        return False
    return True


def verify(message: bytes, signature: str, keys: list[PublicKey]) -> PublicKey:
    """The key in `keys` that signed `message` (a .minisig text, legacy or pre-hashed), checking the
    trusted comment's global signature too; SignatureError otherwise."""
    parsed = parse_signature(signature)
    candidates = [key for key in keys if key.key_id == parsed.key_id]
    if not candidates:
        raise SignatureError(
            _("signed with key %(key_id)s, which is not one of your trusted pack keys")
            % {"key_id": parsed.key_id}
        )
    signed = _signed_bytes(message, parsed.prehashed)
    try:
        comment = parsed.signature + parsed.trusted_comment.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raise SignatureError(_("the signature's trusted comment is not UTF-8 text")) from None
    for key in candidates:
        if not _valid(key, parsed.signature, signed):
            continue
        if not _valid(key, parsed.global_signature, comment):
            raise SignatureError(_("the signature's trusted comment was changed after signing"))
        return key
    raise SignatureError(_("the signature does not match the signed file (was it changed after signing?)"))


# ---------------------------------------------------------------------------------------------
# Signing, and key pairs for authors without minisign


@dataclass(frozen=True)
class _SecretKey:
    keynum: bytes
    private: Ed25519PrivateKey


def _checksum(keynum: bytes, secret: bytes) -> bytes:
    return hashlib.blake2b(ALGORITHM + keynum + secret, digest_size=32).digest()


def _parse_secret_key(text: str) -> _SecretKey:
    line = _key_line(text, _("the secret key must be text"), _("the secret key is empty"))
    data = _decode(
        line, _SECRET_KEY_BYTES, _("this is not a minisign secret key (it does not decode to one)")
    )
    if data[:2] != ALGORITHM or data[4:6] != CHECKSUM_ALGORITHM:
        raise SignatureError(_("the secret key is for an algorithm other than ed25519"))
    if data[2:4] == KDF_SCRYPT:
        raise SignatureError(
            _(
                "this secret key is encrypted with a password: decrypt it with minisign "
                "(minisign -C -W), or sign with minisign -S"
            )
        )
    if data[2:4] != KDF_NONE:
        raise SignatureError(_("the secret key uses an unknown encryption"))
    keynum = data[_KEYNUM_AT : _KEYNUM_AT + KEYNUM_BYTES]
    secret = data[_KEYNUM_AT + KEYNUM_BYTES : _KEYNUM_AT + KEYNUM_BYTES + 64]
    checksum = data[-32:]
    # minisign leaves the checksum zero in the keys it does not encrypt; ours carry it.
    if checksum != bytes(32) and checksum != _checksum(keynum, secret):
        raise SignatureError(_("the secret key is damaged (its checksum does not match)"))
    private = Ed25519PrivateKey.from_private_bytes(secret[:32])
    if private.public_key().public_bytes_raw() != secret[32:]:
        raise SignatureError(_("the secret key is damaged (its two halves do not match)"))
    return _SecretKey(keynum=keynum, private=private)


def _one_line(comment: str) -> str:
    if "\n" in comment or "\r" in comment:
        raise SignatureError(_("a trusted comment is one line"))
    if len(comment.encode("utf-8")) > MAX_TRUSTED_COMMENT_BYTES:
        raise SignatureError(
            _("a trusted comment is at most %(limit)s bytes") % {"limit": MAX_TRUSTED_COMMENT_BYTES}
        )
    return comment


def sign(message: bytes, secret_key_text: str, trusted_comment: str | None = None) -> str:
    """A .minisig text for `message` (pre-hashed, as minisign signs by default) with an unencrypted
    minisign secret key; the trusted comment defaults to minisign's timestamp."""
    key = _parse_secret_key(secret_key_text)
    comment = _one_line(f"timestamp:{int(time.time())}" if trusted_comment is None else trusted_comment)
    signature = key.private.sign(_signed_bytes(message, prehashed=True))
    global_signature = key.private.sign(signature + comment.encode("utf-8"))
    encoded = base64.b64encode(ALGORITHM_HASHED + key.keynum + signature).decode("ascii")
    return (
        f"{UNTRUSTED_PREFIX}signature from minisign secret key\n{encoded}\n"
        f"{TRUSTED_PREFIX}{comment}\n{base64.b64encode(global_signature).decode('ascii')}\n"
    )


def public_key_of(secret_key_text: str) -> PublicKey:
    """The public half of an unencrypted minisign secret key (to say who signs, before signing)."""
    key = _parse_secret_key(secret_key_text)
    return PublicKey(key_id=key_id_of(key.keynum), raw=key.private.public_key().public_bytes_raw())


def public_key_text(key: PublicKey) -> str:
    """A .pub file for `key`, as minisign writes it."""
    keynum = bytes.fromhex(key.key_id)[::-1]
    encoded = base64.b64encode(ALGORITHM + keynum + key.raw).decode("ascii")
    return f"{UNTRUSTED_PREFIX}minisign public key {key.key_id}\n{encoded}\n"


def generate_keypair() -> tuple[str, str]:
    """A new (public key text, unencrypted secret key text) in minisign's formats: the secret key
    works with `minisign -S` as a key from `minisign -G -W` does."""
    private = Ed25519PrivateKey.generate()
    keynum = os.urandom(KEYNUM_BYTES)
    public = private.public_key().public_bytes_raw()
    secret = private.private_bytes_raw() + public
    header = ALGORITHM + KDF_NONE + CHECKSUM_ALGORITHM + bytes(32 + 8 + 8)
    data = header + keynum + secret + _checksum(keynum, secret)
    secret_text = (
        f"{UNTRUSTED_PREFIX}minisign unencrypted secret key\n{base64.b64encode(data).decode('ascii')}\n"
    )
    return public_key_text(PublicKey(key_id=key_id_of(keynum), raw=public)), secret_text
