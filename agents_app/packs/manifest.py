"""`pack.yaml` and what a pack contains (docs/packs.md, "The manifest").

The manifest names the pack and lists the SHA-256 of every other file, so the one minisign
signature over pack.yaml covers the whole tree. `read_contents` checks that list file by file
before it parses anything: a file changed after signing, added or removed is refused by name.
Then personas (`agents/*.md`, Ongrid or Claude Code agent files) and skills (`skills/<name>/SKILL.md`
with that folder's other files, or `skills/<name>.md`) are parsed with the registry's own
parsers, so a pack's persona is checked exactly as a mounted file is. Other files (README,
LICENSE...) are allowed and signed, never installed.

Strict where a mistake would pass silently: an unknown top-level key is refused (a typo of
`mcp_servers` must not drop the servers), except keys starting with `x-`, which are the author's.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import yaml
from django.utils.translation import gettext as _

from agents_app.packs.archive import clean_path
from agents_app.packs.contents import (
    AGENTS_DIR,
    MANIFEST,
    SIGNATURE,
    SKILLS_DIR,
    Manifest,
    McpTemplate,
    PackContents,
    PackError,
    PackFiles,
)
from agents_app.personas.schema import (
    NAME_MAX_LENGTH,
    NAME_RE,
    Persona,
    PersonaError,
    Skill,
    _NoAliasLoader,
    parse_persona,
    parse_skill,
)
from agents_app.personas.skills import MAX_SKILL_FILE_BYTES, SKILL_FILE
from agents_app.personas.user_skills import MAX_FILES as MAX_SKILL_FILES
from ops_app.models import MCP_NAME

KEYS = ("name", "version", "description", "author", "homepage", "mcp_servers", "files")
SERVER_KEYS = ("name", "transport", "url", "headers", "timeout", "description")
TRANSPORTS = ("streamable_http", "sse")
# Keys of an MCP server that would run something on the Ongrid host.
COMMAND_KEYS = ("command", "args", "env", "cwd")
VERSION_RE = re.compile(r"^[A-Za-z0-9.+-]{1,50}$")
SHA256_RE = re.compile(r"^[0-9a-fA-F]{64}$")
# An HTTP header name (RFC 9110 token characters).
HEADER_NAME_RE = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$")
# Query parameters whose value would be a credential.
SECRET_WORDS = frozenset(
    {
        "token",
        "key",
        "apikey",
        "secret",
        "password",
        "passwd",
        "pwd",
        "auth",
        "sig",
        "signature",
        "credential",
    }
)
# Lengths the models store (agents_app.models.Pack).
MAX_DESCRIPTION = 500
MAX_AUTHOR = 200
MAX_URL = 500
DEFAULT_TIMEOUT = 30.0
MAX_TIMEOUT = 600


class _ManifestLoader(_NoAliasLoader):
    """The personas' alias-free YAML, with the refusal worded for pack.yaml."""

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise yaml.composer.ComposerError(
                None,
                None,
                _("YAML anchors and aliases (&%(anchor)s, *%(anchor)s) are not allowed in pack.yaml")
                % {"anchor": event.anchor},
                event.start_mark,
            )
        return super().compose_node(parent, index)


# ---------------------------------------------------------------------------------------------
# pack.yaml


def _load(text: str) -> dict:
    if not isinstance(text, str):
        raise PackError(_("pack.yaml must be text"))
    try:
        data = yaml.load(text.removeprefix("\ufeff"), Loader=_ManifestLoader)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        if mark is not None:
            raise PackError(
                _("pack.yaml is not valid YAML at line %(line)s: %(problem)s")
                % {"line": mark.line + 1, "problem": problem}
            ) from None
        raise PackError(_("pack.yaml is not valid YAML: %(problem)s") % {"problem": problem}) from None
    except (ValueError, TypeError, RecursionError, OverflowError) as error:
        raise PackError(_("pack.yaml is not valid YAML (%(error)s)") % {"error": error}) from None
    if not isinstance(data, dict):
        raise PackError(_("pack.yaml must be a mapping of keys (name, version, files...) to values"))
    strange = sorted(str(key) for key in data if not isinstance(key, str))
    if strange:
        raise PackError(_("pack.yaml's keys must be text: %(keys)s") % {"keys": ", ".join(strange)})
    return data


