"""EK2xx: what the package tree may hold, independent of any config's content.

Facts: the product spec (section 2) and the "GRPO and Reward Environments" guide ("Rules that
apply to every format", the troubleshooting table). Every check reads ``Package.entries`` /
``Package.servers`` only; nothing is opened.
"""

from __future__ import annotations

from collections.abc import Iterator

from envkit.model.diagnostics import Diagnostic, Severity
from envkit.model.gym_data import gym_data
from envkit.model.package import INSTALL_MARKERS, MAX_ENTRIES, WHEEL_FORMATS, display_path
from envkit.validators._base import Inputs, Rule

__all__ = ["CHECKS", "RULES"]

EK200 = Rule(
    "EK200", Severity.ERROR, "`.jsonl` file inside the package",
    "Schema validation rejects any `.jsonl` in the environment FileSet ('Prompt JSONL must not "
    "live in the environment package'); prompt rows belong in the dataset FileSet.",
    "Move the rows to the dataset directory (`training.jsonl` / `validation.jsonl`) and delete "
    "the file from the package.",
)
EK201 = Rule(
    "EK201", Severity.ERROR, "`wheels/` missing or empty for a wheels format",
    "wheels-v1 and adapter-wheels-v1 install their dependencies from `wheels/`: the platform "
    "rejects the package ('must carry a non-empty wheels/ directory').",
    "Vendor the dependency closure into `wheels/` (`envkit build`), or use format native-v1.",
)
EK202 = Rule(
    "EK202", Severity.ERROR, "non-`.whl` entry in `wheels/`",
    "`wheels/` is offered to pip as `--find-links`; the platform accepts only `.whl` files "
    "there (no sdists, subdirectories or symlinks).",
    "Remove it from `wheels/`; build sdists into wheels first.",
)
EK203 = Rule(
    "EK203", Severity.ERROR, "`pyproject.toml` at the package root",
    "A root `pyproject.toml` switches Gym to its editable-install branch, which drops the "
    "automatic `nemo-gym==<image version>` pin.",
    "Delete the root `pyproject.toml`; each server declares its dependencies in its own "
    "directory.",
)
EK204 = Rule(
    "EK204", Severity.ERROR, "symlink pointing outside the package",
    "The upload does not carry the link's target, so the file is missing (or different) on "
    "the cluster.",
    "Replace the symlink with a copy of what it points at, or remove it.",
)
EK205 = Rule(
    "EK205", Severity.ERROR, "server directory with neither or both of `requirements.txt` / "
    "`pyproject.toml`",
    "Gym sets a server venv up from exactly one install marker; without one it fails 'Missing "
    "pyproject.toml or requirements.txt for uv venv setup', with both it is ambiguous.",
    "Keep exactly one install marker: add `requirements.txt` (or delete one of the two).",
)
EK206 = Rule(
    "EK206", Severity.WARNING, "native-v1 package ships `wheels/`",
    "native-v1 resolves dependencies from an index at spin-up and ignores `wheels/`: the "
    "upload carries dead weight, and the author probably meant wheels-v1.",
    "Delete `wheels/`, or set `format: wheels-v1` to have them installed.",
)
EK207 = Rule(
    "EK207", Severity.ERROR, "entry that cannot be read",
    "The validator could not check it and the upload could not carry it: a permission error, "
    "or a FIFO, socket or device node that is not a file.",
    "Make the entry a readable regular file or directory, or remove it from the package.",
)
EK208 = Rule(
    "EK208", Severity.ERROR, "package too large to walk",
    f"A package with more than {MAX_ENTRIES:,} entries is not an environment package (a venv, "
    "a dataset or a home directory was probably included); the rest was not checked.",
    "Point envkit at the package directory itself and keep build outputs out of it.",
)

RULES = (EK200, EK201, EK202, EK203, EK204, EK205, EK206, EK207, EK208)


