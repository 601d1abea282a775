#!/usr/bin/env python3
"""Models where users keep them: `--params ORG/NAME[@REV]` from a Hugging Face cache and
`--params ollama:NAME[:TAG]` from Ollama's store, both laid out here as huggingface_hub and
Ollama write them (snapshots as symlinks into blobs/, refs/ holding a commit hash; manifests
whose model layer names a sha256-<hex> blob). A run from a store equals the run from the
folder or file itself, byte for byte; hostile stores (a ref naming a missing snapshot, a
manifest without a model layer or with a digest that walks out of blobs/, a symlink out of
the store) and names found nowhere are refused with one line, exit 2, never the network.

/usr/bin/python3 tests/cli/stores_test.py PATH/TO/attn [--case NAME] | --list
"""
import hashlib
import json
import os
import shutil

from harness import ROOT, check, expect, main, path, run, test

TINY = os.path.join(ROOT, "samples", "tiny-gpt2")
GGUF = os.path.join(ROOT, "tests", "unit", "fixtures", "gguf", "models", "llama.gguf")
COMMIT = "0123456789abcdef0123456789abcdef01234567"
OTHER = "fedcba9876543210fedcba9876543210fedcba98"
MODEL_LAYER = "application/vnd.ollama.image.model"


def ids_file():
    with open(path("ids.json"), "w") as f:
        json.dump([3, 1, 4, 1, 5], f)
    return path("ids.json")


def hf_cache(root, repo="models--tiny-org--tiny-gpt2", commits=(COMMIT,), refs=None):
    """A cache entry as huggingface_hub writes it: blobs/ by content hash, each snapshot's
    files relative symlinks into ../../blobs, refs/<name> holding the commit (no newline)."""
    entry = os.path.join(root, repo)
    os.makedirs(os.path.join(entry, "blobs"), exist_ok=True)
    for commit in commits:
        snap = os.path.join(entry, "snapshots", commit)
        os.makedirs(snap, exist_ok=True)
        for name in ("config.json", "model.safetensors", "tokenizer.json"):
            with open(os.path.join(TINY, name), "rb") as f:
                data = f.read()
            blob = hashlib.sha256(data).hexdigest()
            with open(os.path.join(entry, "blobs", blob), "wb") as f:
                f.write(data)
            os.symlink(os.path.join("..", "..", "blobs", blob), os.path.join(snap, name))
    for ref, commit in (refs if refs is not None else {"main": commits[0]}).items():
        os.makedirs(os.path.dirname(os.path.join(entry, "refs", ref)), exist_ok=True)
        with open(os.path.join(entry, "refs", ref), "w") as f:
            f.write(commit)
    return entry


