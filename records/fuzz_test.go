package records

import (
	"encoding/json"
	"net/url"
	"testing"

	"switchboard/store"
)

// FuzzQuery checks that any query string is either refused or turned into
// a query within the documented bounds.
func FuzzQuery(f *testing.F) {
	for _, s := range []string{"", "page_size=10&state=active", "page_size=0", "since=2024-05-01T12:00:00Z&until=2024-05-01T11:00:00Z",
		"state=ended&from=%2B1415&phone_number_id=pn_1", "until=2024-05-01T12:00:00.123+02:00", "page_size=101&state=x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		q, err := queryOf(v)
		if err != nil {
			return
		}
		if q.Page.Size < 1 || q.Page.Size > store.MaxPageSize {
			t.Fatalf("page size %d accepted", q.Page.Size)
		}
		if q.State != "" && !states[q.State] {
			t.Fatalf("state %q accepted", q.State)
		}
		if !q.Since.IsZero() && !q.Until.IsZero() && !q.Until.After(q.Since) {
			t.Fatalf("empty window accepted: %v..%v", q.Since, q.Until)
		}
	})
}

// FuzzTimestamp checks that a timestamp that decodes encodes again and
// decodes to the same millisecond.
func FuzzTimestamp(f *testing.F) {
	for _, s := range []string{`null`, `"2024-05-01T12:00:00Z"`, `"2024-05-01T12:00:00.123456789+02:00"`, `"x"`, `12`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		var ts Timestamp
		if err := json.Unmarshal([]byte(raw), &ts); err != nil {
			return
		}
		if y := ts.Time().UTC().Year(); y < 0 || y > 9999 {
			return // RFC 3339 has four-digit years only
		}
		b, err := json.Marshal(ts)
		if err != nil {
			t.Fatal(err)
		}
		var back Timestamp
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s re-encoded as %s does not decode: %v", raw, b, err)
		}
		if want := ts.Time().UTC().Truncate(1e6); !back.Time().Equal(want) {
			t.Fatalf("%s -> %s -> %v, want %v", raw, b, back.Time(), want)
		}
	})
}
