"""Environments of runtime releases (``RUNTIME==VERSION``): where each release's interpreter
is, and making one (``gero env add``).

An environment is made once under gero's cache directory (``$GERO_ENV_DIR``, else
``$XDG_CACHE_HOME/gero/envs``, else ``~/.cache/gero/envs``), one folder per release and
Python minor version, holding the runtime and NumPy (and onnx for tract), installed with
uv when it is on PATH, else with ``python -m venv`` and pip, from the package index the
user's pip uses. A folder is complete once its record (``gero-env.json``) is written,
last. An interpreter that has the release already is named instead (``gero env add
onnxruntime==1.20.1=/path/to/python``, a record without a venv; or for one process and
its workers, ``$GERO_RELEASE_PYTHONS``). The worker a release runs in (``release_worker``)
is a script of gero's that imports no gero: it is run by its path, nothing of gero is
installed into an environment.
This module imports no NumPy and no runtime (``gero env list`` and name checks are cheap).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gero_runner.errors import GeroError

DIR_ENV = "GERO_ENV_DIR"
"""The folder of the environments, when not the user's cache directory."""
PYTHONS_ENV = "GERO_RELEASE_PYTHONS"
"""``RELEASE=PYTHON,...``: interpreters named for this process and its workers (``--env``)."""
RECORD = "gero-env.json"
WORKER_RUNTIMES = {"onnxruntime": "onnxruntime", "openvino": "openvino", "tract": "tract"}
"""The runtimes ``release_worker`` can drive, with the distribution that installs each."""
EXTRA_PACKAGES = {"tract": ("onnx",)}
"""What an environment holds besides the runtime and NumPy: tract's worker needs onnx for
the graphs tract cannot analyse from their declared input shapes (as ``backends.tract``)."""
_VERSION = re.compile(r"[0-9][0-9A-Za-z.+!-]*")


class NoWheel(GeroError):
    """The index has no installable build of that release for this Python and platform."""


@dataclass(frozen=True)
class Release:
    runtime: str
    version: str

    @property
    def name(self) -> str:
        return f"{self.runtime}=={self.version}"

    @property
    def requirement(self) -> str:
        return f"{WORKER_RUNTIMES[self.runtime]}=={self.version}"


@dataclass(frozen=True)
class Env:
    release: Release
    python: Path
    """The interpreter that has the release."""
    python_version: str
    folder: Path
    """Its folder under the environments' root (the venv, or only the record)."""
    external: bool
    """An interpreter the user named: removing the record leaves it alone."""


def is_release(name: str) -> bool:
    return "==" in name


def parse(name: str) -> Release:
    """``RUNTIME==VERSION`` as a Release; one sentence when it is not one gero can run."""
    runtime, _, version = name.partition("==")
    if runtime not in WORKER_RUNTIMES:
        raise GeroError(f"{name!r}: releases side by side are supported for "
                        f"{', '.join(WORKER_RUNTIMES)}, not {runtime!r}")
    if not _VERSION.fullmatch(version):
        raise GeroError(f"{name!r}: the version after '==' must be a release number "
                        "such as 1.20.1")
    return Release(runtime, version)


def root() -> Path:
    if os.environ.get(DIR_ENV):
        return Path(os.environ[DIR_ENV])
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "gero" / "envs"


def _read(folder: Path) -> Env | None:
    try:
        record = json.loads((folder / RECORD).read_text())
        return Env(parse(record["release"]), Path(record["python"]),
                   str(record["python_version"]), folder, bool(record.get("external")))
    except (OSError, ValueError, KeyError, TypeError, GeroError):
        return None  # a folder being made (no record yet), or not gero's


def envs() -> list[Env]:
    """Every complete environment under ``root()``, by release and Python."""
    found = [_read(f) for f in sorted(root().glob("*")) if f.is_dir()]
    return [e for e in found if e is not None]


def split_named(item: str) -> tuple[str, str]:
    """``RUNTIME==VERSION=PYTHON`` as (release, python); ``RUNTIME==VERSION`` as (it, "")."""
    head, _, tail = item.rpartition("=")
    if not is_release(head) or head.endswith("="):
        head, tail = item, ""
    if not is_release(head):
        raise GeroError(f"{item!r}: name a release as RUNTIME==VERSION (onnxruntime==1.20.1)")
    return head, tail


def named_pythons() -> dict[str, Path]:
    """The interpreters ``$GERO_RELEASE_PYTHONS`` names, by release."""
    named: dict[str, Path] = {}
    for item in filter(None, (i.strip() for i in os.environ.get(PYTHONS_ENV, "").split(","))):
        release, python = split_named(item)
        if not python:
            raise GeroError(f"{PYTHONS_ENV}: {item!r} is not RUNTIME==VERSION=PYTHON")
        named[parse(release).name] = Path(python)
    return named


