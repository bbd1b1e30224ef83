# Every public function's docstring examples run and print what they say (doctest), with JAX's
# default 32-bit types (the suite otherwise runs with x64 on), so the README's and the
# docstrings' examples cannot drift from the code.
from __future__ import annotations

import doctest

import jax
import pytest

import jax_mergepath as jmp

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
    doc = getattr(jmp, name).__doc__
    for section in ("Example",):
        assert section in doc, f"{name} docstring lacks {section}"
