package cache

import (
	"testing"
)

// FuzzWarmRounds: whatever PosAPI's /rest/info and the classification's
// top level answered, the warm set's second round built from them holds
// only lookups that obey the parameter and segment rules (their stored
// keys load back), without duplicates, and stays bounded.
func FuzzWarmRounds(f *testing.F) {
	f.Add(`{"merchants":[{"tin":"5317878","customers":[{"tin":"30000000000"},{"tin":""}]}]}`, `[["1","a"],["2","b"]]`, "5317878")
	f.Add(`{"merchants":[{"tin":" \u0000 ","customers":null}]}`, `[[],["  "],[".."],["a/b"]]`, " ")
	f.Add(`{"merchants":{"tin":1}}`, `{"rows":1}`, "")
	f.Add(`[]`, `[["1"]]trailing`, "x")
	f.Fuzz(func(t *testing.T, info, top, noted string) {
		lks := secondRound([]byte(info), []byte(top), []string{noted})
		if n := len(lks); n > 3*maxWarmTINs+1 {
			t.Fatalf("%d lookups", n)
		}
		seen := map[string]bool{}
		for _, lk := range lks {
			back, err := lookupFromKey(lk.op, lk.param)
			if err != nil || back.key() != lk.key() {
				t.Fatalf("warm lookup %s %q does not load back: %v", lk.op, lk.param, err)
			}
			if seen[lk.key()] {
				t.Fatalf("%s %q twice", lk.op, lk.param)
			}
			seen[lk.key()] = true
		}
	})
}
