#!/usr/bin/env python3
"""Pipeline tests for attn: `batch` (order under --jobs, error lines, exit codes,
streaming, bounded memory: backpressure and the peak RSS of 256 MiB piped through,
progress only on a terminal), `-` as stdin/stdout,
`diff` (numpy.allclose's rule, shapes, NaN, documents) and `explain` (against the
samples' expected results).

Run from the repository root: /usr/bin/python3 tests/cli/pipeline_test.py PATH/TO/attn
Ends with the line "N passed, M failed"; exits 1 if any case failed.
"""
import io
import json
import os
import pty
import re
import select
import subprocess
import threading
import time

import numpy as np

from harness import ATTN, SAMPLES, TMP, case, check, main, path, run, run_case, test, write

def jsonl(so):
    return [json.loads(x) for x in so.decode().splitlines()]


rng = np.random.default_rng(4)


def rand(*shape):
    return np.round(rng.uniform(-1, 1, size=shape), 4).tolist()


SEED = {"query": [[1, 0, 1], [0, 1, 1]], "key": [[1, 0, 1], [1, 1, 0], [0, 1, 1]],
        "value": [[10, 0], [0, 10], [5, 5]], "scale": 1}
e = np.e
W = np.array([[e, 1, 1], [1, 1, e]]) / (e + 2)
CTX = W @ np.array(SEED["value"], dtype=float)

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
    SANITIZED = "ASAN_OPTIONS" in os.environ
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



# --- "-" everywhere -------------------------------------------------------------------------
q, k, v = (np.array(SEED[n], dtype=np.float32) for n in ("query", "key", "value"))
np.save(path("q.npy"), q)
np.save(path("k.npy"), k)
np.save(path("v.npy"), v)
buf = io.BytesIO()
np.save(buf, q)
Q_NPY = buf.getvalue()
case("compute -q - (NPY on stdin)", ["compute", "-q", "-", "-k", "k.npy", "-v", "v.npy",
                                     "--scale", "1"], stdin=Q_NPY,
     out=lambda so: np.allclose(json.loads(so)["weights"], W, atol=1e-6))
case("compute -q - (JSON on stdin)", ["compute", "-q", "-", "-k", "k.npy", "-v", "v.npy",
                                      "--scale", "1"], stdin=json.dumps(SEED["query"]).encode(),
     out=lambda so: np.allclose(json.loads(so)["weights"], W, atol=1e-6))
case("compute --mask - (bool NPY on stdin)",
     ["compute", "-q", "q.npy", "-k", "k.npy", "-v", "v.npy", "--mask", "-"],
     stdin=(lambda b: (np.save(b, np.array([[1, 0, 1], [1, 1, 1]], dtype=bool)),
                       b.getvalue())[1])(io.BytesIO()),
     out=lambda so: json.loads(so)["weights"][0][1] == 0)
case("compute --params - ", ["compute", "-x", "q.npy", "--params", "-"],
     stdin=json.dumps({"w_q": np.eye(3).tolist(), "w_k": None, "w_v": None}).encode(),
     out=lambda so: np.array(json.loads(so)["output"]).shape == (2, 3))
for flag in ("-k", "-v"):
    files = {"-q": "q.npy", "-k": "k.npy", "-v": "v.npy"}
    src = {"-k": k, "-v": v}[flag]
    args = ["compute", "--scale", "1"]
    for f_, name_ in files.items():
        args += [f_, "-" if f_ == flag else name_]
    case(f"compute {flag} - (NPY on stdin)", args,
         stdin=(lambda b: (np.save(b, src), b.getvalue())[1])(io.BytesIO()),
         out=lambda so: np.allclose(json.loads(so)["weights"], W, atol=1e-6))
case("compute - with file paths relative to the working folder", ["compute", "-"],
     stdin=json.dumps(dict(SEED, query="q.npy", key="k.npy")).encode(),
     out=lambda so: np.allclose(json.loads(so)["output"], CTX, atol=1e-5))


