"""`manage.py ongrid_pack`: make, sign and check packs (docs/packs.md, "Making a pack").

- `build DIR [-o OUT.tar.gz] [--sign SECRET_KEY_FILE]` lists every file's SHA-256 under `files:`
  in DIR/pack.yaml (the author's other keys, their order and comments untouched), signs pack.yaml
  when asked, checks the pack as an organization would read it, and writes the archive;
- `keygen -p PUB -s SECRET` makes a minisign key pair, for authors without minisign;
- `verify PACK [--public-key FILE]` reads a pack directory or archive, says what it contains and
  who signed it, and fails (exit 1) with the reason when anything is wrong.

Signing happens here, on the author's machine or CI, never in Ongrid: the secret key stays there.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import yaml
from django.core.management.base import CommandError
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from agents_app.packs.archive import build_archive, read_archive, read_directory
from agents_app.packs.contents import MANIFEST, SIGNATURE, PackContents, PackError
from agents_app.packs.manifest import file_hashes, parse_manifest, read_contents
from agents_app.packs.signatures import (
    PublicKey,
    SignatureError,
    generate_keypair,
    parse_public_key,
    parse_signature,
    public_key_of,
    sign,
    verify,
)
from ops_app.core.commands import LocalizedCommand

# A top-level `files:` key, however the author quoted it.
_FILES_KEY = re.compile(r"""^(files|'files'|"files")\s*:""")


def replace_files(text: str, hashes: dict[str, str]) -> str:
    """`text` with its top-level `files:` block (and only it) replaced by `hashes`, at the end."""
    kept: list[str] = []
    pending: list[str] = []  # blank lines inside or after the old block
    in_block = False
    for line in text.splitlines(keepends=True):
        if _FILES_KEY.match(line):
            in_block, pending = True, []
            continue
        if in_block and not line.strip():
            pending.append(line)
            continue
        if in_block and line[:1] in (" ", "\t"):
            pending = []
            continue
        if in_block:
            in_block = False
            kept.extend(pending)
        kept.append(line)
    head = "".join(kept).rstrip("\n")
    block = yaml.safe_dump({"files": hashes}, sort_keys=True, allow_unicode=True, default_flow_style=False)
    return f"{head}\n{block}" if head else block


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise CommandError(
            _("%(path)s cannot be read (%(error)s)") % {"path": path, "error": error}
        ) from None


def _create(path: Path, text: str, mode: int) -> None:
    """Write a new file, never over an existing one (a key is not replaced by mistake)."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    except FileExistsError:
        raise CommandError(_("%(path)s already exists; it is not overwritten") % {"path": path}) from None
    except OSError as error:
        raise CommandError(_("cannot write %(path)s (%(error)s)") % {"path": path, "error": error}) from None
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)


def _installed_paths(contents: PackContents) -> set[str]:
    """The files that become personas or skills (the others are listed, never installed)."""
    prefix = f"{contents.manifest.name}/"
    paths = {persona.path.removeprefix(prefix) for persona in contents.personas if persona.path}
    for skill in contents.skills:
        path = (skill.path or "").removeprefix(prefix)
        paths.add(path)
        folder = path.rsplit("/", 1)[0]
        paths.update(f"{folder}/{name}" for name in skill.files)
    return paths


def describe(contents: PackContents) -> list[str]:
    """What the pack contains, as lines for the terminal."""
    manifest = contents.manifest
    lines = [f"{manifest.name} {manifest.version}"]
    if manifest.description:
        lines.append(f"  {manifest.description}")
    if manifest.author:
        lines.append("  " + _("by %(author)s") % {"author": manifest.author})
    lines.append(_("Personas: %(count)s") % {"count": len(contents.personas)})
    for persona in contents.personas:
        tools = ", ".join(persona.tools) if persona.tools is not None else _("the default read-only tools")
        details = _("%(mode)s; tools: %(tools)s") % {"mode": persona.permission_mode, "tools": tools}
        lines.append(f"  {persona.name} ({details})")
        lines.extend(f"    {note}" for note in persona.import_notes)
    lines.append(_("Skills: %(count)s") % {"count": len(contents.skills)})
    for skill in contents.skills:
        count = len(skill.files)
        extra = " (" + _("extra files: %(count)s") % {"count": count} + ")"
        lines.append(f"  {skill.name}{extra if count else ''}: {skill.description}")
    lines.append(_("MCP servers: %(count)s") % {"count": len(manifest.mcp_servers)})
    for server in manifest.mcp_servers:
        headers = ""
        if server.headers:
            headers = "; " + _("headers to fill: %(names)s") % {"names": ", ".join(server.headers)}
        lines.append(f"  {server.name} ({server.transport}) {server.url}{headers}")
    others = sorted(set(manifest.files) - _installed_paths(contents))
    if others:
        lines.append(_("Other files (not installed): %(files)s") % {"files": ", ".join(others)})
    return lines


