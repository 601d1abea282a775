#!/usr/bin/env python3
"""Tokenizing 1 MB of mixed text (tests/tokenizer/texts.py's scripts and an English
passage, repeated): ids per second of `attn tokenize` against the JavaScript GPT-2
encoder (node, npm gpt-3-encoder) with GPT-2's real vocabulary, and against
python3-sentencepiece on BPE and unigram models trained here. Not a test: a measurement
to quote. The ids are compared before anything is timed.

    /usr/bin/python3 bench/tokenize/run.py build/release/app/attn [--mb 1] [--runs 3]

Times are CPU seconds (user + system; a shared machine's load does not count). attn is
timed as a whole process (`attn tokenize MODEL --text-file F --ids`, from wait4's
rusage) minus the same command on an empty text (loading the tokenizer), so both sides
count tokenizing alone; the whole-process time is reported too. Needs node and tests/tokenizer/node_modules
(scripts/setup_node_oracles.sh).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "tokenizer"))
sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
sys.argv_saved = list(sys.argv)
sys.argv = [sys.argv[0], "--list"]  # tokenize_test's harness: define, do not run
import io as _io  # noqa: E402
_stdout, sys.stdout = sys.stdout, _io.StringIO()
import tokenize_test as tt  # noqa: E402  (gpt2_document, CORPUS)
sys.stdout = _stdout
sys.argv = sys.argv_saved
from texts import TEXTS  # noqa: E402


def mixed_text(mb):
    unit = "\n".join(TEXTS + [tt.CORPUS]) + "\n"
    n = int(mb * 1e6) // len(unit.encode()) + 1
    return unit * n


def timed(argv, runs):
    """Median CPU seconds of the child (user + system) and its stdout."""
    times, out = [], None
    for _ in range(runs):
        with tempfile.TemporaryFile() as f:
            pid = os.fork()
            if pid == 0:
                os.dup2(f.fileno(), 1)
                os.execv(argv[0], argv)
            _, status, ru = os.wait4(pid, 0)
            if os.waitstatus_to_exitcode(status) != 0:
                sys.exit(f"{argv} failed")
            times.append(ru.ru_utime + ru.ru_stime)
            f.seek(0)
            out = f.read()
    return statistics.median(times), out


def attn_rate(attn, model, text_file, empty_file, runs):
    whole, out = timed([attn, "tokenize", model, "--text-file", text_file, "--ids"], runs)
    load, _ = timed([attn, "tokenize", model, "--text-file", empty_file, "--ids"], runs)
    ids = [int(x) for x in out.split()]
    return ids, whole - load, whole


def report(name, n, ours, theirs, whole):
    print(f"{name}: {n} ids; attn {n / ours / 1e6:.2f} M ids/s ({ours:.3f} s, whole process "
          f"{whole:.3f} s), reference {n / theirs / 1e6:.2f} M ids/s ({theirs:.3f} s): "
          f"attn {theirs / ours:.1f}x")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("attn")
    ap.add_argument("--mb", type=float, default=1.0)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="attn-bench-tok-")
    text = mixed_text(a.mb)
    text_file, empty_file = os.path.join(tmp, "text.txt"), os.path.join(tmp, "empty.txt")
    with open(text_file, "w", encoding="utf-8") as f:
        f.write(text)
    open(empty_file, "w").close()
    print(f"text: {len(text.encode()) / 1e6:.2f} MB, {len(text)} characters; "
          f"{os.uname().machine}, {os.cpu_count()} cores")

    # GPT-2: attn vs the JavaScript encoder.
    os.makedirs(os.path.join(tmp, "gpt2"))
    with open(os.path.join(tmp, "gpt2", "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tt.gpt2_document(), f)
    ours, t_ours, whole = attn_rate(a.attn, os.path.join(tmp, "gpt2"), text_file, empty_file, a.runs)
    js = [json.loads(subprocess.run(["node", os.path.join(os.path.dirname(__file__),
                                                          "gpt2_encode.js"), text_file],
                                    capture_output=True, check=True).stdout)
          for _ in range(a.runs)]
    if ours != js[0]["ids_list"]:
        sys.exit("gpt2: attn's ids differ from the JavaScript encoder's")
    report("gpt2 vs gpt-3-encoder (node)", len(ours), t_ours,
           statistics.median(j["seconds"] for j in js), whole)

    # SentencePiece: attn (libsentencepiece) vs python3-sentencepiece.
    import sentencepiece as spm
    sample = os.path.join(tmp, "sample.txt")
    with open(sample, "w", encoding="utf-8") as f:
        f.write("\n".join([tt.CORPUS] + TEXTS * 3))
    for kind, size in (("bpe", 600), ("unigram", 300)):
        d = os.path.join(tmp, "spm-" + kind)
        os.makedirs(d)
        spm.SentencePieceTrainer.train(input=sample, model_prefix=os.path.join(d, "tokenizer"),
                                       model_type=kind, vocab_size=size, hard_vocab_limit=False,
                                       character_coverage=1.0, minloglevel=2)
        sp = spm.SentencePieceProcessor(model_file=os.path.join(d, "tokenizer.model"))
        times = []
        for _ in range(a.runs):
            t0 = time.process_time()
            ref = sp.encode(text)
            times.append(time.process_time() - t0)
        ours, t_ours, whole = attn_rate(a.attn, d, text_file, empty_file, a.runs)
        if ours[1:] != ref:
            sys.exit(f"spm {kind}: attn's ids differ from sentencepiece's")
        report(f"sentencepiece {kind} vs python3-sentencepiece", len(ref), t_ours,
               statistics.median(times), whole)


if __name__ == "__main__":
    main()