@test("compute - | heatmap - -o - (PNG on stdout)")
def _():
    run_case("compute - | heatmap - -o - (PNG on stdout)", ["heatmap", "-", "-o", "-"],
         stdin=run(["compute", "-"], json.dumps(SEED).encode())[1],
         out=lambda so: so.startswith(b"\x89PNG\r\n\x1a\n") and so.endswith(b"IEND\xaeB`\x82"))


case("compute --heatmap - (PNG on stdout)", ["compute", "-", "--heatmap", "-", "--output",
                                             "o2.npy"], stdin=json.dumps(SEED).encode(),
     out=lambda so: so.startswith(b"\x89PNG\r\n\x1a\n"))
case("compute: stdin only once", ["compute", "-", "-q", "-"], stdin=b"{}", code=2,
     err="only one input can be -")
write("seed.json", SEED)
so = case("compute --output - --format npy", ["compute", "seed.json", "--output", "-",
                                              "--format", "npy"],
          out=lambda so: np.allclose(np.load(io.BytesIO(so)), CTX, atol=1e-5) and
          np.load(io.BytesIO(so)).dtype == np.float32)
case("compute --output - defaults to JSON", ["compute", "seed.json", "-o", "-"],
     out=lambda so: np.allclose(json.loads(so), CTX, atol=1e-5))
case("compute --weights - --format npy --dtype f64",
     ["compute", "seed.json", "--weights", "-", "--format", "npy", "--dtype", "f64"],
     out=lambda so: np.load(io.BytesIO(so)).dtype == np.float64 and
     np.allclose(np.load(io.BytesIO(so)), W, atol=1e-6))


@test("compute --weights - and --output FILE")
def _():
    run_case("compute --weights - and --output FILE", ["compute", "seed.json", "--weights", "-",
                                                   "--output", "o.npy"],
         out=lambda so: np.allclose(json.loads(so), W, atol=1e-6))
    check("... the FILE is written too", os.path.exists(path("o.npy")) and
          np.allclose(np.load(path("o.npy")), CTX, atol=1e-5))




@test("compute --format overrides the extension")
def _():
    run_case("compute --format overrides the extension", ["compute", "seed.json", "-o", "o.bin",
                                                      "--format", "npy"])
    check("... o.bin is NPY", os.path.exists(path("o.bin")) and
          np.allclose(np.load(path("o.bin")), CTX, atol=1e-5))


case("compute: two outputs on stdout", ["compute", "seed.json", "-o", "-", "--weights", "-"],
     code=2, err="only one of them can be -")
case("compute bad --format", ["compute", "seed.json", "-o", "-", "--format", "csv"], code=2,
     err="format")
case("info - (NPY)", ["info", "-"], stdin=Q_NPY,
     out=lambda so: b"[2, 3]" in so and b"float32" in so)
case("info - (JSON)", ["info", "-", "--json"], stdin=b"[[1, 2], [3, 4], [5, 6]]",
     out=lambda so: json.loads(so)["shape"] == [3, 2])
case("info - (garbage)", ["info", "-"], stdin=b"\x93NUMPY garbage", code=2, err="stdin")
case("explain -", ["explain", "-"], stdin=json.dumps(SEED).encode(),
     out=lambda so: b"output       [2, 2]" in so)

# --- diff: numpy.allclose's rule, B is the reference ----------------------------------------


def npy(name, a, dtype=np.float32):
    np.save(path(name), np.asarray(a, dtype=dtype))
    return name


base = rng.standard_normal((3, 4, 5)).astype(np.float32)
npy("a.npy", base)
case("diff identical", ["diff", "a.npy", "a.npy"],
     out=lambda so: b"identical" in so and so.decode().splitlines()[-1].startswith("equal"))
write("a.json", json.dumps(base.tolist()))
case("diff .npy vs .json of the same values", ["diff", "a.npy", "a.json"],
     out=lambda so: b"identical" in so)
case("diff -: A from stdin", ["diff", "-", "a.npy"], stdin=open(path("a.npy"), "rb").read(),
     out=lambda so: b"identical" in so)