def _text(data: Mapping, key: str, where: str, limit: int, required: bool = False) -> str:
    value = data.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise PackError(_("%(where)s: '%(key)s' is required") % {"where": where, "key": key})
        return ""
    if not isinstance(value, str):
        raise PackError(
            _("%(where)s: '%(key)s' must be text (put it in quotes)") % {"where": where, "key": key}
        )
    value = value.strip()
    if len(value) > limit:
        raise PackError(
            _("%(where)s: '%(key)s' is longer than %(limit)s characters")
            % {"where": where, "key": key, "limit": limit}
        )
    return value


def _url(data: Mapping, key: str, where: str, required: bool = False) -> str:
    value = _text(data, key, where, MAX_URL, required)
    if not value:
        return ""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise PackError(
            _("%(where)s: '%(key)s' must be an http:// or https:// URL") % {"where": where, "key": key}
        )
    if parts.username or parts.password:
        raise PackError(
            _("%(where)s: '%(key)s' holds a user name or password; packs carry no secrets")
            % {"where": where, "key": key}
        )
    for name, _value in parse_qsl(parts.query, keep_blank_values=True):
        if SECRET_WORDS & set(re.split(r"[^a-z0-9]+", name.lower())):
            raise PackError(
                _("%(where)s: '%(key)s' passes %(param)s in its query; packs carry no secrets")
                % {"where": where, "key": key, "param": name}
            )
    return value


def _name(data: Mapping) -> str:
    name = _text(data, "name", "pack.yaml", MAX_DESCRIPTION, required=True)
    if len(name) > NAME_MAX_LENGTH or not NAME_RE.match(name):
        raise PackError(
            _(
                "pack.yaml: 'name' %(name)s is not a pack name: use lowercase letters, digits and "
                "single hyphens (like 'ops-extras'), at most %(limit)s characters"
            )
            % {"name": repr(name), "limit": NAME_MAX_LENGTH}
        )
    return name


def _version(data: Mapping) -> str:
    value = data.get("version")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        raise PackError(
            _("pack.yaml: 'version' must be text: write it in quotes, like version: \"%(value)s\"")
            % {"value": value}
        )
    version = _text(data, "version", "pack.yaml", 50, required=True)
    if not VERSION_RE.match(version):
        raise PackError(
            _("pack.yaml: 'version' %(value)s may use letters, digits, '.', '+' and '-' only (like 1.2.0)")
            % {"value": repr(version)}
        )
    return version


def _headers(server: Mapping, where: str) -> tuple[str, ...]:
    value = server.get("headers")
    if value is None:
        return ()
    no_secrets = _(
        "%(where)s: 'headers' lists header names only, like [Authorization]: packs carry no "
        "secrets, the admin fills the values"
    ) % {"where": where}
    if not isinstance(value, list):
        raise PackError(no_secrets)
    names = []
    for item in value:
        if not isinstance(item, str) or not HEADER_NAME_RE.match(item.strip()):
            raise PackError(no_secrets)
        names.append(item.strip())
    return tuple(dict.fromkeys(names))


def _timeout(server: Mapping, where: str) -> float:
    value = server.get("timeout")
    if value is None:
        return DEFAULT_TIMEOUT
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 1 <= value <= MAX_TIMEOUT:
        raise PackError(
            _("%(where)s: 'timeout' must be a number of seconds between 1 and %(limit)s")
            % {"where": where, "limit": MAX_TIMEOUT}
        )
    return float(value)


def _server(server: Any, index: int) -> McpTemplate:
    where = f"mcp_servers[{index}]"
    if not isinstance(server, dict):
        raise PackError(_("%(where)s must be a mapping (name, transport, url...)") % {"where": where})
    name = server.get("name")
    if not isinstance(name, str) or not MCP_NAME.regex.match(name):
        raise PackError(
            _("%(where)s: 'name' must be lower-case letters, digits and dashes, at most 40")
            % {"where": where}
        )
    where = f"mcp_servers[{index}] ({name})"
    transport = server.get("transport", TRANSPORTS[0])
    if transport == "stdio" or any(key in server for key in COMMAND_KEYS):
        raise PackError(
            _(
                "%(where)s: packs cannot run commands; a pack's MCP server is reached over HTTP "
                "(transport streamable_http or sse)"
            )
            % {"where": where}
        )
    if transport not in TRANSPORTS:
        raise PackError(
            _("%(where)s: 'transport' must be streamable_http or sse, not %(value)s")
            % {"where": where, "value": repr(transport)}
        )
    unknown = sorted(str(key) for key in server if key not in SERVER_KEYS)
    if unknown:
        raise PackError(
            _("%(where)s has unknown keys: %(keys)s") % {"where": where, "keys": ", ".join(unknown)}
        )
    return McpTemplate(
        name=name,
        transport=transport,
        url=_url(server, "url", where, required=True),
        headers=_headers(server, where),
        timeout=_timeout(server, where),
        description=_text(server, "description", where, MAX_DESCRIPTION),
    )


