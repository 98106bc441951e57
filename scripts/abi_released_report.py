#!/usr/bin/env python3
"""Reads an abidiff report (old snapshot -> current build, --no-added-syms)
and exits 0 when every change it lists is one the ABI policy allows against a
released version (docs/design/abi-policy.md): data members appended at the
end of a struct, i.e. each insertion at an offset at or past the struct's old
size, in a block that says the size grew. Anything else -- a changed,
removed or moved member, an insertion into padding or the middle (except a
member named `reserved*`, which the library never reads: the convention for
covering a released layout's tail padding), a removed function or variable,
a changed enumerator -- is printed and exits 1.

  abidiff ... OLD NEW | python3 scripts/abi_released_report.py
"""
import re
import sys

FORBIDDEN = re.compile(r"data member changes?:|data member deletions?:|offset changed|enumerator (deletion|change)|"
                       r"was removed|[1-9][0-9]* Removed|type name changed")
RESERVED = re.compile(r"^'[^']* reserved\w*', at offset")
SIZE = re.compile(r"type size changed from (\d+) to (\d+) \(in bits\)")
SAME = re.compile(r"type size hasn't changed")
AT = re.compile(r"', at offset (\d+) \(in bits\)")


def main():
    bad, old_size, in_insertion = [], None, False
    for line in sys.stdin:
        text = line.strip()
        if FORBIDDEN.search(text):
            bad.append(text)
        if m := SIZE.search(text):
            old_size = int(m.group(1))
        elif SAME.search(text):
            old_size = -1  # an insertion after this is into padding or the middle
        if re.search(r"data member insertions?:", text):
            in_insertion = True
            continue
        if in_insertion and (m := AT.search(text)):
            if RESERVED.search(text):
                continue
            if old_size is None or old_size < 0 or int(m.group(1)) < old_size:
                bad.append(f"inserted, not appended: {text} (old size {old_size} bits)")
            continue
        in_insertion = False
    for b in bad:
        print("not allowed against a released version:", b)
    return 1 if bad else 0


sys.exit(main())