case("diff both -", ["diff", "-", "-"], stdin=b"[1]", code=2, err="only one")

# Random pairs near the threshold: the exit code must agree with numpy.allclose on the same
# float32 values, compared in float64.


@test("diff agrees with numpy.allclose on random pairs")
def _():
    agree = True
    detail = ""
    for trial in range(40):
        rtol = [1e-5, 1e-3, 0.0, 1e-7][trial % 4]
        atol = [1e-6, 0.0, 1e-4, 1e-8][(trial // 4) % 4]
        a = rng.standard_normal(50).astype(np.float32)
        b = a.astype(np.float64) * (1 + rng.uniform(-3, 3, 50) * rtol) + \
            rng.uniform(-3, 3, 50) * atol
        b = b.astype(np.float32)
        if trial % 5 == 0:
            a[3] = b[3] = np.nan
        want = bool(np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol, atol=atol,
                                equal_nan=True))
        npy("ra.npy", a)
        npy("rb.npy", b)
        rc, so, se = run(["diff", "ra.npy", "rb.npy", "--rtol", repr(rtol), "--atol", repr(atol)])
        if rc != (0 if want else 1):
            agree = False
            detail = f"trial {trial}: exit {rc}, numpy says {want}; {so.decode()} {se}"
            break
    check("diff agrees with numpy.allclose(equal_nan=True) on 40 random pairs", agree, detail)



# Worst index, error values, tolerance flags.
b2 = base.copy()
b2[1, 2, 3] += 0.5
b2[2, 0, 0] += 1e-3
npy("b2.npy", b2)
case("diff reports the worst index and values", ["diff", "a.npy", "b2.npy"], code=1,
     out=lambda so: b"max abs err 0.5 at [1, 2, 3]" in so and
     b"2 outside tolerance, worst at [1, 2, 3]" in so and
     # float32 values print as float32 (at most 9 digits), not as 17-digit doubles
     re.search(rb"worst at \[1, 2, 3\] \(A [-0-9.e]{1,13}, B [-0-9.e]{1,13}\)", so) and
     so.decode().splitlines()[-1].startswith("different"))
case("diff --atol loosens", ["diff", "a.npy", "b2.npy", "--atol", "0.6"])
case("diff --quiet prints nothing", ["diff", "a.npy", "b2.npy", "--quiet"], code=1,
     out=lambda so: so == b"")
npy("z.npy", [0.0, 1.0])
npy("z2.npy", [1e-7, 1.0])
case("diff default atol 1e-6 accepts 1e-7 near zero", ["diff", "z.npy", "z2.npy"])
case("diff --atol 0 --rtol 0 does not", ["diff", "z.npy", "z2.npy", "--atol", "0", "--rtol",
                                         "0"], code=1)
npy("rel_a.npy", [100.0])
npy("rel_b.npy", [100.0009])
case("diff rtol scales with |B|", ["diff", "rel_a.npy", "rel_b.npy", "--rtol", "1e-5", "--atol",
                                   "0"])
case("diff rtol: just outside", ["diff", "rel_a.npy", "rel_b.npy", "--rtol", "8e-6", "--atol",
                                 "0"], code=1)
# On the boundary |a - b| == atol + rtol·|B| is within (numpy's <=); every value here is
# exact in binary, so the boundary is exact too.
npy("e1.npy", [5.0, 1.0])
npy("e2.npy", [4.0, 1.0])
case("diff boundary: |a-b| == atol + rtol·|B| is within",
     ["diff", "e1.npy", "e2.npy", "--atol", "0.5", "--rtol", "0.125"],
     out=lambda so: b"within tolerance" in so)
case("diff boundary: a hair less atol is not",
     ["diff", "e1.npy", "e2.npy", "--atol", "0.4999999", "--rtol", "0.125"], code=1,
     out=lambda so: b"1 outside tolerance, worst at [0] (A 5, B 4)" in so)
case("diff boundary: atol alone", ["diff", "e1.npy", "e2.npy", "--atol", "1", "--rtol", "0"])
case("diff boundary: rtol alone", ["diff", "e1.npy", "e2.npy", "--atol", "0", "--rtol", "0.25"])
npy("e3.npy", [3.0, 1.0])
case("diff: rtol scales |B|: |3 - 4| <= 0.25·4", ["diff", "e3.npy", "e2.npy", "--atol", "0",
                                                  "--rtol", "0.25"])
case("diff: rtol scales |B|, not |A|: |4 - 3| > 0.25·3",
     ["diff", "e2.npy", "e3.npy", "--atol", "0", "--rtol", "0.25"], code=1)
# The worst index is the one furthest outside its own tolerance, not the largest error.
npy("w1.npy", [1000.5, 0.01], np.float64)
npy("w2.npy", [1000.0, 0.0], np.float64)
case("diff: worst index by error/tolerance, max abs error reported apart",
     ["diff", "w1.npy", "w2.npy"], code=1,
     out=lambda so: b"max abs err 0.5 at [0]" in so and b"max rel err inf at [1]" in so and
     b"2 outside tolerance, worst at [1] (A 0.01, B 0)" in so)
# float64 arrays are compared as float64, never rounded to float32 first.
npy("f1.npy", [1.0, 1e300, 0.1], np.float64)
npy("f2.npy", [1.0 + 1e-9, 2e300, 0.1], np.float64)
case("diff float64: 1e-9 apart is not identical", ["diff", "f1.npy", "f2.npy", "--atol", "0",
                                                    "--rtol", "0"], code=1,
     out=lambda so: b"max abs err 1e+300 at [1]" in so and b"2 outside tolerance" in so)
npy("f3.npy", [1.0 + 1e-9, 1e300, 0.1], np.float64)
case("diff float64: within a tolerance float32 could not resolve",
     ["diff", "f1.npy", "f3.npy", "--atol", "0", "--rtol", "1e-8"],
     out=lambda so: b"max abs err 1e-09 at [0]" in so and b"within tolerance" in so)
case("diff float64: fails just under it", ["diff", "f1.npy", "f3.npy", "--atol", "0", "--rtol",
                                            "9e-10"], code=1)
write("f1.json", "[1.0, 1e300, 0.1]")
case("diff float64 .npy vs the same decimals in JSON", ["diff", "f1.npy", "f1.json", "--atol",
                                                         "0", "--rtol", "0"],
     out=lambda so: b"identical" in so)
for bad_tol in ("nan", "inf", "-0.1", "1e400", "x"):
    case(f"diff --rtol {bad_tol} refused", ["diff", "a.npy", "a.npy", "--rtol", bad_tol], code=2,
         err=r"^attn: error: --rtol: expected a finite number >= 0, got '" + re.escape(bad_tol) +
         r"'.{0,60}$")
case("diff --atol nan refused", ["diff", "a.npy", "a.npy", "--atol", "nan"], code=2,
     err="--atol: expected a finite number")
npy("s.npy", np.zeros((4, 5)))
case("diff shape mismatch", ["diff", "a.npy", "s.npy"], code=1,
     out=lambda so: b"shape mismatch: A [3, 4, 5], B [4, 5]" in so)
npy("n1.npy", [1.0, np.nan, np.inf, -np.inf])
npy("n2.npy", [1.0, np.nan, np.inf, -np.inf])
npy("n3.npy", [np.nan, 2.0, np.inf, -np.inf])
npy("n4.npy", [1.0, np.nan, -np.inf, -np.inf])
case("diff NaN and inf in the same places", ["diff", "n1.npy", "n2.npy"])
case("diff NaN in different places", ["diff", "n1.npy", "n3.npy"], code=1,
     out=lambda so: b"NaN in only one of them at 2 position(s), first at [0]" in so)
case("diff inf of opposite sign", ["diff", "n1.npy", "n4.npy"], code=1,
     out=lambda so: b"1 outside tolerance, worst at [2]" in so)



@test("diff result documents")
def _():
    # Result documents.
    rc, doc_a, _ = run(["compute", "seed.json"])
    write("ra.json", doc_a.decode())
    doc = json.loads(doc_a)
    doc["weights"][1][2] += 0.01
    write("rb.json", json.dumps(doc))
    run_case("diff result documents: output and weights", ["diff", "ra.json", "rb.json"], code=1,
         out=lambda so: so.decode().startswith("output: shape [2, 2], 4 values: identical\n"
                                               "weights: shape [2, 3], 6 values; max abs err 0.01 at "
                                               "[1, 2]"))
    rc, doc_nw, _ = run(["compute", "seed.json", "--no-weights"])
    write("rnw.json", doc_nw.decode())
    run_case("diff documents, weights only in one", ["diff", "ra.json", "rnw.json"],
         out=lambda so: b"weights: only in A (not compared)" in so)
    npy("ctx.npy", CTX)
    run_case("diff array vs document: its output", ["diff", "ctx.npy", "ra.json", "--atol", "1e-5"],
         out=lambda so: so.startswith(b"output: "))
    npy("w.npy", W)
    run_case("diff array vs document: weights when the shape says so", ["diff", "ra.json", "w.npy"],
         out=lambda so: so.startswith(b"weights: "))
    write("wonly.json", {"id": 1, "weights": W.tolist()})
    run_case("diff array vs a document with weights only", ["diff", "w.npy", "wonly.json"],
         out=lambda so: so.startswith(b"weights: shape [2, 3], 6 values"))
    run_case("diff array vs a document with weights only, other shape", ["diff", "ctx.npy", "wonly.json"],
         code=1, out=lambda so: b"weights: shape mismatch: A [2, 2], B [2, 3]" in so)
    doc2 = json.loads(doc_a)
    doc2["output"][0][0] = "nan"
    write("rnan.json", json.dumps(doc2))
    run_case("diff documents: NaN in one output", ["diff", "ra.json", "rnan.json"], code=1,
         out=lambda so: b"output: " in so and b"NaN in only one of them at 1 position(s), first at "
         b"[0, 0]" in so and b"weights: shape [2, 3], 6 values: identical" in so)
    run_case("diff a batch line against compute's document", ["diff", "-", "ra.json"],
         stdin=run(["batch"], json.dumps(SEED).encode())[1],
         out=lambda so: so.decode().splitlines()[-1].startswith("equal"))
    write("err.json", {"id": 1, "error": "boom"})
    run_case("diff an error document", ["diff", "err.json", "ra.json"], code=2, err="boom")
    run_case("diff missing file", ["diff", "nope.npy", "a.npy"], code=2, err="nope.npy")
    write("bad.json", "{")
    run_case("diff invalid JSON", ["diff", "bad.json", "a.npy"], code=2, err="invalid JSON")
    write("obj.json", {"foo": 1})
    run_case("diff object without arrays", ["diff", "obj.json", "a.npy"], code=2, err="output")
    run_case("diff unknown extension", ["diff", "a.txt", "a.npy"], code=2, err="a.txt")
    run_case("diff negative --rtol", ["diff", "a.npy", "a.npy", "--rtol", "-1"], code=2, err="rtol")



# --- explain: against the samples' expected results -----------------------------------------


def explain_rows(so):
    rows = {}
    for ln in so.decode().splitlines():
        if ln[:1] != " ":
            rows[ln[:13].strip()] = ln[13:]
    return rows


def shape_of(text):
    m = re.match(r"\[([0-9, ]*)\]", text)
    return [int(x) for x in m.group(1).split(",")] if m and m.group(1) else []


def grid_of(so):
    """The '#'/'.' rows of the visibility grid."""
    out = []
    lines = so.decode().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("visibility"))
    for ln in lines[start + 2:]:
        if not ln.startswith(" ") or not re.search(r" [#.]+$", ln):
            break
        out.append(ln.rsplit(" ", 1)[1])
    return out




