#!/usr/bin/env bash
# Builds the libFuzzer targets and runs each for SECONDS seconds, then prints executions and coverage.
#
#   Fuzz/run.sh SECONDS [frame|message|record|all]
#
# The targets are compiled with the MemoModel and MemoWire sources (not through SwiftPM, so `swift build` never
# sees them) into .build/fuzz; the record target is compiled into one module with the MemoTLS sources, whose
# internal record layer it drives (linked with MemoSystem, which MemoTLS imports). Each run starts from the
# committed seeds in Fuzz/corpus/TARGET plus whatever earlier runs found (.build/fuzz/corpus/TARGET). A crash
# leaves its input in Fuzz/crashes/TARGET/ and makes the script exit 1 (after the other targets have run); replay
# one with `.build/fuzz/TARGET CRASH-FILE`, and once it is fixed keep it in Fuzz/regressions/TARGET/, where
# `swift test --filter FuzzRegression` replays it.
set -euo pipefail

if [ $# -lt 1 ] || ! [[ "$1" =~ ^[0-9]+$ ]]; then
    echo "usage: $0 SECONDS [frame|message|record|all]" >&2
    exit 2
fi
seconds=$1
which=${2:-all}
root=$(cd "$(dirname "$0")/.." && pwd)
[ -d /opt/swift/usr/bin ] && export PATH="/opt/swift/usr/bin:$PATH"

declare -A sources=([frame]=FrameDecoderFuzz.swift [message]=MessageFuzz.swift [record]=RecordLayerFuzz.swift)
declare -A max_len=([frame]=16384 [message]=8192 [record]=40000)
case "$which" in
    all) targets=(frame message record) ;;
    frame | message | record) targets=("$which") ;;
    *) echo "unknown target '$which' (frame, message, record or all)" >&2; exit 2 ;;
esac

build="$root/.build/fuzz"
mkdir -p "$build"
# -package-name as SwiftPM passes it: MemoModel has `package` declarations (the Subject's deferred delivery).
flags=(-sanitize=fuzzer,address -parse-as-library -O -package-name memo)

# The libraries, instrumented, as modules as in the package: MemoDiff under MemoModel under MemoWire; MemoSystem
# under MemoTLS.
echo "building the fuzz targets in $build"
swiftc "${flags[@]}" -module-name MemoSystem -I "$build" -emit-module \
    -emit-module-path "$build/MemoSystem.swiftmodule" -emit-library -static -o "$build/libMemoSystem.a" "$root"/Sources/MemoSystem/*.swift
swiftc "${flags[@]}" -module-name MemoDiff -I "$build" -emit-module -emit-module-path "$build/MemoDiff.swiftmodule" \
    -emit-library -static -o "$build/libMemoDiff.a" "$root"/Sources/MemoDiff/*.swift
swiftc "${flags[@]}" -module-name MemoModel -I "$build" -emit-module -emit-module-path "$build/MemoModel.swiftmodule" \
    -emit-library -static -o "$build/libMemoModel.a" "$root"/Sources/MemoModel/*.swift
swiftc "${flags[@]}" -module-name MemoWire -I "$build" -emit-module -emit-module-path "$build/MemoWire.swiftmodule" \
    -emit-library -static -o "$build/libMemoWire.a" "$root"/Sources/MemoWire/*.swift
for target in "${targets[@]}"; do
    # lld: the default gold linker warns about ASan's local symbols.
    if [ "$target" = record ]; then
        swiftc "${flags[@]}" -use-ld=lld -module-name MemoTLSFuzz -I "$root/Sources/COpenSSL" -I "$build" \
            "$root"/Sources/MemoTLS/*.swift "$root/Fuzz/${sources[$target]}" "$build/libMemoSystem.a" -lssl -lcrypto \
            -o "$build/$target"
        continue
    fi
    swiftc "${flags[@]}" -use-ld=lld -I "$build" "$root/Fuzz/${sources[$target]}" \
        "$build/libMemoWire.a" "$build/libMemoModel.a" "$build/libMemoDiff.a" -o "$build/$target"
done

failed=0
for target in "${targets[@]}"; do
    corpus="$build/corpus/$target"
    crashes="$root/Fuzz/crashes/$target"
    log="$build/$target.log"
    mkdir -p "$corpus" "$crashes"
    echo "fuzzing $target for $seconds s (log: $log)"
    status=0
    "$build/$target" "$corpus" "$root/Fuzz/corpus/$target" \
        -max_total_time="$seconds" -max_len="${max_len[$target]}" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$crashes/" >"$log" 2>&1 || status=$?

    # The last status line holds the coverage (cov: edges, ft: features); the final stats the executions.
    last=$(grep -E '^#[0-9]+' "$log" | tail -n 1 || true)
    cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$last")
    ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$last")
    corp=$(sed -nE 's/.* corp: ([0-9]+\/[0-9]+[a-zA-Z]*).*/\1/p' <<<"$last")
    runs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$log")
    rate=$(sed -nE 's/^stat::average_exec_per_sec: *([0-9]+)/\1/p' "$log")
    echo "$target: executions ${runs:-?} (${rate:-?}/s) in $seconds s, cov: ${cov:-?} ft: ${ft:-?}, corpus ${corp:-?}"
    if [ "$status" -ne 0 ]; then
        failed=1
        echo "$target: CRASH (exit $status); inputs in $crashes:" >&2
        ls -1 "$crashes" >&2 || true
        grep -E -A 12 '^==[0-9]+==|Fatal error|SUMMARY' "$log" | head -n 40 >&2 || true
    fi
done
exit "$failed"
