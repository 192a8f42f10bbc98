"""``gero env``: the environments runtime releases run in (``--backends RUNTIME==VERSION``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gero_cli.common import EXIT_CLEAN, echo, quiet


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "env", help="make, list and remove the environments of runtime releases",
        description="A runtime release named RUNTIME==VERSION (`gero run --backends "
        "onnxruntime==1.20.1,onnxruntime`) runs in worker processes of its own interpreter. "
        "`gero env add onnxruntime==1.20.1` makes that environment once (with uv when it is "
        "on PATH, else python -m venv and pip, from the package index your pip uses) under "
        "$GERO_ENV_DIR or ~/.cache/gero/envs; `gero env add onnxruntime==1.20.1=/path/to/"
        "python` records an interpreter that has the release already (nothing is "
        "installed).")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True,
                               help="add, list or remove (gero env ACTION --help)")
    add = actions.add_parser(
        "add", help="make a release's environment (once), or record an interpreter",
        description="Make the environment of each RELEASE (RUNTIME==VERSION: the runtime and "
        "NumPy, and for tract also onnx, which its fallback for graphs tract cannot analyse "
        "from their declared input shapes needs), or record RUNTIME==VERSION=PYTHON, an "
        "interpreter that has it. An existing environment is reused as it is.")
    add.add_argument("releases", nargs="+", metavar="RELEASE",
                     help="RUNTIME==VERSION, or RUNTIME==VERSION=PYTHON")
    add.add_argument("--python", type=Path, default=None, metavar="PYTHON",
                     help="the interpreter the environment is made from (default: gero's)")
    add.set_defaults(handler=main_add)
    listing = actions.add_parser("list", help="the environments made or recorded",
                                 description="Each release's environment: its interpreter "
                                 "and Python version.")
    listing.set_defaults(handler=main_list)
    remove = actions.add_parser("remove", help="remove a release's environments",
                                description="Remove every environment of RELEASE (of an "
                                "interpreter you named, only its record).")
    remove.add_argument("releases", nargs="+", metavar="RELEASE", help="RUNTIME==VERSION")
    remove.set_defaults(handler=main_remove)


def _progress(line: str) -> None:
    print(f"  {line}", file=sys.stderr, flush=True)


def main_add(args: argparse.Namespace) -> int:
    from gero_runner.backends import release_env

    for item in args.releases:
        release, python = release_env.split_named(item)
        if python:
            env = release_env.register(release, Path(python))
            echo(f"{env.release.name}: recorded {env.python} (Python {env.python_version})")
            continue
        known = {e.folder for e in release_env.envs()}
        # -q: the installer's lines are progress, which -q silences with the rest
        env = release_env.create(release, args.python,
                                 progress=None if quiet(args) else _progress)
        made = "reused" if env.folder in known else "made"
        echo(f"{env.release.name}: {made} {env.folder} (Python {env.python_version})")
    return EXIT_CLEAN


def main_list(args: argparse.Namespace) -> int:
    from gero_runner.backends import release_env

    found = release_env.envs()
    if not found:
        echo(f"no environments under {release_env.root()} (gero env add RUNTIME==VERSION)")
    for env in found:
        kind = "recorded" if env.external else "made"
        echo(f"{env.release.name:24} Python {env.python_version:8} {kind:8} {env.python}")
    return EXIT_CLEAN


def main_remove(args: argparse.Namespace) -> int:
    from gero_runner.backends import release_env

    for item in args.releases:
        for env in release_env.remove(item):
            what = "forgot" if env.external else "removed"
            echo(f"{env.release.name}: {what} {env.folder}")
    return EXIT_CLEAN
