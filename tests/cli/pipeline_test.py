#!/usr/bin/env python3
"""Pipeline tests of `attn batch`: order under --jobs, error lines, exit codes, the parser
against compute's, streaming, bounded memory (backpressure and the peak RSS of 256 MiB piped
through), and progress only on a terminal. `-` as stdin/stdout is stdio_test.py, `diff` is
diff_test.py, `explain` is explain_test.py.

Run from the repository root: /usr/bin/python3 tests/cli/pipeline_test.py PATH/TO/attn
Ends with the line "N passed, M failed"; exits 1 if any case failed.
"""
import json
import os
import pty
import re
import select
import subprocess
import threading
import time

import numpy as np

import seed_example
from harness import ATTN, SANITIZED, TMP, case, check, main, path, run, run_case, test, write
from seed_example import CTX, W


def jsonl(so):
    return [json.loads(x) for x in so.decode().splitlines()]


rng = np.random.default_rng(4)


def rand(*shape):
    return np.round(rng.uniform(-1, 1, size=shape), 4).tolist()


SEED = dict(seed_example.SEED, scale=1)

# --- batch: order under --jobs, identical results -------------------------------------------
VARIANTS = ["dot", "scaled", "self", "masked-self", "cross", "multihead"]


def problem(i):
    """Problem i: sizes vary a lot so that with several jobs lines finish out of order."""
    lq = [2, 70, 5, 130, 1, 33][i % 6]
    lk = [3, 9, 64, 2, 17, 130][(i // 6) % 6]
    e_ = 8
    var = VARIANTS[i % len(VARIANTS)]
    p = {"id": i, "variant": var}
    if var in ("dot", "scaled"):
        p.update(query=rand(lq, e_), key=rand(lk, e_), value=rand(lk, 4))
    elif var == "cross":
        p.update(input=rand(lq, e_), context=rand(lk, 6), init={"seed": i})
    else:
        p.update(input=rand(lq, e_), init={"seed": i})
        if var == "multihead":
            p["num_heads"] = 2
    return p


PROBLEMS = [problem(i) for i in range(48)]
BATCH = "\n".join(json.dumps(p) for p in PROBLEMS) + "\n"


@test("batch: order under --jobs, identical results, FILE and -")
def _():
    runs = {}
    for args in (["--jobs", "1"], ["--jobs", "2"], ["--jobs", "5"], ["--jobs", "3", "--threads", "2"],
                 []):
        name = "batch order " + (" ".join(args) or "(default jobs)")
        so = run_case(name, ["batch"] + args, stdin=BATCH.encode(),
                  out=lambda so: [d["id"] for d in jsonl(so)] == list(range(48)))
        runs[" ".join(args)] = so
    check("batch results identical for every --jobs/--threads",
          len(set(runs.values())) == 1, str({k: len(v) for k, v in runs.items()}))
    first = jsonl(runs["--jobs 1"])
    check("batch line equals compute of the same problem",
          run(["compute", "-"], json.dumps(PROBLEMS[7]).encode())[1].decode().strip() ==
          runs["--jobs 1"].decode().splitlines()[7])
    check("batch has weights by default", all("weights" in d for d in first))
    run_case("batch --no-weights", ["batch", "--no-weights", "-j", "2"], stdin=BATCH.encode(),
         out=lambda so: all("weights" not in d and "output" in d for d in jsonl(so)))
    write("batch.jsonl", BATCH)
    run_case("batch FILE", ["batch", "batch.jsonl", "-j", "2"], out=lambda so: so == runs["--jobs 1"])
    run_case("batch - is stdin", ["batch", "-"], stdin=BATCH.encode(),
         out=lambda so: so == runs["--jobs 1"])


# One slow line ahead of 300 quick ones: with several jobs the quick lines finish first and
# must wait for it; and no line is lost or written twice.
slow = {"id": "slow", "variant": "self", "input": rand(1000, 8), "init": {"seed": 3, "dim": 32}}
quick = "".join(json.dumps(dict(SEED, id=i)) + "\n" for i in range(300))
for jobs in ("2", "4"):
    case(f"batch order: slow first line, 300 quick ones, --jobs {jobs}",
         ["batch", "--no-weights", "-j", jobs], stdin=(json.dumps(slow) + "\n" + quick).encode(),
         out=lambda so: [d["id"] for d in jsonl(so)] == ["slow"] + list(range(300)))


@test("batch: error lines, blank lines, exit codes")
def _():
    # --- batch: error lines, blank lines, exit codes --------------------------------------------
    lines = [json.dumps(dict(SEED, id="a")), "", "   ", "not json", "[1, 2]",
             json.dumps(dict(SEED, id={"k": [1]}, num_heads=2)), json.dumps(dict(SEED, id=None)),
             json.dumps(dict(SEED, mask=[[1, 1], [1, 1]])), json.dumps(dict(SEED, id=9)) + "\r"]
    text = "\n".join(lines)  # no final newline: the last line still counts
    for jobs in ("1", "4"):
        so = run_case(f"batch errors --jobs {jobs}: exit 1, one line each", ["batch", "-j", jobs],
                  stdin=text.encode(), code=1, err=r"warning: 4 of 7 problem\(s\) failed")
        got = so.decode().splitlines()
        check(f"batch errors --jobs {jobs}: 7 result lines (blank lines skipped)", len(got) == 7,
              str(got))
        if len(got) == 7:
            docs = [json.loads(x) for x in got]
            check(f"batch errors --jobs {jobs}: ids in order",
                  [d.get("id") for d in docs] == ["a", None, None, {"k": [1]}, None, None, 9],
                  str([d.get("id") for d in docs]))
            check(f"batch errors --jobs {jobs}: error lines start with id",
                  all(got[i].startswith('{"id":') and list(docs[i]) == ["id", "error"]
                      for i in (1, 2, 3, 5)), str(got))
            check(f"batch errors --jobs {jobs}: messages",
                  "line 4: invalid JSON" in docs[1]["error"] and
                  "expected a JSON object" in docs[2]["error"] and
                  "divisible" in docs[3]["error"] and "mask: expected shape" in docs[5]["error"],
                  str(docs))
            check(f"batch errors --jobs {jobs}: good lines computed",
                  np.allclose(docs[0]["output"], CTX, atol=1e-5) and
                  np.allclose(docs[6]["weights"], W, atol=1e-6) and "error" not in docs[4])
    run_case("batch --quiet: no warning", ["batch", "--quiet"], stdin=text.encode(), code=1,
         err=r"^$")


case("batch all good: exit 0, stderr empty", ["batch"], stdin=BATCH.encode(), err=r"^$")
case("batch empty input", ["batch"], stdin=b"", out=lambda so: so == b"")
case("batch only blank lines", ["batch"], stdin=b"\n\n  \n", out=lambda so: so == b"")


@test("batch --jobs 3: one bad line of many, exit 1, the rest computed")
def _():
    first = jsonl(run(["batch", "--jobs", "1"], BATCH.encode())[1])
    run_case("batch --jobs 3: one bad line of many, exit 1, the rest computed", ["batch", "-j", "3"],
         stdin=BATCH.replace(json.dumps(PROBLEMS[20]), '{"id": 20, "query": [[1, 2]]}').encode(),
         code=1, err=r"warning: 1 of 48 problem\(s\) failed",
         out=lambda so: [d["id"] for d in jsonl(so)] == list(range(48)) and
         [i for i, d in enumerate(jsonl(so)) if "error" in d] == [20] and
         jsonl(so)[21] == first[21])


@test("batch: stdout that cannot be written")
def _():
    if os.path.exists("/dev/full"):
        with open("/dev/full", "wb") as full:
            p = subprocess.run([ATTN, "batch"], input=BATCH.encode(), stdout=full,
                               stderr=subprocess.PIPE, cwd=TMP, timeout=120)
        check("batch: stdout that cannot be written is exit 1 with one error line",
              p.returncode == 1 and re.fullmatch(r"attn: error: <stdout>: cannot write: .*\n",
                                                 p.stderr.decode()),
              f"exit {p.returncode}, {p.stderr[:200]!r}")


case("batch missing file", ["batch", "nope.jsonl"], code=2, err="nope.jsonl")
case("batch directory", ["batch", TMP], code=2, err="directory")
case("batch --jobs 0", ["batch", "--jobs", "0"], code=2, err="jobs")
case("batch fully masked warning, once", ["batch", "-j", "2"],
     stdin=(json.dumps(dict(SEED, mask=[[0, 0, 0], [1, 1, 1]])) + "\n").encode() * 3,
     err=r"warning: 3 problem\(s\) have query rows that can see no key.*line 1",
     out=lambda so: len(jsonl(so)) == 3)
os.makedirs(path("sub"), exist_ok=True)
np.save(path("sub/q.npy"), np.array(SEED["query"], dtype=np.float32))
write("sub/rel.jsonl", json.dumps(dict(SEED, query="q.npy")) + "\n")
case("batch paths relative to FILE's folder", ["batch", "sub/rel.jsonl"],
     out=lambda so: np.allclose(jsonl(so)[0]["weights"], W, atol=1e-6))
case("batch paths relative to the working folder for stdin", ["batch"], cwd=path("sub"),
     stdin=(json.dumps(dict(SEED, query="q.npy")) + "\n").encode(),
     out=lambda so: np.allclose(jsonl(so)[0]["weights"], W, atol=1e-6))

# Lines in every JSON shape the parser may meet give what compute (json::parse) gives.
TRICKY = [
    '{"id": "esc\\u00e9\\n\\"q\\"", "query": [[1,0,1],[0,1,1]], "key": [[1,0,1],[1,1,0],[0,1,1]], '
    '"value": [[10,0],[0,10],[5,5]]}',
    '{"id":"t\u00e9st","query":[[1e0,0.0,1E+0],[-0,1,1.0e-0]],"key":[[1,0,1],[1,1,0],[0,1,1]],'
    '"value":[[10,0],[0,10],[5,5]],"query_tokens":["\u4e2d","b"]}',
    '{"id":18446744073709551615,"query":[[1,0,1],[0,1,1]],"key":[[1,0,1],[1,1,0],[0,1,1]],'
    '"value":[[10,0],[0,10],[5,5]]}',
    '{"id":18446744073709551616,"query":[[1,0,1],[0,1,1]],"key":[[1,0,1],[1,1,0],[0,1,1]],'
    '"value":[[10,0],[0,10],[5,5]]}',
    '{"id":-9223372036854775809,"query":[[1,0,1],[0,1,1]],"key":[[1,0,1],[1,1,0],[0,1,1]],'
    '"value":[[10,0],[0,10],[5,5]]}',
    '{"id":[1e400],"query":[[1,0,1],[0,1,1]]}',
    '{"id":1,"id":2,"query":[[1,0,1],[0,1,1]],"key":[[1,0,1],[1,1,0],[0,1,1]],'
    '"value":[[10,0],[0,10],[5,5]]}',
    '{"id":{"a":[true,false,null]},"query":[[0.1,2.5e-3,-7],[0,1,1]],"key":[[1,0,1],[1,1,0],'
    '[0,1,1]],"value":[[10,0],[0,10],["inf",5]],"scale":0.5,"num_heads":1,"init":null}',
    '  {"query" : [ [ 1 , 0 , 1 ] , [0,1,1] ] , "key":[[1,0,1],[1,1,0],[0,1,1]],\t"value":'
    '[[10,0],[0,10],[5,5]] }\r',
    '{"query":[[01,0,1],[0,1,1]]}',
    '{"query":[[1.,0,1],[0,1,1]]}',
    '{"query":[[.5,0,1],[0,1,1]]}',
    '{"query":[[+1,0,1],[0,1,1]]}',
    '{"query":[[1,0,1],[0,1,1],]}',
    '{"query":[[1,0,1] [0,1,1]]}',
    '{"query":[[NaN,0,1],[0,1,1]]}',
    '{"query":[[1,0,1],[0,1,1]]} x',
    '{"query":"\x01"}',
    '{"id":"\xff\xfe"}',
    '{"id":tru}',
    '[' * 300 + ']' * 300,
    '{"id":' + '[' * 40 + ']' * 40 + ',"query":[[1,0,1],[0,1,1]],"key":[[1,0,1],[1,1,0],[0,1,1]],'
    '"value":[[10,0],[0,10],[5,5]]}',
    '{"id":' + '[' * 130 + ']' * 130 + ',"query":[[1,0,1],[0,1,1]]}',
    '"just a string"',
    '{"num_heads":2.0,"query":[[1,0,1],[0,1,1]],"key":[[1,0,1],[1,1,0],[0,1,1]],'
    '"value":[[10,0],[0,10],[5,5]]}',
]
# Numbers in every spelling: the id echoes each as the exact double it was parsed to.
num_rng = np.random.default_rng(11)
spellings = []
for k in range(400):
    x = float(num_rng.standard_normal() * 10.0 ** int(num_rng.integers(-30, 30)))
    forms = [repr(x), f"{x:.3e}", f"{x:.17g}", f"{x:.6f}", f"{x:.15E}", f"{abs(x):.20f}",
             str(int(num_rng.integers(-10**6, 10**6))) + "e-7", "0.000" + str(k), "-0.0",
             f"{abs(x):.2e}".replace("e-", "E-").replace("e+", "E+"), "0e0"]
    spellings.append(forms[k % len(forms)])
spellings += ["5e-324", "2.2250738585072011e-308", "1.7976931348623157e308", "1e22", "1e23",
              "9007199254740993", "9007199254740993.0", "0.1", "123456789012345.6",
              "1234567890123456.7", "4.35e-1"]
TRICKY.append('{"id":[' + ",".join(spellings) + '],"query":[[1,0,1],[0,1,1]],'
              '"key":[[1,0,1],[1,1,0],[0,1,1]],"value":[[10,0],[0,10],[5,5]]}')


@test("batch parses tricky lines as compute does")
def _():
    for i, t in enumerate(TRICKY):
        raw = t.encode("utf-8", "surrogateescape") if "\\x" not in t else t.encode("latin-1")
        rc_c, so_c, se_c = run(["compute", "-"], raw)
        rc_b, so_b, _ = run(["batch", "--quiet", "-j", "2"], raw + b"\n")
        if rc_c == 0:
            check(f"batch parses tricky line {i} as compute does", rc_b == 0 and so_b == so_c,
                  f"{so_b[:200]!r} vs {so_c[:200]!r}")
        else:
            err = json.loads(so_b).get("error", "") if rc_b == 1 and so_b else ""
            want = se_c.strip().removeprefix("attn: error: ").replace("<stdin>", "line 1")
            if "expected a JSON object" in want:  # compute names the file, batch the problem
                want = re.sub(r"^line 1: expected a JSON object \(a problem\)",
                              "problem: expected a JSON object", want)
            check(f"batch rejects tricky line {i} as compute does", err == want,
                  f"{err!r} vs {want!r}")


# Per-run defaults: a line's own fields win.
noscale = {k: v for k, v in SEED.items() if k != "scale"}
case("batch --variant dot applies where the line has no variant", ["batch", "--variant", "dot"],
     stdin=(json.dumps(noscale) + "\n").encode(),
     out=lambda so: np.allclose(jsonl(so)[0]["weights"], W, atol=1e-6))
case("batch --scale default loses to the line's scale", ["batch", "--scale", "0"],
     stdin=(json.dumps(SEED) + "\n" + json.dumps(noscale) + "\n").encode(),
     out=lambda so: np.allclose(jsonl(so)[0]["weights"], W, atol=1e-6) and
     np.allclose(jsonl(so)[1]["weights"], 1 / 3, atol=1e-6))
case("batch --causal default", ["batch", "--causal"], stdin=(json.dumps(SEED) + "\n").encode(),
     out=lambda so: jsonl(so)[0]["weights"][0] == [1, 0, 0])
case("batch bad --scale", ["batch", "--scale", "x"], stdin=b"", code=2, err="scale")


# --- batch: streaming (the first result arrives before the input ends) ---------------------
def read_line(p, timeout):
    """One line of p.stdout within timeout seconds, or None."""
    buf = b""
    end = time.time() + timeout
    fd = p.stdout.fileno()
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], max(0.0, end - time.time()))
        if not r:
            break
        chunk = os.read(fd, 1)
        if not chunk:
            break
        buf += chunk
        if chunk == b"\n":
            return buf
    return None


