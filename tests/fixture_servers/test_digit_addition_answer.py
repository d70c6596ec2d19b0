"""The digit_addition server's answer parser (fixtures/.../digit_addition/final_answer.py).

The module is the server's own sibling file (Gym runs ``python app.py`` in that directory); it
needs only the standard library, so it is loaded here by path and tested without Gym.
"""

from __future__ import annotations

import doctest
from fractions import Fraction

import pytest
from support.digit_addition import fa
from toy_envs import digit_addition_rows


@pytest.mark.parametrize(
    "text",
    [
        "8",
        " 8 ",
        "8.",
        "8\n",
        "**8**",
        "= 8",
        "3+5=8",
        "3 + 5 = 8",
        "3 + 5 = **8**.",
        "The answer is 8.",
        "The answer is: 8",
        "Answer: 8!",
        "$8$",
        "\\boxed{8}",
        "$\\boxed{8}$",
        "The sum is \\boxed{8}.",
        "3 + 5 equals 8",
        "8.0",
        "_8_",
        "`8`",
        "3 plus 5 makes 8",
        "Sure! 3 + 5 = 8",
        "9? No: 3 + 5 = 8",
        "\\boxed{8} (since 3 + 5 = 8)",
        "\\boxed{3 + 5 = 8}",
        "It is 08",
        "\\boxed{8",
    ],
)
def test_right_answer_in_many_phrasings_scores_one(text: str) -> None:
    assert fa.final_answer_reward(text, "8") == 1.0


@pytest.mark.parametrize(
    "text",
    [
        "3+5 is not 9",  # last number is 9
        "8, since 3 + 5",  # the answer must come last: the final number is 5
        "8 is wrong, it is 9",
        "3 + 5 = 9",
        "38",
        "18",
        "80",
        "8.5",
        "-8",
        "8/1 and 2",
        "\\boxed{9} although 3 + 5 = 8",  # a \boxed{} answer wins over later text
        "eight",  # words are not read
        "",
        "I don't know.",
    ],
)
def test_wrong_or_missing_answer_scores_zero(text: str) -> None:
    assert fa.final_answer_reward(text, "8") == 0.0


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("3+5 is not 9", Fraction(9)),
        ("5-3", Fraction(3)),  # a minus after a digit is an operator, not a sign
        ("it is -3", Fraction(-3)),
        ("1,234 apples", Fraction(1234)),
        ("1, 2, 3", Fraction(3)),
        ("2.50", Fraction(5, 2)),
        ("x \\boxed{12} then 9", Fraction(12)),
        ("\\boxed{\\text{{13}}}", Fraction(13)),  # braces inside the box are balanced
        ("nothing here", None),
    ],
)
def test_final_number_rule(text: str, number: Fraction | None) -> None:
    assert fa.final_number(text) == number


def test_two_digit_sums_and_expected_answers_from_rows() -> None:
    for row in digit_addition_rows(32, seed=3):
        expected = row["expected_answer"]
        assert fa.final_answer_reward(f"The answer is **{expected}**.", expected) == 1.0
        assert fa.final_answer_reward(f"{int(expected) + 1}", expected) == 0.0


def test_doctests() -> None:
    failed, attempted = doctest.testmod(fa)
    assert attempted > 0
    assert failed == 0
