"""Documents are cut where their authors cut them: Markdown headings, the short title lines
of plain text, HTML headings; a long section becomes parts under the same heading path, and
each section's offsets point at its text in the document."""

from __future__ import annotations

from itertools import pairwise

from threadline.history.tokens import default_counter
from threadline.knowledge.documents import html_text
from threadline.knowledge.sections import split_sections

COUNTER = default_counter()


def test_markdown_headings_make_the_heading_path() -> None:
    text = ("# Passports\n\nAn intro line.\n\n## Adults\nAdults renew by post.\n\n"
            "### Fees\nThe fee is 80 pounds.\n\n## Children\nA child's passport lasts five "
            "years.\n")
    sections = split_sections(text, title="Passports", counter=COUNTER, max_tokens=200)
    assert [s.headings for s in sections] == [(), ("Adults",), ("Adults", "Fees"),
                                              ("Children",)]
    for section in sections:
        assert text[section.start:section.end].strip().endswith(section.text.split("\n")[-1])
    assert sections[2].searched_text.startswith("Passports > Adults > Fees\n")


def test_plain_text_title_lines_are_headings() -> None:
    text = ("Opening hours\nThe desk is open from nine to five on weekdays and until noon on "
            "Saturdays.\n\nLost cards\nCall the number on the back of the card at once, day or "
            "night.\n")
    sections = split_sections(text, title="Desk", counter=COUNTER, max_tokens=200)
    assert [s.headings for s in sections] == [("Opening hours",), ("Lost cards",)]


def test_html_headings_and_title_are_read() -> None:
    title, text = html_text("<html><head><title>Help centre</title><style>p{}</style></head>"
                            "<body><h1>Help centre</h1><h2>Returns</h2><p>Send it back within "
                            "a month.</p><script>x()</script></body></html>")
    assert title == "Help centre"
    sections = split_sections(text, title=title, counter=COUNTER, max_tokens=200)
    assert [(s.headings, s.text) for s in sections] == [(("Returns",),
                                                         "Send it back within a month.")]


def test_a_long_section_is_cut_into_parts_under_one_heading() -> None:
    paragraph = "Every sentence here says something about the warranty terms. " * 12
    text = "# Warranty\n\n## Terms\n" + "\n\n".join([paragraph] * 6)
    sections = split_sections(text, title="Warranty", counter=COUNTER, max_tokens=250)
    assert len(sections) >= 3
    assert {s.headings for s in sections} == {("Terms",)}
    assert all(COUNTER.count(s.text) <= 250 for s in sections)


def test_a_sections_range_opens_at_the_headings_it_shows() -> None:
    text = ("# Renewals\n\nHow renewals work.\n\n## Step 1: Fill in the form\n### Online\n"
            "Use the website.\n\nNo heading above this line? It still belongs to Online.\n")
    sections = split_sections(text, title="Renewals", counter=COUNTER, max_tokens=200)
    assert [s.headings for s in sections] == [(), ("Step 1: Fill in the form", "Online")]
    assert text[sections[0].start:].startswith("How renewals work.")
    assert text[sections[1].start:sections[1].end].startswith("## Step 1: Fill in the form\n")
    assert text[sections[1].start:sections[1].end].endswith("belongs to Online.")


def test_only_the_first_part_of_a_cut_section_holds_its_heading() -> None:
    paragraph = "Every sentence here says something about the warranty terms. " * 12
    text = "# Warranty\n\n## Terms\n" + "\n\n".join([paragraph] * 6)
    sections = split_sections(text, title="Warranty", counter=COUNTER, max_tokens=250)
    assert text[sections[0].start:].startswith("## Terms\n")
    assert all(text[s.start:].startswith("Every sentence") for s in sections[1:])
    assert all(a.end <= b.start for a, b in pairwise(sections))
