package headoffice

import (
	"fmt"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
)

// RulesFile is the shipped alert rules, relative to the repository root.
const RulesFile = "packaging/monitoring/receiptd-rules.yml"

// Shorten says how a test copy of one alert rule differs from the
// shipped one: its "for" (empty: unchanged), and a threshold in its expr
// (Old, which must occur exactly once, becomes New).
type Shorten struct {
	For      string
	Old, New string
}

// ShortenedRules reads the shipped rules at path and returns a copy with
// the given alerts' thresholds shortened, so a test can reach them in
// seconds. Every alert named must exist and every Old must match, so the
// copy cannot drift silently from the rules it tests.
func ShortenedRules(path string, changes map[string]Shorten) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	var doc struct {
		Groups []struct {
			Name  string           `yaml:"name"`
			Rules []map[string]any `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("rules %s: %w", path, err)
	}
	done := map[string]bool{}
	for _, g := range doc.Groups {
		for _, r := range g.Rules {
			name, _ := r["alert"].(string)
			c, ok := changes[name]
			if !ok {
				continue
			}
			if c.For != "" {
				r["for"] = c.For
			}
			if c.Old != "" {
				expr, _ := r["expr"].(string)
				if strings.Count(expr, c.Old) != 1 {
					return nil, fmt.Errorf("rules: %s: %q is not in its expr exactly once: %s", name, c.Old, expr)
				}
				r["expr"] = strings.Replace(expr, c.Old, c.New, 1)
			}
			done[name] = true
		}
	}
	for name := range changes {
		if !done[name] {
			return nil, fmt.Errorf("rules: no alert %s in %s", name, path)
		}
	}
	return yaml.Marshal(doc)
}
