package conversation

import (
	"bytes"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"switchboard/call"
)

// hangPhone records Hangup; nothing else of the phone is used.
type hangPhone struct {
	call.Phone
	reason string
}

func (p *hangPhone) Hangup(reason string, _ ...call.Header) { p.reason = reason }

// TestContainEndsOnlyTheCall: a panic in a conversation goroutine is
// logged with its stack and hangs up that call.
func TestContainEndsOnlyTheCall(t *testing.T) {
	var buf bytes.Buffer
	p := &hangPhone{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer contain(zerolog.New(&buf), p, "tool")
		panic("tool bug")
	}()
	<-done
	require.Equal(t, "internal error", p.reason)
	require.Contains(t, buf.String(), `"panic":"tool bug"`)
	require.Contains(t, buf.String(), "recover_test.go", "the stack is logged")
}
