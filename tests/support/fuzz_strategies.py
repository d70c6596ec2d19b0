"""Hypothesis strategies for the input families ``envkit validate`` reads: YAML (scalars, tags,
anchors and aliases, nesting), zip archives with their RECORD and METADATA, file trees, JSONL
rows and job JSON. Each mixes well-formed pieces with the hostile ones a fuzzer found (huge
and hex integers, bad timestamps, recursive aliases, lying zip sizes, shake hashes, ...)."""

from __future__ import annotations

import json
import string

from hypothesis import strategies as st

from support.zipcraft import ENCRYPTED, UTF8, Member, build_zip, raw_deflate

__all__ = [
    "job_texts",
    "jsonl_lines",
    "tree_ops",
    "wheel_archives",
    "yaml_documents",
    "yaml_values",
]

_WORD = st.text(string.ascii_letters + string.digits + "_-.", min_size=1, max_size=12)
_HUGE = st.integers(1, 6000).map(lambda n: "9" * n)

yaml_scalars = st.one_of(
    st.integers().map(str),
    _HUGE,
    st.integers(1, 300).map(lambda n: "0x" + "f" * n),
    st.integers(1, 300).map(lambda n: "0o" + "7" * n),
    st.integers(1, 60).map(lambda n: ":".join(["59"] * n)),  # sexagesimal
    st.sampled_from(["2020-13-45", "2001-12-14", "2001-12-14t21:59:43.10-05:00", "1e999",
                     ".nan", "-.inf", "~", "null", "yes", "No", "''", '""', "'x'", '"\\ud800"',
                     '"\\udcff"', '"\\x00"', "${a.b}", "${list.²}", "${x.99999999999}",
                     "${oc.env:HOME}", "|\n  block", "<<", "=", "&", "*", "!", "%", "@", "`",
                     '"\\U00110000"', '"\\UFFFFFFFF"', '"\\x85"', "a\x01b", "\x7f", "\ufeff"]),
    st.tuples(st.sampled_from(["!!bool", "!!int", "!!float", "!!timestamp", "!!binary",
                               "!!null", "!!str", "!!set", "!!omap", "!!pairs", "!custom",
                               "!!python/name:os.system", "!!merge"]),
              st.sampled_from(["", "''", "maybe", "nope", "xyz", "12", "aGVsbG8=", "[1]",
                               "{a: 1}", "0x10"])).map(" ".join),
    _WORD,
    st.text(max_size=20).map(json.dumps),  # double-quoted, any code point escaped
)


def _flow(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    seqs = st.lists(children, max_size=5).map(lambda xs: "[" + ", ".join(xs) + "]")
    maps = st.lists(st.tuples(st.one_of(_WORD, yaml_scalars), children), max_size=5).map(
        lambda kv: "{" + ", ".join(f"{k}: {v}" for k, v in kv) + "}")
    anchored = st.tuples(st.sampled_from("abc"), children).map(lambda t: f"&{t[0]} {t[1]}")
    return st.one_of(seqs, maps, anchored)


yaml_values = st.recursive(
    st.one_of(yaml_scalars, st.sampled_from(["*a", "*b", "*c"])), _flow, max_leaves=25)
"""One flow-style YAML value; anchors and aliases can refer to themselves (recursion)."""

_NESTING = st.tuples(st.sampled_from(["[", "{a: ", "- ", "? ", "a:\n  "]),
                     st.integers(1, 100_000)).map(lambda t: t[0] * t[1])
_CONTROL = st.sampled_from([*map(chr, (*range(1, 9), 11, 12, *range(14, 32), 127)), "\x80",
                            "\x9f", "\ud800", "\ufffe"])
_INDICATORS = st.tuples(st.sampled_from(["[", "{", "- ", "? ", ": "]), st.integers(5_001, 30_000))


def _hostile(extra: str, draw: st.DrawFn) -> str:
    """The shapes behind three internal errors and nine hangs (seed s3): a control character
    with more flow/block indicators than the nesting pre-screen lets through, an escape past
    U+10FFFF, and a flow list of millions of items before a stray ``]}``."""
    if extra == "control":
        unit, count = draw(_INDICATORS)
        where = draw(st.sampled_from(["before", "after"]))
        bad = f"c: x{draw(_CONTROL)}y\n"
        deep = f"deep: {unit * count}{']' * count if unit == '[' else ''}\n"
        return bad + deep if where == "before" else deep + bad
    if extra == "escape":
        return f'u: "\\U{draw(st.integers(0x110000, 0xFFFFFFFF)):08X}"\n'
    count = draw(st.integers(200_000, 2_000_000))
    return "wide: [" + "1," * count + "1" + draw(st.sampled_from(["]]}", "]", "", ",}"])) + "\n"


@st.composite
def yaml_documents(draw: st.DrawFn, keys: tuple[str, ...] = ()) -> bytes:
    """A YAML mapping document: the given keys and random ones, flow values, sometimes deep
    nesting, alias bombs, a BOM, invalid UTF-8, a tab, or one of the ``_hostile`` shapes."""
    lines = [f"{key}: {draw(yaml_values)}" for key in keys if draw(st.booleans())]
    lines += [f"{draw(_WORD)}: {draw(yaml_values)}" for _ in range(draw(st.integers(0, 4)))]
    text = "\n".join(lines) + "\n"
    extra = draw(st.sampled_from(["", "", "", "nest", "bomb", "bom", "bytes", "tab", "multi",
                                  "control", "escape", "wide"]))
    if extra in ("control", "escape", "wide"):
        text += _hostile(extra, draw)
    elif extra == "nest":
        text += "deep: " + draw(_NESTING) + "\n"
    elif extra == "bomb":
        text += "b0: &b0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
            f"b{i}: &b{i} [{', '.join([f'*b{i - 1}'] * 9)}]\n" for i in range(1, 10))
    elif extra == "tab":
        text += "\tbad: 1\n"
    elif extra == "multi":
        text += "---\nsecond: doc\n"
    raw = text.encode("utf-8", "surrogatepass")
    if extra == "bom":
        raw = b"\xef\xbb\xbf" + raw
    elif extra == "bytes":
        raw += draw(st.binary(min_size=1, max_size=20))
    return raw


