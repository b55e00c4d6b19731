"""Runs the Claude Code CLI with the bridge's pipes, but drops the answers to the
bridge's proof pings (control responses to `bridge_ping_*`) while the file named by
WITHHOLD_PROOFS_FLAG exists. The CLI reads and records every message; the bridge
never learns it did: the window a crash can fall into.

    python withhold_proofs.py <cli> [args...]

The CLI gets SIGINT when this wrapper dies (PR_SET_PDEATHSIG), as it does when the
bridge dies.
"""

import ctypes
import os
import signal
import subprocess
import sys


def die_with_parent():
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGINT)  # PR_SET_PDEATHSIG


def main():
    flag = os.environ["WITHHOLD_PROOFS_FLAG"]
    cli = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, preexec_fn=die_with_parent)
    for line in cli.stdout:
        if b'"bridge_ping_' in line and b'"control_response"' in line and os.path.exists(flag):
            continue
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()
    sys.exit(cli.wait())


if __name__ == "__main__":
    main()
