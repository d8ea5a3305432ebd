package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func testCall(i int, base time.Time) *Call {
	c := &Call{
		ID: fmt.Sprintf("call-%02d", i), TeamID: "default", PhoneNumberID: "pn_a", PhoneNumber: "+18005550100",
		From: fmt.Sprintf("+1415555%04d", i%3), To: "+18005550100", SIPCallID: fmt.Sprintf("sip-%d", i), Route: "agent:ag_1", Channel: "sip", Direction: "inbound",
		State: "ended", InviteTime: base.Add(time.Duration(i) * time.Second), EndedBy: "caller", EndReason: "BYE",
		Media: json.RawMessage(`{"packets_in":50}`), Notes: json.RawMessage(`[{"kind":"transcript","text":"hi"}]`),
	}
	if i%2 == 0 {
		c.PhoneNumberID, c.PhoneNumber = "pn_b", "+18005550101"
	}
	if i%4 != 3 {
		c.AnswerTime = c.InviteTime.Add(100 * time.Millisecond)
	}
	c.EndTime = c.InviteTime.Add(time.Second)
	return c
}

func TestCallsCreateGetAndRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTest(t, dir)
	base := time.Unix(1_700_000_000, 123456000).UTC()
	in := testCall(1, base)
	in.Direction, in.Progress, in.SIPStatus, in.MachineDetection, in.AnsweredBy = "outbound", "answered", 200, "detect", "machine"
	require.NoError(t, s.Calls().Create(ctx, in))
	require.ErrorIs(t, s.Calls().Create(ctx, in), ErrConflict)
	never := testCall(3, base) // never answered
	never.Media, never.Notes = nil, nil
	require.NoError(t, s.Calls().Create(ctx, never))
	_, err := s.Calls().Get(ctx, "nope")
	require.ErrorIs(t, err, ErrNotFound)
	require.NoError(t, s.Close())

	s2 := openTest(t, dir)
	v, err := s2.SchemaVersion(ctx)
	require.NoError(t, err)
	require.GreaterOrEqual(t, v, 2)
	got, err := s2.Calls().Get(ctx, in.ID)
	require.NoError(t, err)
	require.Equal(t, in, got, "a call record survives a restart unchanged")
	got, err = s2.Calls().Get(ctx, never.ID)
	require.NoError(t, err)
	require.True(t, got.AnswerTime.IsZero())
	require.JSONEq(t, `{}`, string(got.Media))
	require.JSONEq(t, `[]`, string(got.Notes))
}

func TestCallsListNewestFirstPagesAndFilters(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	base := time.Unix(1_700_000_000, 0).UTC()
	for i := 0; i < 23; i++ {
		require.NoError(t, s.Calls().Create(ctx, testCall(i, base)))
	}
	// Two calls with the same invite time are ordered by id.
	tie := testCall(30, base)
	tie.ID, tie.InviteTime = "call-22b", base.Add(22*time.Second)
	require.NoError(t, s.Calls().Create(ctx, tie))
	other := testCall(40, base)
	other.TeamID = "other"
	require.NoError(t, s.Calls().Create(ctx, other))

	var ids []string
	tok := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 10)
		cs, next, err := s.Calls().List(ctx, "default", CallQuery{Page: Page{Size: 5, Token: tok}})
		require.NoError(t, err)
		require.LessOrEqual(t, len(cs), 5)
		for _, c := range cs {
			ids = append(ids, c.ID)
		}
		if next == "" {
			break
		}
		tok = next
	}
	require.Len(t, ids, 24)
	require.Equal(t, []string{"call-22b", "call-22", "call-21"}, ids[:3])
	require.Equal(t, "call-00", ids[23])

	cs, next, err := s.Calls().List(ctx, "default", CallQuery{})
	require.NoError(t, err)
	require.Len(t, cs, DefaultPageSize, "a listing without a size is one default page")
	require.NotEmpty(t, next)
	count := func(q CallQuery) int {
		t.Helper()
		q.Page.Size = MaxPageSize
		cs, _, err := s.Calls().List(ctx, "default", q)
		require.NoError(t, err)
		return len(cs)
	}
	tests := []struct {
		name string
		q    CallQuery
		want int
	}{
		{"all", CallQuery{}, 24},
		{"number id", CallQuery{PhoneNumberID: "pn_a"}, 11},
		{"number", CallQuery{PhoneNumber: "+18005550101"}, 13},
		{"state ended", CallQuery{State: "ended"}, 24},
		{"state active", CallQuery{State: "active"}, 0},
		{"from", CallQuery{From: "+14155550001"}, 8},
		{"to", CallQuery{To: "+18005550100"}, 24},
		{"since", CallQuery{Since: base.Add(20 * time.Second)}, 4},
		{"until", CallQuery{Until: base.Add(2 * time.Second)}, 2},
		{"window", CallQuery{Since: base.Add(5 * time.Second), Until: base.Add(10 * time.Second)}, 5},
		{"combined", CallQuery{PhoneNumberID: "pn_a", From: "+14155550001", Until: base.Add(10 * time.Second)}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { require.Equal(t, tt.want, count(tt.q)) })
	}
	cs, _, err = s.Calls().List(ctx, "other", CallQuery{})
	require.NoError(t, err)
	require.Len(t, cs, 1, "a team sees only its own calls")

	_, _, err = s.Calls().List(ctx, "default", CallQuery{Page: Page{Token: "!!"}})
	require.ErrorIs(t, err, ErrBadPageToken)
}

