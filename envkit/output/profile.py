"""Render a profile for people (a summary and the pass-rate histogram) and for machines (JSON,
``envkit schema profile``)."""

from __future__ import annotations

from envkit.output.human import dash
from envkit.output.render import renders
from envkit.output.stdout import dump, echo
from envkit.profile.report import ProfileReport

__all__ = ["histogram", "render_profile"]

_BINS = 5


@renders(ProfileReport, "profile")
def render_profile(report: ProfileReport, fmt: str) -> int:
    """Print ``report`` in ``fmt`` on stdout; its exit status (0 every reply scored, else 1)."""
    if fmt == "json":
        echo(dump(report.to_dict()))
    else:
        echo("\n".join(_lines(report)))
    return report.exit_code


def histogram(rates: list[float | None], bins: int = _BINS) -> list[int]:
    """Rows per pass-rate bin over [0, 1] (1.0 in the last bin; unscored rows left out).

    >>> histogram([0.0, 0.1, 0.5, 1.0, None], bins=2)
    [2, 2]
    """
    counts = [0] * bins
    for rate in rates:
        if rate is not None:
            counts[min(int(rate * bins), bins - 1)] += 1
    return counts


def _lines(report: ProfileReport) -> list[str]:
    data = report.to_dict()
    job = data["job"]
    out = [f"profiled {data['rows_profiled']} rows x G={job['group_size']} "
           f"(temperature {job['temperature']}, max_new_tokens {job['max_new_tokens']}, "
           f"seed {job['seed']}; job: {job['source']}) on {data['model']} ({data['backend']})",
           f"rollouts={data['rollouts']} failed={data['failed']} "
           f"mean_reward={dash(data['mean_reward'], '.3f')}"
           f" ready_s={data['ready_s']:.1f} rollout_s={data['rollout_s']:.1f}"]
    if data["aborted"]:
        out.append(f"aborted: {data['aborted']}")
    counts = histogram([r.pass_rate for r in report.rows])
    out.append(f"pass rate (reward >= {data['pass_threshold']:g}), rows per bin:")
    for i, n in enumerate(counts):
        lo, hi = i / _BINS, (i + 1) / _BINS
        out.append(f"  [{lo:.1f}, {hi:.1f}{']' if i == _BINS - 1 else ')'}  {n}")
    out.append(f"zero-variance share at G={job['group_size']}: "
               f"{dash(data['zero_variance_share'], '.0%')}")
    keep = data["keep"]
    if keep is not None:
        rows = ", ".join(f"{split} {c['kept']}/{c['profiled']}"
                         for split, c in keep["rows"].items())
        band = keep["band"]
        out.append(f"kept (pass rate in [{band[0]:g}, {band[1]:g}]): {rows}; zero-variance share "
                   f"{dash(data['zero_variance_share'], '.0%')} -> "
                   f"{dash(keep['zero_variance_share_after'], '.0%')}")
        if keep["dataset"]:
            out.append(f"dataset: {keep['dataset']}")
        elif report.exit_code:
            out.append("dataset: not written (a rollout failed: its rows' pass rates are "
                       "incomplete)")
    if data["profile"]:
        out.append(f"profile: {data['profile']}")
    return out
