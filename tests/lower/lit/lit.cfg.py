# lit configuration for the CPU back end's text outputs (MLIR, LLVM IR).
#
#   SHAPEML_LOWER_TOOL=build/.../shapeml_lower_tool python3 /usr/lib/llvm-19/build/utils/lit/lit.py -sv tests/lower/lit
#
# Environment:
#   SHAPEMLC            shapemlc, once it has --emit=mlir|llvm (preferred when set)
#   SHAPEML_LOWER_TOOL  tests/lower's developer driver, which takes the same
#                       flags: --emit=mlir|llvm --entry NAME --bind K=V,... FILE
#   FILECHECK           FileCheck (default /usr/lib/llvm-19/bin/FileCheck)
#   MLIR_OPT            mlir-opt (default /usr/lib/llvm-19/bin/mlir-opt)
#
# Substitutions: %shapemlc, %mlir-opt, FileCheck.
import os

import lit.formats

config.name = "shapeml-lower"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".sml"]
config.excludes = ["lit.cfg.py"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
config.test_exec_root = os.path.join(config.test_source_root, ".lit-out")

tool = os.environ.get("SHAPEMLC") or os.environ.get("SHAPEML_LOWER_TOOL")
if not tool:
    lit_config.fatal("set SHAPEMLC or SHAPEML_LOWER_TOOL")
tool = os.path.abspath(tool)
if not (os.path.isfile(tool) and os.access(tool, os.X_OK)):
    lit_config.fatal("%s is not an executable file" % tool)
filecheck = os.environ.get("FILECHECK", "/usr/lib/llvm-19/bin/FileCheck")
mlir_opt = os.environ.get("MLIR_OPT", "/usr/lib/llvm-19/bin/mlir-opt")


def q(path):
    return '"%s"' % path


config.substitutions.append(("%shapemlc", q(tool)))
config.substitutions.append(("%mlir-opt", q(mlir_opt)))
config.substitutions.append((r"(?<![\w%/.-])FileCheck\b", q(filecheck)))
config.environment["LC_ALL"] = "C"
