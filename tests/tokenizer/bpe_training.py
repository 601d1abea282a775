"""Classic BPE training for the tests' tiny vocabularies: the merges in training order, the
most frequent pair first (ties broken by the pair itself, so runs are reproducible). Shared by
tests/cli/tokenizer_documents.py and tests/unit/gguf_vocab_fixtures.py."""
from collections import Counter


def merge_pair(word, pair):
    """The symbols of `word` with every occurrence of `pair` (left to right) joined."""
    out, i = [], 0
    while i < len(word):
        if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
            out.append(word[i] + word[i + 1])
            i += 2
        else:
            out.append(word[i])
            i += 1
    return tuple(out)


def learn_bpe(words, n_merges):
    """Up to n_merges merges learned from `words` (each a sequence of symbols)."""
    merges = []
    counts = Counter(tuple(w) for w in words)
    for _ in range(n_merges):
        pairs = Counter()
        for w, c in counts.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] += c
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        merges.append(best)
        merged = Counter()
        for w, c in counts.items():
            merged[merge_pair(w, best)] += c
        counts = merged
    return merges