@test("explain: the samples against their expected results")
def _():
    for name in sorted(os.listdir(os.path.join(SAMPLES, "expected"))):
        exp = json.load(open(os.path.join(SAMPLES, "expected", name)))
        so = run_case("explain " + name, ["explain", os.path.join(SAMPLES, name)])
        if not so:
            continue
        rows = explain_rows(so)
        out_shape = list(np.array(exp["output"]).shape)
        w = np.array(exp["weights"], dtype=float)
        check(f"explain {name}: output shape", shape_of(rows.get("output", "")) == out_shape,
              f"{rows.get('output')} vs {out_shape}")
        check(f"explain {name}: weights shape", shape_of(rows.get("weights", "")) == list(w.shape),
              f"{rows.get('weights')} vs {list(w.shape)}")
        # The grid is batch 0, head 0: '#' exactly where the expected weights are nonzero.
        w00 = w.reshape((-1,) + w.shape[-2:])[0]
        want = ["".join("#" if x > 0 else "." for x in row) for row in w00]
        check(f"explain {name}: visibility grid matches the expected weights",
              grid_of(so) == want, f"{grid_of(so)} vs {want}")
        for key in ("heads", "scale", "masking", "memory", "Q", "K", "V"):
            check(f"explain {name}: has {key}", key in rows or key in ("Q", "K", "V"), str(rows))

    problems = sorted(f for f in os.listdir(SAMPLES)
                      if f.endswith(".json") and not f.endswith(".params.json"))
    check("explain: every sample problem has an expected result (so is explained above)",
          problems == sorted(os.listdir(os.path.join(SAMPLES, "expected"))), str(problems))




