package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRegistrationsSettings(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	base := time.Unix(1_700_000_000, 0).UTC()
	for i, id := range []string{"pn_b", "pn_a"} {
		require.NoError(t, s.Numbers().Create(ctx, &PhoneNumber{ID: id, TeamID: "default", PhoneNumber: "+1415555010" + string(rune('0'+i)),
			Name: id, Origin: "byo_trunk", InboundTrunkID: "tr_" + id, AllowedAddresses: []string{},
			CreateTime: base.Add(time.Duration(i) * time.Second), UpdateTime: base}, nil))
	}
	_, err := s.Registrations().Get(ctx, "pn_a")
	require.ErrorIs(t, err, ErrNotFound)
	r := &NumberRegistration{NumberID: "pn_a", Registrar: "sip:pbx.example", Transport: "udp", Username: "1001",
		PasswordEnc: "sealed", ExpiresS: 300, ContactUser: "1001", BindingKey: "k1", UpdateTime: base}
	require.NoError(t, s.Registrations().Put(ctx, r))
	r2 := *r
	r2.NumberID, r2.ContactUser, r2.BindingKey = "pn_b", "1001", "k1"
	require.NoError(t, s.Registrations().Put(ctx, &r2))

	got, err := s.Registrations().Get(ctx, "pn_a")
	require.NoError(t, err)
	require.Equal(t, "+14155550101", got.PhoneNumber)
	require.Equal(t, "default", got.TeamID)
	require.Equal(t, 300, got.ExpiresS)
	require.Equal(t, "sealed", got.PasswordEnc)

	// Put replaces.
	r.ExpiresS, r.ContactUser, r.BindingKey = 600, "alice", "k2"
	require.NoError(t, s.Registrations().Put(ctx, r))
	got, err = s.Registrations().Get(ctx, "pn_a")
	require.NoError(t, err)
	require.Equal(t, 600, got.ExpiresS)
	require.Equal(t, "k2", got.BindingKey)

	all, err := s.Registrations().List(ctx)
	require.NoError(t, err)
	require.Len(t, all, 2)
	require.Equal(t, "pn_b", all[0].NumberID, "the oldest number first")
	byContact, err := s.Registrations().ByContact(ctx, "alice")
	require.NoError(t, err)
	require.Len(t, byContact, 1)
	require.Equal(t, "pn_a", byContact[0].NumberID)

	require.NoError(t, s.Registrations().Delete(ctx, "pn_a"))
	require.ErrorIs(t, s.Registrations().Delete(ctx, "pn_a"), ErrNotFound)
}

func TestRegistrationBindingLease(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	reg := s.Registrations()
	base := time.Unix(1_700_000_000, 0).UTC()

	ok, err := reg.Claim(ctx, "k", "node-a", base.Add(10*time.Second), base)
	require.NoError(t, err)
	require.True(t, ok, "a new binding is free")
	ok, err = reg.Claim(ctx, "k", "node-b", base.Add(11*time.Second), base.Add(time.Second))
	require.NoError(t, err)
	require.False(t, ok, "held by a live lease")
	ok, err = reg.Claim(ctx, "k", "node-a", base.Add(20*time.Second), base.Add(5*time.Second))
	require.NoError(t, err)
	require.True(t, ok, "the holder renews")

	exp := base.Add(300 * time.Second)
	require.NoError(t, reg.SetState(ctx, &RegistrationBinding{Key: "k", NodeID: "node-a", State: RegistrationRegistered,
		Expires: exp, LastStatus: 200, UpdateTime: base.Add(5 * time.Second)}))
	require.True(t, errors.Is(reg.SetState(ctx, &RegistrationBinding{Key: "k", NodeID: "node-b", State: RegistrationFailed}), ErrNotFound),
		"only the holder writes the state")
	b, err := reg.Binding(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, "node-a", b.NodeID)
	require.Equal(t, RegistrationRegistered, b.State)
	require.Equal(t, exp, b.Expires)
	require.Equal(t, 200, b.LastStatus)
	require.Equal(t, base.Add(20*time.Second), b.LeaseUntil)

	// The lease ran out: another node takes it over.
	ok, err = reg.Claim(ctx, "k", "node-b", base.Add(40*time.Second), base.Add(21*time.Second))
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = reg.Claim(ctx, "k", "node-a", base.Add(41*time.Second), base.Add(22*time.Second))
	require.NoError(t, err)
	require.False(t, ok, "the old holder lost it")

	require.NoError(t, reg.Release(ctx, "k", "node-a"), "a release by a node that does not hold it does nothing")
	b, err = reg.Binding(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, "node-b", b.NodeID)
	require.NoError(t, reg.Release(ctx, "k", "node-b"))
	ok, err = reg.Claim(ctx, "k", "node-a", base.Add(50*time.Second), base.Add(23*time.Second))
	require.NoError(t, err)
	require.True(t, ok, "a released binding is free at once")

	all, err := reg.Bindings(ctx)
	require.NoError(t, err)
	require.Len(t, all, 1)
	require.NoError(t, reg.DeleteBinding(ctx, "k"))
	_, err = reg.Binding(ctx, "k")
	require.ErrorIs(t, err, ErrNotFound)
}
