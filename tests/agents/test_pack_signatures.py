"""Pack signatures (docs/packs.md, "Signing a pack"): minisign's formats read and written by
agents_app.packs.signatures, checked against the real `minisign` CLI both ways, so a key an author
made with minisign signs packs Ongrid accepts, and a key `ongrid_pack keygen` made works with
minisign."""

from __future__ import annotations

import base64
import subprocess

import pytest

from agents_app.packs.signatures import (
    SignatureError,
    generate_keypair,
    parse_public_key,
    parse_signature,
    public_key_of,
    sign,
    verify,
)
from tests.support.packs import MINISIGN, minisign_keypair

MESSAGE = b"name: ops-extras\nversion: 1.0.0\n"


def minisign(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        [MINISIGN, *args], cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True
    )


def minisign_sign(tmp_path, keys, *extra: str, message: bytes = MESSAGE) -> str:
    (tmp_path / "pack.yaml").write_bytes(message)
    result = minisign("-S", "-s", str(keys.secret), "-m", "pack.yaml", *extra, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    return (tmp_path / "pack.yaml.minisig").read_text()


def replace_line(text: str, index: int, line: str) -> str:
    lines = text.splitlines()
    lines[index] = line
    return "\n".join(lines) + "\n"


def flip_base64_byte(line: str, at: int) -> str:
    data = bytearray(base64.b64decode(line))
    data[at] ^= 0x01
    return base64.b64encode(bytes(data)).decode()


def test_a_real_minisign_signature_verifies_with_the_key_id_minisign_prints(tmp_path, keys):
    signature = minisign_sign(tmp_path, keys, "-t", "release 1.0.0")

    key = verify(MESSAGE, signature, [parse_public_key(keys.public_text)])

    assert key.key_id == keys.key_id
    assert parse_signature(signature).prehashed
    assert parse_signature(signature).trusted_comment == "release 1.0.0"


def test_the_public_key_is_read_from_the_whole_file_or_its_base64_line(keys):
    whole = parse_public_key(keys.public_text)
    line_only = parse_public_key(keys.public_text.splitlines()[1])
    assert whole == line_only
    assert whole.key_id == keys.key_id and len(whole.raw) == 32


def test_a_legacy_minisign_signature_verifies(tmp_path, keys):
    signature = minisign_sign(tmp_path, keys, "-l")

    assert not parse_signature(signature).prehashed
    assert verify(MESSAGE, signature, [parse_public_key(keys.public_text)]).key_id == keys.key_id


@pytest.mark.parametrize("legacy", [False, True])
def test_one_changed_byte_in_the_signed_file_is_refused(tmp_path, keys, legacy):
    signature = minisign_sign(tmp_path, keys, *(["-l"] if legacy else []))
    changed = MESSAGE.replace(b"1.0.0", b"1.0.1")

    with pytest.raises(SignatureError, match="does not match the signed file"):
        verify(changed, signature, [parse_public_key(keys.public_text)])


def test_one_flipped_byte_in_the_signature_is_refused(tmp_path, keys):
    signature = minisign_sign(tmp_path, keys)
    line = signature.splitlines()[1]
    broken = replace_line(signature, 1, flip_base64_byte(line, 2 + 8 + 10))  # inside the 64 bytes

    with pytest.raises(SignatureError, match="does not match the signed file"):
        verify(MESSAGE, broken, [parse_public_key(keys.public_text)])


def test_a_changed_trusted_comment_is_refused(tmp_path, keys):
    signature = minisign_sign(tmp_path, keys, "-t", "version 1.0.0")
    changed = replace_line(signature, 2, "trusted comment: version 9.9.9")

    with pytest.raises(SignatureError, match="trusted comment was changed"):
        verify(MESSAGE, changed, [parse_public_key(keys.public_text)])


def test_a_flipped_byte_in_the_comment_signature_is_refused(tmp_path, keys):
    signature = minisign_sign(tmp_path, keys)
    broken = replace_line(signature, 3, flip_base64_byte(signature.splitlines()[3], 5))

    with pytest.raises(SignatureError, match="trusted comment was changed"):
        verify(MESSAGE, broken, [parse_public_key(keys.public_text)])


def test_a_signature_by_a_key_the_organization_does_not_trust_names_that_key(tmp_path):
    author = minisign_keypair(tmp_path, "author")
    trusted = minisign_keypair(tmp_path, "trusted")
    signature = minisign_sign(tmp_path, author)

    with pytest.raises(SignatureError) as refused:
        verify(MESSAGE, signature, [parse_public_key(trusted.public_text)])

    assert str(refused.value) == (
        f"signed with key {author.key_id}, which is not one of your trusted pack keys"
    )


def test_among_several_trusted_keys_the_signer_is_found(tmp_path):
    author = minisign_keypair(tmp_path, "author")
    other = minisign_keypair(tmp_path, "other")
    signature = minisign_sign(tmp_path, author)

    keys = [parse_public_key(other.public_text), parse_public_key(author.public_text)]
    assert verify(MESSAGE, signature, keys).key_id == author.key_id


def test_our_signature_with_a_minisign_key_verifies_with_minisign(tmp_path, keys):
    (tmp_path / "pack.yaml").write_bytes(MESSAGE)
    ours = sign(MESSAGE, keys.secret.read_text(), "signed by ongrid_pack")
    (tmp_path / "pack.yaml.minisig").write_text(ours)

    result = minisign("-V", "-p", str(keys.public), "-m", "pack.yaml", cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    assert "Trusted comment: signed by ongrid_pack" in result.stdout
    assert public_key_of(keys.secret.read_text()) == parse_public_key(keys.public_text)


def test_our_key_pair_works_with_minisign_both_ways(tmp_path):
    public_text, secret_text = generate_keypair()
    (tmp_path / "ours.pub").write_text(public_text)
    (tmp_path / "ours.key").write_text(secret_text)
    (tmp_path / "pack.yaml").write_bytes(MESSAGE)

    # minisign signs with our secret key...
    signed = minisign("-S", "-s", "ours.key", "-m", "pack.yaml", "-t", "by minisign", cwd=tmp_path)
    assert signed.returncode == 0, signed.stderr
    assert verify(MESSAGE, (tmp_path / "pack.yaml.minisig").read_text(), [parse_public_key(public_text)])
    # ...and verifies our signature with our public key, whose id it prints as we do.
    (tmp_path / "pack.yaml.minisig").write_text(sign(MESSAGE, secret_text, "by ongrid"))
    checked = minisign("-V", "-p", "ours.pub", "-m", "pack.yaml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    recreated = minisign("-R", "-s", "ours.key", "-p", "again.pub", cwd=tmp_path)
    assert recreated.returncode == 0, recreated.stderr
    assert (tmp_path / "again.pub").read_text() == public_text


def test_the_default_trusted_comment_is_a_timestamp(keys):
    comment = parse_signature(sign(MESSAGE, keys.secret.read_text())).trusted_comment
    assert comment.startswith("timestamp:") and comment.removeprefix("timestamp:").isdigit()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the public key is empty"),
        ("untrusted comment: minisign public key\n", "the public key is empty"),
        ("not base64 at all!", "this is not a minisign public key"),
        (base64.b64encode(b"Ed" + bytes(20)).decode(), "this is not a minisign public key"),
        (base64.b64encode(b"XX" + bytes(40)).decode(), "an algorithm other than ed25519"),
        (42, "the public key must be text"),
    ],
)
def test_a_malformed_public_key_is_refused_with_a_clear_message(text, message):
    with pytest.raises(SignatureError, match=message):
        parse_public_key(text)


def test_malformed_signatures_are_refused_with_clear_messages(tmp_path, keys):
    good = minisign_sign(tmp_path, keys)
    lines = good.splitlines()
    key = [parse_public_key(keys.public_text)]
    wrong_algorithm = base64.b64encode(b"XY" + base64.b64decode(lines[1])[2:]).decode()
    cases = {
        "": "the signature file is incomplete",
        "\n".join(lines[:2]): "the signature file is incomplete",
        replace_line(good, 0, "comment: x"): "first line must start with 'untrusted comment: '",
        replace_line(good, 2, "comment: x"): "third line must start with 'trusted comment: '",
        replace_line(good, 1, "%%%"): "this is not a minisign signature",
        replace_line(good, 1, lines[1][:-8]): "this is not a minisign signature",
        replace_line(good, 1, wrong_algorithm): "unknown algorithm",
        replace_line(good, 3, "AAAA"): r"fourth line \(the trusted comment.s signature\) does not decode",
    }
    for text, message in cases.items():
        with pytest.raises(SignatureError, match=message):
            verify(MESSAGE, text, key)


def test_an_encrypted_secret_key_is_refused_with_what_to_do(keys):
    # A password-protected key, as `minisign -G` writes it: the KDF field says scrypt ("Sc").
    # (Derived from a -W key, because minisign's scrypt takes seconds and a gigabyte.)
    data = bytearray(base64.b64decode(keys.secret.read_text().splitlines()[1]))
    data[2:4] = b"Sc"
    encrypted = "untrusted comment: minisign encrypted secret key\n" + base64.b64encode(bytes(data)).decode()

    with pytest.raises(SignatureError, match="decrypt it with minisign .* or sign with minisign -S"):
        sign(MESSAGE, encrypted)


def test_a_damaged_secret_key_is_refused():
    _public, secret_text = generate_keypair()
    data = bytearray(base64.b64decode(secret_text.splitlines()[1]))
    data[-40] ^= 0x01  # inside the secret key, which the checksum covers
    damaged = "untrusted comment: x\n" + base64.b64encode(bytes(data)).decode()

    with pytest.raises(SignatureError, match="the secret key is damaged"):
        sign(MESSAGE, damaged)
    with pytest.raises(SignatureError, match="this is not a minisign secret key"):
        sign(MESSAGE, "untrusted comment: x\nRWQAAA==")


def test_a_trusted_comment_is_one_line(keys):
    with pytest.raises(SignatureError, match="one line"):
        sign(MESSAGE, keys.secret.read_text(), "two\nlines")