def ollama_store(root, layers=None, name=("library", "tiny", "latest"), v2=False):
    """Ollama's store: blobs/sha256-<hex> holding the GGUF, and a manifest at
    manifests/registry.ollama.ai/NS/MODEL/TAG (manifests-v2/ollama.com/... when v2)."""
    with open(GGUF, "rb") as f:
        data = f.read()
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    os.makedirs(os.path.join(root, "blobs"), exist_ok=True)
    with open(os.path.join(root, "blobs", digest.replace(":", "-")), "wb") as f:
        f.write(data)
    config = {"mediaType": "application/vnd.docker.container.image.v1+json",
              "digest": "sha256:" + "0" * 64, "size": 2}
    if layers is None:
        layers = [{"mediaType": MODEL_LAYER, "digest": digest, "size": len(data)},
                  {"mediaType": "application/vnd.ollama.image.license",
                   "digest": "sha256:" + "1" * 64, "size": 3}]
    host = "ollama.com" if v2 else "registry.ollama.ai"
    folder = os.path.join(root, "manifests-v2" if v2 else "manifests", host, *name[:2])
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name[2]), "w") as f:
        json.dump({"schemaVersion": 2,
                   "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                   "config": config, "layers": layers}, f)
    return digest


def compute(params, env, extra=()):
    return run(["compute", "--params", params, "--token-ids", ids_file(), *extra], env=env)


def same_as(name, params, env, direct, extra=()):
    code, out, err = compute(params, env, extra)
    want_code, want, _ = run(["compute", "--params", direct, "--token-ids", ids_file(),
                              *extra])
    check(f"{name}: exit 0", code == 0 and want_code == 0, err)
    check(f"{name}: the same output as {os.path.basename(direct)}", out == want,
          f"{len(out)} vs {len(want)} bytes")


def hf_env(root):
    return {"HF_HUB_CACHE": root, "HF_HOME": None, "XDG_CACHE_HOME": None,
            "HOME": path("home")}


@test("hf cache: ORG/NAME, @ref and @commit run the snapshot")
def _():
    root = path("hub")
    hf_cache(root, commits=(COMMIT, OTHER), refs={"main": COMMIT, "v1": OTHER})
    env = hf_env(root)
    same_as("main", "tiny-org/tiny-gpt2", env, TINY)
    same_as("@v1", "tiny-org/tiny-gpt2@v1", env, TINY)
    same_as("@commit", f"tiny-org/tiny-gpt2@{OTHER}", env, TINY)
    # --text: the snapshot's own tokenizer.json
    code, out, err = run(["compute", "--params", "tiny-org/tiny-gpt2", "--text", "the cat"],
                         env=env)
    want_code, want, _ = run(["compute", "--params", TINY, "--text", "the cat"])
    check("--text from the cache", code == 0 and out == want, err)


@test("hf cache: HF_HOME/hub, then XDG_CACHE_HOME, then ~/.cache")
def _():
    hf_cache(os.path.join(path("hfhome"), "hub"))
    same_as("HF_HOME", "tiny-org/tiny-gpt2",
            {"HF_HUB_CACHE": None, "HF_HOME": path("hfhome"), "HOME": path("nohome")}, TINY)
    hf_cache(os.path.join(path("xdg"), "huggingface", "hub"))
    same_as("XDG_CACHE_HOME", "tiny-org/tiny-gpt2",
            {"HF_HUB_CACHE": None, "HF_HOME": None, "XDG_CACHE_HOME": path("xdg"),
             "HOME": path("nohome")}, TINY)
    hf_cache(os.path.join(path("home"), ".cache", "huggingface", "hub"))
    same_as("HOME", "tiny-org/tiny-gpt2",
            {"HF_HUB_CACHE": None, "HF_HOME": None, "XDG_CACHE_HOME": None,
             "HOME": path("home")}, TINY)


@test("hf cache: a local folder of the same name wins")
def _():
    root = path("hub")
    os.makedirs(root, exist_ok=True)  # an empty cache: only the folder can answer
    os.makedirs(path("tiny-org"), exist_ok=True)
    shutil.copytree(TINY, path("tiny-org/tiny-gpt2"))
    same_as("local", "tiny-org/tiny-gpt2", hf_env(root), TINY)


@test("hf cache: not found, bad refs, links out of the cache -> exit 2")
def _():
    root = path("hub")
    env = hf_env(root)
    os.makedirs(root, exist_ok=True)
    expect(["compute", "--params", "nobody/nothing", "--token-ids", ids_file()], code=2,
           err=r"'nobody/nothing' is neither a file or folder \(.*nobody/nothing\) nor a model "
               r"in the Hugging Face cache \(.*hub/models--nobody--nothing\)", env=env)
    entry = hf_cache(root, refs={"main": COMMIT, "gone": OTHER})
    expect(["compute", "--params", "tiny-org/tiny-gpt2@gone", "--token-ids", ids_file()],
           code=2, err=r"revision 'gone' is commit fedcba98.*which has no snapshot folder",
           env=env)
    expect(["compute", "--params", "tiny-org/tiny-gpt2@v9", "--token-ids", ids_file()],
           code=2, err=r"no ref 'v9' in .*refs", env=env)
    with open(os.path.join(entry, "refs", "bad"), "w") as f:
        f.write("../../../etc")
    expect(["compute", "--params", "tiny-org/tiny-gpt2@bad", "--token-ids", ids_file()],
           code=2, err=r"refs/bad holds no commit hash", env=env)
    outside = path("outside.json")
    shutil.copy(os.path.join(TINY, "config.json"), outside)
    link = os.path.join(entry, "snapshots", COMMIT, "config.json")
    os.remove(link)
    os.symlink(outside, link)
    expect(["compute", "--params", "tiny-org/tiny-gpt2", "--token-ids", ids_file()], code=2,
           err=r"config.json leads outside the cache's folder", env=env)


def ollama_env(root):
    return {"OLLAMA_MODELS": root, "HOME": path("home")}


@test("ollama: NAME, NAME:TAG, NS/NAME, manifests-v2 run the GGUF blob")
def _():
    root = path("ollama")
    ollama_store(root)
    ollama_store(root, name=("library", "tiny", "q8"))
    ollama_store(root, name=("someone", "tiny", "latest"))
    env = ollama_env(root)
    same_as("ollama:tiny", "ollama:tiny", env, GGUF)
    same_as("ollama:tiny:q8", "ollama:tiny:q8", env, GGUF)
    same_as("ollama:someone/tiny", "ollama:someone/tiny", env, GGUF)
    root2 = path("ollama2")
    ollama_store(root2, v2=True)
    same_as("manifests-v2", "ollama:tiny", ollama_env(root2), GGUF)
    ollama_store(os.path.join(path("home2"), ".ollama", "models"))
    same_as("~/.ollama/models", "ollama:tiny", {"OLLAMA_MODELS": None, "HOME": path("home2")},
            GGUF)
    # attn info names the resolved blob
    code, out, err = run(["info", "ollama:tiny"], env=env)
    check("info ollama:tiny", code == 0 and b"sha256-" in out and b"llama" in out, err)


@test("ollama: missing model, no model layer, bad digest, blob out of the store -> exit 2")
def _():
    root = path("ollama")
    env = ollama_env(root)
    os.makedirs(root, exist_ok=True)
    expect(["compute", "--params", "ollama:nothing", "--token-ids", ids_file()], code=2,
           err=r"'ollama:nothing' is not in Ollama's store \(looked for "
               r".*manifests/registry.ollama.ai/library/nothing/latest and "
               r".*manifests-v2/ollama.com/library/nothing/latest\)", env=env)
    expect(["compute", "--params", "ollama:../x", "--token-ids", ids_file()], code=2,
           err=r"expected ollama:NAME\[:TAG\]", env=env)
    ollama_store(root, layers=[{"mediaType": "application/vnd.ollama.image.license",
                                "digest": "sha256:" + "1" * 64}], name=("library", "nol", "a"))
    expect(["compute", "--params", "ollama:nol:a", "--token-ids", ids_file()], code=2,
           err=r"no model layer \(mediaType application/vnd.ollama.image.model\)", env=env)
    ollama_store(root, layers=[{"mediaType": MODEL_LAYER, "digest": "../../../etc/passwd"}],
                 name=("library", "evil", "a"))
    expect(["compute", "--params", "ollama:evil:a", "--token-ids", ids_file()], code=2,
           err=r"the model layer's digest is not sha256:<64 hex>", env=env)
    digest = ollama_store(root, name=("library", "out", "a"))
    blob = os.path.join(root, "blobs", digest.replace(":", "-"))
    shutil.move(blob, path("elsewhere.gguf"))
    os.symlink(path("elsewhere.gguf"), blob)
    expect(["compute", "--params", "ollama:out:a", "--token-ids", ids_file()], code=2,
           err=r"leads outside Ollama's store", env=env)
    os.remove(blob)
    expect(["compute", "--params", "ollama:out:a", "--token-ids", ids_file()], code=2,
           err=r"names the blob .*sha256-[0-9a-f]{64}, which is not there", env=env)


if __name__ == "__main__":
    main()
