"""FileSets named by content: find or create, compare, list sizes, mark complete.

A FileSet's name is ``<stem>-<first 16 hex of the tree digest>``; ``custom_fields`` carry the
full digest and ``envkit_complete``, set only after the last file is in. So a second submit
finds it complete and sends nothing, and an interrupted upload is finished by the next run.
The digest is envkit's own: the Files service lists path and size only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from envkit.model.tree import hash_files, walk_files
from envkit.platform.errors import PlatformError
from envkit.supply.cache import cache_root
from envkit.supply.treestamps import rescan

if TYPE_CHECKING:
    from pathlib import Path

    from envkit.model.tree import Tree
    from envkit.platform.http import PlatformClient

__all__ = ["DIGEST_FIELD", "RemoteFileSet", "ensure_fileset", "fileset_name", "remote_sizes",
           "scan_tree", "set_complete"]

DIGEST_FIELD = "envkit_tree_sha256"
COMPLETE_FIELD = "envkit_complete"
_NAME_OK = re.compile(r"^[a-z](?!.*--)[a-z0-9\-@.+_]{1,62}(?<!-)$")


@dataclass(frozen=True, slots=True)
class RemoteFileSet:
    workspace: str
    name: str
    complete: bool
    created: bool  # this run created it

    @property
    def ref(self) -> str:
        return f"{self.workspace}/{self.name}"


def scan_tree(root: Path, purpose: str) -> Tree:
    """Hash every regular file under ``root``, reusing the last scan's hashes of files whose
    identity is unchanged (``envkit.supply.treestamps``).

    :raises PlatformError: a file cannot be read (one line, nothing uploaded yet).
    """
    try:
        return rescan(root, purpose, lambda stamps: hash_files(root, walk_files(root), purpose,
                                                               stamps),
                      cache_root() / "tree-stamps")
    except OSError as exc:
        msg = f"cannot read {exc.filename or root}: {exc.strerror or exc}"
        raise PlatformError(msg) from None


def fileset_name(stem: str, digest: str) -> str:
    """``stem`` folded into the platform's name rule, then the digest prefix (≤ 63 chars)."""
    clean = re.sub(r"[^a-z0-9.+_-]+", "-", stem.lower())
    clean = re.sub(r"-{2,}", "-", clean).strip("-._+") or "env"
    if not clean[0].isalpha():
        clean = f"e-{clean}"
    name = f"{clean[:46].rstrip('-')}-{digest[:16]}"
    assert _NAME_OK.match(name), name
    return name


def _base(workspace: str) -> str:
    return f"/apis/files/v2/workspaces/{quote(workspace, safe='')}/filesets"


def _check_same(body: dict[str, Any], purpose: str, tree: Tree, ref: str) -> bool:
    """Is the existing FileSet ours for this content? Returns its complete flag.

    :raises PlatformError: another purpose or other content under the same name.
    """
    fields = body.get("custom_fields") or {}
    if body.get("purpose") != purpose:
        msg = (f"FileSet {ref} already exists with purpose {body.get('purpose')!r}, not "
               f"{purpose!r}: delete it or choose another workspace")
        raise PlatformError(msg, status=409)
    if fields.get(DIGEST_FIELD) != tree.digest:
        msg = (f"FileSet {ref} already exists with other content (digest "
               f"{str(fields.get(DIGEST_FIELD))[:16]!r}, local {tree.digest[:16]!r}): "
               "delete it or choose another workspace")
        raise PlatformError(msg, status=409)
    return bool(fields.get(COMPLETE_FIELD))


def ensure_fileset(client: PlatformClient, workspace: str, name: str, purpose: str, tree: Tree,
                   metadata: dict[str, Any] | None = None) -> RemoteFileSet:
    """Find the content-addressed FileSet or create it (marked incomplete)."""
    ref = f"{workspace}/{name}"
    url = f"{_base(workspace)}/{quote(name, safe='')}"
    found = client.request("GET", url, ok=(200, 404))
    if found.status_code == 200:
        return RemoteFileSet(workspace, name, _check_same(found.json(), purpose, tree, ref), False)
    body = {
        "name": name, "purpose": purpose,
        "description": f"envkit upload of {tree.root.name} ({len(tree.files)} files)"[:255],
        "custom_fields": {DIGEST_FIELD: tree.digest, COMPLETE_FIELD: False},
    }
    if metadata:
        body["metadata"] = metadata
    created = client.request("POST", _base(workspace), json=body, ok=(200, 201, 409))
    if created.status_code == 409:  # a concurrent or retried create won the race: same checks
        again = client.json("GET", url)
        return RemoteFileSet(workspace, name, _check_same(again, purpose, tree, ref), False)
    return RemoteFileSet(workspace, name, False, True)


def remote_sizes(client: PlatformClient, fileset: RemoteFileSet) -> dict[str, int]:
    url = f"{_base(fileset.workspace)}/{quote(fileset.name, safe='')}/files"
    data = client.json("GET", url).get("data", [])
    return {item["path"]: int(item.get("size") or 0) for item in data}


def set_complete(client: PlatformClient, fileset: RemoteFileSet, tree: Tree,
                 complete: bool) -> None:
    url = f"{_base(fileset.workspace)}/{quote(fileset.name, safe='')}"
    fields = {DIGEST_FIELD: tree.digest, COMPLETE_FIELD: complete}
    client.request("PATCH", url, json={"custom_fields": fields})


def file_url(fileset: RemoteFileSet, path: str) -> str:
    return f"{_base(fileset.workspace)}/{quote(fileset.name, safe='')}/-/{quote(path)}"
