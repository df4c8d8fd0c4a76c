"""The shapes a pack takes on its way in: its files, its manifest, what it contains."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from agents_app.personas.schema import Persona, Skill

MANIFEST = "pack.yaml"
SIGNATURE = "pack.yaml.minisig"
AGENTS_DIR = "agents"
SKILLS_DIR = "skills"

# {relative POSIX path: bytes}: a pack as read from a directory, an archive or a Git tree.
PackFiles = Mapping[str, bytes]


class PackError(Exception):
    """A pack that cannot be read or installed, in words fit to show the admin (never a remote
    server's answer)."""


@dataclass(frozen=True)
class McpTemplate:
    """An MCP server a pack suggests: where it is, never a secret. Installed disabled, the
    headers it names left for the admin to fill."""

    name: str
    transport: str  # "streamable_http" or "sse" (stdio is never installed from a pack)
    url: str
    headers: tuple[str, ...] = ()  # header names the admin must fill, e.g. ("Authorization",)
    timeout: float = 30.0
    description: str = ""


@dataclass(frozen=True)
class Manifest:
    """`pack.yaml`: who the pack is, and the SHA-256 of every other file (signed with it)."""

    name: str
    version: str
    description: str = ""
    author: str = ""
    homepage: str = ""
    mcp_servers: tuple[McpTemplate, ...] = ()
    files: Mapping[str, str] = field(default_factory=dict)  # path -> sha256 hex

    def as_dict(self) -> dict:
        """What `PackRelease.manifest` stores (JSON)."""
        return {
            "name": self.name,
            "version": self.version,
            "description": self.description,
            "author": self.author,
            "homepage": self.homepage,
            "mcp_servers": [
                {
                    "name": server.name,
                    "transport": server.transport,
                    "url": server.url,
                    "headers": list(server.headers),
                    "timeout": server.timeout,
                    "description": server.description,
                }
                for server in self.mcp_servers
            ],
            "files": dict(self.files),
        }


@dataclass(frozen=True)
class PackContents:
    """A pack read and checked: its manifest, personas (Claude Code files normalised, each with
    its import notes), skills (folder skills carry their extra files in `files`) and MCP templates."""

    manifest: Manifest
    personas: tuple[Persona, ...]
    skills: tuple[Skill, ...]
    files: PackFiles
    signature: str | None = None  # the text of pack.yaml.minisig, if the pack has one
