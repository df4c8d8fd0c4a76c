"""Packs (docs/packs.md): signed bundles of personas, skills and MCP server templates an
organization installs, upgrades, rolls back and uninstalls.

`contents` holds the shapes every step shares; `archive` reads a pack's files safely,
`manifest` reads `pack.yaml` and what the pack contains, `signatures` checks minisign signatures,
`sources` fetches a pack (upload, Git, catalog) under the egress policy, `plan` previews what an
install would do, and `install` is the one writer (install, upgrade, uninstall, rollback).
"""
