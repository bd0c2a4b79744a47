#!/usr/bin/env bash
# Build kseg's C accelerator with sanitizers into a folder of its own, never in place:
#   tests/fuzz/build.sh sanitize OUT   ASan + UBSan (make test-sanitize)
#   tests/fuzz/build.sh fuzz OUT       ASan + UBSan + libFuzzer coverage, and the ASan runtime
#                                      merged with libFuzzer that atheris needs preloaded (clang only)
# Writes the runtime to LD_PRELOAD into OUT/preload. PYTHON names the interpreter to build for.
set -euo pipefail
mode=$1 out=$2
PYTHON=${PYTHON:-python3}
CC=${CC:-$(command -v clang || command -v gcc)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
inc=$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
suffix=$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
src=$(cd "$(dirname "$0")/../.." && pwd)/kseg/log/_speedups.c
flags=(-shared -fPIC -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined)
case $mode in
  sanitize) ;;
  fuzz)
    case $("$CC" --version) in *clang*) ;; *) echo "build.sh fuzz needs clang (CC=$CC)" >&2; exit 2;; esac
    flags+=(-fsanitize=fuzzer-no-link) ;;
  *) echo "usage: build.sh sanitize|fuzz OUT" >&2; exit 2 ;;
esac
# Each file is written under a temporary name and renamed: a fuzzing campaign running from OUT
# keeps its mapped copy, and its next slice loads the new build. kseg/_checksum.c (CRC-32C)
# and kseg/render/_format.c (the record-line writer) are built beside it, and loaded from
# OUT with it (tests/fuzz/sanitize.py).
"$CC" "${flags[@]}" -I"$inc" "$src" -o "$out/_speedups$suffix.tmp"
mv -f "$out/_speedups$suffix.tmp" "$out/_speedups$suffix"
"$CC" "${flags[@]}" -I"$inc" "$(dirname "$src")/../_checksum.c" -o "$out/_checksum$suffix.tmp"
mv -f "$out/_checksum$suffix.tmp" "$out/_checksum$suffix"
"$CC" "${flags[@]}" -I"$inc" "$(dirname "$src")/../render/_format.c" -o "$out/_format$suffix.tmp"
mv -f "$out/_format$suffix.tmp" "$out/_format$suffix"
case $("$CC" --version) in
  *clang*) runtime=$("$CC" -print-file-name=libclang_rt.asan-x86_64.so) ;;
  *) runtime=$("$CC" -print-file-name=libasan.so) ;;
esac
if [ "$mode" = fuzz ]; then
  # As atheris' own recipe: one library holding the ASan runtime and libFuzzer, so that
  # the extension's coverage callbacks reach libFuzzer and not ASan's empty stand-ins.
  libdir=$(dirname "$runtime")
  objs=$(mktemp -d)
  (cd "$objs" && ar x "$libdir/libclang_rt.asan-x86_64.a" && rm -f asan_preinit.cpp.o)
  "$CC" -shared -o "$out/asan_with_fuzzer.so.tmp" -Wl,--whole-archive "$objs"/*.o \
    "$libdir/libclang_rt.asan_cxx-x86_64.a" "$libdir/libclang_rt.fuzzer_no_main-x86_64.a" \
    -Wl,--no-whole-archive -lstdc++ -ldl -lpthread -lrt -lm
  rm -rf "$objs"
  mv -f "$out/asan_with_fuzzer.so.tmp" "$out/asan_with_fuzzer.so"
  runtime=$out/asan_with_fuzzer.so
fi
echo "$runtime" > "$out/preload"
echo "$runtime"
