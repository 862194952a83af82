package config

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
)

// FuzzLoad feeds arbitrary documents through the whole of Load but the file
// read: it must never panic, and every problem must match ErrInvalid, name
// a key or a line of the document, and speak TOML, not Go.
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
	f.Add([]byte("a = 1\n[sync\nb = 2\n"))
	f.Add([]byte("[upstream.headers]\nX = 1\n[auth]\nallowed_hosts = [1, {}]\nSYNC.Concurency = 1.5\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, problems := parse(data, nil)
		if len(problems) == 0 {
			if verr := cfg.Validate(); verr != nil {
				t.Fatalf("accepted a config that does not validate: %v", verr)
			}
			return
		}
		if err := (&Error{Problems: problems}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("error does not match ErrInvalid: %v", err)
		}
		lines := 1 + bytes.Count(data, []byte("\n"))
		for _, p := range problems {
			if p.Key == "" && p.Line == 0 {
				t.Fatalf("problem names neither a key nor a line: %v", p)
			}
			if p.Line > lines {
				t.Fatalf("problem on line %d of a %d-line document: %v", p.Line, lines, p)
			}
			goWords := strings.Contains(p.Problem, "destination") || strings.Contains(p.Problem, "int64") ||
				strings.Contains(p.Problem, "map[") || strings.Contains(p.Problem, "interface")
			if p.Key != "" && goWords {
				t.Fatalf("problem in Go's words: %v", p)
			}
		}
	})
}