_RECORD_HASH = st.one_of(
    st.sampled_from(["", "sha256=", "sha256=AAAA", "md5=x", "shake_128=abc", "shake_256=abc",
                     "blake2b=abc", "nope", "sha256=" + "a" * 200_000]),
    st.text(max_size=10).map(lambda s: "sha256=" + s))
_RECORD_SIZE = st.one_of(st.integers(0, 10**6).map(str), _HUGE,
                         st.sampled_from(["", "²", "-1", "1.5", "0x10", " 3"]))
_NAMES = st.one_of(
    st.sampled_from([b"demo/x.py", b"demo/../../x.py", b"/etc/x", b"C:/x", b"demo\\x.py",
                     b"demo/\xff.py", b"demo/", b"", b"demo-1.0.dist-info/RECORD.jws"]),
    st.binary(min_size=1, max_size=20))


@st.composite
def _members(draw: st.DrawFn, info: str) -> list[Member]:
    meta_lines = [f"{k}: {v}" for k, v in draw(st.lists(st.tuples(
        st.sampled_from(["Name", "Version", "Requires-Dist", "Requires-Python",
                         "Provides-Extra", "Metadata-Version", " folded", "X"]),
        st.one_of(_WORD, st.text(max_size=30), _HUGE.map(lambda d: ">=" + d),
                  st.sampled_from(["demo", ">=3.9", "six; extra == 'x'", "a[b]>=1; (",
                                   "ray[default]==2.58.0", "git+https://x/y"]))),
        max_size=8))]
    metadata = ("\n".join(["Name: demo", *meta_lines]) + "\n").encode("utf-8", "surrogatepass")
    files = draw(st.lists(st.tuples(_NAMES, st.binary(max_size=64)), max_size=4))
    rows = [f"{n.decode('utf-8', 'replace')},{draw(_RECORD_HASH)},{draw(_RECORD_SIZE)}"
            for n, _ in files]
    if draw(st.booleans()):
        rows.append(f'"{draw(st.text(max_size=30))}",{draw(_RECORD_HASH)},1')
    record = ("\n".join(rows) + "\n").encode("utf-8", "surrogatepass")
    members = []
    for name, data in [(f"{info}/METADATA".encode(), metadata),
                       (f"{info}/RECORD".encode(), record), *files]:
        method = draw(st.sampled_from([0, 0, 8, 8, 12, 99]))
        stored = raw_deflate(data) if method in (8, 12, 99) else data
        size = draw(st.one_of(st.just(len(data)), st.integers(0, 2**32 - 1)))
        crc = draw(st.one_of(st.none(), st.integers(0, 2**32 - 1)))
        flags = draw(st.sampled_from([0, 0, UTF8, ENCRYPTED]))
        members.append(Member(name, stored, method, size, crc, flags))
    return members


