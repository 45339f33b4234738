#!/usr/bin/env bash
# Builds memo-server and memo-client for machines without Swift, and packs them.
#
#   dist/release.sh [OUT]          (default OUT: dist/out)
#
# Release builds with the Swift standard library, Foundation and Dispatch linked in (--static-swift-stdlib): the
# binaries then need only the C libraries a Debian server has or gets from its archive (libc, libstdc++, OpenSSL,
# SQLite, libpq). Writes OUT/memo-VERSION-linux-ARCH.tar.gz (a usr/ tree: `tar -C / -xzf` installs it) and
# OUT/memo_VERSION_ARCH.deb (the same files, Depends computed with ldd and dpkg -S, a `memo` system user made on
# install), each with the binaries, the systemd unit, the man pages (made from the --help text by help2man.sh)
# and the shell completions (from `memo-client completion bash|zsh|fish`, and memo-server's). Fails when a binary still needs a Swift
# library. SWIFT_BUILD_FLAGS adds flags to swift build (e.g. --scratch-path).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-dist/out}")
export PATH="/opt/swift/usr/bin:$PATH"

# Linked with lld, as memo-client's own release build is (Package.swift): gold prints glibc's link-time warning
# about the mktemp inside the static Foundation at every link of memo-server.
flags=(-c release --static-swift-stdlib -Xswiftc -use-ld=lld ${SWIFT_BUILD_FLAGS:-})
swift build "${flags[@]}" --product memo-server
swift build "${flags[@]}" --product memo-client
bin=$(swift build "${flags[@]}" --show-bin-path)

version=$(sed -n 's/.*static let version = "\(.*\)".*/\1/p' Sources/MemoWire/MemoRelease.swift)
arch=$(dpkg --print-architecture 2>/dev/null || uname -m)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root="$stage/root"

# Nothing from the Swift toolchain may be needed at run time.
for program in memo-server memo-client; do
    if ldd "$bin/$program" | grep -Ei 'swift|libFoundation|libdispatch|libBlocksRuntime|lib_Foundation|libicu'; then
        echo "release.sh: $program still needs the Swift libraries above" >&2
        exit 1
    fi
done

install -d "$root/usr/bin" "$root/usr/lib/systemd/system" "$root/usr/share/man/man1" \
    "$root/usr/share/bash-completion/completions" "$root/usr/share/zsh/vendor-completions" \
    "$root/usr/share/fish/vendor_completions.d" "$root/usr/share/doc/memo"
install -m 0755 -s "$bin/memo-server" "$bin/memo-client" "$root/usr/bin/"
install -m 0644 dist/memo-server.service "$root/usr/lib/systemd/system/"
install -m 0644 README.md PROTOCOL.md "$root/usr/share/doc/memo/"

# Man pages from the help text, so that they cannot say something else.
{
    "$bin/memo-server" --help
    echo
    "$bin/memo-server" serve --help
    echo
    "$bin/memo-server" certs --help
} | dist/help2man.sh memo-server 1 "the memo server: memos over mutual TLS" "$version" \
    | gzip -9n > "$root/usr/share/man/man1/memo-server.1.gz"
"$bin/memo-client" --help | dist/help2man.sh memo-client 1 "read and write memos on a memo server" "$version" \
    | gzip -9n > "$root/usr/share/man/man1/memo-client.1.gz"
for program in memo-client memo-server; do
    "$bin/$program" completion bash > "$root/usr/share/bash-completion/completions/$program"
    "$bin/$program" completion zsh > "$root/usr/share/zsh/vendor-completions/_$program"
    "$bin/$program" completion fish > "$root/usr/share/fish/vendor_completions.d/$program.fish"
done

mkdir -p "$out"
tarball="$out/memo-$version-linux-$arch.tar.gz"
tar -C "$root" --owner=0 --group=0 --sort=name -czf "$tarball" usr

# The .deb: the same tree; Depends names the packages of the libraries the binaries link directly (their NEEDED
# entries, found where ldd finds them; what those pull in is their packages' business), libc6 first.
needed=$(for program in memo-server memo-client; do
    readelf -d "$bin/$program" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; done | sort -u)
depends=$(for program in memo-server memo-client; do ldd "$bin/$program"; done \
    | awk -v needed="$needed" 'BEGIN { split(needed, list, "\n"); for (i in list) want[list[i]] = 1 }
        $2 == "=>" && $3 ~ /^\// && ($1 in want) { print $3 }' | sort -u \
    | while read -r library; do dpkg -S "$(realpath "$library")" 2>/dev/null || dpkg -S "$library"; done \
    | cut -d: -f1 | sort -u | grep -vx 'libc6' | paste -sd, | sed 's/,/, /g')
install -d "$root/DEBIAN"
cat > "$root/DEBIAN/control" <<CONTROL
Package: memo
Version: $version
Architecture: $arch
Maintainer: memo maintainers <memo@localhost>
Depends: libc6, $depends
Section: net
Priority: optional
Description: memo server and client: memos over mutual TLS
 memo-server keeps memos (SQLite, or PostgreSQL shared by several servers) and pushes every change to its
 subscribers over mutual TLS; memo-client is a scripting command line and a terminal front end. No Swift
 toolchain needed. The systemd unit memo-server.service is installed but not enabled.
CONTROL
cat > "$root/DEBIAN/postinst" <<'POSTINST'
#!/bin/sh
set -e
if [ "$1" = configure ]; then
    getent group memo >/dev/null || addgroup --system memo
    getent passwd memo >/dev/null || adduser --system --ingroup memo --home /var/lib/memo --no-create-home memo
    if [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi
fi
POSTINST
cat > "$root/DEBIAN/postrm" <<'POSTRM'
#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi
POSTRM
chmod 0755 "$root/DEBIAN/postinst" "$root/DEBIAN/postrm"
deb="$out/memo_${version}_$arch.deb"
dpkg-deb --root-owner-group --build "$root" "$deb" >/dev/null

echo "$tarball"
echo "$deb"
echo "Depends: libc6, $depends"
