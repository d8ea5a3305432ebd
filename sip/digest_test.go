package sip

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/icholy/digest"
	"github.com/stretchr/testify/require"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func answer(t *testing.T, chalHeader, user, pass string, nc int) string {
	t.Helper()
	ch, err := digest.ParseChallenge(chalHeader)
	require.NoError(t, err)
	cred, err := digest.Digest(ch, digest.Options{Method: "INVITE", URI: "sip:+15551230001@127.0.0.1", Username: user, Password: pass, Count: nc})
	require.NoError(t, err)
	return cred.String()
}

func TestDigestVerify(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	d := newDigestAuth("switchboard", []string{"SHA-256", "MD5"}, 30*time.Second, clk.now)
	chals := d.challenges(false)
	require.Len(t, chals, 2)
	require.Contains(t, chals[0], "algorithm=SHA-256")
	require.Contains(t, chals[1], "algorithm=MD5")
	require.Contains(t, chals[0], `qop="auth"`)

	for i, ch := range chals {
		// Both challenges share one nonce, so nc must keep growing.
		h := answer(t, ch, "alice", "pw", 1+10*i)
		r := d.verify([]string{h}, "INVITE", "alice", "pw")
		require.Equal(t, authOK, r.verdict, "challenge %d: %s", i, r.reason)
		// Replay of the same nc is refused; a higher nc is fine.
		require.Equal(t, authFailed, d.verify([]string{h}, "INVITE", "alice", "pw").verdict)
		require.Equal(t, authOK, d.verify([]string{answer(t, ch, "alice", "pw", 2+10*i)}, "INVITE", "alice", "pw").verdict)
	}
	require.Equal(t, authMissing, d.verify(nil, "INVITE", "alice", "pw").verdict)
	wrong := d.verify([]string{answer(t, chals[0], "alice", "nope", 30)}, "INVITE", "alice", "pw")
	require.Equal(t, authFailed, wrong.verdict)
	require.Equal(t, "wrong response", wrong.reason)
	require.NotContains(t, wrong.reason, "nope")
	require.Equal(t, authFailed, d.verify([]string{answer(t, chals[0], "mallory", "pw", 40)}, "INVITE", "alice", "pw").verdict)

	// Expired nonce with the right password: stale.
	fresh := d.challenges(false)[0]
	clk.add(31 * time.Second)
	require.Equal(t, authStale, d.verify([]string{answer(t, fresh, "alice", "pw", 1)}, "INVITE", "alice", "pw").verdict)
	require.Contains(t, d.challenges(true)[0], "stale=true")

	// A forged nonce is treated as missing (fresh challenge).
	forged := strings.Replace(fresh, "nonce=\"", "nonce=\"A", 1)
	require.Equal(t, authMissing, d.verify([]string{answer(t, forged, "alice", "pw", 1)}, "INVITE", "alice", "pw").verdict)
	require.Equal(t, authFailed, d.verify([]string{"Basic abc"}, "INVITE", "alice", "pw").verdict)
}

func TestFailLimiter(t *testing.T) {
	clk := &fakeClock{t: time.Unix(0, 0)}
	l := newFailLimiter(3, time.Minute, clk.now)
	src := mustAddr("192.0.2.1")
	require.False(t, l.fail(src))
	require.False(t, l.fail(src))
	require.False(t, l.blocked(src))
	require.True(t, l.fail(src))
	require.True(t, l.blocked(src))
	require.False(t, l.blocked(mustAddr("192.0.2.2")))
	clk.add(time.Minute)
	require.False(t, l.blocked(src))
}

func FuzzParseCredentials(f *testing.F) {
	f.Add(`Digest username="alice", realm="switchboard", nonce="abc", uri="sip:x@y", response="0123", algorithm=MD5, qop=auth, nc=00000001, cnonce="c"`)
	f.Add(`Digest username="a\"b", nc=zz`)
	f.Add(`Basic Zm9v`)
	d := newDigestAuth("switchboard", []string{"MD5"}, time.Second, time.Now)
	f.Fuzz(func(t *testing.T, h string) {
		_, _ = parseCredentials(h)
		r := d.verify([]string{h}, "INVITE", "alice", "pw")
		if r.verdict == authOK {
			t.Fatalf("arbitrary header accepted: %q", h)
		}
	})
}

func BenchmarkDigestVerify(b *testing.B) {
	d := newDigestAuth("switchboard", []string{"SHA-256"}, time.Minute, time.Now)
	ch, _ := digest.ParseChallenge(d.challenges(false)[0])
	b.ReportAllocs()
	nc := 0
	for b.Loop() {
		nc++
		cred, _ := digest.Digest(ch, digest.Options{Method: "INVITE", URI: "sip:x@y", Username: "alice", Password: "pw", Count: nc})
		if d.verify([]string{cred.String()}, "INVITE", "alice", "pw").verdict != authOK {
			b.Fatal("verify failed")
		}
	}
}
