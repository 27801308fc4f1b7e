#!/usr/bin/env bash
# Runs each libFuzzer target for SECONDS, seeded from the real fixtures.
# usage: fuzz/run.sh SECONDS target...    (from the repository root)
set -euo pipefail
secs=$1; shift
cd "$(dirname "$0")/.."
status=0
for t in "$@"; do
  corpus=fuzz/corpus-$t
  mkdir -p "$corpus"
  case $t in
    fuzz_macho)
      cp -n fixtures/bin/* "$corpus"/ 2>/dev/null || true
      cp -n fixtures/dsym/*/Contents/Resources/DWARF/* "$corpus"/ 2>/dev/null || true
      cp -n fuzz/regress/macho-* "$corpus"/ 2>/dev/null || true
      extra=(-max_len=131072) ;;
    fuzz_compact_unwind)
      python3 fuzz/make_unwind_seeds.py __unwind_info "$corpus" fixtures/unwind/unwind-arm64 fixtures/unwind/unwind-x86_64 fixtures/bin/bigapp-arm64 fixtures/bin/bigapp-x86_64
      extra=(-max_len=65536) ;;
    fuzz_cfa_program)
      python3 fuzz/make_unwind_seeds.py __eh_frame "$corpus" fixtures/unwind/unwind-arm64 fixtures/unwind/unwind-x86_64 fixtures/bin/bigapp-x86_64
      extra=(-max_len=65536) ;;
    fuzz_dwarf)
      python3 fuzz/make_dwarf_seeds.py "$corpus" fixtures/dsym/*/Contents/Resources/DWARF/*
      extra=(-max_len=262144) ;;
    fuzz_unzip)
      cp -n fixtures/zip/*.zip "$corpus"/ 2>/dev/null || true
      cp -n fuzz/regress/unzip-* "$corpus"/ 2>/dev/null || true
      extra=(-dict=fuzz/dict_unzip.txt -max_len=131072) ;;
    fuzz_symbolicate)
      cp -n fuzz/seeds/symbolicate/* "$corpus"/
      extra=(-dict=fuzz/dict_symbolicate.txt -max_len=16384) ;;
    fuzz_demangle)
      cp -n fuzz/seeds/demangle/* "$corpus"/
      cp -n fuzz/regress/demangle-* "$corpus"/ 2>/dev/null || true
      extra=(-dict=fuzz/dict_demangle.txt -max_len=5000) ;;
    fuzz_swift_demangle)
      cp -n fuzz/seeds/swift/* "$corpus"/
      cp -n fuzz/regress/swift-* "$corpus"/ 2>/dev/null || true
      extra=(-dict=fuzz/dict_swift.txt -max_len=4096) ;;
    fuzz_crash_text)
      for d in ../shared/real-crashes /work/shared/real-crashes; do cp -n $d/*.crash "$corpus"/ 2>/dev/null || true; done
      cp -n fuzz/seeds/crash/*.crash "$corpus"/
      cp -n fuzz/regress/crash-* "$corpus"/ 2>/dev/null || true
      extra=(-dict=fuzz/dict_crash.txt -max_len=65536) ;;
    fuzz_crash_ips)
      for d in ../shared/real-crashes /work/shared/real-crashes ../shared/real-reports /work/shared/real-reports; do
        for f in $d/*.ips $d/*.ips.synced $d/*panic* $d/*jetsam*; do
          [ -f "$f" ] && [ "$(stat -c %s "$f")" -le 131072 ] && cp -n "$f" "$corpus"/ 2>/dev/null
        done
      done
      cp -n fuzz/seeds/crash/*.ips "$corpus"/
      cp -n fuzz/regress/crash-* "$corpus"/ 2>/dev/null || true
      extra=(-dict=fuzz/dict_crash.txt -max_len=131072) ;;
    fuzz_crash_sample)
      for d in ../shared/real-reports /work/shared/real-reports; do
        for f in $d/*sample* $d/*resource* $d/*sleep_wake* $d/*stackshot_ios*; do
          [ -f "$f" ] && cp -n "$f" "$corpus"/ 2>/dev/null
        done
      done
      cp -n fuzz/seeds/sample/* "$corpus"/
      cp -n fuzz/regress/sample-* "$corpus"/ 2>/dev/null || true
      extra=(-dict=fuzz/dict_sample.txt -max_len=131072) ;;
    fuzz_crash_plcrash|fuzz_protowire)
      for d in ../shared/reporters /work/shared/reporters; do cp -n $d/*.plcrash "$corpus"/ 2>/dev/null || true; done
      cp -n fuzz/seeds/plcrash/* "$corpus"/
      cp -n fuzz/regress/plcrash-* "$corpus"/ 2>/dev/null || true
      extra=(-dict=fuzz/dict_plcrash.txt -max_len=65536) ;;
    fuzz_crash_kscrash)
      for d in ../shared/reporters /work/shared/reporters; do
        for f in $d/*KSCrash*.json; do
          [ -f "$f" ] && cp -n "$f" "$corpus"/ 2>/dev/null
        done
      done
      cp -n fixtures/crashes/*.kscrash.json "$corpus"/
      cp -n fuzz/seeds/kscrash/* "$corpus"/
      cp -n fuzz/regress/kscrash-* "$corpus"/ 2>/dev/null || true
      extra=(-dict=fuzz/dict_kscrash.txt -max_len=131072) ;;
    fuzz_crash_metrickit)
      for d in ../shared/reporters /work/shared/reporters; do
        for f in $d/*Meter* $d/*sentry*; do
          [ -f "$f" ] && cp -n "$f" "$corpus"/ 2>/dev/null
        done
      done
      cp -n fuzz/seeds/metrickit/* "$corpus"/
      cp -n fuzz/regress/metrickit-* "$corpus"/ 2>/dev/null || true
      extra=(-dict=fuzz/dict_metrickit.txt -max_len=131072) ;;
    fuzz_minidump)
      for d in ../shared/minidumps /work/shared/minidumps; do cp -n $d/*/*.dmp "$corpus"/ 2>/dev/null || true; done
      cp -n fuzz/regress/minidump-* "$corpus"/ 2>/dev/null || true
      extra=(-dict=fuzz/dict_minidump.txt -max_len=262144) ;;
    fuzz_jsonbig)
      cp -n fuzz/seeds/jsonbig/* "$corpus"/
      cp -n fuzz/regress/jsonbig-* "$corpus"/ 2>/dev/null || true
      extra=(-dict=fuzz/dict_jsonbig.txt -max_len=65536) ;;
    fuzz_breakpad_sym)
      for d in ../shared/minidumps /work/shared/minidumps; do
        for f in $d/*/*.sym $d/*/*.sym.original $d/symbolic-cfi-snapshots/*.snap; do
          [ -f "$f" ] && cp -n "$f" "$corpus/$(basename "$(dirname "$f")")-$(basename "$f")" 2>/dev/null
        done
      done
      cp -n fuzz/seeds/breakpad/* "$corpus"/
      cp -n fuzz/regress/breakpad-* "$corpus"/ 2>/dev/null || true
      extra=(-dict=fuzz/dict_breakpad.txt -max_len=262144) ;;
    fuzz_grouping_rules)
      cp -n fuzz/seeds/grouping/* "$corpus"/
      cp -n fuzz/regress/grouping-* "$corpus"/ 2>/dev/null || true
      extra=(-dict=fuzz/dict_grouping.txt -max_len=8192) ;;
    fuzz_devsupport)
      cp -n fixtures/bin/*.dylib fixtures/bin/bigapp-fat fixtures/bin/obj32-fat.o "$corpus"/ 2>/dev/null || true
      cp -n fuzz/seeds/devsupport/* "$corpus"/
      cp -n fuzz/regress/devsupport-* "$corpus"/ 2>/dev/null || true
      extra=(-dict=fuzz/dict_devsupport.txt -max_len=131072) ;;
    fuzz_dyld_cache)
      for d in ../shared/dyld-cache /work/shared/dyld-cache; do
        for f in $d/dyld_shared_cache_* $d/dyldcache_read*; do
          [ -f "$f" ] && cp -n "$f" "$corpus"/ 2>/dev/null
        done
        [ -f $d/dyld_shared_cache_arm64-macOS ] &&
          python3 fuzz/make_dyld_cache_seeds.py $d/dyld_shared_cache_arm64-macOS "$corpus"
      done
      cp -n fuzz/regress/dyldcache-* "$corpus"/ 2>/dev/null || true
      extra=(-dict=fuzz/dict_dyld_cache.txt -max_len=262144) ;;
    fuzz_upload_recognise)
      cp -n fixtures/zip/*.zip fixtures/bin/* "$corpus"/ 2>/dev/null || true
      cp -n fixtures/dsym/*/Contents/Resources/DWARF/* "$corpus"/ 2>/dev/null || true
      printf 'MODULE mac arm64 4C4C44485555314AA1880C3B883681D90 Lib\nFUNC 0 4 0 f\n' \
        > "$corpus/seed.sym"
      extra=(-dict=fuzz/dict_unzip.txt -max_len=131072) ;;
    *) extra=() ;;
  esac
  echo "== $t: ${secs}s"
  log=build/fuzz/$t.log
  if ! build/fuzz/$t "$corpus" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
       -print_final_stats=1 -artifact_prefix=build/fuzz/$t- "${extra[@]}" >"$log" 2>&1; then
    echo "!! $t found a problem; see $log and build/fuzz/$t-*"
    tail -40 "$log"
    status=1
  fi
  grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb|^#[0-9]+.*DONE" "$log" || tail -3 "$log"
done
exit $status
