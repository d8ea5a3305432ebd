#!/usr/bin/env bash
# Runs the whole Go test suite once. The end-to-end tests drive real peers
# (baresip, sipp, chromium) on a shared 2-core machine, where a peer now and
# then misses its start; so a top-level test that failed is run once more,
# alone. The suite passes only if every such test then passes, and every
# test that needed the second run is named in a FLAKY line, never hidden.
# A package that failed without naming a test (a panic, a timeout, a build
# error) fails the suite at once.
# The end-to-end package (./test) takes about 12 minutes on 2 cores (its
# tests that only wait on calls run four at a time); its
# timeout leaves room for a busy machine without letting a hung test run
# past CI's limit (90 minutes).
set -uo pipefail
GO=${GO:-go}
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# ./test is named first so that it starts first: it is the long pole, and
# the other packages (about 5 minutes on one core) then run beside it
# instead of before it.
"$GO" test -count=1 -timeout "${TEST_TIMEOUT:-30m}" "$@" ./test ./... 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
[ "$rc" -eq 0 ] && exit 0

# "pkg Test1|Test2" for each failed package, from go test's own lines.
failed=$(awk '
	/^--- FAIL: / { split($3, a, "/"); names = names (names ? "|" : "") a[1]; next }
	/^FAIL\t/ { print $2, (names ? names : "-"); names = ""; next }
	/^(ok|\?) / { names = "" }
' "$log")
[ -n "$failed" ] || exit "$rc"
echo
echo "== running the failed tests once more, alone =="
status=0
while read -r pkg names; do
	if [ "$names" = "-" ]; then
		echo "FAIL: $pkg failed without naming a test (panic, timeout or build error)"
		status=1
		continue
	fi
	if "$GO" test -count=1 -timeout 6m -run "^(${names})\$" "$pkg"; then
		echo "FLAKY: $pkg: ${names//|/ } failed in the full run and passed alone"
	else
		status=1
	fi
done <<<"$failed"
exit "$status"
