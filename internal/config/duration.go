package config

import (
	"encoding"
	"fmt"
	"time"
)

// Duration is a time.Duration written in TOML as a string in Go's syntax
// ("5s", "1h30m"); "0" is zero.
type Duration struct {
	time.Duration
}

var (
	_ encoding.TextUnmarshaler = (*Duration)(nil) // toml decodes through it
	_ encoding.TextMarshaler   = Duration{}
)

// Dur wraps d.
func Dur(d time.Duration) Duration { return Duration{d} }

// UnmarshalText reads "5s", "24h" and the like.
func (d *Duration) UnmarshalText(text []byte) error {
	v, err := time.ParseDuration(string(text))
	if err != nil {
		return fmt.Errorf(`must be a duration like "5s" or "24h", not %q`, text)
	}
	d.Duration = v
	return nil
}

// MarshalText writes the form UnmarshalText reads.
func (d Duration) MarshalText() ([]byte, error) {
	return []byte(d.String()), nil
}
