"""Run a command and check how it exits.

  expect_exit.py CMD ARGS...         succeed iff CMD exits normally with a
                                     nonzero status (a stricter `not`)
  expect_exit.py --code N CMD ARGS...  succeed iff CMD exits with status N

A command killed by a signal (a crash) always fails the check, and so does an
exit status of 128 or more (how shells and sanitizers report crashes). A
command still running after SHAPEML_TEST_TIMEOUT seconds (default 60) is
killed and fails the check. stdin, stdout and stderr are passed through
unchanged.
"""
import os
import subprocess
import sys


def main(argv):
    want = None
    if len(argv) >= 2 and argv[0] == "--code":
        want = int(argv[1])
        argv = argv[2:]
    if not argv:
        sys.stderr.write("expect_exit.py: no command\n")
        return 2
    limit = float(os.environ.get("SHAPEML_TEST_TIMEOUT", "60"))
    try:
        p = subprocess.Popen(argv)
    except OSError as e:
        sys.stderr.write("expect_exit.py: cannot run %s: %s\n" % (argv[0], e))
        return 2
    try:
        rc = p.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        sys.stderr.write("expect_exit.py: %s still running after %g s, killed\n" % (argv[0], limit))
        return 1
    if rc < 0 or rc >= 128:
        sys.stderr.write("expect_exit.py: %s crashed (status %d)\n" % (argv[0], rc))
        return 1
    if want is None:
        if rc == 0:
            sys.stderr.write("expect_exit.py: %s succeeded, a failure was expected\n" % argv[0])
            return 1
        return 0
    if rc != want:
        sys.stderr.write("expect_exit.py: %s exited with %d, expected %d\n" % (argv[0], rc, want))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
