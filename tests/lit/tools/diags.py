"""Summarize `shapemlc check --format=json` output read from stdin.

Prints one line per diagnostic, `CODE LINE:COL`, in the order reported, then
`N diagnostic(s)`. Fails if the input is not a JSON array of diagnostic objects
with the documented fields, so a test also checks the JSON shape.
"""
import json
import sys

REQUIRED = {
    "code": str, "severity": str, "message": str, "file": str,
    "line": int, "column": int, "end_line": int, "end_column": int,
    "offset": int, "length": int, "notes": list,
}


def main():
    text = sys.stdin.read()
    # `check` prints one array per file; accept several.
    dec = json.JSONDecoder()
    pos, arrays = 0, []
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            break
        value, pos = dec.raw_decode(text, pos)
        arrays.append(value)
    if not arrays:
        sys.stderr.write("diags.py: no JSON on stdin\n")
        return 1
    n = 0
    for arr in arrays:
        if not isinstance(arr, list):
            sys.stderr.write("diags.py: expected a JSON array\n")
            return 1
        for d in arr:
            for k, t in REQUIRED.items():
                if not isinstance(d.get(k), t):
                    sys.stderr.write("diags.py: field %r missing or mistyped in %r\n" % (k, d))
                    return 1
            if "counterexample" in d and not all(isinstance(v, int) for v in d["counterexample"].values()):
                sys.stderr.write("diags.py: counterexample values must be integers: %r\n" % d)
                return 1
            print("%s %d:%d" % (d["code"], d["line"], d["column"]))
            n += 1
    print("%d diagnostic(s)" % n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
