#!/usr/bin/env python3
"""Seeds for fuzz_compact_unwind / fuzz_cfa_program: the __unwind_info or
__eh_frame section of each Mach-O given, prefixed by the arch byte the
targets read (0 x86_64, 1 arm64).

    make_unwind_seeds.py SECTION(__unwind_info|__eh_frame) OUTDIR BINARY...
"""
import os
import struct
import sys


def sections(buf):
    magic, cpu = struct.unpack_from("<II", buf, 0)
    if magic != 0xFEEDFACF:
        return cpu, {}
    ncmds = struct.unpack_from("<I", buf, 16)[0]
    off, out = 32, {}
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", buf, off)
        if cmd == 0x19:  # LC_SEGMENT_64
            nsects = struct.unpack_from("<I", buf, off + 64)[0]
            for i in range(nsects):
                s = off + 72 + 80 * i
                name = buf[s:s + 16].rstrip(b"\0").decode()
                _, ssize, soff = struct.unpack_from("<QQI", buf, s + 32)
                out[name] = buf[soff:soff + ssize]
        off += size
    return cpu, out


def main():
    want, outdir = sys.argv[1], sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    for path in sys.argv[3:]:
        with open(path, "rb") as f:
            buf = f.read()
        cpu, secs = sections(buf)
        if want in secs and secs[want]:
            arch = b"\x01" if cpu == 0x0100000C else b"\x00"
            name = os.path.join(outdir, os.path.basename(path) + want)
            with open(name, "wb") as f:
                f.write(arch + secs[want])


if __name__ == "__main__":
    main()
