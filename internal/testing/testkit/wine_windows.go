package testkit

import "golang.org/x/sys/windows/registry"

// UnderWine reports whether the tests run under Wine, which creates
// HKCU\Software\Wine in every prefix: some of Windows' service and ACL
// calls answer differently there, and the tests name that Wine limitation
// instead of failing.
func UnderWine() bool {
	k, err := registry.OpenKey(registry.CURRENT_USER, `Software\Wine`, registry.QUERY_VALUE)
	if err != nil {
		return false
	}
	_ = k.Close()
	return true
}
