"""The EK400–EK409 rule records of the wheelhouse: code, severity, title, why, fix."""

from __future__ import annotations

from envkit.model.diagnostics import Severity
from envkit.validators._base import Rule

__all__ = [
    "EK400", "EK401", "EK402", "EK403", "EK404", "EK405", "EK406", "EK407", "EK408", "EK409",
    "RULES",
]

EK400 = Rule(
    "EK400", Severity.ERROR, "wheel filename invalid or wheel unreadable",
    "pip and uv refuse a file whose name is not `{name}-{version}(-{build})?-{py}-{abi}-{plat}"
    ".whl`, and a wheel without a readable `*.dist-info/METADATA` cannot be installed.",
    "Rebuild or re-download the wheel; do not rename wheel files by hand.",
)
EK401 = Rule(
    "EK401", Severity.ERROR, "wheel not installable on the target",
    "The cluster's installer matches filename tags against the image's CPython and platform; "
    "a wheel for another interpreter, architecture, a newer glibc, or musl fails with "
    "`has no wheels with a matching platform tag`.",
    "Rebuild the closure for the cluster: `envkit build --arch <arch> [--glibc 2_N]` (or "
    "`uv pip compile --python-platform <arch>-manylinux_2_28 --python-version 3.13`).",
)
EK402 = Rule(
    "EK402", Severity.ERROR, "one project vendored at two versions",
    "A wheelhouse with two versions of a project makes the offline install's resolution "
    "ambiguous and usually fails with `your requirements are unsatisfiable`.",
    "Clear `wheels/` and rebuild the closure; copies overwrite by filename only.",
)
EK403 = Rule(
    "EK403", Severity.ERROR, "requirement not satisfied by `wheels/`",
    "Without egress the cluster installs only what `wheels/` carries; with an index enabled "
    "a missing wheel is fetched at spin-up, which needs egress.",
    "Vendor the missing wheel (rebuild with `envkit build`), or run where the cluster has egress.",
    when=((Severity.ERROR, "with `--offline` (`offline = true`): the cluster has no egress, so "
                           "only what `wheels/` carries installs"),
          (Severity.WARNING, "otherwise: the missing wheel is fetched from the index at "
                             "spin-up, which needs egress")),
)
EK404 = Rule(
    "EK404", Severity.ERROR, "nemo-gym vendored at the wrong version, or missing offline",
    "Gym pins `nemo-gym==<image version>` into every server venv; another vendored version "
    "conflicts with that pin, and offline the pinned version must be in `wheels/`.",
    "Vendor exactly `nemo-gym==<--gym-version>` (or drop it when the cluster has egress).",
)
EK405 = Rule(
    "EK405", Severity.ERROR, "ray[default] / openai vendored off Gym's pins, or missing offline",
    "Gym pins the parent's `ray[default]` and `openai` into every server venv; a vendored "
    "version off those pins makes the venv build unsatisfiable, and offline they must be there.",
    "Vendor `ray[default]` and `openai` at nemo-gym's own pins (see `envkit build`).",
)
EK406 = Rule(
    "EK406", Severity.ERROR, "`Requires-Python` excludes the target interpreter",
    "The installer skips a wheel whose `Requires-Python` excludes the image's CPython, so "
    "the requirement it was vendored for stays unsatisfied.",
    "Vendor a release of the project that supports the image's Python (3.13).",
)
EK407 = Rule(
    "EK407", Severity.ERROR, "RECORD problem inside a wheel",
    "RECORD lists every file with its sha256 and size; a mismatch means the wheel was "
    "altered after it was built, and a `..` or absolute path writes outside site-packages. "
    "Sizes and paths are checked for every member; sha256 for METADATA and for wheels up to "
    "64 KiB by default, for every member with `--verify-hashes`.",
    "Re-download the wheel from its index; never patch wheels in place.",
)
EK408 = Rule(
    "EK408", Severity.WARNING, "wheel nothing requires (dead weight)",
    "No server requirement, runtime pin or adapter environment reaches this wheel on the "
    "target, so it is uploaded and never installed.",
    "Remove it, or add the requirement that needs it; rebuild the closure with `envkit build`.",
)

EK409 = Rule(
    "EK409", Severity.WARNING, "wheel installs a `.pth` file that runs code",
    "Python's `site` module executes every line starting with `import` in a `.pth` file of "
    "site-packages at each interpreter start: a vendored wheel that installs one runs its "
    "code in every process of the server venv (Gym's install steps, the server, its tests) "
    "before any of your code, without being imported.",
    "Vendor a build of the project without the `.pth` hook, or make sure you trust what it "
    "runs; `unzip -l` the wheel and read the named file.",
)

RULES = (EK400, EK401, EK402, EK403, EK404, EK405, EK406, EK407, EK408, EK409)
