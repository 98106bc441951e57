"""An independent PyTorch replica of StoryLM-0 (examples/storylm0.sml), from
its description: embedding lookup, two pre-norm decoder blocks (RMSNorm,
causal multi-head attention, SwiGLU, residuals), final RMSNorm, output
projection; the summed NLL; SGD and torch.optim.AdamW. Used by
tests/golden/test_storylm0.py and bench/storylm0_train.py."""
import math

import torch
import torch.nn.functional as F

BLOCK = ["g1", "wq", "wk", "wv", "wo", "g2", "w_gate", "w_up", "w_down"]
BLOCKS = 2
NAMES = ["emb"] + [f"b{i}.{n}" for i in range(1, BLOCKS + 1) for n in BLOCK] + ["g_final", "w_out"]
EPS = 1e-5


def rmsnorm(x, g):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * g


def block_weights(w, i):
    """Block i's (1-based) weights under their names within the block."""
    return {n: w[f"b{i}.{n}"] for n in BLOCK}


def mlp_tail(h, p):
    """h + SwiGLU(norm(h)) of a block."""
    n2 = rmsnorm(h, p["g2"])
    return h + (F.silu(n2 @ p["w_gate"]) * (n2 @ p["w_up"])) @ p["w_down"]


def block(x, p, B, T):
    """One pre-norm decoder block on [B*T, D] rows."""
    D = x.shape[1]
    H, Dh = p["wq"].shape[1], p["wq"].shape[2]
    n1 = rmsnorm(x, p["g1"])

    def heads(m):
        return (n1 @ m.reshape(D, H * Dh)).reshape(B, T, H, Dh).permute(0, 2, 1, 3)
    q, k, v = heads(p["wq"]), heads(p["wk"]), heads(p["wv"])
    s = q @ k.transpose(-1, -2) / math.sqrt(Dh)
    s = s.masked_fill(~torch.ones(T, T, dtype=torch.bool, device=s.device).tril(), float("-inf"))
    ctx = (torch.softmax(s, -1) @ v).permute(0, 2, 1, 3).reshape(B * T, D)
    return mlp_tail(x + ctx @ p["wo"].reshape(D, D), p)


def logits(tokens, w):
    emb = w["emb"]
    B, T = tokens.shape
    D = emb.shape[1]
    x = emb[tokens].reshape(B * T, D)
    for i in range(1, BLOCKS + 1):
        x = block(x, block_weights(w, i), B, T)
    return (rmsnorm(x, w["g_final"]) @ w["w_out"]).reshape(B, T, -1)


def nll_sum(tokens, targets, w):
    z = logits(tokens, w)
    return F.cross_entropy(z.reshape(-1, z.shape[-1]), targets.reshape(-1), reduction="sum")


def params(weights, dtype, device="cpu"):
    return {k: torch.tensor(weights[k], dtype=dtype, device=device, requires_grad=True) for k in NAMES}


def train_sgd(weights, tokens, targets, epochs, lr, device="cpu", times=None, compile=False, dtype=torch.float32):
    """Full-batch SGD on the mean loss, in float32 (or `dtype`): (losses, weights).
    `times`: a list that receives each step's seconds (synchronized).
    `compile`: the loss (forward and, through AOTAutograd, backward) under
    torch.compile (default mode), as a careful PyTorch user would."""
    import time
    w = params(weights, dtype, device)
    opt = torch.optim.SGD([w[k] for k in NAMES], lr=lr)
    toks, tgts = torch.from_numpy(tokens).to(device), torch.from_numpy(targets).to(device)
    loss_fn = torch.compile(nll_sum) if compile else nll_sum
    losses = []
    for _ in range(epochs):
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = loss_fn(toks, tgts, w) / toks.numel()
        loss.backward()
        opt.step()
        losses.append(loss.item())  # synchronizes
        if times is not None:
            times.append(time.perf_counter() - t0)
    return losses, {k: v.detach().cpu().numpy() for k, v in w.items()}


