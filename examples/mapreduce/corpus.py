"""The generated corpus of the word-count example.

A vocabulary of `vocabulary` words: word k (k = 0, 1, ...) is k + 1 written in bijective base 26
with the letters a..z (a, b, ..., z, aa, ab, ...), so frequent words are short, as in a real
language. Each of the `words` words of the corpus is word k with probability proportional to
1 / (k + 1) ** exponent (a Zipf law), drawn by NumPy's PCG64 from `seed`; the text puts 12 words
on a line, separated by single spaces. The same parameters always give the same text.
"""

from __future__ import annotations

import numpy as np

WORDS_PER_LINE = 12


def word(k: int) -> str:
    """Word k of the vocabulary."""
    letters = []
    k += 1
    while k > 0:
        k, digit = divmod(k - 1, 26)
        letters.append(chr(ord("a") + digit))
    return "".join(reversed(letters))


def generate(words: int, vocabulary: int, exponent: float, seed: int) -> str:
    """The corpus text."""
    weights = 1.0 / np.arange(1, vocabulary + 1, dtype=np.float64) ** exponent
    drawn = np.random.default_rng(seed).choice(vocabulary, size=words, p=weights / weights.sum())
    names = np.array([word(k) for k in range(vocabulary)], dtype=object)[drawn]
    lines = (" ".join(names[at : at + WORDS_PER_LINE]) for at in range(0, words, WORDS_PER_LINE))
    return "\n".join(lines) + "\n"