@test("batch: streaming, the first result before the input ends")
def _():
    for jobs in ("1", "2"):
        p = subprocess.Popen([ATTN, "batch", "--jobs", jobs], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=TMP)
        try:
            p.stdin.write((json.dumps(dict(SEED, id="first")) + "\n").encode())
            p.stdin.flush()
            line1 = read_line(p, 30)
            check(f"streaming --jobs {jobs}: first result before the input ends",
                  line1 is not None and json.loads(line1)["id"] == "first", repr(line1))
            p.stdin.write((json.dumps(dict(SEED, id="second")) + "\n").encode())
            p.stdin.flush()
            line2 = read_line(p, 30)
            check(f"streaming --jobs {jobs}: second result before the input ends",
                  line2 is not None and json.loads(line2)["id"] == "second", repr(line2))
            p.stdin.close()
            rest = p.stdout.read()
            check(f"streaming --jobs {jobs}: exit 0 at end of input",
                  p.wait(30) == 0 and rest == b"", repr(rest))
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()


@test("batch: bounded buffering when the output is not read")
def _():
    # Bounded buffering: with nobody reading its output, batch must stop taking input after a
    # bounded amount (its read buffer, the in-flight window, the pipes), not swallow it all.
    small = (json.dumps(dict(SEED, id=0)) + "\n").encode()
    offered = 64 << 20
    p = subprocess.Popen([ATTN, "batch", "--jobs", "2"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=TMP)
    try:
        os.set_blocking(p.stdin.fileno(), False)
        chunk = small * 2000
        accepted = 0
        last_progress = time.time()
        while accepted < offered and time.time() - last_progress < 3.0:
            try:
                n = os.write(p.stdin.fileno(), chunk)
                accepted += n
                if n:
                    last_progress = time.time()
            except BlockingIOError:
                time.sleep(0.05)
        rss_kb = 0
        with open(f"/proc/{p.pid}/status") as f:
            for ln in f:
                if ln.startswith("VmHWM:"):
                    rss_kb = int(ln.split()[1])
        check("batch stops reading when its output is not consumed (bounded memory)",
              accepted < 8 << 20, f"accepted {accepted} of {offered} bytes")
        check("batch peak memory stays small while input waits", rss_kb < 200 * 1024,
              f"VmHWM {rss_kb} kB")
    finally:
        p.kill()
        p.wait()


def peak_rss_of_batch(args, chunk, times):
    """Pipes `chunk` `times` times into `attn batch ARGS` while its output is consumed;
    returns (exit code, stdout, peak RSS in KiB from wait4's rusage)."""
    p = subprocess.Popen([ATTN, "batch"] + args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, cwd=TMP)
    out = []
    reader = threading.Thread(target=lambda: out.append(p.stdout.read()))
    reader.start()
    try:
        for _ in range(times):
            p.stdin.write(chunk)
        p.stdin.close()
    except BrokenPipeError:
        pass
    reader.join()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, out[0] if out else b"", usage.ru_maxrss


@test("batch: bounded memory on 256 MiB of input")
def _():
    # Bounded memory on a long input: 256 MiB piped through while the output is read (a problem
    # padded with 1 MiB of JSON whitespace, then a 1 MiB blank line, 128 times); the peak RSS of
    # the process must stay a small fraction of it.
    pad = b" " * (1 << 20)
    # Under AddressSanitizer (the asan preset, whose ctest sets ASAN_OPTIONS) freed memory
    # waits in a 256 MiB quarantine and shadow memory comes on top: peak RSS says nothing
    # about attn there. (The binary is not inspected: a forked child's peak RSS counts what
    # this process holds at the fork.)
    for jobs in ("1", "2"):
        line_ = json.dumps(dict(SEED, id="x")).encode().replace(b'"id"', pad + b'"id"', 1)
        rc, so, rss_kb = peak_rss_of_batch(["-j", jobs, "--no-weights"], line_ + b"\n" + pad + b"\n",
                                           128)
        check(f"batch --jobs {jobs}: 256 MiB of input, every line answered",
              rc == 0 and so.count(b'"id":"x"') == 128, f"exit {rc}, {len(so.splitlines())} lines")
        if SANITIZED:
            print(f"skip: batch --jobs {jobs}: peak RSS bound (ASan build)")
            continue
        check(f"batch --jobs {jobs}: peak RSS stays under 96 MiB for 256 MiB of input",
              rss_kb < 96 * 1024, f"peak RSS {rss_kb} KiB")


# --- progress: only on a terminal, never with --quiet or in pipes --------------------------


def run_with_pty_stderr(args, lines, delay):
    """Runs attn with stderr on a pseudo-terminal, feeding lines slowly; returns what the
    terminal received."""
    master, slave = pty.openpty()
    p = subprocess.Popen([ATTN] + args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=slave, cwd=TMP, env=dict(os.environ, TERM="xterm"))
    os.close(slave)
    got = b""
    out = []
    reader = threading.Thread(target=lambda: out.append(p.stdout.read()))
    reader.start()
    try:
        for ln in lines:
            p.stdin.write(ln)
            p.stdin.flush()
            end = time.time() + delay
            while time.time() < end:
                r, _, _ = select.select([master], [], [], max(0.0, end - time.time()))
                if r:
                    try:
                        got += os.read(master, 4096)
                    except OSError:
                        break
        p.stdin.close()
        p.wait(30)
        while True:
            r, _, _ = select.select([master], [], [], 0.2)
            if not r:
                break
            try:
                data = os.read(master, 4096)
            except OSError:
                break
            if not data:
                break
            got += data
    finally:
        if p.poll() is None:
            p.kill()
        reader.join()
        os.close(master)
    return got.decode("utf-8", "replace"), (out[0] if out else b"")


@test("progress: only on a terminal, never with --quiet or in pipes")
def _():
    line = (json.dumps(dict(SEED, id=1)) + "\n").encode()
    try:
        # Lines fed over about 2 s: the status line appears once the run has lasted 1 s.
        tty_err, tty_out = run_with_pty_stderr(["batch", "-j", "2"], [line] * 8, 0.25)
        have_pty = True
    except OSError as e:  # a chroot or container without /dev/pts: nothing to test on
        print(f"skip: progress-bar checks need a pseudo-terminal ({e})")
        have_pty = False
    if have_pty:
        check("progress: drawn on a terminal's stderr",
              "attn batch: " in tty_err and "done" in tty_err, repr(tty_err[:300]))
        first_draw = re.search(r"attn batch: \d+ done, \d+/s, (\d+\.\d) s", tty_err)
        check("progress: not drawn before the run has lasted a second",
              first_draw is not None and float(first_draw.group(1)) >= 1.0, repr(tty_err[:300]))
        check("progress: erased at the end", tty_err.endswith("\r\x1b[K") or tty_err == "",
              repr(tty_err[-40:]))
        check("progress: stdout untouched", len(jsonl(tty_out)) == 8, repr(tty_out[:200]))
        tty_err, _ = run_with_pty_stderr(["batch", "-j", "2", "--quiet"], [line] * 8, 0.25)
        check("progress: --quiet silences it", tty_err == "", repr(tty_err[:200]))
    rc, so, se = run(["batch", "-j", "2"], line * 50)
    check("progress: never when stderr is a pipe", se == "", repr(se[:200]))


main()
