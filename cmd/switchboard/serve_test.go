package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGCPercent: the appliance runs with GOGC=30 unless the environment
// names another target (or off).
func TestGCPercent(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "GOGC" {
				return v
			}
			return ""
		}
	}
	for _, tc := range []struct {
		gogc    string
		want    int
		fromEnv bool
	}{{"", defaultGCPercent, false}, {"100", 100, true}, {"25", 25, true}, {"off", -1, true}} {
		got, fromEnv := gcPercent(env(tc.gogc))
		require.Equal(t, tc.want, got, tc.gogc)
		require.Equal(t, tc.fromEnv, fromEnv, tc.gogc)
	}
}
