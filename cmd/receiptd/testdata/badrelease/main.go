// Command badrelease stands for a release that cannot start: signed as a
// receiptd release by the update tests, it exits at once with code 3.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "badrelease: this release cannot start")
	os.Exit(3)
}