@test("explain: seed_dot, multihead and gqa line by line")
def _():
    # The seed's worked example, line by line where the values are derived by hand.
    so = run_case("explain samples/seed_dot.json", ["explain", os.path.join(SAMPLES, "seed_dot.json")])
    rows = explain_rows(so)
    for key, want in [("query", "[2, 3] = [Lq, E]"), ("key", "[3, 3] = [Lk, E]"),
                      ("value", "[3, 2] = [Lk, Ev]"), ("projections", "none (Q, K, V are the sources)"),
                      ("heads", "1 head; head dim 3, value head dim 2"),
                      ("scale", "1 (variant dot)"), ("output", "[2, 2]"),
                      ("weights", "[2, 3] = [Lq, Lk]"),
                      ("masking", "none: every query sees every key")]:
        check(f"explain seed_dot: {key}", rows.get(key) == want, f"{rows.get(key)!r} vs {want!r}")
    check("explain seed_dot: grid with token labels",
          "                 012\n             0 q0 ###\n             1 q1 ###\n" in so.decode(),
          so.decode())
    rows = explain_rows(run(["explain", os.path.join(SAMPLES, "multihead.json")])[1])
    check("explain multihead: heads, scale and the output projection",
          rows.get("heads") == "2 heads, each with its own key/value head; head dim 2" and
          rows.get("scale") == "0.70710677 = 1/sqrt(2) (default)" and
          rows.get("attention") == "[1, 2, 3, 2] -> merged [1, 3, 4] -> ·w_oᵀ [1, 3, 4]", str(rows))
    rows = explain_rows(run(["explain", os.path.join(SAMPLES, "gqa.json")])[1])
    check("explain gqa: grouping", rows.get("heads", "").startswith(
        "4 query heads, 2 key/value heads: grouped-query, query head h uses key/value head h / 2"),
        str(rows))