def train_adamw(weights, tokens, targets, steps, hp):
    """torch.optim.AdamW on the SUMMED loss (as the program's adamw_step)."""
    w = params(weights, torch.float32)
    opt = torch.optim.AdamW([w[k] for k in NAMES], lr=hp["lr"], betas=(hp["b1"], hp["b2"]), eps=hp["eps"], weight_decay=hp["wd"])
    toks, tgts = torch.from_numpy(tokens), torch.from_numpy(targets)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = nll_sum(toks, tgts, w)
        loss.backward()
        losses.append(loss.item() / toks.numel())
        opt.step()
    return losses, {k: v.detach().numpy() for k, v in w.items()}


def greedy(weights, prompt_tokens, new_tokens, window=None):
    """`window`: the context is the last `window` tokens (None: all)."""
    w = {k: torch.tensor(weights[k]) for k in NAMES}
    toks = list(prompt_tokens)
    with torch.no_grad():
        for _ in range(new_tokens):
            ctx = toks if window is None else toks[-window:]
            z = logits(torch.tensor([ctx]), w)
            toks.append(int(torch.argmax(z[0, -1])))
    return toks


def generate_kv(weights, prompt_tokens, new_tokens, pick, device="cpu", times=None, compile=False):
    """Decoding with PyTorch's own KV cache (torch.cat per token, no
    padding), one cache per block: prefill the prompt, then one token at a
    time. `pick(logits as float32 NumPy)` chooses the next token. `times`
    receives the seconds of each decode step (synchronized). `compile`: the
    decode step under torch.compile (dynamic shapes: the caches grow by a
    row a token)."""
    import time
    w = {k: torch.tensor(weights[k], device=device) for k in NAMES}
    blocks = [block_weights(w, i) for i in range(1, BLOCKS + 1)]
    D = w["emb"].shape[1]
    H, Dh = w["b1.wq"].shape[1], w["b1.wq"].shape[2]

    def heads(n, m):  # [T, D] -> [1, H, T, Dh]
        return (n @ m.reshape(D, H * Dh)).reshape(1, -1, H, Dh).permute(0, 2, 1, 3)

    def out(h):
        return rmsnorm(h, w["g_final"]) @ w["w_out"]

    toks = list(prompt_tokens)
    with torch.no_grad():
        x = w["emb"][torch.tensor(toks, device=device)]
        T = len(toks)
        mask = ~torch.ones(T, T, dtype=torch.bool, device=device).tril()
        caches = []
        for p in blocks:
            n1 = rmsnorm(x, p["g1"])
            q, k, v = heads(n1, p["wq"]), heads(n1, p["wk"]), heads(n1, p["wv"])
            s = (q @ k.transpose(-1, -2) / math.sqrt(Dh)).masked_fill(mask, float("-inf"))
            ctx = (torch.softmax(s, -1) @ v).permute(0, 2, 1, 3).reshape(T, D)
            x = mlp_tail(x + ctx @ p["wo"].reshape(D, D), p)
            caches += [k, v]
        z = out(x)
        toks.append(pick(z[-1].cpu().numpy()))

        def decode(token, *caches):
            x = w["emb"][token]
            new = []
            for i, p in enumerate(blocks):
                n1 = rmsnorm(x, p["g1"])
                q = heads(n1, p["wq"])
                k = torch.cat([caches[2 * i], heads(n1, p["wk"])], 2)
                v = torch.cat([caches[2 * i + 1], heads(n1, p["wv"])], 2)
                ctx = (torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(Dh), -1) @ v).permute(0, 2, 1, 3).reshape(1, D)
                x = mlp_tail(x + ctx @ p["wo"].reshape(D, D), p)
                new += [k, v]
            return (out(x)[0], *new)

        step = torch.compile(decode, dynamic=True) if compile else decode
        while len(toks) < len(prompt_tokens) + new_tokens:
            t0 = time.perf_counter()
            z, *caches = step(torch.tensor([toks[-1]], device=device), *caches)
            z = z.cpu().numpy()  # synchronizes
            if times is not None:
                times.append(time.perf_counter() - t0)
            toks.append(pick(z))
    return toks
