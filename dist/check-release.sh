#!/usr/bin/env bash
# The packaging test: .ci/run runs it after the suite (a static release build of both binaries, about two minutes
# on two cores), and so can anyone before a release:
#
#   dist/check-release.sh
#
# Runs dist/release.sh, then checks what it made as a machine without Swift would see it: ldd finds no Swift library
# (and, for memo-client, no libstdc++ or libgcc_s), the .deb's Depends names OpenSSL, SQLite and libpq, and the
# binaries unpacked from the tarball and from the .deb run with `env -i` (no /opt/swift on PATH, no LD_LIBRARY_PATH)
# and, as root, with /opt/swift hidden in a mount namespace: --version, certs init, a server on loopback port 0,
# memo-client add and list against it, SIGTERM. SWIFT_BUILD_FLAGS goes to release.sh (e.g. --scratch-path to keep
# .build for debug). The man pages render with `man -l`, the completions parse in bash, zsh and fish (each where
# installed), and `systemd-analyze verify` accepts the unit. Prints "check-release: PASS" or fails with the step that
# did not work.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
server_pid=
cleanup() {
    if [ -n "$server_pid" ]; then kill -9 "$server_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "check-release: FAIL: $*" >&2; exit 1; }

dist/release.sh "$work/out"
tarball=$(ls "$work"/out/memo-*.tar.gz)
deb=$(ls "$work"/out/memo_*.deb)

depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for package in libssl3 libsqlite3-0 libpq5; do
    [[ ", $depends," == *", $package,"* ]] || fail "Depends lacks $package: $depends"
done
[[ "$depends" != *swift* ]] || fail "Depends names a Swift package: $depends"

mkdir -p "$work/tar" "$work/deb"
tar -C "$work/tar" -xzf "$tarball"
dpkg-deb -x "$deb" "$work/deb"

# The environment of a server with no Swift: nothing from /opt/swift on PATH, no loader path, and, when this runs
# as root, /opt/swift itself hidden under an empty tmpfs in a mount namespace of the binary's own (a binary that
# still needed the toolchain's libraries, through its RUNPATH say, would not even start there). Called in a
# subshell, `(run ...)`, as it ends with exec: `(run ...) &` leaves the program's own pid in $!.
hidden=
if [ "$(id -u)" = 0 ] && unshare -m sh -c 'mount -t tmpfs none /opt/swift' 2> /dev/null; then hidden=yes; fi
run() {
    if [ -n "$hidden" ]; then
        exec unshare -m sh -c 'mount -t tmpfs none /opt/swift && exec env -i PATH=/usr/bin:/bin HOME="$0" \
            LANG=C.UTF-8 "$@"' "$work/home" "$@"
    fi
    exec env -i PATH=/usr/bin:/bin HOME="$work/home" LANG=C.UTF-8 "$@"
}
echo "check-release: /opt/swift hidden from the binaries: ${hidden:-no (not root: env -i only)}"

for root in "$work/tar" "$work/deb"; do
    bin="$root/usr/bin"
    for program in memo-server memo-client; do
        [ -x "$bin/$program" ] || fail "$program missing from $root"
        if ldd "$bin/$program" | grep -Ei 'swift|libFoundation|libdispatch|libBlocksRuntime|not found'; then
            fail "$program from $root needs the libraries above"
        fi
        # memo-client links libstdc++ and libgcc in as well (Package.swift; scripts start it once per memo).
        if [ "$program" = memo-client ] && ldd "$bin/$program" | grep -E 'libstdc\+\+|libgcc_s'; then
            fail "memo-client from $root loads the libraries above, which its release link takes in statically"
        fi
        (run "$bin/$program" --version) | head -1 | grep -q "^$program " || fail "$program --version"
    done

    certs="$work/certs-$(basename "$root")"
    data="$work/data-$(basename "$root")"
    (run "$bin/memo-server" certs init --dir "$certs") > /dev/null || fail "certs init"
    (run "$bin/memo-server" serve --listen 127.0.0.1:0 --store "sqlite:$data/memos.sqlite" --certs "$certs" \
        > "$work/server.out" 2> "$work/server.err") &
    server_pid=$!
    # Up to two minutes: on a loaded two-core machine a start took over 30 s once.
    for _ in $(seq 1 1200); do
        grep -q '^listening on ' "$work/server.out" && break
        kill -0 "$server_pid" 2>/dev/null || fail "memo-server exited: $(cat "$work/server.err")"
        sleep 0.1
    done
    address=$(sed -n 's/^listening on //p' "$work/server.out")
    [ -n "$address" ] || fail "memo-server did not listen: $(cat "$work/server.err")"
    client=(run "$bin/memo-client" --server "$address" --certs "$certs")
    ("${client[@]}" add "hello from a machine without Swift") > /dev/null || fail "memo-client add"
    ("${client[@]}" list) | grep -q "hello from a machine without Swift" || fail "memo-client list"
    kill -TERM "$server_pid"
    wait "$server_pid" || fail "memo-server did not exit 0 on SIGTERM: $(cat "$work/server.err")"
    server_pid=
    echo "check-release: $(basename "$root"): binaries run without the toolchain; served and listed a memo"
done

root="$work/deb"
for page in memo-server memo-client; do
    text=$(MANWIDTH=100 man -l "$root/usr/share/man/man1/$page.1.gz" 2> "$work/man.err") || fail "man -l $page"
    [ ! -s "$work/man.err" ] || fail "man -l $page warned: $(cat "$work/man.err")"
    grep -q "^NAME" <<< "$text" || fail "man $page has no NAME section"
    grep -q "usage\|$page" <<< "$text" || fail "man $page is empty"
done
for program in memo-client memo-server; do
    bash -n "$root/usr/share/bash-completion/completions/$program" || fail "$program bash completion does not parse"
    if command -v zsh > /dev/null; then
        zsh -n "$root/usr/share/zsh/vendor-completions/_$program" || fail "$program zsh completion does not parse"
    fi
    if command -v fish > /dev/null; then
        fish --no-config -n "$root/usr/share/fish/vendor_completions.d/$program.fish" \
            || fail "$program fish completion does not parse"
    fi
done
if command -v systemd-analyze > /dev/null; then
    # The unit as installed, its ExecStart pointing at the unpacked binary (verify wants an executable).
    sed "s|/usr/bin/memo-server|$root/usr/bin/memo-server|" "$root/usr/lib/systemd/system/memo-server.service" \
        > "$work/memo-server.service"
    systemd-analyze verify --man=no "$work/memo-server.service" || fail "systemd-analyze verify"
fi
echo "check-release: PASS"
