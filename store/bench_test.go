package store

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// benchStore opens a fresh store on the backend of the run, closed when
// the benchmark ends.
func benchStore(b *testing.B) *DB {
	b.Helper()
	s, err := opener(b, b.TempDir())()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkCallPut is the write of a call record at admission and at each
// change (an upsert), on the backend of the run (SQLite, then PostgreSQL).
func BenchmarkCallPut(b *testing.B) {
	ctx := context.Background()
	s := benchStore(b)
	base := time.Unix(1_700_000_000, 0).UTC()
	for i := 0; b.Loop(); i++ {
		c := &Call{ID: fmt.Sprintf("bench-%d", i), TeamID: "default", State: "active", InviteTime: base, NodeID: "sb1"}
		if err := s.Calls().Put(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkKeyByHash is the read behind an API key check that misses the
// key cache.
func BenchmarkKeyByHash(b *testing.B) {
	ctx := context.Background()
	s := benchStore(b)
	now := time.Now()
	if err := s.Keys().Create(ctx, &APIKey{ID: "k", TeamID: "default", UserID: "u", Name: "k", Hash: "h", Redacted: "r",
		ACLs: []string{"api-key:endpoint:*"}, CreateTime: now, ModifyTime: now}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := s.Keys().ByHash(ctx, "h"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallPutAll is the call records' writer: batches of 16 upserts
// in one transaction (the ns/op is per record).
func BenchmarkCallPutAll(b *testing.B) {
	ctx := context.Background()
	s := benchStore(b)
	base := time.Unix(1_700_000_000, 0).UTC()
	const batch = 16
	cs := make([]*Call, batch)
	for i := 0; b.Loop(); i++ {
		if i%batch != 0 {
			continue
		}
		for j := range cs {
			cs[j] = &Call{ID: fmt.Sprintf("bench-%d", i+j), TeamID: "default", State: "active", InviteTime: base, NodeID: "sb1"}
		}
		if err := s.Calls().PutAll(ctx, cs); err != nil {
			b.Fatal(err)
		}
	}
}
