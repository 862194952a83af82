package main

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// maxSignature bounds a .minisig file: four lines, the trusted comment
// the only one of any length.
const maxSignature = 8 << 10

// signedComment reads a .minisig file as minisign writes it and returns
// its trusted comment. It checks the file's shape only (the head office
// holds no key): four lines, "untrusted comment: ...", the signature
// (base64 of "ED", the key ID and 64 bytes), "trusted comment: ...", and
// the comment's signature (base64 of 64 bytes). A legacy signature
// (minisign -l, "Ed") is refused: receiptd takes prehashed ones only.
func signedComment(sig []byte) (string, error) {
	if len(sig) > maxSignature {
		return "", fmt.Errorf("the signature file is over %d bytes: not a .minisig", maxSignature)
	}
	lines := strings.Split(strings.TrimRight(string(bytes.ReplaceAll(sig, []byte("\r\n"), []byte("\n"))), "\n"), "\n")
	if len(lines) != 4 {
		return "", fmt.Errorf("a .minisig file has 4 lines, this one %d", len(lines))
	}
	if !strings.HasPrefix(lines[0], "untrusted comment: ") {
		return "", errors.New(`line 1 of the signature does not start with "untrusted comment: "`)
	}
	raw, err := base64.StdEncoding.DecodeString(lines[1])
	if err != nil || len(raw) != 2+8+64 {
		return "", errors.New("line 2 of the signature is not a minisign signature (base64 of 74 bytes)")
	}
	switch string(raw[:2]) {
	case "ED":
	case "Ed":
		return "", errors.New("a legacy minisign signature (not prehashed): receiptd refuses it; sign with minisign 0.8 or later, without -l")
	default:
		return "", fmt.Errorf("line 2 of the signature names algorithm %q, not ED", raw[:2])
	}
	comment, ok := strings.CutPrefix(lines[2], "trusted comment: ")
	if !ok {
		return "", errors.New(`line 3 of the signature does not start with "trusted comment: "`)
	}
	if raw, err := base64.StdEncoding.DecodeString(lines[3]); err != nil || len(raw) != 64 {
		return "", errors.New("line 4 of the signature is not the trusted comment's signature (base64 of 64 bytes)")
	}
	return comment, nil
}

// parseComment splits a trusted comment of the shape receiptd demands,
// "receiptd <version> <goos>/<goarch>", into the version and platform.
func parseComment(c string) (version, platform string, err error) {
	f := strings.Split(c, " ")
	if len(f) != 3 || f[0] != "receiptd" {
		return "", "", fmt.Errorf("the trusted comment is %q, not \"receiptd <version> <goos>/<goarch>\" (minisign -S -t): the tills would refuse it", c)
	}
	goos, goarch, ok := strings.Cut(f[2], "/")
	if !ok || goos == "" || goarch == "" || strings.Contains(goarch, "/") {
		return "", "", fmt.Errorf("the trusted comment's platform is %q, not <goos>/<goarch> like linux/amd64", f[2])
	}
	return f[1], f[2], nil
}
