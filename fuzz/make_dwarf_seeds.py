#!/usr/bin/env python3
"""Writes fuzz_dwarf seeds from real dSYMs: the __TEXT,__text range and the
nine __DWARF sections of each (64-bit, thin) DWARF file given.
usage: make_dwarf_seeds.py OUTDIR DWARF_FILE..."""
import os
import struct
import sys

NAMES = ["__debug_info", "__debug_abbrev", "__debug_line", "__debug_str",
         "__debug_line_str", "__debug_str_offs", "__debug_addr", "__debug_ranges",
         "__debug_rnglists"]


def sections(buf):
    magic, _, _, _, ncmds, _, _, _ = struct.unpack_from("<8I", buf, 0)
    if magic != 0xfeedfacf:
        raise SystemExit("not a thin 64-bit Mach-O")
    off, out = 32, {}
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<2I", buf, off)
        if cmd == 0x19:  # LC_SEGMENT_64
            nsects = struct.unpack_from("<I", buf, off + 64)[0]
            for i in range(nsects):
                s = off + 72 + 80 * i
                sect = buf[s:s + 16].rstrip(b"\0").decode()
                seg = buf[s + 16:s + 32].rstrip(b"\0").decode()
                addr, size_, fileoff = struct.unpack_from("<QQI", buf, s + 32)
                out[(seg, sect)] = (addr, size_, fileoff)
        off += size
    return out


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    for path in sys.argv[2:]:
        buf = open(path, "rb").read()
        s = sections(buf)
        addr, size, _ = s[("__TEXT", "__text")]
        parts = []
        for n in NAMES:
            if ("__DWARF", n) in s:
                _, sz, fo = s[("__DWARF", n)]
                parts.append(buf[fo:fo + sz])
            else:
                parts.append(b"")
        seed = struct.pack("<QQ", addr, addr + size)
        seed += struct.pack("<9I", *[len(p) for p in parts]) + b"".join(parts)
        name = os.path.join(outdir, "dwarf-" + os.path.basename(path))
        open(name, "wb").write(seed)


main()
