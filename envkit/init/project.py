"""``envkit init``: what a new project holds, from the request to the files.

Everything but :func:`init_project` is a pure function of the request, so the tests render a
project in memory.
"""

from __future__ import annotations

import dataclasses
import json
import platform
import re
from dataclasses import dataclass
from pathlib import Path

from envkit import __version__
from envkit.errors import UsageError
from envkit.init.render import load_template, render_files
from envkit.init.write import write_new_dir
from envkit.model.jobspec import LoraSettings

__all__ = ["FORMATS", "RUNNERS", "InitNameError", "InitRequest", "InitResult", "context_for",
           "init_project", "job_document", "next_steps", "project_files", "server_name"]

FORMATS = ("wheels-v1", "native-v1")
"""What ``--format`` may ask of the ``gym`` template."""

_ADAPTER = "adapter-wheels-v1"


class InitNameError(UsageError):
    """No Python identifier can be made of the environment's name."""


@dataclass(frozen=True, slots=True)
class InitRequest:
    directory: Path
    template: str = "gym"
    name: str | None = None
    """``metadata.name``; default: the directory's name."""
    format: str = "wheels-v1"
    arch: str = "x86_64"
    ci: bool = True


@dataclass(frozen=True, slots=True)
class InitResult:
    directory: Path
    template: str
    name: str
    format: str
    arch: str
    files: tuple[str, ...]
    next_steps: tuple[str, ...]


def server_name(name: str) -> str:
    """The Gym implementation dir / Python module for ``name``: snake_case, a letter first.

    >>> server_name("My-Env.v2")
    'my_env_v2'

    :raises InitNameError: nothing of ``name`` makes an identifier.
    """
    snake = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
    if not snake or not snake[0].isalpha():
        msg = (f"cannot make a Python module name of {name!r}: give --name, starting with a "
               "letter (e.g. --name my-env)")
        raise InitNameError(msg)
    return snake


def context_for(request: InitRequest) -> dict[str, str]:
    """Every ``{{key}}`` the templates use, for ``request``."""
    name = request.name or request.directory.resolve().name
    server = server_name(name)
    fmt = _ADAPTER if request.template == "verifiers" else request.format
    offline = fmt == "wheels-v1"
    return {
        "name": name,
        "server": server,
        "class": "".join(part.capitalize() for part in server.split("_")),
        "format": fmt,
        "arch": request.arch,
        "offline": " --offline" if offline else "",
        "offline_toml": "true" if offline else "false",
        "offline_why": _OFFLINE_WHY[fmt],
        "make": "convert verifiers" if request.template == "verifiers" else "build",
        "runner": RUNNERS[request.arch],
        "envkit_version": __version__,
        "ci_note": _CI_NOTE if request.ci else "",
    }


RUNNERS = {"x86_64": "ubuntu-latest", "aarch64": "ubuntu-24.04-arm"}
"""The GitHub-hosted runner of each cluster architecture: smoke and probe install the
package's wheels and start its servers, so the workflow runs where those wheels run."""

_OFFLINE_WHY = {
    "wheels-v1": "wheels/ covers every install: the cluster needs no egress",
    "native-v1": "native-v1 installs its dependencies at spin-up: it needs egress",
    _ADAPTER: "Gym's verifiers_agent installs verifiers from git at job start: egress",
}
_CI_NOTE = ("`.pre-commit-config.yaml` and `.github/workflows/envkit.yml` run the same checks "
            "on every commit and pull request.\n")


def job_document(name: str) -> dict[str, object]:
    """The platform's ``rl`` GRPO job for ``name`` with the platform's LoRA defaults. Refs use
    a lower-case slug of ``name``: the platform's FileSet names allow no capitals.

    >>> job_document("My Env")["environment"]
    'default/my-env'
    """
    lora = {f.name: f.default for f in dataclasses.fields(LoraSettings)
            if f.default is not None and f.default is not dataclasses.MISSING}
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return {
        "model": "default/base-model",
        "dataset": f"default/{slug}-dataset",
        "environment": f"default/{slug}",
        "training": {"type": "grpo", "finetuning_type": "lora", "lora": lora,
                     "max_new_tokens": 16},
        "output": {"name": f"{slug}-grpo"},
    }


def project_files(request: InitRequest) -> dict[str, bytes]:
    """Every file of the new project: project path -> bytes."""
    context = context_for(request)
    files = render_files(load_template(request.template), context, ci=request.ci)
    job = json.dumps(job_document(context["name"]), indent=2) + "\n"
    files["jobs/grpo.json"] = job.encode()
    return files


def next_steps(request: InitRequest, context: dict[str, str],
               host_arch: str | None = None) -> tuple[str, ...]:
    """What to run next, in the new directory. ``smoke`` starts the package's servers from its
    wheels, so on a ``host_arch`` (default: this machine's) other than the package's it is
    named for a machine that has it."""
    offline = context["offline"]
    host = host_arch or platform.machine()
    smoke = f"envkit smoke package --dataset package-data{offline}"
    if host != request.arch:
        smoke += f"   # on an {request.arch} machine (the workflow's runner)"
    make = ((f"envkit build resources_servers/{context['server']} --format {context['format']} "
            f"--arch {request.arch} -o package")
            if request.template == "gym" else
            f"envkit convert verifiers --hub-id local/{context['name']} "
            f"--source environments/{context['server']} --arch {request.arch} "
            "-o package --dataset-dir package-data --validation-fraction 0.25")
    here = request.directory.resolve() == Path.cwd().resolve()
    return (*(() if here else (f"cd {request.directory}",)), make,
            f"envkit validate package{offline}", smoke)


def init_project(request: InitRequest) -> InitResult:
    """Write the new project at ``request.directory``.

    :raises InitNameError: no module name can be made of the name.
    :raises InitTargetError: the directory exists and is not empty (nothing is written).
    """
    files = project_files(request)
    write_new_dir(request.directory, files)
    context = context_for(request)
    return InitResult(request.directory, request.template, context["name"], context["format"],
                      request.arch, tuple(sorted(files)), next_steps(request, context))
