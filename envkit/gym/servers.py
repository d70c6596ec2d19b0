"""Bring a package's Gym servers up the way the training image does, and tear them down.

envkit runs Gym's own set-up code: ``gym env prefetch`` builds the server venvs (cached, see
``envkit.gym.install``), then ``gym env start`` with ``skip_venv_if_present`` launches the
servers, and the head server's ``/readyz`` says when they are up. Every process started here is
tracked (``envkit.gym.processes``) and stopped on close, Ctrl-C included.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from envkit.gym.diagnose import diagnose_log, tail
from envkit.gym.harness import HarnessError, stage_harness
from envkit.gym.install import (
    READY_MARKER,
    WHEEL_FORMATS,
    RunPaths,
    gym_args,
    gym_env,
    offline_install,
    package_key,
    write_uv_toml,
)
from envkit.gym.processes import ProcessTree, free_port
from envkit.gym.types import (
    GymRuntimeError,
    GymServers,
    PolicyEndpoint,
    RuntimeOptions,
    ServerInfo,
    StartedInWith,
)
from envkit.gym.venv import GymVenv, ensure_gym_venv
from envkit.model.package import Package, load_package
from envkit.supply.cache import cache_root
from envkit.validators.config_paths import EK104
from envkit.validators.manifest import EK100, EK101

__all__ = ["GymRuntime"]

log = logging.getLogger(__name__)


def _load(package: Path) -> Package:
    """The package through the validator's loader; only what stops a launch is refused here."""
    pkg = load_package(package)
    hint = f"run `envkit validate {package}`"
    if pkg.manifest is None:
        msg = f"{package / 'nemo-environment.yaml'} does not exist; {hint}"
        raise GymRuntimeError(msg, code=EK100.code)
    if not pkg.manifest.ok or not isinstance(pkg.manifest.data, dict):
        why = pkg.manifest.error or "not a mapping"
        msg = f"{package / 'nemo-environment.yaml'}: {why}; {hint}"
        raise GymRuntimeError(msg, code=EK101.code)
    if not pkg.config_paths():
        msg = f"{package / 'nemo-environment.yaml'}: `config_paths` missing or empty; {hint}"
        raise GymRuntimeError(msg, code=EK104.code)
    return pkg


