#!/usr/bin/env bash
# Turns help text into a man page (roff), so that the man pages say what --help says and nothing else.
#   help2man.sh NAME SECTION "SUMMARY" VERSION < help-text > NAME.SECTION
# The first "usage:" lines become SYNOPSIS, the paragraph after them DESCRIPTION, and every line that ends with a
# colon at the left margin ("Options:", "Exit codes:") or starts with "usage: " after a blank line (a command's
# own help) a section or subsection; everything else is kept as written, in no-fill mode, so the columns of the
# option tables survive.
set -euo pipefail
name=$1 section=$2 summary=$3 version=$4
date=$(date -u +%Y-%m-%d)
escape() { sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/" -e 's/-/\\-/g'; }
printf '.TH %s %s "%s" "memo %s" "memo"\n' "$(echo "$name" | tr a-z A-Z)" "$section" "$date" "$version"
printf '.SH NAME\n%s \\- %s\n' "$name" "$summary"
escape | awk '
    BEGIN { state = "synopsis"; print ".SH SYNOPSIS"; print ".nf" }
    state == "synopsis" && /^$/ { print ".fi"; print ".SH DESCRIPTION"; print ".nf"; state = "body"; next }
    state == "synopsis" { sub(/^usage: /, ""); sub(/^       /, ""); print; next }
    /^[A-Z][A-Za-z ()]*:$/ { sub(/:$/, ""); print ".fi"; print ".SH " toupper($0); print ".nf"; next }
    /^usage: / { print ".fi"; print ".SS \"" substr($0, 8) "\""; print ".nf"; next }
    /^$/ { print ""; next }
    { print }
    END { print ".fi" }
'
