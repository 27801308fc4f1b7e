"""Mach-O facts for the bench: function tables (llvm-nm, llvm-objdump), symbol tables, LC_UUID."""
import re
import struct

from benchlib.common import die, run

HEX = re.compile(r"^(?:0x)?([0-9a-fA-F]+)$")


def strip1(name):
    """A Mach-O name without the one leading '_' of C-level names."""
    return name[1:] if name.startswith("_") else name


def text_section(slice_path):
    """(start, end) of __TEXT,__text from llvm-objdump's section headers."""
    for line in run(["llvm-objdump", "--macho", "--section-headers", slice_path]).splitlines():
        f = line.split()
        if len(f) >= 5 and f[1] == "__text" and f[4] == "TEXT":
            start, size = int(f[3], 16), int(f[2], 16)
            return start, start + size
    die(f"{slice_path}: no __text section")


def function_starts(slice_path):
    out = run(["llvm-objdump", "--macho", "--function-starts", slice_path])
    return sorted({int(m.group(1), 16) for m in map(HEX.match, out.split()) if m})


def function_table(slice_path):
    """Functions of __TEXT,__text as llvm-nm sees them.

    A function is a distinct address carrying t/T symbols (all names there
    are aliases); it extends to the next symbol, the next LC_FUNCTION_STARTS
    entry or the end of __text, whichever comes first."""
    start, end = text_section(slice_path)
    names = {}
    nm = run(["llvm-nm", "-n", "--defined-only", slice_path])
    for line in nm.splitlines():
        f = line.split(None, 2)
        if len(f) != 3 or f[1] not in ("t", "T") or f[2] == "__mh_execute_header":
            continue
        addr = int(f[0], 16)
        if start <= addr < end:
            names.setdefault(addr, []).append((f[1], f[2]))
    starts = function_starts(slice_path)
    bounds = sorted(set(names) | {a for a in starts if start <= a < end} | {end})
    funcs = []
    j = 0
    for addr in sorted(names):
        while bounds[j] <= addr:
            j += 1
        funcs.append({"addr": addr, "end": bounds[j], "names": names[addr]})
    return {"text_start": start, "text_end": end, "function_starts": len(starts),
            "functions": funcs}


def _load_commands(buf):
    """(cmd, offset, size) of each load command of a thin 64-bit Mach-O."""
    if struct.unpack_from("<I", buf, 0)[0] != 0xFEEDFACF:
        die("needs a thin 64-bit little-endian Mach-O")
    ncmds, off = struct.unpack_from("<I", buf, 16)[0], 32
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", buf, off)
        yield cmd, off, size
        off += size


def macho_symtab(buf):
    """Symbol table facts of a thin 64-bit Mach-O: symoff, stroff, the index
    ranges of local and external symbols, and the n_sect of __TEXT,__text."""
    symtab = dysym = text_sect = None
    nsect = 0
    for cmd, off, _ in _load_commands(buf):
        if cmd == 0x19:  # LC_SEGMENT_64: 72-byte header, 80-byte sections
            for k in range(struct.unpack_from("<I", buf, off + 64)[0]):
                sect, seg = struct.unpack_from("<16s16s", buf, off + 72 + 80 * k)
                nsect += 1
                if (seg.rstrip(b"\0"), sect.rstrip(b"\0")) == (b"__TEXT", b"__text"):
                    text_sect = nsect
        elif cmd == 0x2:  # LC_SYMTAB
            symtab = struct.unpack_from("<IIII", buf, off + 8)
        elif cmd == 0xB:  # LC_DYSYMTAB
            dysym = struct.unpack_from("<IIII", buf, off + 8)
    if not symtab or not dysym or not text_sect:
        die("alias probe: no LC_SYMTAB, LC_DYSYMTAB or __TEXT,__text")
    il, nl, ie, ne = dysym
    return symtab[0], symtab[2], range(il, il + nl), range(ie, ie + ne), text_sect


def macho_uuid_offset(buf):
    """File offset of the 16 UUID bytes of a thin 64-bit Mach-O (LC_UUID, 0x1b)."""
    for cmd, off, _ in _load_commands(buf):
        if cmd == 0x1B:
            return off + 8
    die("no LC_UUID")
