"""Options shared by several subcommands."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_data_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir", type=Path, default=None,
        help="data root (default: $GERO_DATA_DIR or ./data)",
    )


def data_dir(args: argparse.Namespace) -> Path:
    if args.data_dir is not None:
        return Path(args.data_dir)
    # Deferred: the runner's store imports pyarrow (~0.15 s), which `gero tui` avoids.
    from gero_runner.storage.store import default_data_root

    return default_data_root()


def split_list(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]
