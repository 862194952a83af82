package config

import (
	"bytes"
	"errors"
	"os"
	"reflect"
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

// FuzzMerge feeds arbitrary remote fragments over a till's own file: it
// must never panic; an accepted fragment gives a config that validates,
// leaves every key of NeverRemote as the own file had it, and sets only
// keys under control.allow; every problem names a key or a line of the
// fragment.
func FuzzMerge(f *testing.F) {
	for _, seed := range []string{
		"[accept]\nqueued_answer = \"error\"\n",
		"listen = \"0.0.0.0:7080\"\n[auth]\ntoken = \"0123456789abcdef0\"\n",
		"[control]\nallow = [\"upstream\"]\n[upstream]\nbase_url = \"http://x:1\"\n",
		"accept.wait = \"1s\"\nfleet.labels.shop = \"9\"\n",
		"[fleet.labels]\nshop = \"\"\n[[log]]\n",
		"data_dir = \"/tmp\"\ncontrol = 1\n",
		"",
	} {
		f.Add([]byte(seed))
	}
	own := []byte("max_connections = 100\n[accept]\nwait = \"3s\"\n[fleet.labels]\nshop = \"017\"\n")
	base, problems := parse(own, nil)
	if len(problems) > 0 {
		f.Fatal(problems)
	}
	f.Fuzz(func(t *testing.T, fragment []byte) {
		cfg, keys, problems := overlay(Default(), own, fragment, nil, base.Control.Allow)
		if len(problems) == 0 {
			if err := cfg.Validate(); err != nil {
				t.Fatalf("accepted a fragment that does not validate: %v", err)
			}
			if cfg.Listen != base.Listen || cfg.ListenUnix != base.ListenUnix || cfg.DataDir != base.DataDir ||
				!reflect.DeepEqual(cfg.Auth, base.Auth) || !reflect.DeepEqual(cfg.Control, base.Control) {
				t.Fatalf("a fragment changed a key that is never remote: %q", fragment)
			}
			for _, k := range keys {
				if remoteProblem(k, base.Control.Allow) != "" {
					t.Fatalf("accepted %s outside control.allow", k)
				}
			}
			return
		}
		lines := 1 + bytes.Count(fragment, []byte("\n"))
		for _, p := range problems {
			if p.Key == "" && p.Line == 0 || p.Line > lines {
				t.Fatalf("problem names neither a key nor a line of the fragment: %v", p)
			}
		}
	})
}