def check_no_jsonl(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK200: prompt rows never ship inside the environment package."""
    pkg = inputs.package
    if pkg is None:
        return
    found = [p for p, e in pkg.entries.items() if p[-6:].lower() == ".jsonl" and e.kind != "dir"]
    for path in sorted(found):
        yield EK200.at(display_path(path), f"`{display_path(path)}` is prompt data inside "
                       "the environment package")


def check_wheels_dir(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK201 (missing/empty) and EK202 (anything but a regular `.whl`) for wheels formats."""
    pkg = inputs.package
    if pkg is None or pkg.format not in WHEEL_FORMATS:
        return
    entry = pkg.entries.get("wheels")
    if entry is None or entry.kind != "dir":
        what = "missing" if entry is None else f"a {entry.kind}, not a directory"
        yield EK201.at("wheels", f"`wheels/` is {what} ({pkg.format})")
        return
    children = [e for e in pkg.files_under("wheels") if e.path.count("/") == 1]
    if not children:
        yield EK201.at("wheels", f"`wheels/` is empty ({pkg.format})")
    for child in sorted(children, key=lambda e: e.path):
        if child.kind != "file" or not child.path.endswith(".whl"):
            what = "file" if child.kind == "file" else child.kind
            yield EK202.at(display_path(child.path),
                           f"`{display_path(child.path)}` is a {what}, not a `.whl` file")


def check_root_pyproject(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK203: a root pyproject flips Gym into editable mode and drops the nemo-gym pin."""
    pkg = inputs.package
    if pkg is not None and "pyproject.toml" in pkg.entries:
        yield EK203.at("pyproject.toml", "`pyproject.toml` at the package root")


def check_symlinks_inside(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK204: links are never followed here; ``FileEntry.link_inside`` was resolved once."""
    pkg = inputs.package
    if pkg is None:
        return
    links = [(p, e) for p, e in pkg.entries.items() if e.kind == "symlink" and not e.link_inside]
    for path, entry in sorted(links):
        target = display_path(entry.link_target or "")
        yield EK204.at(display_path(path), f"symlink `{display_path(path)}` points outside "
                       f"the package ({target!r})")


def check_server_markers(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK205: exactly one install marker per server dir (built-in names without one: EK309)."""
    pkg = inputs.package
    for server in pkg.servers if pkg else ():
        present = [m for m in INSTALL_MARKERS if m in server.files]
        where = display_path(server.path)
        if len(present) == len(INSTALL_MARKERS):
            yield EK205.at(where, f"`{where}/` has both `requirements.txt` and `pyproject.toml`",
                           hint="Keep one install marker: delete `pyproject.toml` or "
                           "`requirements.txt`.")
        # a built-in name without markers is a config-only dir, or EK309's shadowing
        elif not present and not gym_data().is_builtin(server.server_type, server.name):
            yield EK205.at(where, f"`{where}/` has no `requirements.txt` or `pyproject.toml`, so "
                           "Gym cannot set up its venv", hint=f"Add `{where}/requirements.txt` "
                           "listing the server's dependencies.")


def check_native_wheels(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK206: native-v1 never installs `wheels/`."""
    pkg = inputs.package
    if pkg is not None and pkg.format == "native-v1" and "wheels" in pkg.entries:
        yield EK206.at("wheels", "`wheels/` is ignored by native-v1 packages")


def check_readable(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK207: what ``load_package`` could not read, and special files it refused to open."""
    pkg = inputs.package
    if pkg is None:
        return
    for path, reason in sorted(set(pkg.read_errors)):
        shown = display_path(path) or "."
        yield EK207.at(display_path(path), f"`{shown}` cannot be read: {reason}")
    errored = {p for p, _ in pkg.read_errors}
    for path in sorted(p for p, e in pkg.entries.items() if e.kind == "other" and p not in errored):
        yield EK207.at(display_path(path), f"`{display_path(path)}` is not a regular file, "
                       "directory or symlink (FIFO, socket or device)")


def check_walk_complete(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK208: the walk stopped at the entry cap, so the other checks saw only part."""
    pkg = inputs.package
    if pkg is not None and pkg.truncated:
        yield EK208.at("", f"the package has more than {len(pkg.entries):,} entries; "
                       "stopped walking it")


CHECKS = (
    check_no_jsonl,  # EK200
    check_wheels_dir,  # EK201, EK202
    check_root_pyproject,  # EK203
    check_symlinks_inside,  # EK204
    check_server_markers,  # EK205
    check_native_wheels,  # EK206
    check_readable,  # EK207
    check_walk_complete,  # EK208
)