class GymRuntime(StartedInWith):
    """``with GymRuntime(pkg, policy, options) as servers:`` -- servers up, then all torn down."""

    def __init__(self, package: Path, policy: PolicyEndpoint, options: RuntimeOptions) -> None:
        self.package = package.resolve()
        self.policy = policy
        self.options = options
        self._model = _load(self.package)
        self.format = self._model.format or ""
        self.config_paths = [str(p) for p in self._model.manifest_data["config_paths"]]
        self._proc: subprocess.Popen[Any] | None = None
        self._tree: ProcessTree | None = None
        self._paths: RunPaths | None = None
        self._lock = threading.Lock()
        self._closed = False
        """Set by a final :meth:`close`: nothing more is started (close may come from another
        thread while :meth:`start` runs, e.g. Ctrl-C on the driver of a Ray run)."""
        self.servers: GymServers | None = None
        self.venv_dir: Path | None = None
        """The server venv tree (``<type>/<impl>/.venv``), known once set-up has run."""

    # -- lifecycle -------------------------------------------------------------------------
    def prepare(self) -> Path:
        """Build (or find) the package's server venvs without starting a server.

        :returns: the venv tree (``<type>/<impl>/.venv`` per server).
        :raises GymRuntimeError: an install failed (with the likely EK code and uv's reason).
        """
        try:
            return self._setup()[1]
        finally:
            self.close()

    def start(self) -> GymServers:
        gym, venv_dir, env = self._setup()
        try:
            self.servers = self._launch(gym, venv_dir, env)
        except GymRuntimeError as exc:
            if "timed out during startup" not in exc.log_tail:
                raise
            # Ray's raylet gets 30 s to register; on an overloaded machine that is not enough.
            log.warning("Ray did not start in time (machine busy); retrying once")
            self._stop_tree()
            self.servers = self._launch(gym, venv_dir, env)
        return self.servers

    def close(self, grace_s: float = 20.0, *, final: bool = True) -> None:
        """Stop every process this runtime started; safe to call twice, and from another thread.

        ``grace_s``: how long Gym's own SIGINT shutdown may take before the rest is killed;
        a restart after a server died passes a short one (a broken tree rarely exits cleanly)
        and ``final=False`` (it starts again).
        """
        with self._lock:
            self._closed = self._closed or final
        self._stop_tree(grace_s)
        if self._paths is not None:
            if self.options.keep_logs is not None:
                self._keep_logs(self.options.keep_logs)
            shutil.rmtree(self._paths.run_dir, ignore_errors=True)
            shutil.rmtree(self._paths.ray_tmp, ignore_errors=True)
            self._paths = None

    def check_alive(self) -> None:
        """:raises GymRuntimeError: when the Gym head process has exited."""
        if self._proc is not None and self._proc.poll() is not None:
            raise self._failure("Gym exited while serving")

    # -- set-up ----------------------------------------------------------------------------
    def _setup(self) -> tuple[GymVenv, Path, dict[str, str]]:
        self._refuse_if_closed()
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
        self._paths = paths = RunPaths(Path(tempfile.mkdtemp(prefix="run-", dir=root / "runs")),
                                       Path(tempfile.mkdtemp(prefix="envkit-gymray-")))
        shutil.copytree(self.package, paths.work,
                        ignore=shutil.ignore_patterns("__pycache__", ".venv"))
        self._stage_harness(gym, paths.work)
        uv_toml = write_uv_toml(gym, paths.run_dir, offline=self.options.offline)
        env = gym_env(gym, paths, self.format, uv_toml)
        if not (venv_dir / READY_MARKER).exists():
            self._build_venvs(gym, venv_dir, env)
        else:
            log.info("reusing server venvs %s", venv_dir)
        return gym, venv_dir, env

    def _stage_harness(self, gym: GymVenv, work: Path) -> None:
        """adapter-wheels-v1: the built-in harness with offline requirements (``harness``)."""
        try:
            stage_harness(gym.root, work, self._model)
        except (HarnessError, OSError) as exc:
            code = exc.code if isinstance(exc, HarnessError) else None
            msg = f"cannot stage the adapter harness: {exc}"
            raise GymRuntimeError(msg, code=code) from None

    def _args(self, venv_dir: Path, head_port: int) -> list[str]:
        assert self._paths is not None
        return gym_args(self.config_paths, self.policy, venv_dir, self._paths.run_dir, head_port)

    def _build_venvs(self, gym: GymVenv, venv_dir: Path, env: dict[str, str]) -> None:
        """Install 1 by ``gym env prefetch`` (Gym's own setup code), install 2 of ``wheels/``."""
        assert self._paths is not None
        log.info("building server venvs in %s (first run of this package)", venv_dir)
        shutil.rmtree(venv_dir, ignore_errors=True)  # never reuse a half-built tree
        cmd = [str(gym.bin / "gym"), "env", "prefetch", *self._args(venv_dir, free_port())]
        out = self._run_logged(cmd, env, "setup")
        if out.returncode != 0:
            text = self._all_logs(out.stdout)
            code, reason = diagnose_log(text)
            offline = " with --offline: wheels/ must cover every requirement" if (
                self.options.offline) else ""
            msg = f"building the server venvs failed{offline}: {reason}"
            raise GymRuntimeError(msg, code=code, log_tail=tail(text))
        if self.format in WHEEL_FORMATS:
            offline_install(self._paths.work / "wheels", venv_dir, env)
        (venv_dir / READY_MARKER).write_text(json.dumps({"package": str(self.package)}))

    def _refuse_if_closed(self) -> None:
        if self._closed:
            msg = "the Gym runtime was closed while it was starting"
            raise GymRuntimeError(msg)

    def _spawn(self, cmd: list[str], env: dict[str, str], **kwargs: Any) -> tuple[
            subprocess.Popen[Any], ProcessTree]:
        """Start a session leader and track its tree, unless a final close came first."""
        assert self._paths is not None
        with self._lock:
            self._refuse_if_closed()
            proc = subprocess.Popen(cmd, cwd=self._paths.work, env=env, stderr=subprocess.STDOUT,
                                    start_new_session=True, **kwargs)
            self._proc, self._tree = proc, ProcessTree(proc.pid)
        return proc, self._tree

    def _run_logged(self, cmd: list[str], env: dict[str, str],
                    name: str) -> subprocess.CompletedProcess[str]:
        assert self._paths is not None
        run_dir = self._paths.run_dir
        proc, tree = self._spawn(cmd, env, stdout=subprocess.PIPE, text=True)
        try:
            stdout, _ = proc.communicate(timeout=self.options.startup_timeout_s)
        except subprocess.TimeoutExpired:
            tree.terminate()
            msg = f"{name} timed out after {self.options.startup_timeout_s:g}s"
            raise GymRuntimeError(msg) from None
        tree.terminate(grace_s=5)
        with self._lock:
            self._proc = self._tree = None
        self._refuse_if_closed()
        (run_dir / f"{name}.log").write_text(stdout)
        return subprocess.CompletedProcess(cmd, proc.returncode, stdout)

    # -- launch and health -----------------------------------------------------------------
    def _launch(self, gym: GymVenv, venv_dir: Path, env: dict[str, str]) -> GymServers:
        assert self._paths is not None
        head_port = free_port()
        cmd = [str(gym.bin / "gym"), "env", "start", *self._args(venv_dir, head_port)]
        with (self._paths.run_dir / "gym.log").open("wb") as sink:
            proc, tree = self._spawn(cmd, env, stdout=sink)
        head = f"http://127.0.0.1:{head_port}"
        limit_s = self.options.ready_timeout_s or self.options.startup_timeout_s
        deadline = time.monotonic() + limit_s
        while not _ready(head):
            tree.refresh()
            self._refuse_if_closed()
            if proc.poll() is not None:
                raise self._failure("a server failed to start")
            if time.monotonic() > deadline:
                raise self._failure(f"servers not ready after {limit_s:g}s")
            time.sleep(1.0)
        tree.refresh()
        return self._describe(head)

    def _describe(self, head: str) -> GymServers:
        assert self._paths is not None
        instances = _get_json(f"{head}/server_instances")
        config = _load_config(_get_text(f"{head}/global_config_dict_yaml"))
        servers = {
            i["process_name"]: ServerInfo(i["process_name"], i["server_type"], i["name"],
                                          i["url"], i.get("pid"))
            for i in instances
        }
        return GymServers(head, servers, config, self._paths.run_dir / "logs",
                          _relays(config, servers))

    # -- teardown and evidence -------------------------------------------------------------
    def _stop_tree(self, grace_s: float = 20.0) -> None:
        with self._lock:
            tree, proc, self._tree, self._proc = self._tree, self._proc, None, None
        if tree is not None:
            killed = tree.terminate(grace_s=grace_s)
            if killed:
                log.info("killed %d process(es) that ignored SIGINT", len(killed))
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)  # reap: no zombie left behind

    def _keep_logs(self, dest: Path) -> None:
        assert self._paths is not None
        run_dir = self._paths.run_dir
        dest.mkdir(parents=True, exist_ok=True)
        if (run_dir / "logs").exists():
            shutil.copytree(run_dir / "logs", dest, dirs_exist_ok=True)
        for name in ("gym.log", "setup.log"):
            if (run_dir / name).exists():
                shutil.copy2(run_dir / name, dest / name)

    def _failure(self, what: str) -> GymRuntimeError:
        assert self._paths is not None
        run_dir = self._paths.run_dir
        gym_log = (run_dir / "gym.log").read_text(errors="replace") if (
            run_dir / "gym.log").exists() else ""
        failed = re.search(r"Process `([^`]+)` finished unexpectedly", gym_log)
        server_log = ""
        if failed and (path := run_dir / "logs" / f"{failed.group(1)}.log").exists():
            server_log = path.read_text(errors="replace")
        text = server_log or self._all_logs(gym_log)
        code, reason = diagnose_log(text)
        who = f" (`{failed.group(1)}`)" if failed else ""
        return GymRuntimeError(f"{what}{who}: {reason}", code=code, log_tail=tail(text))

    def _all_logs(self, head_text: str) -> str:
        assert self._paths is not None
        logs = sorted((self._paths.run_dir / "logs").glob("*.log"))
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
