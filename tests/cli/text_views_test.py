"""Text in, pictures out, for every tokenizer family: a tiny random model folder (the
forward oracle's writer) with a tokenizer of each family beside it (GPT-2's real byte-level
BPE, llama-2's byte-fallback BPE, the Metaspace pre-tokenizer, BERT's WordPiece, a
SentencePiece tokenizer.model), then `attn compute --params DIR --text ... --heatmap
view.html`: every layer's weights equal those of the ids `attn tokenize` gives, and the
page carries every layer x head panel and the readable tokens as labels. The ids
themselves are checked against the reference tokenizers in tokenize_test.py."""
import json
import os
import re
import shutil

import numpy as np

import forward_oracle as fo
import tokenizer_documents as td
from harness import check, main, path, run, skip, test

TEXT = "the cat sat on the mat"


def readable(token):
    """The label the contract promises: the space markers as a visible space."""
    return token.replace("\u0120", "\u2423").replace("\u2581", "\u2423")


def model_with(name, arch, tokenizer_file, vocab_size):
    """TMP/text-NAME: ARCH's tiny folder with `vocab_size` embeddings and the tokenizer."""
    fo.V = max(50, vocab_size)
    folder, _, _, _, cfg = fo.build(arch)
    target = path("text-" + name)
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(folder, target)
    shutil.copy(tokenizer_file, os.path.join(target, os.path.basename(tokenizer_file)))
    return target, cfg


def json_tokenizer(name, doc):
    file = path(name + "-tokenizer/tokenizer.json")
    os.makedirs(os.path.dirname(file), exist_ok=True)
    with open(file, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    return file, len(doc["model"]["vocab"]) + len(doc.get("added_tokens") or [])


def text_to_view(name, arch, tokenizer_file, vocab_size):
    folder, cfg = model_with(name, arch, tokenizer_file, vocab_size)
    rc, so, se = run(["tokenize", folder, "--text", TEXT])
    if not check(f"{name}: attn tokenize exits 0", rc == 0, se):
        return
    tok = json.loads(so)
    with open(path(name + "-ids.json"), "w") as f:
        json.dump(tok["token_ids"], f)
    html, wt, wi = (path(name + x) for x in ("-view.html", "-text.npy", "-ids.npy"))
    rc, _, se = run(["compute", "--params", folder, "--text", TEXT, "--heatmap", html,
                     "--weights", wt])
    if not check(f"{name}: compute --text --heatmap view.html exits 0", rc == 0, se):
        return
    rc, _, se = run(["compute", "--params", folder, "--token-ids", path(name + "-ids.json"),
                     "--weights", wi])
    check(f"{name}: --token-ids exits 0", rc == 0, se)
    n, layers, heads = len(tok["token_ids"]), fo.NL, fo.H
    got = np.load(wt)
    check(f"{name}: every layer's weights [{layers}, {heads}, {n}, {n}]",
          got.shape == (layers, heads, n, n), str(got.shape))
    if rc == 0:
        check(f"{name}: --text gives the weights of attn tokenize's ids",
              np.array_equal(got, np.load(wi)))
    page = open(html, encoding="utf-8").read()
    at = page.find('"rowLabels":')
    labels = json.JSONDecoder().raw_decode(page, at + len('"rowLabels":'))[0] if at >= 0 else None
    want = [readable(t) for t in tok["tokens"]]
    check(f"{name}: the page's labels are the readable tokens", labels == want,
          f"{labels} vs {want}")
    panels = {(int(a), int(b)) for a, b in re.findall(r'"layer (\d+) \u00b7 head (\d+)"', page)}
    check(f"{name}: one panel per layer and head ({layers} x {heads})",
          panels == {(a, b) for a in range(layers) for b in range(heads)}, str(sorted(panels)))


@test("gpt2: GPT-2's real byte-level BPE through a gpt2 model")
def gpt2():
    if not os.path.isdir(td.GPT2_FILES):
        skip("tests/tokenizer/node_modules missing (run scripts/setup_node_oracles.sh)")
        return
    text_to_view("gpt2", "gpt2", *json_tokenizer("gpt2", td.gpt2_document()))


@test("llama-2: byte-fallback BPE (Prepend + Replace) through a llama model")
def llama2():
    text_to_view("llama2", "llama", *json_tokenizer("llama2", td.byte_fallback_document(False)))


@test("metaspace: byte-fallback BPE with the Metaspace pre-tokenizer through a llama model")
def metaspace():
    text_to_view("metaspace", "llama",
                 *json_tokenizer("metaspace", td.byte_fallback_document(True)))


@test("wordpiece: BERT's WordPiece through a bert model")
def wordpiece():
    text_to_view("wordpiece", "bert", *json_tokenizer("wordpiece", td.wordpiece_document(True)))


@test("sentencepiece: a tokenizer.model through a llama model")
def sentencepiece():
    try:
        sp = td.train_sentencepiece("spm-views", "bpe", vocab_size=600, byte_fallback=True)
    except ImportError:
        skip("python3-sentencepiece missing")
        return
    text_to_view("spm", "llama", path("spm-views/tokenizer.model"), sp.get_piece_size())


main()
