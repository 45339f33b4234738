#!/usr/bin/env bash
# Writes Linking/memo-client.order, the symbol ordering file of memo-client's release link (Package.swift): one
# symbol for each input section that a start touches, so that lld puts those sections side by side at the start of
# .text and .bss and a start reads and zeroes fewer pages.
#
#   Linking/start-order.sh          (needs valgrind; its own release build, then three runs under lackey, ~2 min)
#
# Which sections: valgrind's lackey records every instruction fetched and every load and store of three runs of the
# release memo-client, `--version`, `add` with a saved TLS session (resumed) and `add` without one
# (MEMO_TLS_RESUME=0, a full handshake), the two `add`s against a memory-store memo-server on loopback. The link's
# map (lld's -Map) says which input section holds each address. Sections up to 16 KiB are listed first, in
# address order, and larger ones after them (a large section, such as the standard library's 1.5 MB of .text in
# one object, would spread the small ones apart; its own touched pages are where they are). A section is named by
# a symbol that no other section has, where there is one. The file goes stale as the code changes, but only
# gradually: lld ignores names it does not find (`--no-warn-symbol-ordering`), and a section it cannot place stays
# where it would have been. Rerun this after a toolchain change or a large change to the client's start.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }

source bench/common.sh
bench_workdir memo-start-order
# A release build of its own (.build/start-order; the first takes as long as any release build), whose links also
# write a map (lld's -Map): another linker flag for .build would recompile every module there, and again when the
# flag went. The map's addresses are those of the memo-client built with it; memo-server is built first, so the
# map left is the client's.
scratch=.build/start-order
flags=(-c release --scratch-path "$scratch" -Xlinker --Map="$scratch/link.map" -Xlinker --no-demangle)
swift build "${flags[@]}" --product memo-server >&2
swift build "${flags[@]}" --product memo-client >&2
BIN=$(swift build "${flags[@]}" --show-bin-path)
cp "$BIN/memo-client" "$WORK/memo-client"
cp "$scratch/link.map" "$WORK/memo-client.map"

"$BIN/memo-server" certs init --dir "$WORK/certs" >/dev/null
CERTS="$WORK/certs"
# start_memo's server, with time for a handshake that runs under lackey.
"$BIN/memo-server" serve --listen 127.0.0.1:0 --store memory --certs "$CERTS" --handshake-timeout 300 \
    > "$WORK/server.out" 2> "$WORK/server.err" &
PIDS+=("$!")
for _ in $(seq 1 600); do grep -q "listening on" "$WORK/server.out" 2>/dev/null && break; sleep 0.1; done
MEMO_ADDR=$(sed -n 's/^listening on //p' "$WORK/server.out")
[ -n "$MEMO_ADDR" ] || { echo "memo-server did not start: $(cat "$WORK/server.err")" >&2; exit 1; }
mkdir -p "$WORK/home"
export HOME="$WORK/home" MEMO_EXPIRY_WARNING=0
# Under lackey a command runs some fifty times slower than alone.
client=("$WORK/memo-client" --server "$MEMO_ADDR" --certs "$CERTS" --timeout 300)
"${client[@]}" add "saves a TLS session" >/dev/null

# Every address the program touched, once; a run that fails fails the script.
trace() {
    local out=$1; shift
    { valgrind --tool=lackey --trace-mem=yes --log-fd=3 "$@" 3>&1 >/dev/null 2>"$WORK/trace.err" \
        || { echo "failed under lackey: $*: $(tail -3 "$WORK/trace.err")" >&2; exit 1; }; } \
        | awk '$1 == "I" || $1 == "L" || $1 == "S" || $1 == "M" { split($2, a, ","); print a[1] }' | sort -u > "$out"
}
trace "$WORK/version" "$WORK/memo-client" --version
trace "$WORK/add-resumed" "${client[@]}" add hello
MEMO_TLS_RESUME=0 trace "$WORK/add-full" "${client[@]}" add hello

python3 - "$WORK/memo-client.map" "$WORK/version" "$WORK/add-resumed" "$WORK/add-full" > Linking/memo-client.order <<'EOF'
import bisect, collections, sys

ORDERED = (".text", ".bss")  # the other sections: .data and .data.rel.ro are written whole by the relocations, and
                             # .rodata's touched pieces are mostly merged strings, which lld does not order
SMALL = 16384

# lld's map: output sections at one indentation, input sections at the next, symbols at the third.
sections, symbol_count, output = [], collections.Counter(), None
for line in open(sys.argv[1]):
    fields = line.split(None, 4)
    if len(fields) < 5 or not fields[0][0].isalnum():
        continue
    rest = fields[4].rstrip("\n")
    column = line.index(fields[4])
    if column < 50:
        output = rest.strip()
    elif column < 60:
        sections.append((int(fields[0], 16), int(fields[2], 16), output, []))
    elif sections:
        sections[-1][3].append(rest.strip())
        symbol_count[rest.strip()] += 1
sections.sort(key=lambda s: s[0])
starts = [s[0] for s in sections]

touched = {}
for path in sys.argv[2:]:
    addresses = [int(line, 16) for line in open(path)]
    # valgrind loads the executable at a fixed address below its own (0x108000 on x86-64): the lowest page touched
    # below 0x4000000 is the executable's first, whose program headers the loader reads first of all.
    base = min(a for a in addresses if a < 0x4000000) & ~0xFFF
    for address in addresses:
        offset = address - base
        i = bisect.bisect_right(starts, offset) - 1
        if i >= 0 and sections[i][2] in ORDERED and offset < sections[i][0] + max(sections[i][1], 1):
            touched.setdefault(i, None)

small, large = [], []
for i in sorted(touched):
    start, size, output, symbols = sections[i]
    names = [n for n in symbols if symbol_count[n] == 1] or symbols
    if names:
        (small if size <= SMALL else large).append(names[0])
print("# memo-client's start path, for lld's --symbol-ordering-file: written by Linking/start-order.sh (which says how);")
print(f"# {len(small)} sections of up to {SMALL // 1024} KiB first, then {len(large)} larger ones.")
print("\n".join(small + large))
EOF
echo "wrote Linking/memo-client.order: $(grep -vc '^#' Linking/memo-client.order) sections" >&2
