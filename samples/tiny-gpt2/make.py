#!/usr/bin/env python3
"""Writes this folder's tiny random GPT-2 in the Hugging Face layout: config.json,
model.safetensors (4 layers, E 32, 4 heads) and a byte-level BPE tokenizer.json whose
vocabulary is the 256 byte symbols plus a few merges. The README's model example runs on
it. Rerun to regenerate (numpy; the bytes are the same each time).
"""
import json
import os
import struct

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
E, H, LAYERS, POSITIONS = 32, 4, 4, 64
MERGES = ["Ġ t", "h e", "t he", "Ġt he", "a t", "Ġ c", "Ġc at", "Ġ s", "Ġs at", "Ġ o", "Ġo n",
          "Ġ m", "Ġm at", "Ġ d", "o g", "Ġd og"]


def byte_symbols():
    """GPT-2's printable stand-in for each byte: printable Latin-1 bytes stand for
    themselves, the others take code points from 256 on, in byte order."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + \
        list(range(0xAE, 0x100))
    out, extra = {}, 0
    for b in range(256):
        if b in keep:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + extra)
            extra += 1
    return [out[b] for b in range(256)]


def tokenizer():
    vocab = {s: i for i, s in enumerate(byte_symbols())}
    for m in MERGES:
        vocab[m.replace(" ", "")] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": vocab["<|endoftext|>"], "content": "<|endoftext|>",
                          "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": True, "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                          "use_regex": True},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True,
                           "trim_offsets": False, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": "", "end_of_word_suffix": "", "fuse_unk": False,
                  "byte_fallback": False, "ignore_merges": False, "vocab": vocab,
                  "merges": MERGES},
    }, len(vocab)


def safetensors(path, tensors):
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        data = np.ascontiguousarray(tensors[name], dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def main():
    tok, vocab = tokenizer()
    rng = np.random.default_rng(2024)
    t = {}

    def p(name, *shape, scale=0.3, base=0.0):
        t[name] = (base + rng.standard_normal(shape) * scale).astype(np.float32)

    p("transformer.wte.weight", vocab, E)
    p("transformer.wpe.weight", POSITIONS, E, scale=0.1)
    for i in range(LAYERS):
        pre = "transformer.h.%d." % i
        for ln in ("ln_1", "ln_2"):
            p(pre + ln + ".weight", E, scale=0.1, base=1.0)
            p(pre + ln + ".bias", E, scale=0.1)
        p(pre + "attn.c_attn.weight", E, 3 * E)
        p(pre + "attn.c_attn.bias", 3 * E, scale=0.1)
        p(pre + "attn.c_proj.weight", E, E, scale=0.1)
        p(pre + "attn.c_proj.bias", E, scale=0.1)
        p(pre + "mlp.c_fc.weight", E, 4 * E, scale=0.1)
        p(pre + "mlp.c_fc.bias", 4 * E, scale=0.1)
        p(pre + "mlp.c_proj.weight", 4 * E, E, scale=0.1)
        p(pre + "mlp.c_proj.bias", E, scale=0.1)
    p("transformer.ln_f.weight", E, scale=0.1, base=1.0)
    p("transformer.ln_f.bias", E, scale=0.1)
    safetensors(os.path.join(HERE, "model.safetensors"), t)
    config = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_embd": E,
              "n_head": H, "n_layer": LAYERS, "n_positions": POSITIONS, "vocab_size": vocab,
              "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new",
              "bos_token_id": vocab - 1, "eos_token_id": vocab - 1}
    with open(os.path.join(HERE, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    with open(os.path.join(HERE, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
