"""What ``envkit validate`` does with its options, without click.

Why apart from the click command (``envkit.cli.validate``): the command parses, this builds the
request and runs it, so neither needs the other's imports to be read or tested.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["VALIDATE_FORMATS", "validate"]

VALIDATE_FORMATS = ("human", "json", "github", "sarif")
"""``envkit validate --output-format`` choices."""


def _codes(values: tuple[str, ...]) -> tuple[str, ...] | None:
    """Flags as given (checked against the rules later, with the config's); ``None``: unset."""
    return tuple(values) if values else None


def validate(paths: tuple[Path, ...], dataset: Path | None, job: Path | None,
             arch: str | None, python_version: str | None, glibc: str | None,
             gym_version: str | None, offline: bool | None, strict: bool | None,
             verify_hashes: bool, select: tuple[str, ...], ignore: tuple[str, ...],
             extend_select: tuple[str, ...], extend_ignore: tuple[str, ...],
             exclude: tuple[str, ...], isolated: bool, ignore_unowned_files: bool,
             show_settings: bool, smoke: bool, probe: bool, no_cache: bool = False) -> object:
    """Run the gate (or show settings, or smoke, or probe) for the parsed options."""
    from pathlib import Path

    from envkit.validate.gate import GateRequest, discover_for, run_gate, shown_settings
    from envkit.validate.settings import Settings

    flags = Settings(select=_codes(select), ignore=_codes(ignore),
                     extend_select=extend_select, extend_ignore=extend_ignore, arch=arch,
                     glibc=glibc, python=python_version, gym_version=gym_version,
                     offline=offline, strict=strict, dataset=dataset, job=job)
    request = GateRequest(paths=paths, flags=flags, exclude=exclude,
                          verify_hashes=verify_hashes, no_cache=no_cache, isolated=isolated,
                          ignore_unowned_files=ignore_unowned_files)
    if show_settings:
        from envkit.output.results import SettingsView

        packages = discover_for(request).packages
        return SettingsView(tuple((str(p), shown_settings(p, request))
                                  for p in packages or (Path(),)))
    if probe:  # the probe validates first (same settings), brings the package up once
        from envkit.cli.probe import probe_from_validate

        return probe_from_validate(request)
    if smoke:  # the smoke run validates first (same settings) and reports both
        from envkit.cli.smoke import smoke_from_validate

        return smoke_from_validate(request)
    return run_gate(request)
