"""minisign (ed25519) public keys and signatures (contract; see the brief)."""

from __future__ import annotations

from dataclasses import dataclass


class SignatureError(Exception):
    """A key or signature that is malformed or does not verify, in words fit for the admin."""


@dataclass(frozen=True)
class PublicKey:
    key_id: str  # 16 hex digits, as minisign prints it
    raw: bytes  # the 32-byte ed25519 public key


def parse_public_key(text: str) -> PublicKey:
    """A minisign public key: the whole .pub file or just its base64 line."""
    raise NotImplementedError


def verify(message: bytes, signature: str, keys: list[PublicKey]) -> PublicKey:
    """The key in `keys` that signed `message` (a .minisig text, legacy or pre-hashed), checking the
    trusted comment's global signature too; SignatureError otherwise."""
    raise NotImplementedError
