"""EK210: secrets in the package: dotenv and key files, private keys, API tokens.

An environment package is uploaded as a FileSet and its servers run on a cluster others reach:
a key that travels in it is a key given away. The files were read with the package
(``envkit.model.secrets``); this check reports what was found, the value masked. A warning,
so a first run over an old tree reports without blocking.
"""

from __future__ import annotations

from collections.abc import Iterator

from envkit.model.diagnostics import Diagnostic, Severity
from envkit.model.package import display_path
from envkit.model.secrets import secret_file_kind
from envkit.validators._base import Inputs, Rule

__all__ = ["CHECKS", "EK210", "RULES"]

EK210 = Rule(
    "EK210", Severity.WARNING, "secret in the package (dotenv file, private key, API token)",
    "The package is uploaded as a FileSet and its servers run on a shared cluster: a dotenv "
    "file, a private key, a credentials file or an API token (OpenAI, GitHub, AWS, Hugging "
    "Face, Slack, Google, NVIDIA) in any of its files, or a dotenv or key file a vendored "
    "wheel installs, is given to everyone who can read the upload. `envkit submit` refuses "
    "such a package; `--strict` fails it.",
    "Remove the file or the value from the package and read the secret from the environment "
    "at run time (`${oc.env:OPENAI_API_KEY}` in a config, `os.environ` in code); rotate any "
    "key that was ever committed or uploaded. `envkit build` leaves dotenv and key files out "
    "unless its `--include GLOB` names them; a wheel that installs one is built again without "
    "it (its `MANIFEST.in` or package-data globs took it in).",
)

RULES = (EK210,)


def check_secrets(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK210: each secret ``load_package`` found, at its file and line; then each dotenv or
    key file a vendored wheel installs (by its name: a wheel's code is checked as a wheel, and
    a project's own sources are where a stray ``.env`` gets packaged with it)."""
    pkg = inputs.package
    if pkg is None:
        return
    for secret in pkg.secrets:
        shown = display_path(secret.path)
        yield EK210.at(shown, f"`{shown}` holds a secret: {secret.kind} ({secret.shown})",
                       line=secret.line)
    for wheel in pkg.wheels:
        for member in wheel.secret_files:
            kind = secret_file_kind(member)
            yield EK210.at(wheel.path, f"`{wheel.filename}` installs `{member}`, a {kind} "
                                       "(its contents are not shown)")


CHECKS = (
    check_secrets,  # EK210
)
