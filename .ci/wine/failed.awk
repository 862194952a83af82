# Reads a test binary's -test.v output and prints what explains a failure:
# each failed test's own lines (at most 30), the panic (at most 40 lines),
# and every test that started and never ended, with its lines. Used by
# go-test. With -v verdict=1 it prints only "hang" when tests never ended
# and none failed, and "fail" otherwise.
/^=== (RUN|CONT|NAME) / { cur = $3; if ($2 == "RUN") started[cur] = 1; next }
/^=== PAUSE / { next }
/^ *--- (PASS|FAIL|SKIP): / {
	delete started[$3]
	if ($2 == "FAIL:") failed[$3] = 1
	next
}
/^panic: / { panicking = 1 }
panicking { if (!verdict && np++ < 40) print; next }
cur != "" && lines[cur]++ < 30 { out[cur] = out[cur] "\n" $0 }
END {
	if (verdict) {
		for (t in failed) { print "fail"; exit }
		for (t in started) { print "hang"; exit }
		print "fail"
		exit
	}
	for (t in failed) if (out[t] != "") printf "--- FAIL: %s%s\n", t, out[t]
	for (t in started) printf "started and never ended: %s%s\n", t, out[t]
}