def use_pythons(items: list[str]) -> None:
    """Name interpreters for releases, ``RUNTIME==VERSION=PYTHON`` each, for this process
    and every process it starts (``$GERO_RELEASE_PYTHONS``); each must have its release."""
    named = {k: str(v) for k, v in named_pythons().items()}
    for item in items:
        release, python = split_named(item)
        if not python:
            raise GeroError(f"--env {item!r}: name the interpreter, RUNTIME==VERSION=PYTHON")
        have = installed_version(Path(python), parse(release)) if Path(python).exists() else None
        if have != parse(release).version:
            raise GeroError(f"--env {item}: {python} does not have {release} and NumPy"
                            + (f" (it has {have})" if have else ""))
        named[parse(release).name] = python
    os.environ[PYTHONS_ENV] = ",".join(f"{k}={v}" for k, v in named.items())


def python_for(name: str) -> Path | None:
    """The interpreter of that release: one named for this process, else the environment
    made with this Python's minor version, else any made for it; None when there is none."""
    release = parse(name)
    named = named_pythons().get(release.name)
    if named is not None:
        return named
    mine = f"{sys.version_info[0]}.{sys.version_info[1]}"
    have = [e for e in envs() if e.release == release]
    have.sort(key=lambda e: (not e.python_version.startswith(mine + "."), e.python_version))
    return have[0].python if have else None


def add_hint(name: str) -> str:
    return (f"gero env add {name} (or name an interpreter that has it: "
            f"--env {name}=/path/to/python, or gero env add {name}=/path/to/python)")


def _python_version(python: Path) -> str:
    try:
        done = subprocess.run([str(python), "-c", "import sys; print('%d.%d.%d' % "
                               "sys.version_info[:3])"], capture_output=True, text=True,
                              timeout=60)
    except OSError as e:
        raise GeroError(f"{python}: cannot run it ({e.strerror})") from None
    if done.returncode != 0:
        raise GeroError(f"{python}: not a Python interpreter ({done.stderr.strip()[-200:]})")
    return done.stdout.strip()


def installed_version(python: Path, release: Release) -> str | None:
    """The version of the release's distribution that ``python`` has (None: none), and
    whether it imports NumPy (a worker needs both)."""
    code = (f"import numpy; from importlib import metadata; "
            f"print(metadata.version({WORKER_RUNTIMES[release.runtime]!r}))")
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True,
                          timeout=120)
    return done.stdout.strip() if done.returncode == 0 else None


def _folder(release: Release, python_version: str) -> Path:
    minor = ".".join(python_version.split(".")[:2])
    return root() / f"{release.runtime}-{release.version}-py{minor}"


def _write_record(folder: Path, env: Env) -> None:
    record = {"release": env.release.name, "python": str(env.python),
              "python_version": env.python_version, "external": env.external}
    (folder / RECORD).write_text(json.dumps(record, indent=1) + "\n")


def register(name: str, python: Path) -> Env:
    """Record an interpreter that has the release already (nothing is installed)."""
    release = parse(name)
    version = _python_version(python)
    have = installed_version(python, release)
    if have != release.version:
        raise GeroError(f"{python} has {release.runtime} {have} and NumPy, not {release.name}"
                        if have else f"{python} cannot import {release.runtime} and NumPy")
    folder = root() / f"{release.runtime}-{release.version}-external"
    folder.mkdir(parents=True, exist_ok=True)
    env = Env(release, python.absolute(), version, folder, True)
    _write_record(folder, env)
    return env


Progress = Callable[[str], None]


