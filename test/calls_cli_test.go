package test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCLICalls places a real call to the demo number and reads its record
// with the built binary, while it runs and after it ended.
func TestCLICalls(t *testing.T) {
	d := startDaemon(t, nil)
	env := []string{"SWITCHBOARD_URL=" + d.URL, "SWITCHBOARD_DATA_DIR=" + d.DataDir, "TZ=UTC"}
	p := newPhone(t)
	oc := p.call(t, d, "+14155550177")

	var id string
	require.Eventually(t, func() bool {
		out, _, code := cli(t, env, "calls", "list", "--state", "active")
		m := regexp.MustCompile(`(?m)^(\S+)\s+active\s+\+14155550177\s+\+18005550100\s+agent:\S+\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+\S+\s+-$`).FindStringSubmatch(out)
		if code != 0 || m == nil {
			return false
		}
		id = m[1]
		return true
	}, 5*time.Second, 100*time.Millisecond)
	out, errs, code := cli(t, env, "calls", "show", id)
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "State        active")
	require.Contains(t, out, "SIP Call-ID  "+oc.SIPCallID())

	// The call lasts a while (half a second of its media) before it is
	// hung up.
	require.True(t, p.lasts(t, 25))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, oc.Hangup(ctx, "done"))

	require.Eventually(t, func() bool {
		out, _, code := cli(t, env, "calls", "list", "--state", "ended", "--number", "+18005550100", "--from", "+14155550177")
		return code == 0 && regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(id)+`\s+ended\s+.*\s+\d+\.\ds\s+caller$`).MatchString(out)
	}, 5*time.Second, 100*time.Millisecond)

	out, errs, code = cli(t, env, "calls", "show", id)
	require.Equal(t, 0, code, errs)
	for _, s := range []string{"Call         " + id, "State        ended", "From         +14155550177", "Ended        ", " by caller", "Transcript"} {
		require.Contains(t, out, s)
	}
	require.Regexp(t, `Media\s+[1-9]\d* packets in`, out)

	rec := cliJSON(t, env, "calls", "show", id)
	require.Equal(t, "caller", rec["ended_by"])
	require.Equal(t, oc.SIPCallID(), rec["sip_call_id"])
	l := cliJSON(t, env, "calls", "list", "--limit", "5")
	require.Len(t, l["calls"], 1)

	_, errs, code = cli(t, env, "calls", "show", "no-such-call")
	require.Equal(t, 1, code)
	require.Contains(t, errs, "404")
	require.True(t, strings.HasPrefix(errs, "switchboard calls: "), errs)
}
