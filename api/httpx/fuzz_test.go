package httpx

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzDecode: any body is decoded or refused with a 4xx JSON error, never
// a panic; a body with a duplicate key is never accepted.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":1,"a":2}`, `{"a":{"b":[{"c":1,"c":2}]}}`, `[]`, `{"a":"\u0061"}`, "{\"a\xff\":1}", `{`, ``} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		r := httptest.NewRequest("POST", "/", strings.NewReader(body))
		var v map[string]any
		err := Decode(r, 1<<16, &v)
		if err != nil {
			he, ok := err.(*Error)
			if !ok || he.Status < 400 || he.Status > 499 {
				t.Fatalf("error %v is not a 4xx *Error", err)
			}
			return
		}
		// Accepted: valid JSON, no object in it repeats a key.
		if _, dup := duplicateKey([]byte(body)); dup {
			t.Fatalf("accepted a body with a duplicate key: %q", body)
		}
		if !json.Valid([]byte(strings.TrimSpace(body))) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
	})
}
