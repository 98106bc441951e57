"""StoryLM-0's host side: the tokenizer, the corpus windows, the initial
weights, the training loops around examples/storylm0.sml's compiled steps,
greedy generation, and the versioned checkpoint `storylm0-checkpoint-v2`.

Everything numeric happens in shapeml (the .sml program, JIT-compiled
through the C ABI); the host only moves arrays and picks argmaxes.
Reproducibility: the weights come from NumPy's PCG64 generator with a fixed
seed, the program is compiled for the baseline `x86-64` target (the same
machine code, hence the same bits, on every x86-64 machine), and one thread
computes everything, so a run gives the same losses, weights and tokens
bit for bit.
"""
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "sdk-examples", "python"))
import shapeml  # noqa: E402

SOURCE = os.path.join(ROOT, "examples", "storylm0.sml")
CORPUS = os.path.join(HERE, "corpus.txt")

# 64 tokens, one per character; index = token id. Characters outside it are an error.
ALPHABET = " abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0.,!?'-;:\"\n"
assert len(ALPHABET) == 64 and len(set(ALPHABET)) == 64

V, D, H, DH, F = 64, 32, 2, 16, 64
T = 16           # training window (tokens in; the next 16 are the targets)
T_MAX = 36       # generation: a static window, the prompt and 32 new tokens
EPOCHS = 40
LR = 0.5         # SGD learning rate for the MEAN loss (the step gets LR / (B*T))
ADAMW = {"lr": 0.01, "b1": 0.9, "b2": 0.999, "eps": 1e-8, "wd": 0.01}
# The recipe that learns the corpus (train.py's default): AdamW on every
# shifted window (shifted_windows), decoded with the training window
# (greedy(..., window=T)); 400 steps reproduce the corpus from "once".
ADAMW_STEPS = 400
SEED = 0
CHECKPOINT_FORMAT = "storylm0-checkpoint-v2"
CHECKPOINT_VERSION = 2  # v1: one decoder block (12 weights); v2: two blocks (22)

# One decoder block's weights (the program's `Block` bundle, in its order):
# name, shape, initial distribution ("ones", or a normal with this std).
BLOCK = [
    ("g1", (D,), "ones"),
    ("wq", (D, H, DH), D ** -0.5),
    ("wk", (D, H, DH), D ** -0.5),
    ("wv", (D, H, DH), D ** -0.5),
    ("wo", (H, DH, D), D ** -0.5),
    ("g2", (D,), "ones"),
    ("w_gate", (D, F), D ** -0.5),
    ("w_up", (D, F), D ** -0.5),
    ("w_down", (F, D), F ** -0.5),
]
BLOCKS = 2
# The `Model` bundle's fields in declared order: the order of its tensors at
# the C ABI (the entries' parameters m.emb, m.b1.g1, ...), named as there
# without the parameter's prefix.
WEIGHTS = ([("emb", (V, D), 1.0)] + [(f"b{i}.{n}", s, how) for i in range(1, BLOCKS + 1) for n, s, how in BLOCK] +
           [("g_final", (D,), "ones"), ("w_out", (D, V), D ** -0.5)])
NAMES = [n for n, _, _ in WEIGHTS]


class CheckpointError(Exception):
    """A checkpoint that is not a readable `storylm0-checkpoint-v2`."""


def encode(text):
    bad = sorted(set(c for c in text if c not in ALPHABET))
    if bad:
        raise ValueError(f"characters outside StoryLM-0's alphabet: {bad!r}")
    return np.array([ALPHABET.index(c) for c in text], np.int64)


def decode(tokens):
    return "".join(ALPHABET[int(t)] for t in tokens)


def corpus_windows(path=CORPUS):
    """The corpus as B = 3 windows of T + 1 tokens, consecutive and
    overlapping by one token: inputs [B T], targets [B T] (shifted by one)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    toks = encode(text)
    n = (len(toks) - 1) // T
    if n < 1:
        raise ValueError(f"{path}: the corpus needs at least {T + 1} characters")
    windows = np.stack([toks[i * T: i * T + T + 1] for i in range(n)])
    return windows[:, :-1].copy(), windows[:, 1:].copy(), text


def shifted_windows(path=CORPUS):
    """Every window of T + 1 consecutive tokens (stride 1: B = len - T):
    inputs [B T], targets [B T]. With no positional embedding the model
    learns the next character from the last T characters wherever they
    start, which is what sliding-window decoding (greedy(window=T)) asks."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    toks = encode(text)
    n = len(toks) - T
    if n < 1:
        raise ValueError(f"{path}: the corpus needs at least {T + 1} characters")
    windows = np.stack([toks[i: i + T + 1] for i in range(n)])
    return windows[:, :-1].copy(), windows[:, 1:].copy(), text


def init_weights(seed=SEED):
    rng = np.random.default_rng(seed)
    w = {}
    for name, shape, how in WEIGHTS:
        w[name] = np.ones(shape, np.float32) if how == "ones" else (rng.standard_normal(shape) * how).astype(np.float32)
    return w


def library(build_dir):
    return shapeml.Library(os.path.join(build_dir, "libshapeml.so"))