// TestCallsOpenRecordLifecycle: a record is put when the call is admitted,
// updated as it goes, touched while it lasts; a closed record is final, and
// the records a crash left open are closed at their last known time.
func TestCallsOpenRecordLifecycle(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTest(t, dir)
	base := time.Unix(1_700_000_000, 0).UTC()
	open := func(id string, inv time.Time) *Call {
		return &Call{ID: id, TeamID: "default", State: "ringing", InviteTime: inv, AliveTime: inv}
	}
	a, b, c := open("a", base), open("b", base.Add(time.Second)), open("c", base.Add(2*time.Second))
	for _, x := range []*Call{a, b, c} {
		require.NoError(t, s.Calls().Put(ctx, x))
	}
	a.State, a.AnswerTime, a.AliveTime = "active", base.Add(500*time.Millisecond), base.Add(500*time.Millisecond)
	require.NoError(t, s.Calls().Put(ctx, a))
	got, err := s.Calls().Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, "active", got.State)
	require.True(t, got.EndTime.IsZero())

	// c ends normally; a late write of an older view cannot reopen it.
	c.State, c.EndTime, c.EndedBy, c.AliveTime = "ended", base.Add(3*time.Second), "caller", base.Add(3*time.Second)
	require.NoError(t, s.Calls().Put(ctx, c))
	stale := open("c", base.Add(2*time.Second))
	require.NoError(t, s.Calls().Put(ctx, stale))
	got, err = s.Calls().Get(ctx, "c")
	require.NoError(t, err)
	require.Equal(t, "ended", got.State)
	require.Equal(t, "caller", got.EndedBy)

	// Touch moves the alive time of open records only.
	require.NoError(t, s.Calls().Touch(ctx, []string{"a", "c", "missing"}, base.Add(10*time.Second)))
	got, err = s.Calls().Get(ctx, "c")
	require.NoError(t, err)
	require.Equal(t, base.Add(3*time.Second), got.AliveTime)
	require.NoError(t, s.Close())

	// After a crash: a and b are still open.
	s = openTest(t, dir)
	n, err := s.Calls().CloseOpen(ctx, CloseOpen{State: "ended", EndedBy: "crash", Reason: "crash"})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	got, err = s.Calls().Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, "ended", got.State)
	require.Equal(t, "crash", got.EndedBy)
	require.Equal(t, base.Add(10*time.Second), got.EndTime, "closed at the last touch")
	require.Equal(t, base.Add(500*time.Millisecond), got.AnswerTime)
	got, err = s.Calls().Get(ctx, "b")
	require.NoError(t, err)
	require.Equal(t, base.Add(time.Second), got.EndTime, "closed at its last write")
	n, err = s.Calls().CloseOpen(ctx, CloseOpen{State: "ended", EndedBy: "crash"})
	require.NoError(t, err)
	require.Zero(t, n, "closing twice closes nothing")

	// Touch takes more ids than one statement's chunk.
	var ids []string
	for i := range 450 {
		x := open(fmt.Sprintf("m%03d", i), base)
		require.NoError(t, s.Calls().Put(ctx, x))
		ids = append(ids, x.ID)
	}
	require.NoError(t, s.Calls().Touch(ctx, ids, base.Add(time.Minute)))
	got, err = s.Calls().Get(ctx, "m449")
	require.NoError(t, err)
	require.Equal(t, base.Add(time.Minute), got.AliveTime)
}

// TestCallsPutAll: a batch stores every record as Put would (new ones,
// changes of open ones, never a change of a closed one), reuses its
// prepared statement, and inside Tx joins the transaction.
func TestCallsPutAll(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	base := time.Unix(1_700_000_000, 0).UTC()
	open := func(id string) *Call {
		return &Call{ID: id, TeamID: "default", State: "ringing", InviteTime: base, AliveTime: base, Channel: "sip", Direction: "inbound",
			Media: json.RawMessage(`{}`), Notes: json.RawMessage(`[]`)}
	}
	closed := open("closed")
	closed.State, closed.EndTime, closed.EndedBy = "ended", base.Add(time.Second), "caller"
	require.NoError(t, s.Calls().Put(ctx, closed))
	require.NoError(t, s.Calls().Put(ctx, open("known")))

	known := open("known")
	known.State, known.AnswerTime = "active", base.Add(time.Second)
	reopen := open("closed")
	batch := []*Call{open("new-1"), known, reopen, open("new-2")}
	require.NoError(t, s.Calls().PutAll(ctx, batch))
	for _, want := range []*Call{batch[0], known, closed, batch[3]} {
		got, err := s.Calls().Get(ctx, want.ID)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	// The same statement again, in batches of every size.
	for n := range 5 {
		var cs []*Call
		for i := range n {
			cs = append(cs, open(fmt.Sprintf("b%d-%d", n, i)))
		}
		require.NoError(t, s.Calls().PutAll(ctx, cs))
		for _, c := range cs {
			_, err := s.Calls().Get(ctx, c.ID)
			require.NoError(t, err)
		}
	}

	// Inside a transaction the batch commits with it, or not at all.
	fail := errors.New("undo")
	require.ErrorIs(t, s.Tx(ctx, func(tx Store) error {
		require.NoError(t, tx.Calls().PutAll(ctx, []*Call{open("tx-1"), open("tx-2")}))
		require.NoError(t, tx.Calls().Put(ctx, open("tx-3")))
		return fail
	}), fail)
	for _, id := range []string{"tx-1", "tx-2", "tx-3"} {
		_, err := s.Calls().Get(ctx, id)
		require.ErrorIs(t, err, ErrNotFound, id)
	}
	require.NoError(t, s.Tx(ctx, func(tx Store) error {
		return tx.Calls().PutAll(ctx, []*Call{open("tx-1"), open("tx-2")})
	}))
	_, err := s.Calls().Get(ctx, "tx-2")
	require.NoError(t, err)

	require.NoError(t, s.Close())
	require.Error(t, s.Calls().PutAll(ctx, []*Call{open("late-1"), open("late-2")}), "a closed store refuses")
}
