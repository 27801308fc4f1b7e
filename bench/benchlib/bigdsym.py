"""The real several-hundred-MB dSYM of bench/build_big_dsym.sh, for the upload benches."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# From this size on (MiB) the upload benches send the real dSYM's zip
# rather than a small DWARF file padded with random bytes.
REAL_FROM_MB = 256


def real_dsym_zip(mb):
    """(zip path, DWARF file path) of a dSYM whose DWARF file is at least mb
    MiB, built and cached by bench/build_big_dsym.sh (about 2 minutes for
    500 MiB the first time)."""
    r = subprocess.run(["bash", os.path.join(ROOT, "bench/build_big_dsym.sh"), str(mb)],
                       stdout=subprocess.PIPE, text=True)
    if r.returncode != 0 or not r.stdout.strip():
        sys.exit("bench/build_big_dsym.sh failed")
    z = r.stdout.strip().splitlines()[-1]
    return z, os.path.join(os.path.dirname(z), "prog.dSYM/Contents/Resources/DWARF/prog")
