#!/usr/bin/env bash
# Builds libFuzzer harnesses for Haul's parsers and runs them.
#
#   Fuzz/run.sh [TARGET|all] [SECONDS]     e.g. Fuzz/run.sh content-range 300
#   Fuzz/run.sh list                       the targets
#
# HaulCore (the pure target: no C library) is compiled once into a module with
# -sanitize=fuzzer,address; each harness, Fuzz/Targets/<Name>Target.swift, imports it. A harness
# that imports Haul itself (the state file, which needs OpenSSL's SHA-256) gets the whole Haul
# module, built the same way on first need, with its C shims; one that imports HaulRPC (the
# daemon's JSON-RPC and WebSocket parsers, also pure) gets that module. A harness may name one
# more source file in a `// fuzz-source: PATH` line (the command-line parser, which lives in HaulCLI).
# Seeds come from Fuzz/Corpus/<target>/ (read only); inputs the fuzzer finds go to
# $HAUL_FUZZ_DIR/corpus/<target>/. A crash, a broken invariant, a leak or a timeout makes the
# script fail; the input is saved under $HAUL_FUZZ_DIR/artifacts/ and printed in base64.
# Copy it into Fuzz/Corpus/<target>/ with the fix and a regression test.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="${HAUL_FUZZ_DIR:-$root/.build-fuzz}"
target="${1:-all}"
seconds="${2:-60}"

all_targets=(content-range content-disposition retry-after entity-tag-date state-journal byte-quantity file-name command-line server-digests
  jsonrpc-request websocket-frames finished-file-seal)

swift_flags=(-sanitize=fuzzer,address -parse-as-library -O -g -swift-version 6 -warnings-as-errors
  -package-name haul -use-ld=lld)

# content-range -> Fuzz/Targets/ContentRangeTarget.swift
harness() {
  local name="" part
  IFS=- read -ra parts <<<"$1"
  for part in "${parts[@]}"; do name+="${part^}"; done
  echo "Fuzz/Targets/${name}Target.swift"
}

# Compiles every Swift file of Sources/$1 into $work/lib/$1.o and its module into $work/lib.
build_module() {
  local module="$1" log="$work/lib/$1.build.log"
  [[ -f "$work/lib/$module.o" ]] && return 0
  mkdir -p "$work/lib"
  local sources
  mapfile -t sources < <(cd "$root" && find "Sources/$module" -name '*.swift' | sort)
  if ! (cd "$root" && swiftc "${swift_flags[@]}" "${c_modules[@]}" -I "$work/lib" -module-name "$module" \
      -c -wmo -enable-testing -emit-module -emit-module-path "$work/lib/$module.swiftmodule" \
      "${sources[@]}" -o "$work/lib/$module.o") >"$log" 2>&1; then
    cat "$log" >&2
    echo "fuzz: building the $module module failed" >&2
    return 1
  fi
}

# The C shims (Sources/C*), each with a module map, for modules that import them.
c_modules=()
c_objects=()
build_c_shims() {
  local dir name
  mkdir -p "$work/lib/c"
  for dir in "$root"/Sources/C*/; do
    name="$(basename "$dir")"
    mkdir -p "$work/lib/c/$name"
    printf 'module %s {\n  header "%s"\n  export *\n}\n' "$name" "$dir"include/"$name".h \
      >"$work/lib/c/$name/module.modulemap"
    c_modules+=(-Xcc "-fmodule-map-file=$work/lib/c/$name/module.modulemap")
    c_objects+=("$work/lib/c/$name.o")
    [[ -f "$work/lib/c/$name.o" ]] && continue
    # Dropped when the build fails, so a rerun retries it.
    clang -c -O1 -fsanitize=address -I "$dir/include" "$dir/shim.c" -o "$work/lib/c/$name.o" || return 1
  done
}

build() {
  local name="$1" file
  file="$(harness "$name")"
  local out="$work/bin/$name" modules=(HaulCore) libraries=() extra=() supports
  mkdir -p "$work/bin"
  if grep -Eq '^(@testable )?import Haul$' "$root/$file"; then
    build_c_shims || return 1
    modules+=(Haul)
    # Every shim is linked, so every C library a shim calls is too (CEvent: libevent; CSQLite,
    # which the manager's catalog calls too: libsqlite3).
    libraries=("${c_objects[@]}" -Xlinker -l:libcurl.so.4 -Xlinker -l:libevent-2.1.so.7 -lcrypto
      -Xlinker -l:libsqlite3.so.0)
  fi
  # The daemon's pure target (JSON, JSON-RPC, WebSocket frames): no C library either.
  if grep -Eq '^(@testable )?import HaulRPC$' "$root/$file"; then modules+=(HaulRPC); fi
  local objects=()
  for module in "${modules[@]}"; do
    build_module "$module" || return 1
    objects+=("$work/lib/$module.o")
  done
  mapfile -t extra < <(sed -n 's|^// fuzz-source: ||p' "$root/$file")
  mapfile -t supports < <(cd "$root" && find Fuzz/Targets -name '*.swift' ! -name '*Target.swift' | sort)
  local log="$work/bin/$name.build.log"
  if ! (cd "$root" && swiftc "${swift_flags[@]}" "${c_modules[@]}" -I "$work/lib" -module-name HaulFuzz \
      "${supports[@]}" "$file" "${extra[@]}" "${objects[@]}" "${libraries[@]}" -o "$out") \
      >"$log" 2>&1; then
    cat "$log" >&2
    echo "fuzz: building $name failed" >&2
    return 1
  fi
}

run() {
  local name="$1" corpus="$work/corpus/$1" artifacts="$work/artifacts/$1"
  mkdir -p "$corpus" "$artifacts" "$root/Fuzz/Corpus/$name"
  local dict=() log="$work/$name.log"
  [[ -f "$root/Fuzz/Dictionaries/$name.dict" ]] && dict=("-dict=$root/Fuzz/Dictionaries/$name.dict")
  echo "fuzz: $name for ${seconds}s"
  local status=0
  "$work/bin/$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
    -print_final_stats=1 -artifact_prefix="$artifacts/" "${dict[@]}" \
    "$corpus" "$root/Fuzz/Corpus/$name" >"$log" 2>&1 || status=$?
  if [[ $status -ne 0 ]]; then
    tail -n 60 "$log" >&2
    for file in "$artifacts"/*; do
      [[ -f "$file" ]] || continue
      echo "fuzz: $name failed; input $file (base64): $(base64 -w0 "$file")" >&2
    done
    return 1
  fi
  grep -E '^stat::(number_of_executed_units|new_units_added)' "$log" | tr '\n' ' ' | sed "s/^/fuzz: $name /"
  echo
}

case "$target" in
  list) printf '%s\n' "${all_targets[@]}"; exit 0 ;;
  all) targets=("${all_targets[@]}") ;;
  *)
    [[ -f "$root/$(harness "$target")" ]] || { echo "fuzz: unknown target '$target' (try: $0 list)" >&2; exit 2; }
    targets=("$target") ;;
esac

# Modules are rebuilt on every run: the sources may have changed since the last one.
rm -rf "$work/lib"
failed=()
for name in "${targets[@]}"; do
  build "$name" || { failed+=("$name"); continue; }
  run "$name" || failed+=("$name")
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: all ${#targets[@]} target(s) passed"
