"""How Gym's installs are set up: the venv cache key, the environment, ``uv.toml``, wheels/.

As on the platform, Gym builds one venv per server (its requirements plus ``nemo-gym``,
``ray[default]`` and ``openai``, an index still enabled and ``wheels/`` only a
``UV_FIND_LINKS`` pool), then, for the wheels formats, installs ``wheels/`` again with
``--no-index``. ``--offline`` makes the first install index-free too, so what ``wheels/`` lacks
fails here, not on the cluster. The venvs are cached under ``server-venvs/<closure_key>``.

uv has no environment variable for ``--python-version``, so the opt-in override of nemo-gym's
``Requires-Python`` floor reaches Gym's uv calls through a generated ``uv.toml``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from envkit.gym.diagnose import Where, diagnose, tail
from envkit.gym.types import GymRuntimeError, PolicyEndpoint
from envkit.gym.venv import OVERRIDE_VERSION, GymVenv, uv_pip_install
from envkit.gym.venvsteps import VenvStep
from envkit.model.package import WHEEL_FORMATS, server_block
from envkit.model.tree import hash_files
from envkit.model.yamlio import parse_yaml
from envkit.supply.cache import content_key, digests_key, file_sha256
from envkit.supply.treestamps import rescan
from envkit.supply.uvcmd import isolated_env, uv_bin
from envkit.supply.wheelcache import WheelCache, pool_wheels
from envkit.validators.wheels.rules import EK403

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

__all__ = [
    "OUTER_RAY_ENV",
    "READY_MARKER",
    "RunPaths",
    "building",
    "closure_key",
    "gym_args",
    "gym_command",
    "gym_env",
    "gym_ray_env",
    "install_view",
    "mark_ready",
    "offered_wheels",
    "offline_install",
    "package_key",
    "reusable",
    "wheel_digests",
    "write_uv_toml",
]

log = logging.getLogger(__name__)

READY_MARKER = ".envkit-ready"
# What a Ray worker process inherits from its cluster; Gym's `ray.init()` must not see it.
OUTER_RAY_ENV = (
    "RAY_ADDRESS", "RAY_NAMESPACE", "RAY_JOB_ID", "RAY_RAYLET_PID", "RAY_LD_PRELOAD_ON_WORKERS",
)


@dataclass(frozen=True, slots=True)
class RunPaths:
    """One run's scratch space: the package copy, logs, results, and Gym's Ray session dir."""

    run_dir: Path
    ray_tmp: Path

    @property
    def work(self) -> Path:
        return self.run_dir / "pkg"


_INSTALL_INPUTS = frozenset({"requirements.txt", "pyproject.toml", "overrides.txt"})
"""The files Gym's ``uv pip install`` of a server reads (``setup_command.py``)."""


