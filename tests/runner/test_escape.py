"""Names shown as text that cannot act: on a terminal, in Markdown, in a shell command."""

from __future__ import annotations

import shlex

import pytest
from markdown_it import MarkdownIt

from gero_runner.escape import (
    for_markdown,
    for_shell,
    for_terminal,
    markdown_code,
    markdown_fence,
)

HOSTILE = ("\x1b]0;pwned\x07", "\x1b[2J", "\u202e", "<script>alert(1)</script>",
           "[x](http://e)", "`` ` ``", "|", "![i](http://e/i.png)", "*a* _b_ ~~c~~ $x$",
           "&amp; &lt;b&gt;", "# head", "a\\", "\\`", "<http://e>")
"""What a run directory, a model's path or a graph's names may hold."""
KEPT = ("", "Conv_0/relu", "µ", "日本", "😀", "naïve café", "x = 1, y = 2", "a\\b")
"""Printable text, shown as it is."""
_CONTROLS = [chr(c) for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))]
_BIDI = [chr(c) for c in (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F),
                          *range(0x2066, 0x206A))]


def _render(markdown: str) -> str:
    """CommonMark with GitHub's tables, raw HTML allowed: what a pasted report becomes."""
    return str(MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown))


@pytest.mark.parametrize("text", KEPT)
def test_printable_text_is_kept_as_it_is(text: str) -> None:
    assert for_terminal(text) == text
    assert for_terminal(text, newlines=True) == text


@pytest.mark.parametrize("char", [*_CONTROLS, *_BIDI, "\u2028", "\u2029", "\udcff"])
def test_every_control_bidi_mark_and_lone_surrogate_is_a_visible_escape(char: str) -> None:
    shown = for_terminal(f"a{char}b")
    code = ord(char)
    assert shown == (f"a\\x{code:02x}b" if code < 0x100 else f"a\\u{code:04x}b")
    assert shown.isprintable()
    shown.encode("utf-8")  # a surrogate could not be written at all


def test_only_controls_become_only_escapes() -> None:
    assert for_terminal("\x1b\x07\r\x00\x7f\x9b") == "\\x1b\\x07\\x0d\\x00\\x7f\\x9b"


def test_a_newline_stays_only_where_the_caller_asks() -> None:
    assert for_terminal("a\nb\r\n") == "a\\x0ab\\x0d\\x0a"
    assert for_terminal("a\nb\r\n", newlines=True) == "a\nb\\x0d\n"
    assert for_terminal("a\tb", newlines=True) == "a\\x09b"


def test_any_value_is_shown_by_its_str() -> None:
    assert for_terminal(None) == "None"
    assert for_terminal(1.5) == "1.5"
    assert for_markdown(["a|b"]) == "\\['a\\|b'\\]"


@pytest.mark.parametrize("name", [*HOSTILE, *KEPT])
def test_markdown_shows_a_name_literally_and_starts_nothing(name: str) -> None:
    html = _render(f"- {for_markdown(name)}\n")
    assert html == f"<ul>\n<li>{_html_text(for_terminal(name))}</li>\n</ul>\n"


@pytest.mark.parametrize("name", [*HOSTILE, *KEPT])
def test_a_name_in_a_table_cell_stays_one_cell(name: str) -> None:
    html = _render(f"| a | b |\n|---|---|\n| {for_markdown(name)} | z |\n")
    assert f"<td>{_html_text(for_terminal(name).strip())}</td>\n<td>z</td>" in html


def test_an_underscore_inside_a_word_is_left_alone() -> None:
    assert for_markdown("onnxruntime_version LayerNorm_0") == "onnxruntime_version LayerNorm_0"
    assert for_markdown("_x_ a__b x_") == "\\_x\\_ a\\_\\_b x\\_"


@pytest.mark.parametrize("name", [n for n in (*HOSTILE, *KEPT) if n])
def test_a_code_span_cannot_be_closed_by_its_text(name: str) -> None:
    html = _render(f"see {markdown_code(name)} here\n")
    assert html == f"<p>see <code>{_html_text(for_terminal(name))}</code> here</p>\n"


def test_an_empty_code_span_is_nothing() -> None:
    assert markdown_code("") == ""


def test_a_fence_is_longer_than_any_run_of_backticks_in_it() -> None:
    lines = ["echo ```", "x ```` y", "\x1b[2J"]
    fenced = markdown_fence(lines, "sh")
    assert fenced[0] == "`````sh" and fenced[-1] == "`````"
    html = _render("\n".join(fenced) + "\nafter\n")
    body = "\n".join(_html_text(for_terminal(line)) for line in lines)
    assert html == f'<pre><code class="language-sh">{body}\n</code></pre>\n<p>after</p>\n'
    assert markdown_fence(["plain"]) == ["```", "plain", "```"]


@pytest.mark.parametrize("name", [*HOSTILE, "it's", "a b", "$(rm -rf ~)", ""])
def test_a_shell_word_is_one_quoted_word_of_what_a_person_sees(name: str) -> None:
    word = for_shell(name)
    assert shlex.split(word) == [for_terminal(name)]
    assert word.isprintable()


def _html_text(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") \
        .replace('"', "&quot;")
