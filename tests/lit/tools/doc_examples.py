"""Check the examples of docs/errors.md against shapemlc.

For every `## EXXXX: title` section:
  - the sml block after "Wrong:" makes `shapemlc check` exit 1, and the
    `error[...]` header lines of its output are the ones shown in the text
    block that follows (run with the options written on its `$ shapemlc`
    line; counterexample values and notes are not compared, they may vary);
  - the sml block after "Fixed:" checks (exit 0, no output).
Also: sections are in increasing code order, each code appears once, and
every code that the sources under --src can emit has a section.

An internal error (E0900) has no reproducer by design: no program should
raise it. Its section says so with the marker `<!-- internal: no reproducer -->`
and shows the message's form in a text block (taken from the verifier's own
tests, which corrupt the IR on purpose) instead of Wrong/Fixed programs; only
codes in INTERNAL may do that. A guard (GUARDS) is a check the compiler
keeps for a case no program of today's language reaches (E0602: every
operation has a derivative rule); its section has the marker
`<!-- guard: no reproducer -->` and, likewise, the message's form only.
"""
import argparse
import os
import re
import subprocess
import sys

INTERNAL = {"E0900"}
GUARDS = {"E0602"}


def blocks(text):
    """(lang, body) of every fenced block, with the label line before it."""
    out = []
    lines = text.split("\n")
    i = 0
    label = ""
    while i < len(lines):
        m = re.match(r"^```(\w*)\s*$", lines[i])
        if m:
            j = i + 1
            while j < len(lines) and lines[j] != "```":
                j += 1
            out.append((label, m.group(1), "\n".join(lines[i + 1:j]) + "\n"))
            label = ""
            i = j + 1
            continue
        if lines[i].strip():
            label = lines[i].strip()
        i += 1
    return out


def check_pair(a, code, bs, k, f, example, errors):
    """The wrong example bs[k] (output in bs[k + 1]) and the fixed bs[f]."""
    if k + 1 >= len(bs) or bs[k + 1][1] != "text":
        errors.append("%s: the wrong example needs a text block with the output" % code)
        return
    shown = bs[k + 1][2].split("\n")
    cmd = shown[0]
    if not cmd.startswith("$ shapemlc check "):
        errors.append("%s: the output block must start with `$ shapemlc check ...`" % code)
        return
    if bs[k][1] == "sml":
        open(example, "w", encoding="utf-8").write(bs[k][2])
    elif bs[k][1] == "sh":
        subprocess.run(bs[k][2], shell=True, cwd=a.workdir, check=True)
    else:
        errors.append("%s: the wrong example must be an sml or sh block" % code)
        return
    args = cmd.split()[3:]
    r = subprocess.run([a.shapemlc, "check"] + args, cwd=a.workdir, capture_output=True, text=True, errors="replace")
    if r.returncode != 1:
        errors.append("%s: wrong example exits with %d, expected 1\n%s" % (code, r.returncode, r.stderr))
    else:
        want = [l for l in shown if l.startswith("error[")]
        got = [l for l in r.stderr.split("\n") if l.startswith("error[")]
        if not want or not want[0].startswith("error[%s]" % code):
            errors.append("%s: the shown output does not start with error[%s]" % (code, code))
        if want != got:
            errors.append("%s: output differs from the doc\n  doc: %s\n  got: %s" % (code, want, got))
    open(example, "w", encoding="utf-8").write(bs[f][2])
    r = subprocess.run([a.shapemlc, "check", "example.sml"], cwd=a.workdir, capture_output=True, text=True, errors="replace")
    if r.returncode != 0 or r.stderr:
        errors.append("%s: fixed example does not check (exit %d)\n%s" % (code, r.returncode, r.stderr))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapemlc", required=True)
    ap.add_argument("--doc", required=True)
    ap.add_argument("--src")
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    a.shapemlc = os.path.abspath(a.shapemlc)
    os.makedirs(a.workdir, exist_ok=True)
    doc = open(a.doc, encoding="utf-8").read()
    parts = re.split(r"^## (E\d{4}): .*$", doc, flags=re.M)
    sections = list(zip(parts[1::2], parts[2::2]))
    errors = []
    codes = [c for c, _ in sections]
    if codes != sorted(codes) or len(set(codes)) != len(codes):
        errors.append("sections are not in increasing code order, or a code repeats: %s" % codes)
    if a.src:
        emitted = set()
        for root, _, files in os.walk(a.src):
            for f in files:
                if f.endswith((".cpp", ".h")):
                    emitted |= set(re.findall(r'"(E\d{4})"', open(os.path.join(root, f), encoding="utf-8").read()))
        missing = sorted(emitted - set(codes))
        if missing:
            errors.append("codes emitted by the sources but not documented: %s" % " ".join(missing))
    example = os.path.join(a.workdir, "example.sml")
    for code, body in sections:
        bs = blocks(body)
        guard = "<!-- guard: no reproducer -->" in body
        if "<!-- internal: no reproducer -->" in body or guard:
            allowed = GUARDS if guard else INTERNAL
            if code not in allowed:
                errors.append("%s: only %s (%s) may lack a reproducer" % (code, "guards" if guard else "internal errors", " ".join(sorted(allowed))))
            elif not any(b[1] == "text" and b[2].lstrip().startswith("error[%s]" % code) for b in bs):
                errors.append("%s: show the message's form in a text block starting with error[%s]" % (code, code))
            elif any(b[0] in ("Wrong:", "Fixed:") for b in bs):
                errors.append("%s: a section without a reproducer has no Wrong/Fixed programs" % code)
            continue
        # One "Wrong:"/"Fixed:" pair, and optionally more labelled
        # "Wrong (what):"/"Fixed (what):" for other causes of the same code.
        wrong = [k for k, b in enumerate(bs) if re.match(r"^Wrong( \(.+\))?:$", b[0])]
        fixed = [k for k, b in enumerate(bs) if re.match(r"^Fixed( \(.+\))?:$", b[0])]
        if len(wrong) != len(fixed) or not wrong or [bs[k][0] for k in wrong].count("Wrong:") != 1:
            errors.append("%s: needs exactly one 'Wrong:' and one 'Fixed:' block (plus labelled pairs)" % code)
            continue
        for k, f in zip(wrong, fixed):
            check_pair(a, code, bs, k, f, example, errors)
    for e in errors:
        print("error: " + e)
    print("%d sections checked, %d problem(s)" % (len(sections), len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