case("explain with flags only", ["explain", "-q", "q.npy", "-k", "k.npy", "-v", "v.npy",
                                 "--causal", "--heads", "1"],
     out=lambda so: grid_of(so) == ["#..", "##."] and b"scale        0.57735026 = 1/sqrt(3)" in so)
long = {"input": np.zeros((100, 8)).tolist(), "variant": "masked-self", "init": {"seed": 1},
        "num_heads": 4, "num_kv_heads": 2, "key_padding_mask": [1] * 90 + [0] * 10}
write("long.json", long)
case("explain truncates the grid", ["explain", "long.json"],
     out=lambda so: len(grid_of(so)) == 32 and len(grid_of(so)[0]) == 64 and
     b"(first 32 of 100 queries and 64 of 100 keys shown)" in so and
     b"4 query heads, 2 key/value heads: grouped-query" in so and
     b", weights 625.0 KiB\n" in so)


@test("explain: the same errors as compute")
def _():
    bad = dict(SEED, num_heads=2)
    rc_c, _, se_c = run(["compute", "-"], json.dumps(bad).encode())
    run_case("explain: same error as compute", ["explain", "-"], stdin=json.dumps(bad).encode(), code=2,
         out=lambda so: so == b"", err=re.escape(se_c.strip()))
    check("explain: compute failed too", rc_c == 2, str(rc_c))
    bad_wo = {"input": rand(3, 4), "params": {"w_q": np.eye(4).tolist(), "w_k": None, "w_v": None,
                                              "w_o": np.eye(3).tolist()}}
    rc_c, _, se_c = run(["compute", "-"], json.dumps(bad_wo).encode())
    run_case("explain: w_o mismatch named as compute names it", ["explain", "-"],
         stdin=json.dumps(bad_wo).encode(), code=2, err=re.escape(se_c.strip()))
    run_case("explain: bottom-right with Lq < Lk", ["explain", "-"],
         stdin=json.dumps(dict(SEED, causal="bottom-right")).encode(),
         out=lambda so: grid_of(so) == ["##.", "###"] and b"j <= i + 1" in so)
    run_case("explain: fully masked rows counted", ["explain", "-"],
         stdin=json.dumps(dict(SEED, mask=[[0, 0, 0], [1, 1, 1]])).encode(),
         out=lambda so: b"1 query row(s) (over all batches and heads) see no key" in so)
    run_case("explain: -inf bias blocks", ["explain", "-"],
         stdin=json.dumps(dict(SEED, bias=[["-inf", 0, 0], [0, 0, 1]])).encode(),
         out=lambda so: grid_of(so) == [".##", "###"])