def package_key(package: Path, *parts: str) -> str:
    """sha256 over the package's files (paths + bytes) and ``parts``; 16 hex chars."""
    files = (p for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    return content_key(parts, ((p.relative_to(package).as_posix(), p) for p in files))


def closure_key(package: Path, fmt: str, config_paths: Iterable[str], *parts: str,
                wheels: Mapping[str, str] | None = None) -> str:
    """The key of the venvs that install ``package``: a function of what they will hold.

    ``parts`` (Gym version, interpreter, override, harness), what the install reads from the
    configs (:func:`install_view`), each server's install inputs and, for the wheels formats,
    every wheel by content (``wheels``: their SHA-256 by name; ``None``: read here). Not what no
    install reads (``app.py``, data, docs): editing a server's code keeps its venvs, and two
    packages whose servers install the same things share one tree.
    """
    digests: list[tuple[str, str]] = []
    for path in package.rglob("*"):
        rel = path.relative_to(package)
        if rel.parts[0] in {"wheels", ".venv"} or "__pycache__" in rel.parts:
            continue
        if path.name in _INSTALL_INPUTS and path.is_file():
            digests.append((rel.as_posix(), file_sha256(path)))
    if fmt in WHEEL_FORMATS:
        shas = wheel_digests(package / "wheels", None) if wheels is None else wheels
        digests += [(f"wheels/{name}", sha256) for name, sha256 in shas.items()]
    views = [f"config={c}:{install_view(package / c)}" for c in config_paths]
    return digests_key((f"format={fmt}", *parts, *views), digests)


def wheel_digests(wheels: Path, stamps: Path | None) -> dict[str, str]:
    """The SHA-256 of each ``*.whl`` file in ``wheels``, by file name; ``stamps``: where they
    are kept between runs (a wheel unchanged since is a stat, not a read), ``None``: read."""
    names = sorted(p.name for p in wheels.glob("*.whl") if p.is_file())
    if stamps is None:
        return {name: file_sha256(wheels / name) for name in names}
    tree = rescan(wheels, _WHEELS_PURPOSE,
                  lambda old: hash_files(wheels, names, _WHEELS_PURPOSE, old), stamps)
    return {f.path: f.sha256 for f in tree.files}


_WHEELS_PURPOSE = "server venvs: wheels"
"""The purpose the wheels' stamps are kept under (``envkit.supply.treestamps``)."""


def install_view(config: Path) -> str:
    """What Gym's install reads from one config file, as canonical JSON.

    A top-level ``{type: {impl: {entrypoint: ...}}}`` block is a server, and only its
    ``type/impl`` reaches the install; every other top-level key is a global setting
    (``python_version``, ``head_server_deps`` ...) and counts whole. A file that is not a YAML
    mapping counts by its bytes (the launch reports it).
    """
    try:
        raw = config.read_bytes()
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return "unreadable"
    data = parse_yaml(str(config), raw).data
    if not isinstance(data, dict):
        return json.dumps(text)
    servers: set[str] = set()
    settings: dict[str, object] = {}
    for name, block in data.items():
        shape = server_block(block)
        if shape is not None and "entrypoint" in shape[2]:  # what prefetch builds a venv for
            servers.add(f"{shape[0]}/{shape[1]}")
        else:
            settings[str(name)] = block
    return json.dumps({"servers": sorted(servers), "settings": settings}, sort_keys=True,
                      default=str)


@contextlib.contextmanager
def building(venv_dir: Path) -> Iterator[None]:
    """Hold ``<venv_dir>.lock`` while a tree is checked and built: two runs that need the same
    venvs (two lanes of a test suite, a smoke beside a train) build them once, the second
    waiting, instead of one deleting the tree the other is installing into."""
    venv_dir.parent.mkdir(parents=True, exist_ok=True)
    with venv_dir.with_name(venv_dir.name + ".lock").open("w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.info("waiting for another envkit that is building %s", venv_dir)
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def reusable(venv_dir: Path, *, offline: bool) -> bool:
    """Whether the venv tree is complete and fits the mode: ``--offline`` needs one built
    ``--offline`` (the proof that ``wheels/`` is enough); any complete tree serves online."""
    marker = venv_dir / READY_MARKER
    if not marker.exists():
        return False
    if not offline:
        return True
    try:
        return bool(json.loads(marker.read_text()).get("offline"))
    except (ValueError, AttributeError):
        return False


def mark_ready(venv_dir: Path, package: Path, *, offline: bool) -> None:
    """The tree is complete; ``offline``: no index was used to build it."""
    record = {"package": str(package), "offline": offline}
    (venv_dir / READY_MARKER).write_text(json.dumps(record))


def gym_env(gym: GymVenv, paths: RunPaths, uv_toml: Path, uv_cache: Path,
            find_links: Sequence[Path] = (), *, joins_ray: bool = False) -> dict[str, str]:
    """The environment of every ``gym`` call: envkit's uv first, no outer Ray, wheels/ found
    (``find_links``: the folders that offer it, see ``pool_wheels``)."""
    env = isolated_env()
    env.pop("UV_NO_CONFIG", None)  # Gym's uv calls read envkit's own uv.toml, nothing else
    env["UV_CONFIG_FILE"] = str(uv_toml)
    env["UV_PYTHON_DOWNLOADS"] = "never"
    env["UV_CACHE_DIR"] = str(uv_cache)
    # Gym shells out to a bare `uv`; envkit's uv goes first, and the 3.13 venv lets uv find
    # the interpreter Gym asks for by version.
    uv_dir = str(Path(uv_bin()).parent)
    base_python = Path(os.path.realpath(gym.python)).parent  # uv skips venvs on PATH
    env["PATH"] = os.pathsep.join([uv_dir, str(base_python), str(gym.bin), env.get("PATH", "")])
    env.pop("VIRTUAL_ENV", None)
    env["PYTHONUNBUFFERED"] = "1"
    # uv writes no .pyc at install: with PYTHONDONTWRITEBYTECODE set (CI, most images) every
    # start compiled ray, pydantic and nemo_gym again; here the first start writes them.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    gym_ray_env(env, paths.ray_tmp)
    if joins_ray:  # Ray's token auth (its default for a new cluster) needs the client to ask
        # for it; a cluster without auth accepts such a client as well
        env.setdefault("RAY_AUTH_MODE", "token")
    if find_links:  # as the platform passes wheels/ to Gym (uv splits the list on commas)
        env["UV_FIND_LINKS"] = ",".join(str(d) for d in find_links)
    return env


def gym_ray_env(env: dict[str, str], ray_tmp: Path) -> None:
    """Set, in ``env``, how a Ray that Gym's processes start runs (a bring-up's own, or the
    shared ``envkit.gym.ray_cluster``): no usage stats, no outer cluster, and ``ray_tmp`` as its
    session dir and every process's ``TMPDIR``, removed with it. Why ``TMPDIR`` too: a server
    stopped by a signal never cleans up the directories wandb makes there at import.
    """
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    # Ray starts one idle worker per CPU when the first driver connects; a server that runs
    # Ray tasks gets its workers on demand anyway
    env["RAY_prestart_worker_first_driver"] = "0"
    for key in OUTER_RAY_ENV:  # inside a Ray actor (--ray): Gym's Ray is a separate one
        env.pop(key, None)
    env["RAY_TMPDIR"] = env["TMPDIR"] = str(ray_tmp)


def write_uv_toml(gym: GymVenv, run_dir: Path, *, offline: bool) -> Path:
    """envkit's uv.toml for Gym's uv calls: the opt-in Python override and ``--offline``."""
    path = run_dir / "uv.toml"
    lines = ["[pip]"]
    if gym.python_override:
        log.warning("server venvs: installing with --python-version %s on Python %s "
                    "(--allow-python-override)", OVERRIDE_VERSION, gym.python_version)
        lines.append(f'python-version = "{OVERRIDE_VERSION}"')
    if offline:
        lines.append("no-index = true")  # uv has no env var for it; UV_OFFLINE would
        # silently install from uv's cache instead of failing on what wheels/ lacks
    path.write_text("\n".join(lines) + "\n")
    return path


GYM_MAIN = Path(__file__).with_name("gym_main.py")


def gym_command(gym: GymVenv, *args: str) -> list[str]:
    """``gym ARGS`` as :mod:`envkit.gym.gym_main` runs them, by the Gym venv's Python (``-P``:
    ``envkit/gym/types.py`` would shadow the standard ``types`` on ``sys.path``)."""
    return [str(gym.python), "-P", str(GYM_MAIN), *args]


def gym_args(config_paths: list[str], policy: PolicyEndpoint, venv_dir: Path, run_dir: Path,
             head_port: int, uv_cache: Path, ray_address: str | None = None) -> list[str]:
    """Gym's Hydra overrides: the package's configs, the policy, envkit's venv tree, uv cache
    and dirs, and the Ray cluster to join (``ray_address``; ``None``: Gym's head starts one)."""
    joined = [f"++ray_head_node_address={ray_address}"] if ray_address else []
    return [
        f"+config_paths=[{','.join(config_paths)}]",
        f"++policy_base_url={policy.base_url}",
        f"++policy_api_key={policy.api_key}",
        f"++policy_model_name={policy.model_name}",
        f"++uv_venv_dir={venv_dir}",
        "++skip_venv_if_present=true",
        f"++uv_cache_dir={uv_cache}",
        f"++results_dir={run_dir / 'results'}",
        f"++cache_dir={run_dir / 'cache'}",
        f"++nemo_gym_log_dir={run_dir / 'logs'}",
        f"++head_server.port={head_port}",
        *joined,
    ]


def offered_wheels(fmt: str, wheels: Path, cache_root: Path,
                   digests: Mapping[str, str] | None = None) -> list[Path]:
    """The wheels formats: ``wheels/`` as the files uv is offered (``pool_wheels``: why);
    ``digests``: the SHA-256 the venv key was made of (``None``: read here).

    :raises GymRuntimeError: the offer store cannot be written.
    """
    if fmt not in WHEEL_FORMATS or not wheels.is_dir():
        return []
    offer = WheelCache.offer_under(cache_root)
    try:
        shas = wheel_digests(wheels, None) if digests is None else digests
        return pool_wheels([(wheels / name, sha256) for name, sha256 in shas.items()], offer)
    except OSError as exc:
        msg = f"cannot offer wheels/ to uv from {offer.root}: {exc}"
        raise GymRuntimeError(msg) from None


def offline_install(wheels: Sequence[Path], venv_dir: Path, env: dict[str, str],
                    on_step: Callable[[VenvStep], None] = lambda step: None) -> None:
    """The platform's second install: ``wheels/`` (as offered to uv) with ``--no-index`` into
    every server venv; ``env``: the ``gym`` calls' (:func:`gym_env`).

    :raises GymRuntimeError: uv refused (the likely code from its stderr, else that of a
        requirement ``wheels/`` does not satisfy).
    """
    files = sorted(str(w) for w in wheels)
    if not files:
        return
    links = [arg for folder in sorted({str(Path(f).parent) for f in files})
             for arg in ("--find-links", folder)]
    override = "python-version" in Path(env["UV_CONFIG_FILE"]).read_text()
    for python in sorted(venv_dir.glob("*/*/.venv/bin/python")):
        server = python.parents[2].relative_to(venv_dir).as_posix()
        started = time.monotonic()
        on_step(VenvStep(server, "wheels", "start"))
        cmd = [*uv_pip_install(python, override=override), "--no-index", *links, *files]
        out = subprocess.run(cmd, capture_output=True, text=True, env=isolated_env(env),
                             check=False, timeout=1800)
        if out.returncode != 0:
            found = diagnose(out.stderr, Where.INSTALL)
            msg = f"offline install of wheels/ into {server} failed: {found.reason}"
            raise GymRuntimeError(msg, code=found.code or EK403.code, log_tail=tail(out.stderr),
                                  reason=found.reason, evidence=found.evidence)
        on_step(VenvStep(server, "wheels", "done", time.monotonic() - started,
                         f"Installed {len(files)} wheels from wheels/"))