def _servers(data: Mapping) -> tuple[McpTemplate, ...]:
    value = data.get("mcp_servers")
    if value is None:
        return ()
    if not isinstance(value, list):
        raise PackError(_("pack.yaml: 'mcp_servers' must be a list of servers"))
    servers = tuple(_server(server, index) for index, server in enumerate(value))
    names = [server.name for server in servers]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise PackError(
            _("pack.yaml: 'mcp_servers' names %(names)s more than once") % {"names": ", ".join(twice)}
        )
    return servers


def _files(data: Mapping) -> dict[str, str]:
    value = data.get("files")
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise PackError(_("pack.yaml: 'files' must map each file's path to its SHA-256"))
    files: dict[str, str] = {}
    for path, digest in value.items():
        try:
            clean = clean_path(path)
        except PackError as error:
            raise PackError(_("pack.yaml: 'files': %(error)s") % {"error": error}) from None
        if clean != path or path in (MANIFEST, SIGNATURE):
            raise PackError(
                _("pack.yaml: 'files' lists %(path)s, which is not a file path of the pack")
                % {"path": repr(path)}
            )
        if not isinstance(digest, str) or not SHA256_RE.match(digest):
            raise PackError(
                _("pack.yaml: 'files' gives %(path)s a checksum that is not a SHA-256 (64 hex digits)")
                % {"path": path}
            )
        files[path] = digest.lower()
    return files


def parse_manifest(text: str) -> Manifest:
    """`pack.yaml` as a Manifest, or PackError naming the key that is wrong."""
    data = _load(text)
    unknown = sorted(key for key in data if key not in KEYS and not key.startswith("x-"))
    if unknown:
        raise PackError(
            _("pack.yaml has unknown keys: %(keys)s (keys of your own must start with 'x-')")
            % {"keys": ", ".join(unknown)}
        )
    return Manifest(
        name=_name(data),
        version=_version(data),
        description=_text(data, "description", "pack.yaml", MAX_DESCRIPTION),
        author=_text(data, "author", "pack.yaml", MAX_AUTHOR),
        homepage=_url(data, "homepage", "pack.yaml"),
        mcp_servers=_servers(data),
        files=_files(data),
    )


def file_hashes(files: PackFiles) -> dict[str, str]:
    """{path: sha256 hex} of every file but the manifest and its signature (what `files:` lists)."""
    return {
        path: hashlib.sha256(files[path]).hexdigest()
        for path in sorted(files)
        if path not in (MANIFEST, SIGNATURE)
    }


# ---------------------------------------------------------------------------------------------
# The whole pack


def _check_files(manifest: Manifest, files: PackFiles) -> None:
    """Every file listed, present and unchanged; the one signature then covers the whole tree."""
    actual = file_hashes(files)
    changed = [
        path for path, digest in actual.items() if path in manifest.files and manifest.files[path] != digest
    ]
    if changed:
        raise PackError(
            _("%(files)s does not match the checksum in pack.yaml (changed after signing?)")
            % {"files": ", ".join(changed)}
        )
    unlisted = [path for path in actual if path not in manifest.files]
    if unlisted:
        raise PackError(
            _(
                "%(files)s is not listed in pack.yaml's files (added after signing? "
                "manage.py ongrid_pack build lists every file)"
            )
            % {"files": ", ".join(unlisted)}
        )
    missing = sorted(path for path in manifest.files if path not in actual)
    if missing:
        raise PackError(
            _("%(files)s is listed in pack.yaml but missing from the pack") % {"files": ", ".join(missing)}
        )


def _utf8(files: PackFiles, path: str) -> str:
    try:
        return files[path].decode("utf-8")
    except UnicodeDecodeError:
        raise PackError(_("%(path)s is not UTF-8 text") % {"path": path}) from None


