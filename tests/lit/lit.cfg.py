# lit configuration for the shapeml front-end test suite.
#
# Run from the repository root:
#   SHAPEMLC=build/default/shapemlc python3 /usr/lib/llvm-19/build/utils/lit/lit.py -sv tests/lit
#
# Environment:
#   SHAPEMLC   path to the shapemlc binary (required)
#   FILECHECK  path to FileCheck (default /usr/lib/llvm-19/bin/FileCheck)
#
# Substitutions available in RUN lines:
#   %shapemlc          the shapemlc binary
#   FileCheck          the FileCheck binary (whole word)
#   %python            the Python interpreter running lit
#   %not               run a command, succeed iff it exits normally with a
#                      nonzero status (a crash by signal is a failure, unlike
#                      lit's own `not`)
#   %expect-exit N     run a command, succeed iff it exits with exactly N
#                      (both kill the command after SHAPEML_TEST_TIMEOUT
#                      seconds, default 60, and fail)
#   %diags             read a `--format=json` array on stdin, print one line
#                      per diagnostic: `CODE LINE:COL`, then `N diagnostic(s)`
import os
import shutil
import sys

import lit.formats

config.name = "shapeml"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".sml", ".test"]
config.excludes = ["tools", "Inputs", "lit.cfg.py"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
config.test_exec_root = os.path.join(config.test_source_root, ".lit-out")

shapemlc = os.environ.get("SHAPEMLC")
if not shapemlc:
    lit_config.fatal(
        "SHAPEMLC is not set: point it at the shapemlc binary, e.g.\n"
        "  SHAPEMLC=build/default/shapemlc python3 lit.py -sv tests/lit"
    )
shapemlc = os.path.abspath(shapemlc)
if not (os.path.isfile(shapemlc) and os.access(shapemlc, os.X_OK)):
    lit_config.fatal("SHAPEMLC=%s is not an executable file" % shapemlc)

filecheck = os.environ.get("FILECHECK", "/usr/lib/llvm-19/bin/FileCheck")
if not os.path.isabs(filecheck):
    filecheck = shutil.which(filecheck) or filecheck
if not (os.path.isfile(filecheck) and os.access(filecheck, os.X_OK)):
    lit_config.fatal("FileCheck not found at %s (set FILECHECK)" % filecheck)

tools = os.path.join(config.test_source_root, "tools")
python = sys.executable


def q(path):
    # Paths are quoted for lit's internal shell.
    return '"%s"' % path


config.substitutions.append(("%shapemlc", q(shapemlc)))
config.substitutions.append(("%python", q(python)))
config.substitutions.append(("%not", "%s %s" % (q(python), q(os.path.join(tools, "expect_exit.py")))))
config.substitutions.append(("%expect-exit", "%s %s --code" % (q(python), q(os.path.join(tools, "expect_exit.py")))))
config.substitutions.append(("%diags", "%s %s" % (q(python), q(os.path.join(tools, "diags.py")))))
config.substitutions.append((r"(?<![\w%/.-])FileCheck\b", q(filecheck)))

# Keep the environment small and deterministic.
config.environment["LC_ALL"] = "C"
# Per-command limit used by %expect-exit / %not (seconds, default 60).
if "SHAPEML_TEST_TIMEOUT" in os.environ:
    config.environment["SHAPEML_TEST_TIMEOUT"] = os.environ["SHAPEML_TEST_TIMEOUT"]
