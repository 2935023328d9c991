"""The fio job-file fuzzer (tests/fuzz_fiojob.py) on a short budget, and its regression corpus:
every job file that ever failed it loads or raises an SsdlabError."""

from pathlib import Path

import pytest

import fuzz_fiojob

CORPUS = sorted(p for p in fuzz_fiojob.CORPUS.glob("*") if p.suffix != ".md")


def test_short_budget():
    n, loaded, _ = fuzz_fiojob.run(2000)
    assert n == 2000 and 0 < loaded < n


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_corpus(path: Path):
    fuzz_fiojob.check(path.read_text(encoding="utf-8", errors="surrogatepass"), full=True, name=path.name)


def test_corpus_is_there():
    assert CORPUS