def _is_readme(path: str) -> bool:
    return path.rsplit("/", 1)[-1].lower() == "readme.md"


def _personas(files: PackFiles, pack: str) -> tuple[Persona, ...]:
    personas: dict[str, Persona] = {}
    for path in sorted(files):
        parts = path.split("/")
        if len(parts) != 2 or parts[0] != AGENTS_DIR or not parts[1].endswith(".md") or _is_readme(path):
            continue
        try:
            persona = parse_persona(_utf8(files, path), source="user", path=f"{pack}/{path}")
        except PersonaError as error:
            raise PackError(str(error)) from None
        if persona.name in personas:
            raise PackError(
                _("two personas are named %(name)s: %(first)s and %(second)s")
                % {"name": persona.name, "first": personas[persona.name].path, "second": persona.path}
            )
        personas[persona.name] = persona
    return tuple(personas.values())


def _skill_files(files: PackFiles, folder: str) -> dict[str, str]:
    """The other files of a skill folder, as text relative to it (what the `Skill` tool reads)."""
    extra: dict[str, str] = {}
    for path in sorted(files):
        if not path.startswith(f"{folder}/") or path == f"{folder}/{SKILL_FILE}":
            continue
        if len(files[path]) > MAX_SKILL_FILE_BYTES:
            raise PackError(
                _("%(path)s is larger than %(limit)s KB, the most a skill's file may hold")
                % {"path": path, "limit": MAX_SKILL_FILE_BYTES // 1024}
            )
        extra[path[len(folder) + 1 :]] = _utf8(files, path)
    if len(extra) > MAX_SKILL_FILES:
        raise PackError(
            _("%(folder)s has more than %(limit)s files") % {"folder": folder, "limit": MAX_SKILL_FILES}
        )
    return extra


def _skill(files: PackFiles, pack: str, path: str, folder: str | None) -> Skill:
    try:
        skill = parse_skill(_utf8(files, path), source="user", path=f"{pack}/{path}")
    except PersonaError as error:
        raise PackError(str(error)) from None
    if folder is None:
        return skill
    if folder.rsplit("/", 1)[-1] != skill.name:
        raise PackError(
            _("%(path)s names the skill %(name)s; its folder must have the same name (skills/%(name)s/)")
            % {"path": path, "name": skill.name}
        )
    return dataclasses.replace(skill, files=_skill_files(files, folder))


def _skills(files: PackFiles, pack: str) -> tuple[Skill, ...]:
    found: list[Skill] = []
    folders = sorted(
        {path.split("/")[1] for path in files if path.startswith(f"{SKILLS_DIR}/") and path.count("/") >= 2}
    )
    for name in folders:
        folder = f"{SKILLS_DIR}/{name}"
        if f"{folder}/{SKILL_FILE}" not in files:
            raise PackError(
                _("%(folder)s/ has no %(file)s: a skill folder starts with its SKILL.md")
                % {"folder": folder, "file": SKILL_FILE}
            )
        found.append(_skill(files, pack, f"{folder}/{SKILL_FILE}", folder))
    for path in sorted(files):
        parts = path.split("/")
        if len(parts) == 2 and parts[0] == SKILLS_DIR and parts[1].endswith(".md") and not _is_readme(path):
            found.append(_skill(files, pack, path, None))
    seen: dict[str, Skill] = {}
    for skill in found:
        if skill.name in seen:
            raise PackError(
                _("two skills are named %(name)s: %(first)s and %(second)s")
                % {"name": skill.name, "first": seen[skill.name].path, "second": skill.path}
            )
        seen[skill.name] = skill
    return tuple(found)


def read_contents(files: PackFiles) -> PackContents:
    """The pack checked file by file against its manifest (a tampered, missing or unlisted file is
    a PackError) and parsed: personas under agents/, skills under skills/."""
    if MANIFEST not in files:
        raise PackError(_("no pack.yaml at the top of the pack"))
    manifest = parse_manifest(_utf8(files, MANIFEST))
    _check_files(manifest, files)
    signature = _utf8(files, SIGNATURE) if SIGNATURE in files else None
    return PackContents(
        manifest=manifest,
        personas=_personas(files, manifest.name),
        skills=_skills(files, manifest.name),
        files=dict(files),
        signature=signature,
    )
