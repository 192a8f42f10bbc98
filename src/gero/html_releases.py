"""The report's release matrix (issue 42): operator × release, what each release changed
against the reference release (``gero.query.releases``). ``html_report`` renders it."""

from __future__ import annotations

from gero.html_markup import Html, esc, fill, join
from gero.query.releases import ReleaseCell, ReleaseMatrix

ORDER = ("closer", "further", "equally far", "changed", "mixed", "fails or runs", "same")


def _cell(cell: ReleaseCell | None) -> Html:
    if cell is None:
        return Html("<td>—</td>")
    if cell.state == "same":
        return Html('<td class="small">same bits</td>')
    figures = (f"{cell.changed} element(s), max |Δ| {cell.max_abs:.3g}"
               if cell.changed else "")
    return fill('<td><strong>$state</strong> <span class="small">$figures</span></td>',
                state=cell.state, figures=figures)


def release_section(matrix: ReleaseMatrix | None) -> Html:
    """The section, or nothing for a run that compared no releases."""
    if matrix is None:
        return Html("")
    changed = [r for r in matrix.rows if any(c is not None and c.state != "same"
                                             for c in r[2])]
    heads = join(fill("<th>$r</th>", r=r) for r in matrix.releases)
    rows = join(fill("<tr><th>$op</th><td>$dtype</td>$cells</tr>", op=op, dtype=dtype,
                     cells=join(_cell(c) for c in cells)) for op, dtype, cells in changed)
    tally = ", ".join(f"{matrix.count(s)} {s}" for s in ORDER if matrix.count(s))
    same = len(matrix.rows) - len(changed)
    return fill("""<section id="releases" aria-labelledby="releases-h">
<h2 id="releases-h">Runtime releases side by side</h2>
<p>Each setting of a release against the same setting of $reference, on the same inputs:
the same bits, or, at the elements that changed, <strong>closer</strong> to float64,
<strong>further</strong> from it, or <strong>equally far</strong> (a change of rounding, not of
accuracy). Operation and dtype pairs: $tally.</p>
<div class="scroll"><table><thead><tr><th>Operation</th><th>dtype</th>$heads</tr></thead>
<tbody>$rows</tbody></table></div>
<p class="small">$same other operation and dtype pair(s) give the same bits on every
release.</p></section>""", reference=esc(matrix.reference), tally=tally, heads=heads,
                rows=rows or Html('<tr><td colspan="9">no release changed a result</td></tr>'),
                same=same)
