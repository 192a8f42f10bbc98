"""`e` on the Findings screen writes the finding's report (its section of the md report)
and its bundle; a file already there is overwritten only when `enter` is pressed again."""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from conftest import gero_run, settle
from textual.widgets import Input, Static

from gero_tui.app.app import GeroApp
from gero_tui.app.screens.finding_report_dialog import FindingReportDialog
from gero_tui.app.screens.findings import FindingsScreen


@pytest.fixture(scope="module")
def run_with_findings(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real tiny run with findings (Softmax breaks its masked_rows law on every path)."""
    root = tmp_path_factory.mktemp("report")
    gero_run(root, "--ops", "Softmax", "--dtypes", "float32", "--limit", "1")
    return root


def _cli_markdown(root: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "gero_cli", "findings", "--data-dir",
                           str(root.resolve()), "--format", "md"],
                          capture_output=True, text=True, check=False)
    return done.stdout


@pytest.mark.slow
async def test_e_writes_the_findings_report_and_bundle(run_with_findings: Path,
                                                        tmp_path: Path) -> None:
    app = GeroApp(run_with_findings, screen="findings")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, FindingsScreen) and screen.report is not None
        assert screen.report.findings, "the run has findings"
        finding = screen.highlighted()
        assert finding is not None
        await pilot.press("e")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, FindingReportDialog)
        box = dialog.query_one("#report-path", Input)
        assert box.value.endswith(f"finding-{finding.finding_id}.md")
        target = tmp_path / "out" / "report.md"
        box.value = str(target)
        await pilot.press("enter")
        await settle(pilot)
        report = target.read_text()
        bundle = tmp_path / "out" / f"finding-{finding.finding_id}.tar.gz"
        assert tarfile.is_tarfile(bundle)
        status = str(dialog.query_one("#report-status", Static).render())
        assert "wrote" in status and "replay with" in status
        # Pressed again: nothing is overwritten until enter is pressed once more.
        target.write_text("mine")
        await pilot.press("enter")
        await settle(pilot)
        assert target.read_text() == "mine"
        assert "already there: enter again to overwrite" in str(
            dialog.query_one("#report-status", Static).render())
        await pilot.press("enter")
        await settle(pilot)
        assert target.read_text() == report
    assert report.startswith(f"# Finding {finding.finding_id} of run ")
    # The finding's section is the one `gero findings --format md` writes.
    section = report[report.index("## "):]
    cli = _cli_markdown(run_with_findings)
    assert section.strip() in cli, (section, cli)
    assert f"-o finding-{finding.finding_id}.tar.gz" in section
    assert "gero replay " in section
