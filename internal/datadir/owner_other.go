//go:build !unix

package datadir

// giveToDirOwner does nothing where files inherit the directory's access
// rules (Windows ACLs).
func giveToDirOwner(path, dir string) error { return nil }
