package control

import (
	"strings"
	"testing"

	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/stretchr/testify/require"
)

func TestFragmentOf(t *testing.T) {
	file := func(body, ct string) *protobufs.AgentConfigFile {
		return &protobufs.AgentConfigFile{Body: []byte(body), ContentType: ct}
	}
	for _, c := range []struct {
		name  string
		files map[string]*protobufs.AgentConfigFile
		want  string // the fragment, or the error's words
		err   bool
	}{
		{"the key", map[string]*protobufs.AgentConfigFile{ConfigKey: file("[log]\nlevel = \"debug\"\n", ContentType)}, "[log]\nlevel = \"debug\"\n", false},
		{"no content type", map[string]*protobufs.AgentConfigFile{ConfigKey: file("x", "")}, "x", false},
		{"empty map: the own file", map[string]*protobufs.AgentConfigFile{}, "", false},
		{"another key only", map[string]*protobufs.AgentConfigFile{"collector.yaml": file("a: b", "text/yaml")}, `has no "receiptd.toml" (it has collector.yaml)`, true},
		{"wrong content type", map[string]*protobufs.AgentConfigFile{ConfigKey: file("x", "text/yaml")}, `content type "text/yaml"; send it as "application/toml"`, true},
		{"too large", map[string]*protobufs.AgentConfigFile{ConfigKey: file(strings.Repeat("#", MaxFragment+1), ContentType)}, "at most 1048576 are read", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := fragmentOf(&protobufs.AgentRemoteConfig{Config: &protobufs.AgentConfigMap{ConfigMap: c.files}})
			if c.err {
				require.ErrorContains(t, err, c.want)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, string(got))
		})
	}
}
