package update

import (
	"fmt"
	"strconv"
	"strings"

	"aead.dev/minisign"
)

// Key is a trusted minisign public key.
type Key struct {
	pub minisign.PublicKey
}

// ParseKey reads a minisign public key as `update.trusted_keys` holds it:
// the base64 line of a `.pub` file (it starts with "RW"), or the whole
// file with its "untrusted comment:" line.
func ParseKey(s string) (Key, error) {
	var k Key
	if err := k.pub.UnmarshalText([]byte(strings.TrimSpace(s))); err != nil {
		return Key{}, fmt.Errorf("not a minisign public key (the line of a .pub file that starts with RW): %w", err)
	}
	return k, nil
}

// ID is the key's ID as minisign prints it (16 hex digits, upper case).
func (k Key) ID() string { return keyID(k.pub.ID()) }

func keyID(id uint64) string {
	return fmt.Sprintf("%016s", strings.ToUpper(strconv.FormatUint(id, 16)))
}

// ParseKeys reads every key of list; the error names the first bad one by
// its position (`update.trusted_keys[2]`).
func ParseKeys(list []string) ([]Key, error) {
	keys := make([]Key, 0, len(list))
	for i, s := range list {
		k, err := ParseKey(s)
		if err != nil {
			return nil, fmt.Errorf("update.trusted_keys[%d]: %w", i, err)
		}
		keys = append(keys, k)
	}
	return keys, nil
}
