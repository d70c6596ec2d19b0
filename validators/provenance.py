"""EK209: a package whose files no longer match the provenance record it ships.

``envkit build`` and ``envkit convert`` write ``provenance.json`` with the package digest and
every file's SHA-256 (``envkit.model.provenance``). A file edited, added or removed since then
means the record no longer says what the package is, and a job would run on something no
record describes. ``load_package`` hashed the files once (only when a record is present); this
check compares digests and never touches the disk.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from envkit.model.diagnostics import Diagnostic, Severity
from envkit.model.package import PROVENANCE_NAME, display_path
from envkit.validators._base import Inputs, Rule

if TYPE_CHECKING:
    from envkit.model.provenance import Provenance
    from envkit.model.tree import Tree

__all__ = ["CHECKS", "RULES"]

_SHOWN = 10
"""Changed files named one by one; the rest are counted in one more line."""

EK209 = Rule(
    "EK209", Severity.ERROR, "package files no longer match its `provenance.json`",
    "`envkit build` and `envkit convert` record the package's digest and every file's "
    "SHA-256 in `provenance.json`; `envkit submit` attaches that record to the job. A file "
    "changed, added or removed since then makes the record describe a package that no longer "
    "exists, so a run could not be traced back to what it ran.",
    "Rebuild the package (`envkit build` / `envkit convert`) so the record is written anew, "
    "or restore the file; delete `provenance.json` to ship the package without a record.",
)

RULES = (EK209,)


def check_provenance(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK209: the record is readable and its digest is the package's digest now."""
    pkg = inputs.package
    doc = pkg.provenance if pkg is not None else None
    if doc is None:
        return
    if doc.record is None:
        yield EK209.at(PROVENANCE_NAME, f"`{PROVENANCE_NAME}` {doc.error}")
        return
    if doc.actual is None or doc.record.package_sha256 == doc.actual.digest:
        return  # unreadable files are EK207's
    yield from _differences(doc.record, doc.actual)


def _differences(record: Provenance, actual: Tree) -> Iterator[Diagnostic]:
    now = {f.path: f.sha256 for f in actual.files}
    before = dict(record.package_files)
    changed = sorted(p for p in now.keys() | before.keys() if now.get(p) != before.get(p))
    if not before or not changed:  # no per-file list, or only the digest itself was edited
        yield EK209.at(PROVENANCE_NAME, f"the package digest is {actual.digest[:16]}, "
                       f"`{PROVENANCE_NAME}` records {str(record.package_sha256)[:16]}")
        return
    for path in changed[:_SHOWN]:
        what = ("was added" if path not in before else "was removed" if path not in now
                else "changed")
        shown = display_path(path)
        yield EK209.at(shown, f"`{shown}` {what} since `{PROVENANCE_NAME}` was written")
    if len(changed) > _SHOWN:
        yield EK209.at(PROVENANCE_NAME, f"{len(changed) - _SHOWN} more files differ from "
                       f"`{PROVENANCE_NAME}`")


CHECKS = (
    check_provenance,  # EK209
)
