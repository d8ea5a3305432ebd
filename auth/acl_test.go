package auth

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseACLValid(t *testing.T) {
	tests := []struct {
		in   string
		want ACL
	}{
		{"api-key:endpoint:calls", ACL{ACLEndpoint, "calls"}},
		{"api-key:endpoint:phone-numbers", ACL{ACLEndpoint, "phone-numbers"}},
		{"api-key:endpoint:*", ACL{ACLEndpoint, "*"}},
		{"api-key:model:*", ACL{ACLModel, "*"}},
		{"api-key:model:gpt-realtime", ACL{ACLModel, "gpt-realtime"}},
		{"api-key:model:grok-4.1_fast", ACL{ACLModel, "grok-4.1_fast"}},
		{"api-key:model:accounts/acme/models/llama-v3", ACL{ACLModel, "accounts/acme/models/llama-v3"}},
		{"api-key:model:llama3:8b", ACL{ACLModel, "llama3:8b"}},
		{"api-key:model:m@2025+x", ACL{ACLModel, "m@2025+x"}},
		{"api-key:model:" + strings.Repeat("m", 128), ACL{ACLModel, strings.Repeat("m", 128)}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseACL(tt.in)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.in, got.String(), "canonical form round-trips")
			require.Equal(t, tt.want.Name == "*", got.IsWildcard())
		})
	}
}

func TestParseACLInvalid(t *testing.T) {
	tests := []struct {
		in      string
		errPart string
	}{
		{"", "must start with"},
		{"api-key", "must start with"},
		{"api-key:", "want api-key:endpoint"},
		{"api-key:endpoint", "want api-key:endpoint"},
		{"API-KEY:endpoint:calls", "must start with"},
		{"apikey:endpoint:calls", "must start with"},
		{" api-key:endpoint:calls", "must start with"},
		{"api-key:endpoints:calls", `kind "endpoints"`},
		{"api-key:Model:gpt", `kind "Model"`},
		{"api-key::calls", `kind ""`},
		{"api-key:endpoint:", `unknown endpoint ""`},
		{"api-key:endpoint:phone_numbers", "unknown endpoint"},
		{"api-key:endpoint:Calls", "unknown endpoint"},
		{"api-key:endpoint:calls ", "unknown endpoint"},
		{"api-key:endpoint:**", "unknown endpoint"},
		{"api-key:endpoint:calls:extra", "unknown endpoint"},
		{"api-key:model:", "model name"},
		{"api-key:model:-leading", "model name"},
		{"api-key:model:has space", "model name"},
		{"api-key:model:gpt*", "model name"},
		{"api-key:model:ünicode", "model name"},
		{"api-key:model:a\x00b", "model name"},
		{"api-key:model:" + strings.Repeat("m", 129), "model name"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := ParseACL(tt.in)
			require.ErrorIs(t, err, ErrInvalidACL)
			require.Contains(t, err.Error(), tt.errPart)
			require.Contains(t, err.Error(), strconv.Quote(tt.in), "error names the bad string")
		})
	}
}

func TestParseACLsReportsEveryBadEntry(t *testing.T) {
	_, err := ParseACLs([]string{"api-key:endpoint:calls", "nope", "api-key:model:bad name"})
	require.ErrorIs(t, err, ErrInvalidACL)
	require.Contains(t, err.Error(), `"nope"`)
	require.Contains(t, err.Error(), `"api-key:model:bad name"`)

	got, err := ParseACLs([]string{"api-key:endpoint:calls", "api-key:model:*"})
	require.NoError(t, err)
	require.Equal(t, []ACL{{ACLEndpoint, "calls"}, {ACLModel, "*"}}, got)
}

func TestACLSetAllowMatrix(t *testing.T) {
	type req struct {
		endpoint, model string
		want            bool
	}
	tests := []struct {
		name string
		acls []string
		reqs []req
	}{
		{"nil set allows nothing", nil, []req{
			{"calls", "", false}, {"calls", "gpt", false}, {"", "", false},
		}},
		{"empty set allows nothing", []string{}, []req{
			{"calls", "", false}, {"realtime", "gpt", false},
		}},
		{"endpoint only: no model named passes, a named model is refused", []string{"api-key:endpoint:realtime"}, []req{
			{"realtime", "", true}, {"realtime", "gpt", false}, {"calls", "", false},
		}},
		{"model only: no endpoint, nothing passes", []string{"api-key:model:gpt"}, []req{
			{"realtime", "gpt", false}, {"realtime", "", false},
		}},
		{"endpoint and model", []string{"api-key:endpoint:realtime", "api-key:model:gpt"}, []req{
			{"realtime", "gpt", true}, {"realtime", "", true}, {"realtime", "other", false},
			{"tts", "gpt", false}, {"realtime", "GPT", false},
		}},
		{"endpoint wildcard", []string{"api-key:endpoint:*", "api-key:model:gpt"}, []req{
			{"calls", "", true}, {"tts", "gpt", true}, {"tts", "other", false}, {"anything", "", true},
		}},
		{"model wildcard", []string{"api-key:endpoint:stt", "api-key:model:*"}, []req{
			{"stt", "whisper", true}, {"stt", "", true}, {"tts", "whisper", false},
		}},
		{"both wildcards", []string{"api-key:endpoint:*", "api-key:model:*"}, []req{
			{"calls", "", true}, {"realtime", "any-model", true},
		}},
		{"duplicates are harmless", []string{"api-key:endpoint:tts", "api-key:endpoint:tts"}, []req{
			{"tts", "", true}, {"stt", "", false},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewACLSet(tt.acls)
			require.NoError(t, err)
			for _, r := range tt.reqs {
				require.Equal(t, r.want, s.Allows(r.endpoint, r.model), "endpoint=%q model=%q", r.endpoint, r.model)
				require.Equal(t, s.Allows(r.endpoint, ""), s.AllowsEndpoint(r.endpoint))
			}
		})
	}
}

