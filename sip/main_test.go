package sip

import (
	"net/netip"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }
