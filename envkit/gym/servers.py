"""Bring a package's Gym servers up the way the training image does, and tear them down.

Gym's own set-up code runs: ``gym env prefetch`` builds the (cached) server venvs, ``gym env
start`` launches the servers, and the head's ``/readyz`` says when they are up. Every process
started here is tracked (``envkit.gym.processes``) and stopped on close, Ctrl-C included.
"""

from __future__ import annotations

import contextlib
import logging
import re
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envkit.gym.diagnose import Where, diagnose, tail
from envkit.gym.events import Fanout, RuntimeEvents, VenvStep, observers
from envkit.gym.gym_main import POLL_S as GYM_HEAD_POLL_S
from envkit.gym.harness import HarnessError, stage_harness
from envkit.gym.head import PORT_TAKEN, ReadinessWatch, describe, head_ready
from envkit.gym.install import (
    RunPaths,
    building,
    closure_key,
    gym_args,
    gym_command,
    gym_env,
    mark_ready,
    offered_wheels,
    offline_install,
    reusable,
    wheel_digests,
    write_uv_toml,
)
from envkit.gym.processes import STOP_GRACE_S, ProcessTree, free_port, short_command
from envkit.gym.ray_cluster import check_reachable, join_failure
from envkit.gym.types import (
    GymRuntimeError,
    GymServers,
    PolicyEndpoint,
    RuntimeOptions,
)
from envkit.gym.venv import GymVenv, ensure_gym_venv
from envkit.gym.venvsteps import PrefetchSteps, stream_lines
from envkit.model.package import MANIFEST, WHEEL_FORMATS
from envkit.supply.cache import cache_root, uv_cache_under
from envkit.supply.wheelcache import link_wheels
from envkit.validate.validate import read_package
from envkit.validators.config_paths import EK104
from envkit.validators.manifest import EK100, EK101
from envkit.validators.spinup import EK701

if TYPE_CHECKING:
    from collections.abc import Callable

    from envkit.model.package import Package

__all__ = ["GymRuntime", "launchable"]

log = logging.getLogger(__name__)

_RAY_START_ATTEMPTS = 3
"""Launches when the host, not the package, failed one (``_HOST_RACES``)."""
_PORT_RACE = "a port picked free was taken before Gym bound it"
_HOST_RACES = {
    "timed out during startup": "Ray did not start in time (machine busy)",
    "address already in use": _PORT_RACE,
    PORT_TAKEN: _PORT_RACE,
}
"""Launch log text -> what it means: the host, not the package, failed the launch (Ray's fixed
window to register its raylet, or a head port Ray's daemons took before Gym bound it)."""

_FAILED = re.compile(r"Process `([^`]+)` finished unexpectedly")
"""How Gym's head names the server whose process exited (``RunHelper.poll``)."""


def launchable(package: Path) -> Package:
    """``package`` as validation reads it, refused only where a launch cannot start:
    everything else is the validator's to report.

    :raises GymRuntimeError: EK100, EK101 or EK104, before a venv or a process exists.
    """
    pkg = read_package(package)
    manifest, hint = package / MANIFEST, f"run `envkit validate {package}`"
    if pkg.manifest is None:
        msg = f"{manifest} does not exist; {hint}"
        raise GymRuntimeError(msg, code=EK100.code)
    if not pkg.manifest.ok or not isinstance(pkg.manifest.data, dict):
        msg = f"{manifest}: {pkg.manifest.error or 'not a mapping'}; {hint}"
        raise GymRuntimeError(msg, code=EK101.code)
    if not pkg.config_paths():
        msg = f"{manifest}: `config_paths` missing or empty; {hint}"
        raise GymRuntimeError(msg, code=EK104.code)
    return pkg