def compile_program(lib):
    with open(SOURCE, encoding="utf-8") as f:
        src = f.read()
    # The baseline target: the same code (and bits) on every x86-64 machine.
    return lib.compile(src, name="storylm0.sml", target=shapeml.TARGET_X86_64)


def train_sgd(module, weights, tokens, targets, epochs=EPOCHS, lr=LR, log=None):
    """Full-batch SGD, one step per epoch. Returns (mean losses per epoch,
    final weights, seconds per step after the first)."""
    w = dict(weights)
    n = tokens.size
    step_lr = np.array(lr / n, np.float32)  # the program's loss is the SUM over B*T tokens
    losses, times = [], []
    for epoch in range(epochs):
        t0 = time.perf_counter()
        out = module.call("sgd_step", tokens, targets, step_lr, *[w[k] for k in NAMES])
        times.append(time.perf_counter() - t0)
        losses.append(float(out[0].reshape(())) / n)
        w = dict(zip(NAMES, out[1:]))
        if log:
            log(f"epoch {epoch + 1:2d}  loss {losses[-1]:.6f}")
    return losses, w, (float(np.median(times[1:])) if len(times) > 1 else times[0])


def train_adamw(module, weights, tokens, targets, steps, hp=ADAMW, log=None):
    """AdamW (the program's adamw_step), `steps` full-batch steps on the
    summed loss. Returns (mean losses, weights, m, v)."""
    w = dict(weights)
    m = {k: np.zeros_like(v) for k, v in w.items()}
    v = {k: np.zeros_like(x) for k, x in w.items()}
    n = tokens.size
    losses = []
    for t in range(1, steps + 1):
        h = np.array([hp["lr"], hp["b1"], hp["b2"], hp["eps"], hp["wd"], t], np.float32)
        out = module.call("adamw_step", tokens, targets, h, *[w[k] for k in NAMES], *[m[k] for k in NAMES], *[v[k] for k in NAMES])
        losses.append(float(out[0].reshape(())) / n)
        k = len(NAMES)
        w = dict(zip(NAMES, out[1:1 + k]))
        m = dict(zip(NAMES, out[1 + k:1 + 2 * k]))
        v = dict(zip(NAMES, out[1 + 2 * k:1 + 3 * k]))
        if log:
            log(f"step {t:2d}  loss {losses[-1]:.6f}")
    return losses, w, m, v


def greedy(module, weights, prompt, new_tokens=32, t_max=T_MAX, window=None):
    """Greedy decoding with one static shape: the context lives in a [1,
    t_max] buffer padded with token 0; causal attention makes the padding
    invisible to the positions before it, so the logits at the last real
    position are those of the unpadded context, and the program is
    compiled once. `window`: the context is the last `window` tokens (the
    training window T for shifted_windows training); None: all of them.
    Ties go to the lowest token id (np.argmax)."""
    toks = list(encode(prompt))
    if window is None and len(toks) + new_tokens > t_max:
        raise ValueError(f"prompt of {len(toks)} tokens + {new_tokens} new ones exceed T_max = {t_max}")
    if window is not None and not 1 <= window <= t_max:
        raise ValueError(f"window {window} must lie in [1, T_max = {t_max}]")
    ws = [weights[k] for k in NAMES]
    for _ in range(new_tokens):
        ctx = toks if window is None else toks[-window:]
        buf = np.zeros((1, t_max), np.int64)
        buf[0, :len(ctx)] = ctx
        z = module.call("logits", buf, *ws)[0]
        toks.append(int(np.argmax(z[0, len(ctx) - 1])))
    return toks


def save_checkpoint(path, weights):
    """storylm0-checkpoint-v2: an .npz holding every weight under its name
    (float32, the shapes of WEIGHTS) and `format_version` = [2] (int64).
    Written to a temporary file and renamed, so a crash leaves no half file."""
    tmp = path + ".tmp.npz"
    np.savez(tmp, format_version=np.array([CHECKPOINT_VERSION], np.int64), **{k: weights[k] for k in NAMES})
    os.replace(tmp, path)


def load_checkpoint(path):
    """The weights of a storylm0-checkpoint-v2; CheckpointError naming the
    file and what is wrong otherwise (a v1 file, of the one-block model,
    included)."""
    try:
        z = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as ex:
        raise CheckpointError(f"{path}: not a readable .npz ({ex})") from None
    with z:
        if "format_version" not in z.files:
            raise CheckpointError(f"{path}: no `format_version`; not a {CHECKPOINT_FORMAT} checkpoint")
        ver = z["format_version"]
        if ver.dtype != np.int64 or ver.shape != (1,) or int(ver[0]) != CHECKPOINT_VERSION:
            raise CheckpointError(f"{path}: format_version {ver.tolist()} ({ver.dtype}); this program reads version "
                                  f"{CHECKPOINT_VERSION} ({CHECKPOINT_FORMAT})")
        out = {}
        for name, shape, _ in WEIGHTS:
            if name not in z.files:
                raise CheckpointError(f"{path}: weight `{name}` is missing")
            a = z[name]
            if a.dtype != np.float32 or a.shape != shape:
                raise CheckpointError(f"{path}: weight `{name}` is {a.dtype}{list(a.shape)}, expected float32{list(shape)}")
            out[name] = a
        extra = sorted(set(z.files) - set(NAMES) - {"format_version"})
        if extra:
            raise CheckpointError(f"{path}: unexpected arrays {extra}")
        return out


