package main

import "os"

// releaseBuilds is the folder of the binaries the update tests build
// (update_linux_test.go); "" when none did.
var releaseBuilds string

// removeReleases removes them once every test has run (TestMain).
func removeReleases() {
	if releaseBuilds != "" {
		_ = os.RemoveAll(releaseBuilds)
	}
}