func TestACLSetZeroValueAllowsNothing(t *testing.T) {
	var s ACLSet
	require.False(t, s.AllowsEndpoint("calls"))
	require.False(t, s.AllowsModel("gpt"))
	require.False(t, s.Allows("calls", ""))
}

func TestNewACLSetFailsClosed(t *testing.T) {
	s, err := NewACLSet([]string{"api-key:endpoint:*", "api-key:model:*", "garbage"})
	require.ErrorIs(t, err, ErrInvalidACL)
	require.False(t, s.Allows("calls", ""), "an invalid list yields an empty set")
}

func TestMatchesFilter(t *testing.T) {
	acls := []string{"api-key:endpoint:calls", "api-key:model:*", "api-key:endpoint:tts"}
	tests := []struct {
		name    string
		acls    []string
		filters []string
		want    bool
	}{
		{"no filters match everything", acls, nil, true},
		{"no filters match empty acls", nil, nil, true},
		{"single held", acls, []string{"api-key:endpoint:calls"}, true},
		{"all held", acls, []string{"api-key:endpoint:tts", "api-key:endpoint:calls"}, true},
		{"one missing", acls, []string{"api-key:endpoint:calls", "api-key:endpoint:stt"}, false},
		{"wildcard is literal", acls, []string{"api-key:model:*"}, true},
		{"wildcard does not match specific filter", acls, []string{"api-key:model:gpt"}, false},
		{"specific does not match wildcard filter", []string{"api-key:endpoint:calls"}, []string{"api-key:endpoint:*"}, false},
		{"empty acls with filter", nil, []string{"api-key:endpoint:calls"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, MatchesFilter(tt.acls, tt.filters))
		})
	}
}

func TestEndpoints(t *testing.T) {
	eps := Endpoints()
	names := EndpointNames()
	require.Equal(t, []string{"phone-numbers", "agents", "calls", "realtime", "client-secrets", "tts", "stt", "api-keys", "audit", "usage"}, names)
	require.Len(t, eps, len(names))
	for i, e := range eps {
		require.Equal(t, names[i], e.Name)
		require.NotEmpty(t, e.Description)
		require.NotContains(t, e.Description, "\n")
		require.True(t, IsEndpoint(e.Name))
		_, err := ParseACL("api-key:endpoint:" + e.Name)
		require.NoError(t, err)
		require.Equal(t, e.Name == EndpointAPIKeys || e.Name == EndpointAudit || e.Name == EndpointUsage, e.Management, e.Name)
	}
	eps[0].Name = "mutated"
	require.Equal(t, "phone-numbers", Endpoints()[0].Name, "callers get a copy")
	require.False(t, IsEndpoint("mutated"))
}

func FuzzParseACL(f *testing.F) {
	for _, s := range []string{
		"api-key:endpoint:calls", "api-key:endpoint:*", "api-key:model:*", "api-key:model:gpt-4o",
		"api-key:model:a:b", "api-key:", "api-key::", "", "api-key:endpoint:calls\x00",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseACL(s)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidACL)
			require.Equal(t, ACL{}, a)
			return
		}
		// Anything accepted is canonical, printable ASCII and re-parses to itself.
		require.Equal(t, s, a.String())
		require.True(t, a.Kind == ACLEndpoint || a.Kind == ACLModel)
		require.True(t, isPrintableASCII(a.Name), "%q", a.Name)
		b, err := ParseACL(a.String())
		require.NoError(t, err)
		require.Equal(t, a, b)
		set, err := NewACLSet([]string{s})
		require.NoError(t, err)
		if a.Kind == ACLEndpoint {
			require.True(t, set.AllowsEndpoint(a.Name))
			require.False(t, set.AllowsModel(a.Name))
		} else {
			require.True(t, set.AllowsModel(a.Name))
			require.False(t, set.AllowsEndpoint("calls"))
		}
	})
}

func BenchmarkACLSetAllows(b *testing.B) {
	s, err := NewACLSet([]string{"api-key:endpoint:realtime", "api-key:endpoint:calls", "api-key:model:gpt-realtime"})
	require.NoError(b, err)
	for b.Loop() {
		_ = s.Allows("realtime", "gpt-realtime")
	}
}