def create(name: str, python: Path | None = None, progress: Progress | None = None) -> Env:
    """The environment of the release for ``python`` (default: this interpreter), made once:
    an existing one is returned as it is. ``progress`` gets the installer's lines."""
    release = parse(name)
    base = python or Path(sys.executable)
    python_version = _python_version(base)
    folder = _folder(release, python_version)
    existing = _read(folder)
    if existing is not None:
        return existing
    say = progress or (lambda line: None)
    partial = folder.with_name(f".{folder.name}.partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    partial.parent.mkdir(parents=True, exist_ok=True)
    uv = uv_binary()
    try:
        if uv is not None:
            say(f"creating {folder.name} with uv")
            _call([uv, "venv", "--quiet", "--python", str(base), str(partial)], say)
            # every index as pip weighs them (uv's default takes the first that has the
            # package, and misses a release another index has)
            _install([uv, "pip", "install", "--python", str(partial / "bin" / "python"),
                      "--index-strategy", "unsafe-best-match", *_pip_index_options(base)],
                     release, say)
        else:
            say(f"creating {folder.name} with python -m venv and pip")
            _call([str(base), "-m", "venv", str(partial)], say)
            _install([str(partial / "bin" / "python"), "-m", "pip", "install",
                      "--disable-pip-version-check"], release, say)
        # The venv's interpreter by its final path (a venv may not be moved once made: its
        # scripts name their folder, but bin/python and site-packages do not).
        partial.rename(folder)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    env = Env(release, folder / "bin" / "python", python_version, folder, False)
    if installed_version(env.python, release) != release.version:
        shutil.rmtree(folder, ignore_errors=True)
        raise GeroError(f"{name}: the new environment does not import it (removed)")
    _write_record(folder, env)
    return env


def uv_binary() -> str | None:
    """uv: the one installed with gero (a dependency), else one on PATH; None: pip."""
    try:
        from uv import find_uv_bin

        return str(find_uv_bin())
    except (ImportError, FileNotFoundError):
        return shutil.which("uv")


def _pip_index_options(python: Path) -> list[str]:
    """The index pip is configured with (``pip config``), as uv's options: uv reads no
    pip.conf, and the release must come from the index the user's pip uses."""
    done = subprocess.run([str(python), "-m", "pip", "config", "list"], capture_output=True,
                          text=True, timeout=60)
    options: list[str] = []
    flags = {"index-url": "--index-url", "extra-index-url": "--extra-index-url",
             "find-links": "--find-links"}
    for line in done.stdout.splitlines():
        key, _, value = line.partition("=")
        flag = flags.get(key.rpartition(".")[2])
        if flag:
            for item in value.strip().strip("'\"").split():
                options += [flag, item]
    return options


def _call(command: list[str], say: Progress) -> str:
    """Run an installer step, each of its lines to ``say``; its output, or a GeroError
    with its last lines."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
    assert process.stdout is not None
    lines = []
    for line in process.stdout:
        lines.append(line.rstrip())
        say(line.rstrip())
    if process.wait() != 0:
        raise _Failed("\n".join(lines))
    return "\n".join(lines)


class _Failed(Exception):
    pass


_PIP_VERSIONS = re.compile(r"\(from versions: ([^)]*)\)")


def _install(command: list[str], release: Release, say: Progress) -> None:
    try:
        _call([*command, release.requirement, "numpy",
               *EXTRA_PACKAGES.get(release.runtime, ())], say)
    except _Failed as e:
        raise no_wheel_or_failure(release, str(e)) from None


def no_wheel_or_failure(release: Release, output: str) -> GeroError:
    """The installer's failure as one sentence: for a release with no build here, the
    releases that have one (pip lists them; uv says there is none)."""
    where = f"Python {sys.version_info[0]}.{sys.version_info[1]} on {sys.platform}"
    listed = _PIP_VERSIONS.search(output)
    if listed is not None:
        versions = [v.strip() for v in listed.group(1).split(",") if v.strip()]
        have = ", ".join(versions) if versions and versions[0] != "none" else "none"
        return NoWheel(f"{release.name} has no build for {where} on the package index; "
                       f"releases that have one: {have}")
    uv_says = any("no version of" in line or "no wheels" in line.lower()
                  for line in output.splitlines())
    if uv_says:  # uv names none: pip's index lists the releases this Python can install
        try:
            have = ", ".join(published(release.runtime))
        except GeroError:
            have = "(pip index versions lists none)"
        return NoWheel(f"{release.name} has no build for {where} on the package index; "
                       f"releases that have one: {have}")
    last = [line for line in output.splitlines() if line.strip()][-3:]
    return GeroError(f"{release.name}: the install failed: {' / '.join(last)}")


_FINAL = re.compile(r"\d+(\.\d+)*")


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def published(runtime: str, python: Path | None = None) -> list[str]:
    """The final releases of the runtime's distribution on the user's pip index that this
    Python can install (``pip index versions``), oldest first."""
    distribution = WORKER_RUNTIMES.get(runtime) or parse(f"{runtime}==0").runtime
    done = subprocess.run([str(python or sys.executable), "-m", "pip", "index", "versions",
                           distribution], capture_output=True, text=True, timeout=300)
    found = re.search(r"Available versions: (.*)", done.stdout)
    if done.returncode != 0 or found is None:
        raise GeroError(f"pip index versions {distribution} gave no list of releases "
                        f"({(done.stderr.strip() or done.stdout.strip())[-200:]}): give "
                        "them with --releases")
    return sorted((v.strip() for v in found.group(1).split(",") if _FINAL.fullmatch(v.strip())),
                  key=version_key)


def remove(name: str) -> list[Env]:
    """Remove the release's environments (an interpreter the user named: its record only)."""
    release = parse(name)
    gone = [e for e in envs() if e.release == release]
    if not gone:
        raise GeroError(f"no environment of {release.name} under {root()}")
    for env in gone:
        shutil.rmtree(env.folder)
    return gone
