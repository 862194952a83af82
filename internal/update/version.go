package update

import (
	"fmt"
	"strings"

	"golang.org/x/mod/semver"
)

// canonical returns v as golang.org/x/mod/semver wants it (a leading
// "v"), or an error naming v when it is not a semantic version: releases
// are numbered MAJOR.MINOR.PATCH with an optional pre-release
// ("1.4.0", "1.4.0-rc.1"); build metadata ("+...") is not compared.
func canonical(v string) (string, error) {
	c := "v" + strings.TrimPrefix(v, "v")
	if !semver.IsValid(c) || semver.Canonical(c) != strings.SplitN(c, "+", 2)[0] {
		return "", fmt.Errorf("version %q is not a semantic version (MAJOR.MINOR.PATCH, like 1.4.0)", v)
	}
	return c, nil
}

// Compare returns -1, 0 or +1 as version a is older than, the same as or
// newer than b, by semantic versioning (a pre-release is older than its
// release). Either not a semantic version is an error.
func Compare(a, b string) (int, error) {
	ca, err := canonical(a)
	if err != nil {
		return 0, err
	}
	cb, err := canonical(b)
	if err != nil {
		return 0, err
	}
	return semver.Compare(ca, cb), nil
}
