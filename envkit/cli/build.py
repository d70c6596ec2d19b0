"""``envkit build`` and ``envkit convert package``: parse, call ``envkit.builder.build``, return
the built package's validation (download progress on stderr)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TaskID,
    TextColumn,
    TransferSpeedColumn,
)

from envkit.builder.build import BuildRequest, BuildResult, build, convert_package
from envkit.cli._common import (
    common_options,
    option_group,
    output_path_option,
    target_from,
    target_options,
)
from envkit.cli.submit import upload_options, upload_outputs
from envkit.converters.gym_tree import FORMATS
from envkit.model.gym_data import DEFAULT_GYM_VERSION
from envkit.validate.report import ValidationRun

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["build_command", "package_command"]

_LOG = logging.getLogger("envkit.builder.build")

_DIR = click.Path(exists=True, file_okay=False, path_type=Path)
_OUT = click.Path(file_okay=False, path_type=Path)


class _RichFetchProgress:
    """One bar per download on stderr; cached files only count toward the total."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._tasks: dict[str, TaskID] = {}
        self.cached = 0

    def begin(self, filename: str, size: int | None) -> None:
        self._tasks[filename] = self._progress.add_task(filename, total=size)

    def advance(self, filename: str, nbytes: int) -> None:
        self._progress.advance(self._tasks[filename], nbytes)

    def end(self, filename: str, *, cached: bool) -> None:
        if cached:
            self.cached += 1
        elif filename in self._tasks:
            self._progress.remove_task(self._tasks.pop(filename))


_build_options = option_group(
    target_options,
    common_options(("json", "human", "github", "sarif"), default="json", format_alias=False),
    output_path_option(aliases=("--out",), required=True, type=_OUT,
                       help="Package directory to write (replaced atomically)."),
    click.option("--gym-version", default=DEFAULT_GYM_VERSION, show_default=True,
                 help="nemo-gym version of the training image (pinned as nemo-gym==V)."),
    click.option("--wheels-dir", "wheels_dirs", multiple=True, type=_DIR,
                 help="Extra local wheels offered to the resolver (uv --find-links)."),
    click.option("--index-url", default=None, help="Package index (default: PyPI)."),
    click.option("--extra-index-url", "extra_index_urls", multiple=True,
                 help="Further package index (repeatable)."),
    click.option("--no-runtime-pins", is_flag=True,
                 help="Vendor only the servers' own closure, not nemo-gym/ray/openai: "
                      "the package then needs egress at spin-up."),
    click.option("--resolve-offline", is_flag=True,
                 help="Resolve from uv's cache and --wheels-dir only (no index)."),
    click.option("--include", "include", multiple=True, metavar="GLOB",
                 help="Copy files matching GLOB (a package path; `*` also matches `/`) "
                      "even when they are dotenv or key files, which are otherwise left "
                      "out (repeatable)."),
    click.option("--refresh", is_flag=True,
                 help="Re-resolve instead of reusing the cached resolution "
                      "(picks up new releases; wheels stay cached by sha256)."),
)
"""Options shared by ``build`` and ``convert package``."""


def _request(sources: tuple[Path, ...], output: Path, arch: str, python_version: str,
             glibc: str | None, no_runtime_pins: bool, **opts: Any) -> BuildRequest:
    """The ``BuildRequest`` of ``_build_options`` (and the command's own ``opts``). Its target
    source is ``command line`` when ``--arch/--python/--glibc`` was given: the build's verdict
    says where its target came from, as ``envkit validate``'s does."""
    ctx = click.get_current_context()
    given = any(ctx.get_parameter_source(name) not in (None, ParameterSource.DEFAULT)
                for name in ("arch", "python_version", "glibc"))
    return BuildRequest(sources=sources, out=output,
                        target=target_from(arch, python_version, glibc),
                        runtime_pins=not no_runtime_pins,
                        target_source="command line" if given else "default", **opts)


def _run(call: Callable[..., BuildResult], request: BuildRequest) -> BuildResult:
    """``call`` with one download bar per wheel on stderr."""
    columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
               TransferSpeedColumn())
    console = Console(stderr=True, soft_wrap=True)
    with Progress(*columns, console=console, transient=True) as bars:
        progress = _RichFetchProgress(bars)
        result = call(request, progress=progress, log=_LOG.info)
        if progress.cached:
            _LOG.info(f"{progress.cached} wheels came from the cache")
    return result


@click.command("build")
@click.argument("sources", nargs=-1, required=True, type=_DIR)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="wheels-v1",
              show_default=True, help="Package format to build.")
@click.option("--name", default=None, help="metadata.name (default: the first server's name).")
@click.option("--description", default=None, help="metadata.description.")
@upload_options
@click.option("--dataset-dir", type=_OUT, default=None,
              help="Where the .jsonl rows go (default: OUT's sibling OUT-data).")
@_build_options
def build_command(sources: tuple[Path, ...], upload: bool, workspace: str | None,
                  base_url: str | None, **opts: Any) -> ValidationRun:
    """Build a package from Gym server directories (resources_servers/<impl>/) or a Gym tree.

    wheels-v1 vendors the closure for the TARGET (--arch/--python/--glibc), never the
    host, plus nemo-gym==GYM_VERSION, ray[default] and openai at Gym's pins, so the package
    installs with no egress. The .jsonl rows move to the dataset directory. Prints the
    package's validate verdict on stdout (JSON by default); exit 0 valid, 1 invalid, 2 error.
    """
    result = _run(build, _request(sources, **opts))
    if upload and result.report.valid:  # a package envkit rejects is never uploaded
        upload_outputs(result.out, result.dataset_dir, workspace, base_url)
    return ValidationRun((result.report,))


@click.command("package")
@click.argument("package", type=_DIR)
@click.option("--to", "to_format", type=click.Choice(["wheels-v1"]), default="wheels-v1",
              show_default=True, help="Format to convert to.")
@_build_options
def package_command(package: Path, to_format: str, **opts: Any) -> ValidationRun:
    """native-v1 PACKAGE -> wheels-v1: vendor its servers' closure for the target."""
    request = _request((package,), fmt=to_format, **opts)
    return ValidationRun((_run(convert_package, request).report,))
