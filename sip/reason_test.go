package sip

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReasonPhrase(t *testing.T) {
	for status, want := range map[int]string{603: "Decline", 486: "Busy Here", 480: "Temporarily Unavailable", 404: "Not Found",
		499: "Client Error", 599: "Server Error", 699: "Global Failure", 399: "Redirection"} {
		require.Equal(t, want, ReasonPhrase(status), "%d", status)
	}
}
