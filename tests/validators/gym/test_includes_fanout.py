"""EK316 over configs that list the same paths: each one's problems, at each one's lines."""

from __future__ import annotations

from typing import TYPE_CHECKING

from support.gym_configs import POLICY, ek3, make_pkg

if TYPE_CHECKING:
    from pathlib import Path

LISTED = ["configs/policy_model.yaml", "configs/a.yaml", "configs/b.yaml"]


def _lists(*entries: str) -> str:
    return "config_paths:\n" + "".join(f"  - {e}\n" for e in entries)


def test_a_path_judged_fine_before_does_not_hide_a_new_bad_one(tmp_path: Path) -> None:
    pkg = make_pkg(tmp_path, {
        "configs/policy_model.yaml": POLICY,
        "configs/a.yaml": _lists(*LISTED),  # judged first, all fine
        "configs/b.yaml": _lists(*LISTED, "configs/nope.yaml", "7"),  # the same, then new ones
    })
    found = [(d.path, d.line) for d in ek3(pkg) if d.code == "EK316"]
    assert found == [("configs/b.yaml", 5), ("configs/b.yaml", 6)]


def test_a_bad_path_is_reported_in_every_config_that_lists_it(tmp_path: Path) -> None:
    entries = ("configs/a.yaml", "../out.yaml", "configs/b.yaml")
    pkg = make_pkg(tmp_path, {
        "configs/policy_model.yaml": POLICY,
        "configs/a.yaml": _lists(*entries),
        "configs/b.yaml": "x: 1\n" + _lists(*entries),
    })
    found = [(d.path, d.line) for d in ek3(pkg) if d.code == "EK316"]
    assert sorted(found) == [("configs/a.yaml", 3), ("configs/b.yaml", 4)]


def test_entries_that_are_not_strings_after_judged_ones(tmp_path: Path) -> None:
    pkg = make_pkg(tmp_path, {
        "configs/policy_model.yaml": POLICY,
        "configs/a.yaml": _lists("configs/b.yaml"),
        "configs/b.yaml": _lists("configs/a.yaml") + "  - [x]\n  - {k: v}\n",
    })
    found = [(d.path, d.line) for d in ek3(pkg) if d.code == "EK316"]
    assert found == [("configs/b.yaml", 3), ("configs/b.yaml", 4)]
