#!/usr/bin/env bash
# Builds libFuzzer harnesses for Haul's parsers and runs them.
#
#   Fuzz/run.sh [TARGET|all] [SECONDS]     e.g. Fuzz/run.sh content-range 300
#   Fuzz/run.sh list                       the targets
#
# Each target is compiled from Fuzz/Targets/<Name>Target.swift plus only the Haul source
# files it exercises (with -sanitize=fuzzer,address), so the C shims that need libcurl are
# never built. Seeds come from Fuzz/Corpus/<target>/ (read only); inputs the fuzzer finds go
# to $HAUL_FUZZ_DIR/corpus/<target>/. A crash, a broken invariant, a leak or a timeout makes
# the script fail; the input is saved under $HAUL_FUZZ_DIR/artifacts/ and printed in base64.
# Copy it into Fuzz/Corpus/<target>/ with the fix and a regression test.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="${HAUL_FUZZ_DIR:-$root/.build-fuzz}"
target="${1:-all}"
seconds="${2:-60}"

all_targets=(content-range content-disposition retry-after entity-tag-date state-journal byte-quantity file-name command-line server-digests)

# Prints "HarnessFile HaulSource..." for a target.
sources() {
  local r=Sources/Haul/Resource
  case "$1" in
    content-range) echo ContentRangeTarget "$r/ByteScanner.swift $r/ContentRange.swift" ;;
    content-disposition)
      echo ContentDispositionTarget "$r/ByteScanner.swift $r/ContentDisposition.swift Sources/Haul/Files/FileNameSanitizer.swift Fuzz/Targets/SafeFileName.swift" ;;
    retry-after) echo RetryAfterTarget "$r/ByteScanner.swift $r/RetryAfter.swift $r/HTTPDate.swift" ;;
    entity-tag-date) echo EntityTagDateTarget "$r/ByteScanner.swift $r/EntityTag.swift $r/HTTPDate.swift" ;;
    state-journal)
      echo StateJournalTarget "Sources/Haul/State/StateJournal.swift Sources/Haul/State/ResumeState.swift Sources/Haul/Integrity/MessageDigest.swift Sources/Haul/Integrity/Checksum.swift Sources/Haul/Files/FileIO.swift Sources/Haul/HaulError.swift" ;;
    byte-quantity) echo ByteQuantityTarget "$r/ByteScanner.swift Sources/Haul/Options/ByteQuantity.swift" ;;
    file-name)
      echo FileNameTarget "$r/ByteScanner.swift Sources/Haul/Files/FileNameSanitizer.swift Sources/Haul/Files/DownloadPaths.swift Fuzz/Targets/SafeFileName.swift" ;;
    # HaulCLI's parser, compiled into the same module as the Haul files it uses (its
    # `import Haul` is dropped from a copy in $work/src).
    command-line)
      echo CommandLineTarget "$r/ByteScanner.swift Sources/Haul/Options/ByteQuantity.swift Sources/Haul/Options/DownloadOptions.swift Sources/Haul/Integrity/Checksum.swift Sources/Haul/HaulError.swift $work/src/CommandLineOptions.swift" ;;
    # ServerDigests reads headers from a ResponseHead, which brings the transport's value types along.
    server-digests)
      echo ServerDigestsTarget "Sources/Haul/Integrity/ServerDigests.swift Sources/Haul/Integrity/Checksum.swift Sources/Haul/Integrity/MessageDigest.swift Sources/Haul/HaulError.swift $r/RequestURL.swift Sources/Haul/Transport/Transport.swift Sources/Haul/Transport/RateLimiter.swift Sources/Haul/Transport/Monotonic.swift Sources/Haul/Locked.swift" ;;
    *) return 1 ;;
  esac
}

build() {
  local name="$1" harness files
  read -r harness files < <(sources "$name")
  local out="$work/bin/$name" extra=()
  mkdir -p "$work/bin" "$work/obj"
  if [[ "$name" == state-journal || "$name" == server-digests ]]; then
    clang -c -O1 -fsanitize=fuzzer-no-link,address -I "$root/Sources/CCrypto/include" \
      "$root/Sources/CCrypto/shim.c" -o "$work/obj/ccrypto.o"
    extra=(-Xcc "-fmodule-map-file=$root/Fuzz/Shims/CCrypto/module.modulemap" "$work/obj/ccrypto.o" -lcrypto)
  fi
  if [[ "$name" == command-line ]]; then
    mkdir -p "$work/src"
    sed '/^import Haul$/d' "$root/Sources/HaulCLI/CommandLineOptions.swift" >"$work/src/CommandLineOptions.swift"
  fi
  local log="$work/bin/$name.build.log"
  # shellcheck disable=SC2086  # $files is a list of paths without spaces.
  if ! (cd "$root" && swiftc -sanitize=fuzzer,address -parse-as-library -O -g -swift-version 6 \
      -warnings-as-errors -module-name HaulFuzz -use-ld=lld \
      Fuzz/Targets/FuzzSupport.swift "Fuzz/Targets/$harness.swift" $files "${extra[@]}" -o "$out") >"$log" 2>&1; then
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
    sources "$target" >/dev/null || { echo "fuzz: unknown target '$target' (try: $0 list)" >&2; exit 2; }
    targets=("$target") ;;
esac

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