class Command(LocalizedCommand):
    help = gettext_lazy(
        "Make, sign and check packs: build a pack's archive, create a signing key, verify a pack."
    )

    def add_arguments(self, parser):
        # Built while the terminal's language is active (LocalizedCommand), so gettext, not lazy.
        actions = parser.add_subparsers(dest="action", required=True, metavar="{build,keygen,verify}")
        build = actions.add_parser("build", help=_("list the files in pack.yaml, sign it, write the archive"))
        build.add_argument("directory", help=_("the pack's directory (with its pack.yaml)"))
        build.add_argument("-o", "--output", help=_("the archive to write (default NAME-VERSION.tar.gz)"))
        build.add_argument("--sign", metavar="SECRET_KEY_FILE", help=_("an unencrypted minisign secret key"))
        keygen = actions.add_parser("keygen", help=_("create a minisign key pair to sign packs with"))
        keygen.add_argument("-p", "--public-key", required=True, help=_("the public key file to write"))
        keygen.add_argument("-s", "--secret-key", required=True, help=_("the secret key file to write"))
        check = actions.add_parser("verify", help=_("check a pack directory or archive and its signature"))
        check.add_argument("pack", help=_("a pack directory, .tar.gz or .zip"))
        check.add_argument(
            "--public-key",
            action="append",
            default=[],
            metavar="FILE",
            help=_("a minisign public key the signature must be from (repeatable)"),
        )

    def handle(self, *args, action: str, **options):
        try:
            if action == "build":
                self.build(Path(options["directory"]), options["output"], options["sign"])
            elif action == "keygen":
                self.keygen(Path(options["public_key"]), Path(options["secret_key"]))
            else:
                self.verify(Path(options["pack"]), options["public_key"])
        except (PackError, SignatureError) as error:
            raise CommandError(str(error)) from None

    # -----------------------------------------------------------------------------------------

    def build(self, root: Path, output: str | None, secret_key_file: str | None) -> None:
        manifest_path = root / MANIFEST
        if not manifest_path.is_file():
            raise CommandError(_("%(path)s has no pack.yaml") % {"path": root})
        secret_key = _read_text(Path(secret_key_file)) if secret_key_file else None
        signer = public_key_of(secret_key) if secret_key else None  # a bad key fails before any write
        old_text = _read_text(manifest_path)
        new_text = replace_files(old_text, file_hashes(read_directory(root)))
        manifest = parse_manifest(new_text)
        self._check_rewrite(old_text, new_text)
        target = Path(output) if output else Path.cwd() / f"{manifest.name}-{manifest.version}.tar.gz"
        if target.resolve().is_relative_to(root.resolve()):
            raise CommandError(_("write the archive outside the pack's directory (-o)"))
        if new_text != old_text:
            manifest_path.write_text(new_text, encoding="utf-8")
        self._signature(root, new_text, old_text, manifest.name, manifest.version, secret_key)
        files = read_directory(root)
        contents = read_contents(files)
        target.write_bytes(build_archive(files))
        for line in describe(contents):
            self.stdout.write(line)
        if signer is not None:
            self.stdout.write(_("Signed with key %(key_id)s.") % {"key_id": signer.key_id})
        self.stdout.write(_("Wrote %(path)s.") % {"path": target})

    def _check_rewrite(self, old_text: str, new_text: str) -> None:
        """The rewrite changed `files:` and nothing else (else the author edits it by hand)."""
        try:
            old, new = yaml.safe_load(old_text) or {}, yaml.safe_load(new_text)
        except yaml.YAMLError:
            old, new = None, None
        if not isinstance(old, dict) or not isinstance(new, dict):
            raise CommandError(_("pack.yaml must be a mapping of keys to values"))
        old.pop("files", None)
        new.pop("files", None)
        if old != new:
            raise CommandError(
                _(
                    "could not replace the files: list in pack.yaml without changing other keys; "
                    "remove it and build again"
                )
            )

    def _signature(
        self, root: Path, new_text: str, old_text: str, name: str, version: str, secret_key: str | None
    ) -> None:
        signature_path = root / SIGNATURE
        if secret_key is not None:
            comment = f"timestamp:{int(time.time())}\tfile:{MANIFEST}\tpack:{name} {version}"
            signature_path.write_text(sign(new_text.encode("utf-8"), secret_key, comment), encoding="utf-8")
        elif signature_path.exists() and new_text != old_text:
            signature_path.unlink()
            self.stderr.write(_("pack.yaml changed: removed its old signature (sign it again with --sign)."))

    def keygen(self, public: Path, secret: Path) -> None:
        for path in (public, secret):
            if path.exists():
                raise CommandError(_("%(path)s already exists; it is not overwritten") % {"path": path})
        public_text, secret_text = generate_keypair()
        _create(secret, secret_text, 0o600)
        _create(public, public_text, 0o644)
        key = parse_public_key(public_text)
        self.stdout.write(
            _("Key %(key_id)s: secret key in %(secret)s, public key in %(public)s.")
            % {"key_id": key.key_id, "secret": secret, "public": public}
        )
        self.stdout.write(public_text.splitlines()[1])
        self.stderr.write(
            _(
                "The secret key is not encrypted: keep it where only the signer "
                "(or your CI's secrets) can read it."
            )
        )

    def verify(self, path: Path, public_key_files: list[str]) -> None:
        if path.is_dir():
            files = read_directory(path)
        elif path.is_file():
            files = read_archive(path.read_bytes(), path.name)
        else:
            raise CommandError(_("%(path)s: no such pack directory or archive") % {"path": path})
        keys: list[PublicKey] = [parse_public_key(_read_text(Path(name))) for name in public_key_files]
        contents = read_contents(files)
        for line in describe(contents):
            self.stdout.write(line)
        if contents.signature is None:
            if keys:
                raise CommandError(_("the pack is not signed (no pack.yaml.minisig)"))
            self.stdout.write(_("Not signed."))
            return
        signature = parse_signature(contents.signature)
        if not keys:
            self.stdout.write(
                _("Signed with key %(key_id)s (not checked: give --public-key).")
                % {"key_id": signature.key_id}
            )
            return
        key = verify(files[MANIFEST], contents.signature, keys)
        self.stdout.write(
            _("Signature verified: signed with key %(key_id)s; trusted comment: %(comment)s")
            % {"key_id": key.key_id, "comment": signature.trusted_comment}
        )
