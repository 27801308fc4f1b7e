#!/usr/bin/env python3
"""The steps of bench/run.sh, one subcommand each (python3 standard library only).

Each subcommand does one step of the benchmark and, where it measures
something, writes a small JSON result; each section's summary subcommand
turns those into its report. The sections live in bench/sections/, one
module each, and register their subcommands here:

  symbolizer    symtab: sample, upload, accuracy, aliases, bodies, symbolizer,
                summary (also used by the swift, dwarf, crash and postgres
                sections)
  load          load, wrk (wrk at saturation on /v1/symbolicate)
  dwarf         dw-stats, dw-gsym, dw-reference, dw-upload, dw-index,
                dw-accuracy, dw-summary
  swift         swift-names, swift-first, swift-summary
  crash         crash-upload, crash-frame-bodies, crash-wrk, crash-report-prep,
                crash-summary
  crash_store   crash-seed-data, crash-seed, crash-gets, crash-db-size
  crash_images  crash-images-upload, crash-images-bodies, crash-state
  pg            pg-summary
  minidump      md-prepare, md-upload, md-check, md-server, md-cli, md-dump-syms,
                md-summary

Every measurement goes through bench/benchlib/measure.py: a command run under
a Meter (wall time; cores of the command, of the server it drives and of
everything else) and every summary's "ours vs reference: ratio" lines, which
each summary also writes as JSON beside its text (--out X.txt -> X.json).
"""
import argparse

from sections import (crash, crash_images, crash_store, dwarf, load, minidump, pg, swift,
                      symbolizer)

SECTIONS = [symbolizer, load, dwarf, swift, crash, crash_store, crash_images, pg, minidump]


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True, metavar="SUBCOMMAND")
    for section in SECTIONS:
        section.register(sub)
    a = p.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
