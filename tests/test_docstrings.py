# Every public function's docstring examples run and print what they say (doctest), with JAX's
# default 32-bit types (the suite otherwise runs with x64 on), so the README's and the
# docstrings' examples cannot drift from the code; every docstring has its Args / Returns /
# Raises sections and points to no file the package does not ship.
from __future__ import annotations

import doctest
import inspect

import jax
import pytest

import jax_mergepath as jmp

pytestmark = pytest.mark.fast  # the fast tier (the README's test command)

PUBLIC = [name for name in jmp.__all__ if callable(getattr(jmp, name))]


@pytest.mark.parametrize("name", PUBLIC)
def test_docstring_examples(name):
    fn = getattr(jmp, name)
    assert fn.__doc__ and ">>>" in fn.__doc__, f"{name} has no example"
    parser = doctest.DocTestParser()
    test = parser.get_doctest(fn.__doc__, {}, name, None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    with jax.enable_x64(False):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0 and result.failed == 0, f"{name}: {result}"


@pytest.mark.parametrize("name", PUBLIC)
def test_docstring_sections(name):
    """Args / Returns / Raises / Example (a function without arguments: Returns and Example),
    and no pointer to a file the package does not ship."""
    doc = getattr(jmp, name).__doc__
    takes_args = bool(inspect.signature(getattr(jmp, name)).parameters)
    sections = ("Args:", "Returns:", "Raises:", "Example") if takes_args else ("Returns:",
                                                                                "Example")
    for section in sections:
        assert section in doc, f"{name} docstring lacks {section}"
    assert "SPEC.md" not in doc and "DESIGN.md" not in doc, f"{name} points to an unshipped file"


def test_package_docstring_points_to_nothing_unshipped():
    assert "SPEC.md" not in jmp.__doc__