@test("explain grid vs compute")
def _():
    # The grid says what compute does: '#' exactly where compute's weights are nonzero.
    GRID_CASES = [
        {"window": [1, 0]},
        {"window": [0, 1], "causal": "bottom-right"},
        {"window": [1, 1], "window_align": "bottom-right"},
        {"window": [2, -1], "mask": (rng.uniform(size=(5, 7)) > 0.3).astype(int).tolist()},
        {"softcap": 5.0, "alibi": True, "causal": True},
        {"sinks": [0.5], "key_padding_mask": [1, 1, 0, 1, 1, 1, 0]},
    ]
    for i, extra in enumerate(GRID_CASES):
        prob = dict({"query": rand(5, 4), "key": rand(7, 4), "value": rand(7, 3)}, **extra)
        rc_c, so_c, se_c = run(["compute", "-"], json.dumps(prob).encode())
        rc_e, so_e, se_e = run(["explain", "-"], json.dumps(prob).encode())
        if rc_c != 0 or rc_e != 0:
            check(f"explain grid vs compute, case {i}", False, f"{se_c} {se_e}")
            continue
        w = np.array(json.loads(so_c)["weights"], dtype=float)
        want = ["".join("#" if x > 0 else "." for x in row) for row in w]
        check(f"explain grid vs compute, case {i} ({', '.join(extra)})", grid_of(so_e) == want,
              f"{grid_of(so_e)} vs {want}")


case("explain lists score transforms and extra returns", ["explain", "-"],
     stdin=json.dumps(dict(SEED, softcap=30, alibi=True, sinks=[0.1], top_k=2,
                           **{"return": ["lse", "top_k"]})).encode(),
     out=lambda so: b"scores       softcap 30" in so and b"ALiBi, 1 slopes" in so and
     b"attention sinks" in so and b"also returns lse, top_k (K = 2) per query row" in so)
case("explain help", ["explain", "--help"], out=lambda so: b"--query" in so)
case("diff help", ["diff", "--help"], out=lambda so: b"--rtol" in so and b"--atol" in so)

main()
