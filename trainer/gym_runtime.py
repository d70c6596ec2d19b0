"""Bring a package's Gym servers up the way the training image does, and tear them down.

What the platform does, and envkit repeats locally (SPEC §2, seed 000 "rl (DPO / GRPO) gotchas"):
1. Gym builds one venv per server: ``uv venv --python <3.13>``, then the server's requirements plus
   ``nemo-gym==<image version>``, ``ray[default]`` and ``openai`` at the parent's pins, with an
   index still enabled and ``wheels/`` only a ``UV_FIND_LINKS`` candidate pool.
2. For the wheels formats, a second, offline install of ``wheels/`` (``--no-index``).

``--offline`` makes step 1 index-free too (``no-index`` in envkit's uv.toml, see below), so
what ``wheels/`` lacks fails here, not on the cluster. envkit runs step 1 as
``gym env prefetch`` (Gym's own setup code, no Ray), step 2 itself, then ``gym env start``
with ``skip_venv_if_present``. Venvs are cached under ``cache_root()/server-venvs/<key>``, the
key hashing the package's content, the Gym version, the interpreter and the install mode, so
a second run of the same package skips every install.

A 3.13 interpreter older than nemo-gym's ``Requires-Python`` floor needs an explicit override;
uv has no environment variable for ``--python-version``, so envkit hands Gym's uv calls a
generated ``uv.toml`` (``UV_CONFIG_FILE``) with ``[pip] python-version``: opt-in and logged.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from envkit.cache import cache_root
from envkit.gymvenv import GymVenv, ensure_gym_venv, uv_binary
from envkit.isolation import isolated_env
from envkit.trainer._procs import ProcessTree
from envkit.trainer.adapter_harness import HarnessError, stage_harness
from envkit.yamlio import YamlReadError, read_mapping

__all__ = [
    "GymRuntime",
    "GymRuntimeError",
    "GymServers",
    "PolicyEndpoint",
    "RuntimeOptions",
    "ServerInfo",
    "diagnose_log",
    "package_key",
]

log = logging.getLogger(__name__)

_READY_MARKER = ".envkit-ready"
# What a Ray worker process inherits from its cluster; Gym's `ray.init()` must not see it.
_OUTER_RAY_ENV = (
    "RAY_ADDRESS", "RAY_NAMESPACE", "RAY_JOB_ID", "RAY_RAYLET_PID", "RAY_LD_PRELOAD_ON_WORKERS",
)
_WHEEL_FORMATS = ("wheels-v1", "adapter-wheels-v1")

# Log text -> (EK code, what it means). First match wins; ordered from specific to generic.
_DIAGNOSES: tuple[tuple[str, str | None, str], ...] = (
    (r"AlmostServerError|almost-server", "EK302",
     "a server block failed Gym's validation (domain, datasets[]): see EK302/EK315"),
    (r"ServerRefNotFoundError|Available responses_api_models: \(none\)", "EK304",
     "a ref names an instance no config defines (EK304/EK305)"),
    (r"Missing pyproject\.toml or requirements\.txt|Found both pyproject\.toml and requirements",
     "EK205", "a server dir needs exactly one of requirements.txt / pyproject.toml"),
    (r"has no wheels with a matching platform tag", "EK401",
     "a wheel in wheels/ does not match this platform"),
    (r"not found in the provided package locations|no version of|was not found in the package "
     r"registry|network connectivity is disabled|Because .* (?:was not found|unsatisfiable)",
     "EK403", "a requirement is not satisfied by wheels/ (or the index)"),
    (r"[Rr]equires-[Pp]ython|current Python version .* does not satisfy", "EK406",
     "a requirement excludes this Python (nemo-gym's 3.13.14 floor: --allow-python-override)"),
    (r"InterpolationKeyError|ConfigInterpolationError|MissingMandatoryValue|"
     r"is not set after merging",
     "EK313", "a config interpolation cannot be resolved"),
    (r"ModuleNotFoundError|ImportError", "EK403",
     "a server imports a module its venv does not have"),
    (r"command not found", None, "a tool Gym shells out to is missing from PATH"),
    (r"can't open file|No such file or directory: .*\.py", "EK310",
     "a server's entrypoint file is missing"),
)


class GymRuntimeError(RuntimeError):
    """Servers could not be brought up.

    ``code`` is the likely EK rule, ``log_tail`` the evidence (the failing server's log).
    """

    def __init__(self, message: str, *, code: str | None = None, log_tail: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.log_tail = log_tail


@dataclass(frozen=True)
class PolicyEndpoint:
    """What Gym's ``policy_model`` needs: ``${policy_base_url}``, ``${policy_api_key}``, name."""

    base_url: str
    api_key: str
    model_name: str


@dataclass(frozen=True)
class RuntimeOptions:
    gym_version: str = "0.7.0"
    gym_python: Path | None = None
    allow_python_override: bool = False
    offline: bool = False
    startup_timeout_s: float = 600.0
    cache_dir: Path | None = None
    keep_logs: Path | None = None
    """Copy the run's logs here on close (else they go with the run dir)."""


@dataclass(frozen=True)
class ServerInfo:
    name: str
    server_type: str
    implementation: str
    url: str
    pid: int | None = None


@dataclass
class GymServers:
    """The running servers, addressed by instance name."""

    head_url: str
    servers: dict[str, ServerInfo]
    config: dict[str, Any]
    log_dir: Path
    env_server_for_agent: dict[str, str] = field(default_factory=dict)

    def agents(self) -> list[str]:
        return sorted(n for n, s in self.servers.items() if s.server_type == "responses_api_agents")

    def run_url(self, agent: str) -> str:
        """Where a row for ``agent`` is posted: its environment server if one relays it (as Gym's
        rollout collection does), else the agent itself."""
        target = self.env_server_for_agent.get(agent, agent)
        return f"{self.servers[target].url}/run"

    def server_of_type(self, server_type: str) -> list[ServerInfo]:
        return [s for s in self.servers.values() if s.server_type == server_type]


def package_key(package: Path, *parts: str) -> str:
    """sha256 over the package's files (paths + bytes) and ``parts``; 16 hex chars."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode() + b"\0")
    files = (p for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    for path in sorted(files):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


def diagnose_log(text: str) -> tuple[str | None, str]:
    """The likely EK code and a one-line reason for a server's failure log."""
    for pattern, code, reason in _DIAGNOSES:
        if re.search(pattern, text):
            return code, reason
    return None, "see the log tail above"


def _tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _read_manifest(package: Path) -> tuple[str, list[str]]:
    manifest = package / "nemo-environment.yaml"
    try:
        data = read_mapping(manifest)
    except YamlReadError as exc:
        msg = f"{exc}; run `envkit validate {package}`"
        raise GymRuntimeError(msg, code="EK100" if not manifest.exists() else "EK101") from None
    paths = data.get("config_paths")
    if not isinstance(paths, list) or not paths:
        msg = f"{manifest}: `config_paths` missing or empty; run `envkit validate {package}`"
        raise GymRuntimeError(msg, code="EK104")
    return str(data.get("format", "")), [str(p) for p in paths]


class GymRuntime:
    """``with GymRuntime(pkg, policy, options) as servers:`` -- servers up, then all torn down."""

    def __init__(self, package: Path, policy: PolicyEndpoint, options: RuntimeOptions) -> None:
        self.package = package.resolve()
        self.policy = policy
        self.options = options
        self.format, self.config_paths = _read_manifest(self.package)
        self._proc: subprocess.Popen[bytes] | None = None
        self._tree: ProcessTree | None = None
        self._run_dir: Path | None = None
        self._ray_tmp: Path | None = None
        self.servers: GymServers | None = None
        self.venv_dir: Path | None = None
        """The server venv tree (``<type>/<impl>/.venv``), known once set-up has run."""

    # -- lifecycle -------------------------------------------------------------------------
    def __enter__(self) -> GymServers:
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(self, *exc: object) -> None:
        self.close()

    def prepare(self) -> Path:
        """Build (or find) the package's server venvs without starting a server.

        :returns: the venv tree (``<type>/<impl>/.venv`` per server).
        :raises GymRuntimeError: an install failed (with the likely EK code and uv's reason).
        """
        try:
            return self._setup()[2]
        finally:
            self.close()

    def start(self) -> GymServers:
        gym, work, venv_dir, env = self._setup()
        try:
            self.servers = self._launch(gym, work, venv_dir, env)
        except GymRuntimeError as exc:
            if "timed out during startup" not in exc.log_tail:
                raise
            # Ray's raylet gets 30 s to register; on an overloaded machine that is not enough.
            log.warning("Ray did not start in time (machine busy); retrying once")
            self._stop_tree()
            self.servers = self._launch(gym, work, venv_dir, env)
        return self.servers

    def _setup(self) -> tuple[GymVenv, Path, Path, dict[str, str]]:
        gym = ensure_gym_venv(self.options.gym_version, python=self.options.gym_python,
                              allow_python_override=self.options.allow_python_override)
        root = self.options.cache_dir or cache_root()
        harness = ("harness=offline-v1",) if self.format == "adapter-wheels-v1" else ()
        key = package_key(self.package, gym.gym_version, gym.python_version,
                          f"override={gym.python_override}", f"offline={self.options.offline}",
                          *harness)
        venv_dir = root / "server-venvs" / key
        self.venv_dir = venv_dir
        (root / "runs").mkdir(parents=True, exist_ok=True)
        self._run_dir = Path(tempfile.mkdtemp(prefix="run-", dir=root / "runs"))
        self._ray_tmp = Path(tempfile.mkdtemp(prefix="envkit-gymray-"))
        work = self._run_dir / "pkg"
        shutil.copytree(self.package, work, ignore=shutil.ignore_patterns("__pycache__", ".venv"))
        self._stage_harness(gym, work)
        env = self._env(gym, work)
        if not (venv_dir / _READY_MARKER).exists():
            self._build_venvs(gym, work, venv_dir, env)
        else:
            log.info("reusing server venvs %s", venv_dir)
        return gym, work, venv_dir, env

    def _stage_harness(self, gym: GymVenv, work: Path) -> None:
        """adapter-wheels-v1: the built-in harness with offline requirements (adapter_harness)."""
        try:
            stage_harness(gym.root, work, work / "nemo-environment.yaml")
        except (HarnessError, OSError, YamlReadError) as exc:
            code = getattr(exc, "code", None)
            msg = f"cannot stage the adapter harness: {exc}"
            raise GymRuntimeError(msg, code=code) from None

    def _stop_tree(self, grace_s: float = 20.0) -> None:
        if self._tree is not None:
            killed = self._tree.terminate(grace_s=grace_s)
            if killed:
                log.info("killed %d process(es) that ignored SIGINT", len(killed))
            self._tree = None
        if self._proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=5)  # reap: no zombie left behind
        self._proc = None

    def close(self, grace_s: float = 20.0) -> None:
        """Stop every process this runtime started; safe to call twice.

        ``grace_s``: how long Gym's own SIGINT shutdown may take before the rest is killed;
        a restart after a server died passes a short one (a broken tree rarely exits cleanly).
        """
        self._stop_tree(grace_s)
        if self._run_dir is not None:
            if self.options.keep_logs is not None:
                self._keep_logs(self.options.keep_logs)
            shutil.rmtree(self._run_dir, ignore_errors=True)
            self._run_dir = None
        if self._ray_tmp is not None:
            shutil.rmtree(self._ray_tmp, ignore_errors=True)
            self._ray_tmp = None

    def _keep_logs(self, dest: Path) -> None:
        assert self._run_dir is not None
        dest.mkdir(parents=True, exist_ok=True)
        if (self._run_dir / "logs").exists():
            shutil.copytree(self._run_dir / "logs", dest, dirs_exist_ok=True)
        for name in ("gym.log", "setup.log"):
            if (self._run_dir / name).exists():
                shutil.copy2(self._run_dir / name, dest / name)

    def check_alive(self) -> None:
        """:raises GymRuntimeError: when the Gym head process has exited."""
        if self._proc is not None and self._proc.poll() is not None:
            raise self._failure("Gym exited while serving")

    # -- steps -----------------------------------------------------------------------------
    def _env(self, gym: GymVenv, work: Path) -> dict[str, str]:
        env = isolated_env()
        env.pop("UV_NO_CONFIG", None)  # Gym's uv calls read envkit's own uv.toml, nothing else
        env["UV_CONFIG_FILE"] = str(self._uv_toml(gym))
        env["UV_PYTHON_DOWNLOADS"] = "never"
        # Gym shells out to a bare `uv`; envkit's uv goes first, and the 3.13 venv lets uv find
        # the interpreter Gym asks for by version.
        uv_dir = str(Path(uv_binary()).parent)
        base_python = Path(os.path.realpath(gym.python)).parent  # uv skips venvs on PATH
        env["PATH"] = os.pathsep.join([uv_dir, str(base_python), str(gym.bin), env.get("PATH", "")])
        env.pop("VIRTUAL_ENV", None)
        env["PYTHONUNBUFFERED"] = "1"
        env["RAY_USAGE_STATS_ENABLED"] = "0"
        for key in _OUTER_RAY_ENV:  # inside a Ray actor (--ray): Gym's Ray is a separate one
            env.pop(key, None)
        if self._ray_tmp is not None:  # Gym's Ray: own session dir, removed on close
            env["RAY_TMPDIR"] = str(self._ray_tmp)
        wheels = work / "wheels"
        if self.format in _WHEEL_FORMATS and wheels.is_dir():
            env["UV_FIND_LINKS"] = str(wheels)  # as the platform passes wheels/ to Gym
        return env

    def _uv_toml(self, gym: GymVenv) -> Path:
        assert self._run_dir is not None
        path = self._run_dir / "uv.toml"
        lines = ["[pip]"]
        if gym.python_override:
            log.warning("server venvs: installing with --python-version 3.13.14 on Python %s "
                        "(--allow-python-override)", gym.python_version)
            lines.append('python-version = "3.13.14"')
        if self.options.offline:
            lines.append("no-index = true")  # uv has no env var for it; UV_OFFLINE would
            # silently install from uv's cache instead of failing on what wheels/ lacks
        path.write_text("\n".join(lines) + "\n")
        return path

    def _gym_args(self, work: Path, venv_dir: Path, head_port: int) -> list[str]:
        assert self._run_dir is not None
        uv_cache = os.environ.get("UV_CACHE_DIR") or str(Path.home() / ".cache" / "uv")
        return [
            f"+config_paths=[{','.join(self.config_paths)}]",
            f"++policy_base_url={self.policy.base_url}",
            f"++policy_api_key={self.policy.api_key}",
            f"++policy_model_name={self.policy.model_name}",
            f"++uv_venv_dir={venv_dir}",
            "++skip_venv_if_present=true",
            f"++uv_cache_dir={uv_cache}",
            f"++results_dir={self._run_dir / 'results'}",
            f"++cache_dir={self._run_dir / 'cache'}",
            f"++nemo_gym_log_dir={self._run_dir / 'logs'}",
            f"++head_server.port={head_port}",
        ]

    def _build_venvs(self, gym: GymVenv, work: Path, venv_dir: Path, env: dict[str, str]) -> None:
        """Install 1 by ``gym env prefetch`` (Gym's own setup code), install 2 of ``wheels/``."""
        log.info("building server venvs in %s (first run of this package)", venv_dir)
        shutil.rmtree(venv_dir, ignore_errors=True)  # never reuse a half-built tree
        args = self._gym_args(work, venv_dir, _free_port())
        cmd = [str(gym.bin / "gym"), "env", "prefetch", *args]
        out = self._run_logged(cmd, work, env, "setup")
        if out.returncode != 0:
            text = self._all_logs(out.stdout)
            code, reason = diagnose_log(text)
            offline = " with --offline: wheels/ must cover every requirement" if (
                self.options.offline) else ""
            msg = f"building the server venvs failed{offline}: {reason}"
            raise GymRuntimeError(msg, code=code, log_tail=_tail(text))
        if self.format in _WHEEL_FORMATS:
            self._offline_install(work / "wheels", venv_dir, env)
        (venv_dir / _READY_MARKER).write_text(json.dumps({"package": str(self.package)}))

    def _offline_install(self, wheels: Path, venv_dir: Path, env: dict[str, str]) -> None:
        """The platform's second install: ``wheels/`` with ``--no-index`` into every server venv."""
        files = sorted(str(w) for w in wheels.glob("*.whl"))
        if not files:
            return
        for python in sorted(venv_dir.glob("*/*/.venv/bin/python")):
            cmd = [uv_binary(), "pip", "install", "--no-config", "--quiet", "--python", str(python),
                   "--no-index", "--find-links", str(wheels), *files]
            if "python-version" in Path(env["UV_CONFIG_FILE"]).read_text():
                cmd[4:4] = ["--python-version", "3.13.14"]
            out = subprocess.run(cmd, capture_output=True, text=True, env=isolated_env(),
                                 check=False, timeout=1800)
            if out.returncode != 0:
                code, reason = diagnose_log(out.stderr)
                server = python.parents[2].relative_to(venv_dir)
                msg = f"offline install of wheels/ into {server} failed: {reason}"
                raise GymRuntimeError(msg, code=code or "EK403", log_tail=_tail(out.stderr))

    def _run_logged(self, cmd: list[str], cwd: Path, env: dict[str, str],
                    name: str) -> subprocess.CompletedProcess[str]:
        assert self._run_dir is not None
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self._tree = ProcessTree(proc.pid)
        try:
            stdout, _ = proc.communicate(timeout=self.options.startup_timeout_s)
        except subprocess.TimeoutExpired:
            self._tree.terminate()
            msg = f"{name} timed out after {self.options.startup_timeout_s:g}s"
            raise GymRuntimeError(msg) from None
        self._tree.terminate(grace_s=5)
        self._tree = None
        (self._run_dir / f"{name}.log").write_text(stdout)
        return subprocess.CompletedProcess(cmd, proc.returncode, stdout)

    def _launch(self, gym: GymVenv, work: Path, venv_dir: Path, env: dict[str, str]) -> GymServers:
        assert self._run_dir is not None
        head_port = _free_port()
        log_path = self._run_dir / "gym.log"
        cmd = [str(gym.bin / "gym"), "env", "start", *self._gym_args(work, venv_dir, head_port)]
        with log_path.open("wb") as sink:
            self._proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=sink,
                                          stderr=subprocess.STDOUT, start_new_session=True)
        self._tree = ProcessTree(self._proc.pid)
        head = f"http://127.0.0.1:{head_port}"
        deadline = time.monotonic() + self.options.startup_timeout_s
        while not _ready(head):
            self._tree.refresh()
            if self._proc.poll() is not None:
                raise self._failure("a server failed to start")
            if time.monotonic() > deadline:
                raise self._failure(f"servers not ready after {self.options.startup_timeout_s:g}s")
            time.sleep(1.0)
        self._tree.refresh()
        return self._describe(head)

    def _describe(self, head: str) -> GymServers:
        assert self._run_dir is not None
        instances = _get_json(f"{head}/server_instances")
        config = _load_config(_get_text(f"{head}/global_config_dict_yaml"))
        servers = {
            i["process_name"]: ServerInfo(i["process_name"], i["server_type"], i["name"],
                                          i["url"], i.get("pid"))
            for i in instances
        }
        return GymServers(head, servers, config, self._run_dir / "logs",
                          _relays(config, servers))

    def _failure(self, what: str) -> GymRuntimeError:
        assert self._run_dir is not None
        gym_log = (self._run_dir / "gym.log").read_text(errors="replace") if (
            self._run_dir / "gym.log").exists() else ""
        failed = re.search(r"Process `([^`]+)` finished unexpectedly", gym_log)
        server_log = ""
        if failed and (path := self._run_dir / "logs" / f"{failed.group(1)}.log").exists():
            server_log = path.read_text(errors="replace")
        text = server_log or self._all_logs(gym_log)
        code, reason = diagnose_log(text)
        who = f" (`{failed.group(1)}`)" if failed else ""
        return GymRuntimeError(f"{what}{who}: {reason}", code=code, log_tail=_tail(text))

    def _all_logs(self, head_text: str) -> str:
        assert self._run_dir is not None
        logs = sorted((self._run_dir / "logs").glob("*.log"))
        return "\n".join([head_text, *(p.read_text(errors="replace") for p in logs)])


def _relays(config: dict[str, Any], servers: dict[str, ServerInfo]) -> dict[str, str]:
    """agent instance -> the environment server that relays it (Gym routes rows through it)."""
    relays: dict[str, str] = {}
    for name, block in config.items():
        if name not in servers or not isinstance(block, dict):
            continue
        for impl in (block.get("environment_servers") or {}).values():
            ref = (impl or {}).get("agent_server") or {}
            if isinstance(ref, dict) and ref.get("name"):
                relays.setdefault(str(ref["name"]), name)
    return relays


def _load_config(text: str) -> dict[str, Any]:
    """The head server returns the YAML text JSON-encoded as a string."""
    data: Any = yaml.safe_load(text)
    if isinstance(data, str):
        data = yaml.safe_load(data)
    return data if isinstance(data, dict) else {}


def _ready(head: str) -> bool:
    try:
        with urllib.request.urlopen(f"{head}/readyz", timeout=2) as resp:
            return resp.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _get_text(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return resp.read().decode()


def _get_json(url: str) -> Any:
    return json.loads(_get_text(url))
