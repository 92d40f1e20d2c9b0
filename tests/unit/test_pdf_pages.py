"""Page composition (issue 35): reorder, insert and rotate pages, each a new
PDF re-read here; the inputs are bounded and the original is never changed."""

from __future__ import annotations

import io

import pytest
from pypdf import PdfReader

from groundwork.errors import InvalidRequest
from groundwork.pdf_compose import MAX_PAGES, insert_pages, reorder, rotate
from testbed import documents as make


def _titles(pdf: bytes) -> list[str]:
    pages = PdfReader(io.BytesIO(pdf)).pages
    return [page.extract_text().split("\n")[0].strip() for page in pages]


def _part(n: int) -> str:
    return f"Quarterly Review Part {n}"


def test_reorder_puts_pages_in_the_given_order() -> None:
    original = make.report_pdf(3)
    before = bytes(original)
    reordered = reorder(original, [3, 1, 2])
    assert _titles(reordered) == [_part(3), _part(1), _part(2)]
    assert original == before


@pytest.mark.parametrize(
    ("order", "problem"),
    [([1, 2], "every page once"), ([1, 1, 2], "every page once"), ([1, 2, 4], "outside 1-3")],
)
def test_reorder_takes_a_permutation_of_every_page(order: list[int], problem: str) -> None:
    with pytest.raises(InvalidRequest, match=problem):
        reorder(make.report_pdf(3), order)


def test_insert_puts_another_pdf_after_a_page() -> None:
    host, guest = make.report_pdf(3), make.report_pdf(1)
    inserted = insert_pages(host, guest, after=2)
    assert _titles(inserted) == [_part(1), _part(2), _part(1), _part(3)]
    assert _titles(insert_pages(host, guest, after=0))[0] == _part(1)
    assert len(_titles(insert_pages(host, guest, after=3))) == 4
    with pytest.raises(InvalidRequest, match="after"):
        insert_pages(host, guest, after=4)


def test_insert_is_bounded_in_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("groundwork.pdf_compose.MAX_PAGES", 3)
    with pytest.raises(InvalidRequest, match="exceed 3 pages"):
        insert_pages(make.report_pdf(3), make.report_pdf(1), after=1)
    assert MAX_PAGES >= 1000


def test_rotate_turns_only_the_named_pages() -> None:
    rotated = PdfReader(io.BytesIO(rotate(make.report_pdf(3), "1,3", 90))).pages
    assert [page.rotation for page in rotated] == [90, 0, 90]
    again = PdfReader(io.BytesIO(rotate(rotate(make.report_pdf(2), "1-2", 270), "2", 180))).pages
    assert [page.rotation for page in again] == [270, 90]
    with pytest.raises(InvalidRequest, match="90, 180 or 270"):
        rotate(make.report_pdf(2), "1", 45)
    with pytest.raises(InvalidRequest, match="outside 1-2"):
        rotate(make.report_pdf(2), "3", 90)
