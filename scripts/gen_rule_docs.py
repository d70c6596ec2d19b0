"""Write the rule reference pages from the rule registry: docs/rules.md and docs/rules/EKnnn.md.

Every page comes from ``envkit.validators.KNOWN_RULES`` (the rules and the ``EK000`` safety net),
the records ``envkit rule CODE`` prints, so the site, the terminal and the SARIF rule texts never
disagree. ``mkdocs build --strict`` turns docs/ into the site; a diagnostic links to
``<docs-url>/rules/<CODE>.html`` when the ``docs-url`` setting names where it is served.

    python scripts/gen_rule_docs.py            # rewrite the pages
    python scripts/gen_rule_docs.py --check    # exit 1 when a committed page is stale
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from envkit.validators import KNOWN_RULES, Rule

DOCS = Path(__file__).resolve().parent.parent / "docs"

FAMILIES = {
    "EK0": "internal",
    "EK1": "the manifest (nemo-environment.yaml)",
    "EK2": "the package layout",
    "EK3": "the Gym configs",
    "EK4": "wheels and their closure",
    "EK5": "the dataset rows",
    "EK6": "the GRPO job",
    "EK7": "spin-up (envkit smoke)",
    "EK8": "will it train (envkit probe)",
}

def all_rules() -> list[Rule]:
    return sorted(KNOWN_RULES.values(), key=lambda r: r.code)


def rule_page(rule: Rule) -> str:
    family = rule.code[:3]
    return (
        f"# {rule.code}: {rule.title}\n\n"
        f"Severity: **{rule.severity.value}** · Family: "
        f"[{family}: {FAMILIES[family]}](../rules.md#{family.lower()})\n\n"
        f"## What it does\n\nReports {rule.title}.\n\n"
        f"## Why is this bad?\n\n{rule.why}\n\n"
        f"## How to fix\n\n{rule.fix}\n\n"
        f"{_example(rule.code)}"
        f"`envkit rule {rule.code}` prints this page in the terminal; "
        f"`--select {rule.code}` / `--ignore {rule.code}` choose it, as in ruff.\n"
    )


def _example(code: str) -> str:
    """The page's bad/good example from the fixtures (``scripts/rule_examples.py``)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from rule_examples import example

    text = example(code)
    return f"{text}\n" if text else ""


def index_page(rules: list[Rule]) -> str:
    out = [
        "# Rules\n",
        "Every diagnostic envkit prints has one of these codes, a location and a one-line fix",
        "hint. Codes are never renumbered. `envkit rule CODE` prints a rule's page in the",
        "terminal, `envkit rule EK1` a family, `envkit rule --all --output-format json` all of",
        "them. This reference is generated from the rule registry by",
        "`scripts/gen_rule_docs.py`; set `docs-url` in `[tool.envkit]` to where it is served",
        "and every diagnostic links to its page.\n",
    ]
    for family, name in FAMILIES.items():
        members = [r for r in rules if r.code.startswith(family)]
        if not members:
            continue
        out += [f'## {family}: {name} {{#{family.lower()}}}\n', "| code | severity | what |",
                "|---|---|---|"]
        out += [f"| [{r.code}](rules/{r.code}.md) | {r.severity.value} | {_cell(r.title)} |"
                for r in members]
        out.append("")
    return "\n".join(out)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def pages() -> dict[Path, str]:
    rules = all_rules()
    out = {DOCS / "rules.md": index_page(rules)}
    out.update({DOCS / "rules" / f"{r.code}.md": rule_page(r) for r in rules})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="Fail on stale pages.")
    args = parser.parse_args(argv)
    wanted = pages()
    stale = sorted(set((DOCS / "rules").glob("EK*.md")) - set(wanted))
    differ = [p for p, text in wanted.items()
              if not p.is_file() or p.read_text("utf-8") != text]
    if args.check:
        for path in [*differ, *stale]:
            sys.stderr.write(f"stale: {path.relative_to(DOCS.parent)}\n")
        if differ or stale:
            sys.stderr.write("run: python scripts/gen_rule_docs.py\n")
        return 1 if differ or stale else 0
    for path in stale:
        path.unlink()
    for path in differ:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(wanted[path], "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