# ---- generation (issue 14): argmax, seeded Gumbel-max, prefill -> decode ----

class SplitMix64:
    """The documented uniform generator of Gumbel-max sampling: SplitMix64
    (Steele, Lea, Flood 2014; the seeding generator of xoshiro), state +=
    0x9E3779B97F4A7C15 and the output mixed by two xor-shift-multiplies.
    uniform() = (next >> 11) * 2^-53 in [0, 1), 53 random bits: the same
    seed gives the same numbers on every machine and Python version."""
    MASK = (1 << 64) - 1

    def __init__(self, seed):
        self.state = seed & self.MASK

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & self.MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & self.MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & self.MASK
        return z ^ (z >> 31)

    def uniform(self, n):
        return np.array([(self.next() >> 11) * (1.0 / (1 << 53)) for _ in range(n)], np.float64)


def argmax(logits):
    """The lowest index of the maximum (NumPy's argmax), as an int."""
    return int(np.argmax(logits))


def gumbel_max(logits, rng):
    """A sample from softmax(logits): argmax(logits + G), G = -log(-log(U)),
    U from `rng` (SplitMix64); in float64, U = 0 mapped to the smallest
    positive double so the logarithms stay finite."""
    u = np.maximum(rng.uniform(logits.shape[-1]), np.finfo(np.float64).tiny)
    return argmax(logits.astype(np.float64) - np.log(-np.log(u)))


def generate(module, weights, prompt, new_tokens=32, t_max=T_MAX, sample_seed=None, padded=True, timings=None):
    """prefill -> decode with the KV cache. Greedy (sample_seed None) or
    Gumbel-max with SplitMix64(sample_seed). padded=True: the cache padded
    to t_max, every decode step the same specialization; padded=False: a
    cache that grows by one position per token (a new specialization each
    time, the slow way). `timings` receives (prefill seconds, [decode
    seconds per token]). Returns the token ids, prompt included."""
    toks = list(encode(prompt))
    if len(toks) + new_tokens > t_max:
        raise ValueError(f"prompt of {len(toks)} tokens + {new_tokens} new ones exceed T_max = {t_max}")
    pick = argmax if sample_seed is None else (lambda z, r=SplitMix64(sample_seed): gumbel_max(z, r))
    lib = module.lib
    release = lib.lib.shapeml_tensor_release
    # The weights become runtime tensors once; the cache stays a runtime
    # tensor from one decode step to the next (outputs fed back as inputs):
    # only the token, the live length and the logits cross to NumPy per step.
    ws = [lib.tensor(weights[k]) for k in NAMES]
    held = []

    def pad(kt, v, n):  # n zero positions after each block's keys [1 H Dh T] and values [1 H T Dh]
        return (np.concatenate([kt, np.zeros(kt.shape[:3] + (n,), np.float32)], axis=3),
                np.concatenate([v, np.zeros((1, v.shape[1], n, v.shape[3]), np.float32)], axis=2))
    try:
        t0 = time.perf_counter()
        z, *kv = module.call("prefill", np.array([toks], np.int64), *[weights[k] for k in NAMES])
        t_prefill = time.perf_counter() - t0
        toks.append(pick(z[0, -1]))
        live = len(toks) - 1
        width = t_max if padded else live + 1
        # The caches, block by block: kt1 v1 kt2 v2 (decode's order).
        cache = [lib.tensor(a) for b in range(BLOCKS) for a in pad(kv[2 * b], kv[2 * b + 1], width - live)]
        held.extend(cache)
        steps = []
        while len(toks) < len(encode(prompt)) + new_tokens:
            if not padded and live + 1 > width:  # the growing cache: one position of room, a new shape
                grown = [a for b in range(BLOCKS) for a in pad(lib.to_numpy(cache[2 * b]), lib.to_numpy(cache[2 * b + 1]), 1)]
                width += 1
                for t in cache:
                    release(t)
                    held.remove(t)
                cache = [lib.tensor(a) for a in grown]
                held.extend(cache)
            t0 = time.perf_counter()
            tok_t, live_t = lib.tensor(np.array([[toks[-1]]], np.int64)), lib.tensor(np.array(live, np.int64))
            held.extend([tok_t, live_t])
            z_t, *new_cache = module.call_tensors("decode", tok_t, live_t, *cache, *ws)
            held.extend([z_t, *new_cache])
            z = lib.to_numpy(z_t)
            steps.append(time.perf_counter() - t0)
            for t in (tok_t, live_t, z_t, *cache):
                release(t)
                held.remove(t)
            cache = new_cache
            live += 1
            toks.append(pick(z[0, 0]))
    finally:
        for t in held + ws:
            release(t)
    if timings is not None:
        timings.extend([t_prefill, steps])
    return toks
