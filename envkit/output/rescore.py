"""Render ``envkit rescore``'s report: per row the recorded and the new reward, and a summary.

People see the changed, refused and failed rows (an unchanged row is the expected case,
counted in the summary); JSON lists every row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from envkit.output.human import dash
from envkit.output.render import renders
from envkit.output.stdout import dump, echo
from envkit.rescore import RescoreReport

if TYPE_CHECKING:
    from envkit.rescore import RowScore

__all__ = ["render_rescore"]


def _row(row: RowScore) -> str:
    where = f"  line {row.line} [{row.agent}]"
    if row.status == "rescored":
        return f"{where}: {dash(row.old_reward, 'g')} -> {dash(row.new_reward, 'g')}"
    return f"{where}: {row.status}: {row.reason}"


@renders(RescoreReport, "rescore")
def render_rescore(report: RescoreReport, fmt: str) -> int:
    """Print ``report`` in ``fmt`` on stdout; its exit status (1: a row refused or failed)."""
    if fmt == "json":
        echo(dump(report.to_json()))
        return report.exit_code
    s = report.summary()
    since = {True: " (the package changed since the run)",
             False: " (the package is unchanged since the run)", None: ""}[report.package_changed]
    lines = [f"Re-scored {s['rescored']} of {s['rows']} rows of {report.rollouts} with "
             f"{report.package}{since}:",
             f"  {s['changed']} changed ({s['increased']} up, {s['decreased']} down), "
             f"{s['refused']} refused, {s['failed']} failed"]
    if s["mean_old"] is not None:
        lines.append(f"  mean reward {s['mean_old']:.4g} -> {s['mean_new']:.4g}")
    shown = [r for r in report.rows if r.changed or r.status != "rescored"]
    lines += [_row(r) for r in shown]
    if report.output:
        lines.append(f"Wrote the re-scored rows to {report.output}")
    echo("\n".join(lines))
    return report.exit_code
