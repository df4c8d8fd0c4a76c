"""The toolsets of this installation, and every fact derived from their manifests.

A toolset is a package: every subpackage of `agents_app/toolsets/`, plus the packages named in
`ONGRID_TOOLSETS` (docs/extending.md). Its `manifest.TOOLSET` is read without importing its
handlers; `load_builtin_tools` imports those once, when an agent first needs a tool.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import re
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.dispatch import receiver

from agents_app.toolsets.contract import Tool
from agents_app.toolsets.manifest import Toolset, ToolSpec

BUILTIN_PACKAGE = "agents_app.toolsets"
# The function-name limit of OpenAI-compatible APIs; letters first.
TOOL_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")


@dataclass(frozen=True)
class Loaded:
    toolset: Toolset
    package: str


@dataclass(frozen=True)
class Redirect:
    """A name the coordinator may call without having the tool: it answers "dispatch `specialist`"."""

    name: str
    specialist: str
    reason: str


def toolset_packages() -> list[str]:
    """The built-in toolset packages (alphabetical), then the configured ones in their order."""
    package = importlib.import_module(BUILTIN_PACKAGE)
    builtin = [f"{BUILTIN_PACKAGE}.{m.name}" for m in pkgutil.iter_modules(package.__path__) if m.ispkg]
    return sorted(builtin) + list(settings.CONFIG.toolsets)


@functools.cache
def loaded() -> tuple[Loaded, ...]:
    toolsets = tuple(Loaded(_manifest_of(package), package) for package in toolset_packages())
    _check(toolsets)
    return toolsets


def _manifest_of(package: str) -> Toolset:
    try:
        module = importlib.import_module(f"{package}.manifest")
    except ModuleNotFoundError as error:
        if error.name not in (package, f"{package}.manifest"):
            raise
        raise ImproperlyConfigured(
            f"toolset package {package!r} has no importable `manifest` module ({error})"
        ) from None
    toolset = getattr(module, "TOOLSET", None)
    if not isinstance(toolset, Toolset):
        raise ImproperlyConfigured(f"{package}.manifest must define TOOLSET = Toolset(...)")
    return toolset


def _check(toolsets: tuple[Loaded, ...]) -> None:
    """A manifest mistake is a bug of the installation: refuse it at once, naming the package."""
    seen_sets: dict[str, str] = {}
    seen_names: dict[str, str] = {}
    for item in toolsets:
        name = item.toolset.name
        if name in seen_sets:
            raise ImproperlyConfigured(f"two toolsets are named {name!r}: {seen_sets[name]}, {item.package}")
        seen_sets[name] = item.package
        for spec in item.toolset.tools:
            for name in (spec.name, *spec.also_redirects):
                if not TOOL_NAME.match(name):
                    raise ImproperlyConfigured(f"{item.package}: {name!r} is not a valid tool name")
                if name in seen_names:
                    raise ImproperlyConfigured(
                        f"tool {name!r} is declared by {seen_names[name]} and {item.package}"
                    )
                seen_names[name] = item.package
            if spec.on_host and not spec.owner:
                raise ImproperlyConfigured(
                    f"{item.package}: {spec.name} runs on a host, so it needs an owner (the specialist "
                    "the coordinator dispatches for it)"
                )


def specs() -> dict[str, ToolSpec]:
    """Every declared tool by name, in toolset order then manifest order."""
    return {spec.name: spec for item in loaded() for spec in item.toolset.tools}


def spec(name: str) -> ToolSpec | None:
    return specs().get(name)


def toolset_of(name: str) -> Toolset | None:
    """The toolset that declares the tool `name`."""
    return next((item.toolset for item in loaded() if any(s.name == name for s in item.toolset.tools)), None)


def backend_of(name: str) -> str | None:
    """What the tool `name` reaches: its own backend when it declares one, else its toolset's."""
    toolset, declared = toolset_of(name), spec(name)
    if toolset is None or declared is None:
        return None
    return declared.backend or toolset.backend


def datasource_kinds() -> dict[str, str]:
    """Tool name -> the data-source kind its `datasource` argument picks."""
    return {name: s.datasource for name, s in specs().items() if s.datasource}


def redirects() -> tuple[Redirect, ...]:
    """The coordinator's redirect stubs: every owned tool, then the names models invent for it."""
    owned = [s for s in specs().values() if s.owner]
    stubs = [Redirect(s.name, s.owner, s.redirect_reason) for s in owned]
    stubs += [Redirect(alias, s.owner, s.redirect_reason) for s in owned for alias in s.also_redirects]
    return tuple(stubs)


@functools.cache
def _builtin_tools() -> dict[str, Tool]:
    tools: dict[str, Tool] = {}
    for item in loaded():
        bound = [s for s in item.toolset.tools if s.scope == "agents"]
        if not bound:
            continue
        modules = [importlib.import_module(f"{item.package}.{name}") for name in item.toolset.handlers]
        for spec in bound:
            tools[spec.name] = _bind(spec, modules, item.package)
    return tools


def _bind(spec: ToolSpec, modules: list, package: str) -> Tool:
    handlers = [getattr(module, spec.name) for module in modules if hasattr(module, spec.name)]
    if len(handlers) != 1:
        where = ", ".join(m.__name__ for m in modules)
        raise ImproperlyConfigured(
            f"{package}: tool {spec.name} needs exactly one handler named {spec.name} in {where}; "
            f"found {len(handlers)}"
        )
    return Tool.from_spec(
        spec, handlers[0], describe=_hook(modules, "describe", spec), preview=_hook(modules, "preview", spec)
    )


def _hook(modules: list, kind: str, spec: ToolSpec):
    """A write tool's optional `describe_<name>` / `preview_<name>` (docs/review-gate.md)."""
    found = [getattr(m, f"{kind}_{spec.name}") for m in modules if hasattr(m, f"{kind}_{spec.name}")]
    return found[0] if found else None


def load_builtin_tools() -> dict[str, Tool]:
    """Every tool any persona may list, by name (a copy: callers may add their own)."""
    return dict(_builtin_tools())


def get_builtin_tool(name: str) -> Tool | None:
    return _builtin_tools().get(name)


def reset() -> None:
    """Read the toolsets again (a changed `ONGRID_TOOLSETS`, in tests)."""
    loaded.cache_clear()
    _builtin_tools.cache_clear()


@receiver(setting_changed)
def _settings_changed(setting: str, **kwargs) -> None:
    if setting == "CONFIG":
        reset()
