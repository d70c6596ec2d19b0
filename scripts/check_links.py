"""Link check, offline: the built docs site, the rule URLs envkit prints, and every URL in
envkit's sources and the README.

1. Site: every relative ``href``/``src`` of every page resolves to a file of the site, and
   every ``#fragment`` to an ``id`` on the target page.
2. Rule URLs: for every code a diagnostic can carry, the URL envkit prints with
   ``docs-url`` set to ``--docs-url`` (default: the site itself, as a ``file://`` URL) is a
   page of the site. Without ``docs-url``, diagnostics carry no URL (tested in the suite).
3. Sources: every ``http(s)://`` URL in ``envkit/``, ``validators/``, ``converters/``,
   ``trainer/`` and ``README.md`` has a host known to be real (not fetched: no network here),
   is a placeholder (``127.0.0.1``, ``*.example.com``, a ``{template}``), or is the ``$id`` of
   one of envkit's JSON Schemas (an identifier, never fetched). Anything else fails: a link
   to a site envkit does not publish is how dead links start. The README's relative links
   resolve to files of the repository.

    python scripts/check_links.py site/             # after: mkdocs build --strict -d site/
"""

from __future__ import annotations

import argparse
import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parent.parent
SOURCE_DIRS = ("envkit", "validators", "converters", "trainer")
KNOWN_HOSTS = frozenset({
    "github.com", "pypi.org", "json-schema.org", "json.schemastore.org", "arxiv.org",
    "hub.primeintellect.ai", "download.pytorch.org",
})
"""Hosts of real projects that envkit's texts name; offline, they are not fetched."""
PLACEHOLDER_HOSTS = re.compile(r"^(127\.0\.0\.1|localhost|x|\.\.\.|.*\.example\.com|.*\.invalid)$")
SCHEMA_ID = re.compile(r"^https://envkit\.dev/schemas/[a-z-]+\.schema\.json$")
URL = re.compile(r"https?://[^\s\"'`)<>\\]+")
HOST = re.compile(r"https?://([^/:?#]*)")


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for key, value in attrs:
            if key in ("href", "src") and value:
                self.links.append(value)
            elif key in ("id", "name") and value:
                self.ids.add(value)


def _parse(page: Path) -> _Links:
    parser = _Links()
    parser.feed(page.read_text("utf-8"))
    return parser


def check_site(site: Path) -> list[str]:
    """Relative links and anchors of every page of ``site`` that do not resolve."""
    problems = []
    ids = {page: _parse(page).ids for page in site.rglob("*.html")}
    for page in sorted(ids):
        for link in _parse(page).links:
            parts = urlsplit(link)
            if parts.scheme or link.startswith("//"):
                continue  # external: not fetched offline
            base = site if parts.path.startswith("/") else page.parent  # root-relative
            target = (base / unquote(parts.path.lstrip("/"))).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            rel = page.relative_to(site)
            if not target.is_file():
                problems.append(f"{rel}: {link}: no such file")
            elif parts.fragment and target.suffix == ".html" and parts.fragment not in ids.get(
                    target, set()):
                problems.append(f"{rel}: {link}: no #{parts.fragment} on that page")
    return problems


def check_rule_urls(site: Path, docs_url: str) -> list[str]:
    """Rule URLs envkit prints (with ``docs-url = docs_url``) that are not pages of ``site``."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from gen_rule_docs import all_rules

    from envkit.model.diagnostics import rule_url

    problems = []
    for rule in all_rules():
        url = rule_url(rule.code, docs_url) or ""
        if not url.startswith(docs_url.rstrip("/") + "/"):
            problems.append(f"{rule.code}: {url!r} is not under {docs_url}")
            continue
        page = site / url.removeprefix(docs_url.rstrip("/") + "/")
        if not page.is_file():
            problems.append(f"{rule.code}: {url} has no page in the site ({page})")
    return problems


def check_source_urls(root: Path = ROOT) -> list[str]:
    """URLs in envkit's sources and the README whose host nobody vouches for."""
    files = [p for d in SOURCE_DIRS for p in sorted((root / d).rglob("*"))
             if p.is_file() and p.suffix in (".py", ".json", ".yaml", ".md", ".tmpl", ".toml")]
    problems = []
    for path in [*files, root / "README.md"]:
        for lineno, line in enumerate(path.read_text("utf-8").splitlines(), 1):
            for url in URL.findall(line):
                host = HOST.match(url).group(1)  # type: ignore[union-attr]
                if host in KNOWN_HOSTS or PLACEHOLDER_HOSTS.match(host) or "{" in url \
                        or SCHEMA_ID.match(url):
                    continue
                problems.append(f"{path.relative_to(root)}:{lineno}: {url}: unknown host")
    return problems + check_readme_links(root)


def check_readme_links(root: Path = ROOT) -> list[str]:
    """The README's relative links (``docs/ci.md#configuration``) name files that exist."""
    text = (root / "README.md").read_text("utf-8")
    problems = []
    for link in re.findall(r"\]\(([^)\s]+)\)", text):
        parts = urlsplit(link)
        if parts.scheme or not parts.path:
            continue
        if not (root / parts.path).exists():
            problems.append(f"README.md: {link}: no such file")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", type=Path, help="The built site (mkdocs build -d SITE).")
    parser.add_argument("--docs-url", help="The docs-url diagnostics use (default: SITE).")
    args = parser.parse_args(argv)
    site = args.site.resolve()
    docs_url = args.docs_url or site.as_uri()
    problems = check_site(site) + check_rule_urls(site, docs_url) + check_source_urls()
    for problem in problems:
        sys.stderr.write(f"{problem}\n")
    pages = sum(1 for _ in site.rglob("*.html"))
    sys.stderr.write(f"check_links: {pages} pages, {len(problems)} problem(s)\n")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
