package sip

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/emiago/sipgo/sip"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// TestSipgoLogLevels: sipgo's records reach the appliance's log at the
// level they mean. Its timer for 100 Trying firing as the transaction
// ended (the answer went first) is not an error: it came as one for
// every INVITE of a flood answered late, each carrying the flood's
// branch (TestFloodUnknownNumbers on a loaded machine). A real failure
// to send stays an error, and the raw bytes of an unparsable message are
// not copied.
func TestSipgoLogLevels(t *testing.T) {
	var buf bytes.Buffer
	l := newSlogLogger(zerolog.New(&buf).Level(zerolog.InfoLevel))

	l.Error("send '100 Trying' response failed", "error", sip.ErrTransactionTerminated, "tx", "z9hG4bK-flood-1__INVITE")
	l.Error("send '100 Trying' response failed", "error", fmt.Errorf("write: %w", sip.ErrTransactionTerminated), "tx", "z9hG4bK-flood-2__INVITE")
	require.Empty(t, buf.String(), "a 100 Trying the answer overtook is debug")

	l.Error("send '100 Trying' response failed", "error", errors.New("connection refused"), "tx", "z9hG4bK-x__INVITE")
	require.Contains(t, buf.String(), `"level":"error"`)
	require.Contains(t, buf.String(), "connection refused")

	buf.Reset()
	l.Warn("failed to parse", "data", "INVITE junk junk junk")
	require.Contains(t, buf.String(), `"data_bytes":21`)
	require.NotContains(t, buf.String(), "junk")
}
