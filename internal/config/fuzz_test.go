package config

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// FuzzLoad feeds arbitrary documents through the whole of Load but the file
// read: it must never panic, and every refusal must wrap ErrInvalid and
// point at a line or a key.
func FuzzLoad(f *testing.F) {
	example, err := os.ReadFile(examplePath)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(example)
	f.Add(uncomment(example))
	f.Add([]byte("listen = \"0.0.0.0:1\"\n[auth]\ntoken = \"x\"\n"))
	f.Add([]byte("[sync]\nconcurrency = \"2\"\n[accept]\nwait = 5\n"))
	f.Add([]byte("[upstream.headers]\n\"a b\" = \"c\\n\"\n[[log]]\n"))
	f.Add([]byte("x = 1\n[cache.refresh]\ny = 2\n"))
	f.Add([]byte("accept = 1\nupstream = []"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := parse(data, nil)
		if err == nil {
			if verr := cfg.Validate(); verr != nil {
				t.Fatalf("accepted a config that does not validate: %v", verr)
			}
			return
		}
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("error does not wrap ErrInvalid: %v", err)
		}
		var ke *KeyError
		if !errors.As(err, &ke) && !strings.Contains(err.Error(), "line ") && !strings.Contains(err.Error(), "last key") {
			t.Fatalf("error names neither a key nor a line: %v", err)
		}
	})
}
