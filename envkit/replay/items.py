"""What a stored answer keeps of each package of a tree: its result and its own inputs, so a
later run validates again only the packages whose own inputs changed (``envkit.replay``)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from envkit.model.realpaths import real_path
from envkit.replay.store import LISTED, LSTAT, ItemRecord, Recalled

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = ["item_records"]

Read = tuple[int, str | bytes]


def item_records(items: Mapping[str, tuple[list[Read], bytes]],
                 reused: Mapping[str, Recalled], outside: Mapping[Read, None],
                 foreign: Mapping[Read, None]) -> tuple[ItemRecord, ...]:
    """The records of the items run (``items``: what each read under its own path, its pickled
    result) and reused; none when one item's real path is inside another's or is another's:
    then a settings file of one is the other's input too, read once for both
    (``envkit.check.settings`` caches the lookup).

    An item's own inputs are what it read under its own path and no other item read: a change
    to one of them runs that item again. What was read before the items under an item's path
    (``outside``: is it a package, is it a workspace) decides only how that item is run, and
    is read again by every run; anything else read before or after the items, or by an item
    outside its own path (``foreign``), is the whole run's: a change there runs every item.
    """
    directories: dict[str, str] = {}
    real_of = {key: real_path(key, directories) for key in items}
    reals = set(real_of.values())
    reals.update(recalled.real for recalled in reused.values())
    if len(reals) != len(items) + len(reused):
        return ()  # one package named twice, by two spellings: one settings lookup
    for real in reals:
        head, parent = real, os.path.dirname(real)
        while parent != head:  # up to the root of the file system, itself included
            if parent in reals:
                return ()
            head, parent = parent, os.path.dirname(parent)
    roots = {*items, *reused}
    shared = dict(foreign)
    shared.update((read, None) for read in outside if not _under(read[1], roots))
    dirs = {os.path.dirname(path) for how, path in shared if how == LSTAT}

    def kept(own: Iterable[Read]) -> tuple[Read, ...]:
        return tuple(read for read in own if read not in shared
                     and not (read[0] == LISTED and read[1] in dirs))

    records = [(key, blob, kept(own), real_of[key]) for key, (own, blob) in items.items()]
    records += [(key, recalled.result, kept(recalled.own), recalled.real)
                for key, recalled in reused.items()]
    return tuple(records)


def _under(path: str | bytes, roots: set[str]) -> bool:
    """``path`` is one of ``roots`` or below one (as spelled: no link is followed)."""
    if not isinstance(path, str):
        return False
    head = path
    while head not in roots:
        parent = os.path.dirname(head)
        if parent == head or not parent:
            return False
        head = parent
    return True
