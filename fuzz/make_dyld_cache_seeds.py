#!/usr/bin/env python3
"""Seeds for fuzz_dyld_cache from the small real cache (../shared/dyld-cache):
the cache with a local-symbols area in its own file (older layout: 32-bit
entries by file offset), and the cache's header extended to a newer format
(mappingOffset 0x1c8, imagesOffset/Count, symbolFileUUID naming itself, so the
fuzzer's second copy of the input serves as its .symbols file: 64-bit entries
by address). usage: make_dyld_cache_seeds.py CACHE OUTDIR"""
import struct
import sys

src, out = sys.argv[1], sys.argv[2]
base = bytearray(open(src, "rb").read())
LEN = len(base)


def locals_area(wide, keys):
    # info header, one nlist per image, strings, entries
    n = len(keys)
    nlist_off, str_off = 24, 24 + 16 * n
    strings = b"\0" + b"".join(b"_local_%d\0" % i for i in range(n))
    ent_off = (str_off + len(strings) + 7) & ~7
    esz = 16 if wide else 12
    area = bytearray(ent_off + esz * n)
    struct.pack_into("<6I", area, 0, nlist_off, n, str_off, len(strings), ent_off, n)
    addrs = [0x180004F80, 0x180008FB0]
    pos = 1
    for i in range(n):
        struct.pack_into("<IBBHQ", area, nlist_off + 16 * i, pos, 0x0E, 1, 0, addrs[i])
        pos += len(b"_local_%d\0" % i)
        if wide:
            struct.pack_into("<QII", area, ent_off + esz * i, keys[i], i, 1)
        else:
            struct.pack_into("<III", area, ent_off + esz * i, keys[i], i, 1)
    area[str_off:str_off + len(strings)] = strings
    return bytes(area)


# 1. older layout, local symbols in the main file
a = bytearray(base)
area = locals_area(False, [0x1000, 0x5000])
struct.pack_into("<QQ", a, 72, LEN, len(area))
open(out + "/seed-dyld-locals-v1", "wb").write(a + area)

# 2. newer header, naming itself as its .symbols file
b = bytearray(base)
maps, slides = bytes(b[0x140:0x1A0]), bytes(b[0x1E8:0x290])
b[0x140:0x290] = bytes(0x290 - 0x140)
struct.pack_into("<I", b, 0x10, 0x1C8)
b[0x1C8:0x228] = maps
b[0x400:0x4A8] = slides
struct.pack_into("<I", b, 312, 0x400)
struct.pack_into("<II", b, 0x18, 0, 0)
struct.pack_into("<II", b, 448, 0x290, 2)
b[400:416] = b[88:104]  # symbolFileUUID: its own UUID
area = locals_area(True, [0x1000, 0x5000])
struct.pack_into("<QQ", b, 72, LEN, len(area))
open(out + "/seed-dyld-newer-symbols", "wb").write(b + area)
