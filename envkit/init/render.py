"""Template files -> the files of a new project: pure functions over text.

A template file (``envkit/init/templates/<template>/`` and the shared ``common/``) is named
for the file it becomes plus ``.tmpl`` (so ruff, pytest and setuptools leave it alone), with a
leading dot spelled ``dot-`` (package-data globs skip dotfiles). A ``{{key}}`` the context
lacks is an error, never left in the output.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

__all__ = ["CI_PATHS", "TEMPLATES", "TemplateError", "load_template", "render_files",
           "render_path", "substitute"]

TEMPLATES = ("gym", "verifiers")
CI_PATHS = (".github/", ".pre-commit-config.yaml")
"""Rendered paths that ``--no-ci`` leaves out (prefixes)."""

_SUFFIX = ".tmpl"
_DOT = "dot-"
_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


class TemplateError(KeyError):
    """A template names a key the context does not define: a bug in envkit, not user input,
    so the CLI reports it as an internal error."""


def load_template(template: str) -> dict[str, str]:
    """``common/`` and ``<template>/`` as template path -> text (the template's files win).

    :raises ValueError: ``template`` is not one of :data:`TEMPLATES`.
    """
    if template not in TEMPLATES:
        msg = f"unknown template {template!r} (one of: {', '.join(TEMPLATES)})"
        raise ValueError(msg)
    root = resources.files("envkit.init") / "templates"
    return {**_walk(root / "common", ""), **_walk(root / template, "")}


def _walk(node: Traversable, prefix: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for child in node.iterdir():
        rel = f"{prefix}{child.name}"
        if child.is_dir():
            out.update(_walk(child, rel + "/"))
        elif child.name.endswith(_SUFFIX):
            out[rel] = child.read_text("utf-8")
    return out


def substitute(text: str, context: Mapping[str, str]) -> str:
    """``{{key}}`` -> ``context[key]``.

    >>> substitute("name: {{name}}", {"name": "my-env"})
    'name: my-env'

    :raises TemplateError: a key ``context`` lacks.
    """
    def one(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in context:
            raise TemplateError(key)
        return context[key]

    return _PLACEHOLDER.sub(one, text)


def render_path(template_path: str, context: Mapping[str, str]) -> str:
    """``dot-github/workflows/envkit.yml.tmpl`` -> ``.github/workflows/envkit.yml``.

    >>> render_path("resources_servers/{{server}}/app.py.tmpl", {"server": "echo"})
    'resources_servers/echo/app.py'
    """
    parts = template_path.removesuffix(_SUFFIX).split("/")
    parts = ["." + p.removeprefix(_DOT) if p.startswith(_DOT) else p for p in parts]
    return substitute("/".join(parts), context)


def render_files(sources: Mapping[str, str], context: Mapping[str, str], *,
                 ci: bool = True) -> dict[str, bytes]:
    """Every template file rendered: project path -> bytes (CI files only with ``ci``).

    :raises TemplateError: a placeholder the context lacks.
    """
    out: dict[str, bytes] = {}
    for template_path, text in sorted(sources.items()):
        path = render_path(template_path, context)
        if not ci and path.startswith(CI_PATHS):
            continue
        out[path] = substitute(text, context).encode()
    return out