class GymRuntime:
    """``with GymRuntime(pkg, policy, options) as servers:`` -- servers up, then all torn down:
    a start that fails half-way still closes what it spawned.

    ``events`` are told about each step of a start (``envkit.gym.events``); most callers hold
    a :class:`~envkit.gym.session.GymSession` instead, which owns the policy side too.
    """

    def __init__(self, package: Path, policy: PolicyEndpoint, options: RuntimeOptions,
                 events: RuntimeEvents | None = None) -> None:
        self.package = package.resolve()
        self.policy = policy
        self.options = options
        self.events: RuntimeEvents = Fanout(*(events,) if events else (), *observers())
        self.model = launchable(self.package)
        self.format = self.model.format or ""
        self.config_paths = [str(p) for p in self.model.manifest_data["config_paths"]]
        self._proc: subprocess.Popen[Any] | None = None
        self._tree: ProcessTree | None = None
        self._paths: RunPaths | None = None
        self._wheels: list[Path] = []  # wheels/ as offered to uv (pool_wheels)
        self._uv_cache = uv_cache_under(self.options.cache_dir or cache_root())
        self._lock = threading.Lock()
        self._closed = False
        """Set by a final :meth:`close`: nothing more is started (close may come from another
        thread while :meth:`start` runs, e.g. Ctrl-C on the driver of a Ray run)."""
        self.servers: GymServers | None = None
        self.venv_dir: Path | None = None
        """The server venv tree (``<type>/<impl>/.venv``), known once set-up has run."""
        # offline: the servers' network namespace reaches no outside cluster
        self.ray_address = None if options.offline else options.ray_address

    def __enter__(self) -> GymServers:
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(self, *exc: object) -> None:
        self.close()

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
        """Build or reuse the venvs, launch, wait until every server is ready.

        :raises GymRuntimeError: with the likely EK code, the failed server and its log tail.
        """
        t0 = time.monotonic()
        check_reachable(self.ray_address)
        gym, venv_dir, env = self._setup()
        self.events.on_setup_done(venv_dir, time.monotonic() - t0)
        attempt = 1
        while True:
            try:
                self.servers = self._launch(gym, venv_dir, env)
            except GymRuntimeError as exc:
                race = next((why for text, why in _HOST_RACES.items() if text in exc.log_tail),
                            None)
                if attempt == _RAY_START_ATTEMPTS or race is None:
                    raise
            else:
                return self.servers
            attempt += 1
            log.warning("%s; launch %d of %d", race, attempt, _RAY_START_ATTEMPTS)
            self._stop_tree(final=False)

    def close(self, grace_s: float = STOP_GRACE_S, *, final: bool = True) -> None:
        """Stop every process this runtime started; safe to call twice, and from another thread.

        ``grace_s``: before what ignored SIGTERM is killed; ``final=False``: it starts again.
        """
        with self._lock:
            self._closed = self._closed or final
        self._stop_tree(grace_s, final=final)
        if self._paths is not None:
            if self.options.keep_logs is not None:
                self._keep_logs(self.options.keep_logs)
            shutil.rmtree(self._paths.run_dir, ignore_errors=True)
            shutil.rmtree(self._paths.ray_tmp, ignore_errors=True)
            self._paths = None

    def failure(self) -> GymRuntimeError | None:
        """Gym's head has exited: why (``server``: the one whose exit brought it down, when Gym
        named it), else None."""
        if self._proc is not None and self._proc.poll() is not None:
            return self._failure("Gym exited while serving", stage="serve")
        return None

    def server_log(self, name: str) -> str:
        """Server ``name``'s log so far ("" when it wrote none); readable until :meth:`close`
        (``RuntimeOptions.keep_logs`` keeps a copy)."""
        if self._paths is None:
            return ""
        path = self._log_dir() / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def logs(self) -> dict[str, str]:
        """Every server's log so far, by instance name."""
        if self._paths is None:
            return {}
        return {p.stem: p.read_text(errors="replace")
                for p in sorted(self._log_dir().glob("*.log"))}

    def _log_dir(self) -> Path:
        assert self._paths is not None
        return self._paths.run_dir / "logs"

    # -- set-up ----------------------------------------------------------------------------
    def _setup(self) -> tuple[GymVenv, Path, dict[str, str]]:
        self._refuse_if_closed()
        gym = ensure_gym_venv(self.options.gym_version, python=self.options.gym_python,
                              allow_python_override=self.options.allow_python_override,
                              on_step=self.events.on_venv)
        root = self.options.cache_dir or cache_root()
        harness = ("harness=offline-v1",) if self.format == "adapter-wheels-v1" else ()
        stamped = root / "tree-stamps"  # the wheels' hashes kept: a stat each, not a read
        wheels = (wheel_digests(self.package / "wheels", stamped)
                  if self.format in WHEEL_FORMATS else {})
        key = closure_key(self.package, self.format, self.config_paths, gym.gym_version,
                          gym.python_version, f"override={gym.python_override}", *harness,
                          wheels=wheels)
        self.venv_dir = venv_dir = root / "server-venvs" / key
        (root / "runs").mkdir(parents=True, exist_ok=True)
        self._paths = paths = RunPaths(Path(tempfile.mkdtemp(prefix="run-", dir=root / "runs")),
                                       Path(tempfile.mkdtemp(prefix="envkit-gymray-")))
        shutil.copytree(self.package, paths.work, copy_function=link_wheels,
                        ignore=shutil.ignore_patterns("__pycache__", ".venv"))
        self._wheels = offered_wheels(self.format, self.package / "wheels", root, wheels)
        find_links = sorted({w.parent for w in self._wheels})
        self._stage_harness(gym, paths.work, find_links)
        uv_toml = write_uv_toml(gym, paths.run_dir, offline=self.options.offline)
        env = gym_env(gym, paths, uv_toml, self._uv_cache, find_links,
                      joins_ray=bool(self.ray_address))
        with building(venv_dir):
            if not reusable(venv_dir, offline=self.options.offline):
                self._build_venvs(gym, venv_dir, env)
            else:  # the CLI's progress says "server venvs: cached (<key>)"
                self.events.on_venv(VenvStep("server venvs", None, "cached", 0.0, key))
        return gym, venv_dir, env

    def _stage_harness(self, gym: GymVenv, work: Path, find_links: list[Path]) -> None:
        """adapter-wheels-v1: the built-in harness with offline requirements (``harness``)."""
        try:
            stage_harness(gym.root, work, self.model, find_links or None)
        except (HarnessError, OSError) as exc:
            code = exc.code if isinstance(exc, HarnessError) else None
            msg = f"cannot stage the adapter harness: {exc}"
            raise GymRuntimeError(msg, code=code) from None

    def _args(self, venv_dir: Path, head_port: int) -> list[str]:
        assert self._paths is not None
        return gym_args(self.config_paths, self.policy, venv_dir, self._paths.run_dir, head_port,
                        self._uv_cache, self.ray_address)

    def _build_venvs(self, gym: GymVenv, venv_dir: Path, env: dict[str, str]) -> None:
        """Install 1 by ``gym env prefetch`` (Gym's own setup code), install 2 of ``wheels/``."""
        assert self._paths is not None
        log.info("building server venvs in %s (first run of this package)", venv_dir)
        shutil.rmtree(venv_dir, ignore_errors=True)  # never reuse a half-built tree
        cmd = gym_command(gym, "env", "prefetch", *self._args(venv_dir, free_port()))
        steps = PrefetchSteps(self.events.on_venv)
        out = self._run_logged(cmd, env, "setup", on_line=steps.line)
        steps.finish()
        if out.returncode != 0:
            text = self._all_logs(out.stdout)
            found = diagnose(text, Where.INSTALL)
            offline = " with --offline: wheels/ must cover every requirement" if (
                self.options.offline) else ""
            msg = f"building the server venvs failed{offline}: {found.reason}"
            raise GymRuntimeError(msg, code=found.code, log_tail=tail(text),
                                  reason=found.reason, evidence=found.evidence)
        if self.format in WHEEL_FORMATS:
            offline_install(self._wheels, venv_dir, env, self.events.on_venv)
        mark_ready(venv_dir, self.package, offline=self.options.offline)

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

    def _run_logged(self, cmd: list[str], env: dict[str, str], name: str,
                    on_line: Callable[[str], None]) -> subprocess.CompletedProcess[str]:
        assert self._paths is not None
        run_dir = self._paths.run_dir
        proc, tree = self._spawn(cmd, env, stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        deadline = time.monotonic() + self.options.startup_timeout_s
        stdout = stream_lines(proc.stdout, on_line, deadline)
        if stdout is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(deadline - time.monotonic(), 1))
        tree.terminate()
        if stdout is None or proc.returncode is None:
            msg = f"{name} timed out after {self.options.startup_timeout_s:g}s"
            raise GymRuntimeError(msg) from None
        with self._lock:
            self._proc = self._tree = None
        self._refuse_if_closed()
        (run_dir / f"{name}.log").write_text(stdout)
        return subprocess.CompletedProcess(cmd, proc.returncode, stdout)

    # -- launch and health -----------------------------------------------------------------
    def _launch(self, gym: GymVenv, venv_dir: Path, env: dict[str, str]) -> GymServers:
        assert self._paths is not None
        head_port = free_port()
        cmd = gym_command(gym, "env", "start", *self._args(venv_dir, head_port))
        with (self._paths.run_dir / "gym.log").open("wb") as sink:
            proc, tree = self._spawn(cmd, env, stdout=sink)
        head = f"http://127.0.0.1:{head_port}"
        self.events.on_launch(head)
        watch = ReadinessWatch(head, self.events)
        limit_s = self.options.ready_timeout_s or self.options.startup_timeout_s
        while not head_ready(head):
            tree.refresh()
            self._refuse_if_closed()
            if proc.poll() is not None:
                raise self._failure("a server failed to start", not_ready=watch.not_ready())
            if watch.elapsed() > limit_s:
                raise self._timeout(limit_s, watch.not_ready())
            watch.poll()
            time.sleep(GYM_HEAD_POLL_S)  # /readyz as often as the head polls its servers
        tree.refresh()
        watch.poll()  # the head said ready: the last servers answer now
        servers = describe(head, self._log_dir())
        self.events.on_ready(servers, watch.elapsed())
        return servers

    # -- teardown and evidence -------------------------------------------------------------
    def _stop_tree(self, grace_s: float = STOP_GRACE_S, *, final: bool = True) -> None:
        """Stop the tree; what outlived the grace is a debug note (Ray's daemons and Gym's head
        always do, and nothing is lost by then)."""
        with self._lock:
            tree, proc, self._tree, self._proc = self._tree, self._proc, None, None
        if tree is not None:
            started = time.monotonic()
            killed = tree.terminate(grace_s=grace_s)
            names = ", ".join(sorted({short_command(p.cmdline) for p in killed}))
            note = f"; killed {len(killed)} process(es) after {grace_s:g}s: {names}" if (
                killed) else ""
            log.debug("Gym stopped in %.1fs (%s)%s", time.monotonic() - started,
                      "final" if final else "to start again", note)
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

    def _failure(self, what: str, *, stage: str = "start",
                 not_ready: tuple[str, ...] = ()) -> GymRuntimeError:
        """Gym exited: the server it names, that server's log (else every log) and its rule."""
        assert self._paths is not None
        gym_path = self._paths.run_dir / "gym.log"
        gym_log = gym_path.read_text(errors="replace") if gym_path.exists() else ""
        named = _FAILED.search(gym_log)
        server = named.group(1) if named else None
        text = (self.server_log(server) if server else "") or self._all_logs(gym_log)
        found = diagnose(text, Where.START, offline=self.options.offline)
        who = f" (`{server}`)" if server else ""
        what = join_failure(self.ray_address, text) or what
        return GymRuntimeError(f"{what}{who}: {found.reason}", code=found.code,
                               log_tail=tail(text), server=server, not_ready=not_ready,
                               stage=stage, reason=found.reason, evidence=found.evidence)

    def _timeout(self, limit_s: float, not_ready: tuple[str, ...]) -> GymRuntimeError:
        """The readiness wait ran out: the one late server's log (else every log), EK701."""
        server = not_ready[0] if len(not_ready) == 1 else None
        text = (self.server_log(server) if server else "") or self._all_logs("")
        late = f" ({', '.join(f'`{n}`' for n in not_ready)} not ready)" if not_ready else ""
        msg = f"servers not ready after {limit_s:g}s{late}: {EK701.title}"
        return GymRuntimeError(msg, code=EK701.code, log_tail=tail(text), server=server,
                               not_ready=not_ready, stage="start", timed_out=True,
                               reason=EK701.title)

    def _all_logs(self, head_text: str) -> str:
        return "\n".join([head_text, *self.logs().values()])