@st.composite
def wheel_archives(draw: st.DrawFn) -> tuple[str, bytes]:
    """``(file name, bytes)`` of a wheel-ish zip: sizes, CRCs, methods, flags and names that
    lie, RECORD rows with odd hashes and sizes, METADATA with odd fields, sometimes a prefix
    (the ``zipfile`` fallback) or random bytes."""
    version = draw(st.sampled_from(["1.0", "0.0.1", "9" * 200, "1.0.dev0", "bad version"]))
    info = f"demo-{version}.dist-info"
    name = draw(st.sampled_from([f"demo-{version}-py3-none-any.whl",
                                 "demo-1.0-cp313-cp313-manylinux_2_28_x86_64.whl",
                                 "demo-1.0-py3-none-any\udcff.whl", "not-a-wheel.whl"]))
    if draw(st.integers(0, 9)) == 0:
        return name, draw(st.binary(max_size=200))
    data = build_zip(draw(_members(info)), prefix=draw(st.sampled_from([b"", b"", b"#!x\n"])))
    return name, data


_JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
              st.text(max_size=20)),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids,
                                                               max_size=4),
    max_leaves=20)
_RAW_JSON = st.one_of(
    _HUGE, st.integers(1, 50_000).map(lambda n: "[" * n + "]" * n),
    st.sampled_from(['{"a": 1e999}', '"\\ud800"', "NaN", "[1,]", "{", '{"a":1}{"b":2}']),
    st.binary(max_size=40).map(lambda b: b.decode("latin-1")))


@st.composite
def jsonl_lines(draw: st.DrawFn, row: dict) -> bytes:
    """Lines of ``training.jsonl``: a valid row with a field replaced, random JSON, raw junk."""
    lines = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["mutated", "json", "raw", "bytes", "blank"]))
        if kind == "mutated":
            value = dict(row)
            value[draw(st.sampled_from([*row, "extra"]))] = draw(_JSON)
            lines.append(json.dumps(value).encode())
        elif kind == "json":
            lines.append(json.dumps(draw(_JSON)).encode())
        elif kind == "raw":
            lines.append(draw(_RAW_JSON).encode("utf-8", "surrogatepass"))
        elif kind == "bytes":
            lines.append(draw(st.binary(max_size=40)).replace(b"\n", b" "))
        else:
            lines.append(b"   ")
    return b"\n".join(lines) + b"\n"


def _replace_at(data: object, path: list[str | int], value: object) -> object:
    if not path:
        return value
    if isinstance(data, dict) and path[0] in data:
        return {**data, path[0]: _replace_at(data[path[0]], path[1:], value)}
    return data


def _paths(data: object, prefix: tuple = ()) -> list[list]:
    found = [list(prefix)]
    if isinstance(data, dict):
        for key, child in data.items():
            found += _paths(child, (*prefix, key))
    return found


@st.composite
def job_texts(draw: st.DrawFn, job: dict) -> bytes:
    """A valid job with values replaced (random JSON, huge integers), or raw junk."""
    if draw(st.integers(0, 4)) == 0:
        return draw(_RAW_JSON).encode("utf-8", "surrogatepass")
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(job)))
        value = draw(st.one_of(_JSON, st.integers(-(10**70), 10**70)))
        job = _replace_at(job, path, value)  # type: ignore[assignment]
    text = json.dumps(job, indent=2)
    if draw(st.booleans()):
        text = text.replace("1", draw(st.sampled_from(["9" * 5000, "1" * 70, "1e999", "-0"])), 1)
    return text.encode()


tree_ops = st.lists(st.tuples(
    st.sampled_from(["file", "dir", "link-in", "link-out", "link-loop", "dangling", "fifo",
                     "requirements", "pyproject", "jsonl", "bad-name"]),
    st.sampled_from(["", "resources_servers/echo_match/", "resources_servers/new/",
                     "responses_api_agents/", "wheels/", "configs/"]),
    st.one_of(_WORD, st.sampled_from(["requirements.txt", "pyproject.toml", "app.py",
                                      "nemo-environment.yaml", "x.whl", "rows.jsonl"])),
    st.text(max_size=60)), max_size=6)
"""Edits to a package tree: ``(kind, directory, name, content)``."""
