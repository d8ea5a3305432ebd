package httpx

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/store"
)

// TestWriteError pins the error body and its headers: the JSON shape,
// Retry-After rounded up to whole seconds, Allow, and a plain error (even
// wrapped with secrets) turned into a 500 that leaks nothing.
func TestWriteError(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		body   string
		header map[string]string
	}{
		{BadRequest("name", "name is %s", "bad"), 400, `{"error":{"code":"invalid_request","message":"name is bad","param":"name"}}`, nil},
		{fmt.Errorf("wrapped: %w", NotFound("no agent %s", "ag_1")), 404, `{"error":{"code":"not_found","message":"no agent ag_1"}}`, nil},
		{TooManyRequests(1500 * time.Millisecond), 429, "", map[string]string{"Retry-After": "2"}},
		{Unavailable("draining", time.Second), 503, "", map[string]string{"Retry-After": "1"}},
		{&Error{Status: 405, Code: "method_not_allowed", Message: "no", Allow: "GET"}, 405, "", map[string]string{"Allow": "GET"}},
		{errors.New("db password hunter2 rejected"), 500, `{"error":{"code":"internal","message":"internal error"}}`, nil},
	} {
		w := httptest.NewRecorder()
		WriteError(w, tc.err)
		require.Equal(t, tc.status, w.Code, tc.err.Error())
		require.Equal(t, "application/json", w.Header().Get("Content-Type"))
		if tc.body != "" {
			require.JSONEq(t, tc.body, w.Body.String())
		}
		for k, v := range tc.header {
			require.Equal(t, v, w.Header().Get(k))
		}
		require.NotContains(t, w.Body.String(), "hunter2")
	}
}

// TestDecodeErrors: a body that does not fit names the field at fault
// (its dotted path, with array indices) and the type it takes in the
// API's words, never Go's.
func TestDecodeErrors(t *testing.T) {
	type tool struct {
		Name    string `json:"name"`
		Timeout int    `json:"timeout_ms"`
	}
	type body struct {
		Name  string            `json:"name"`
		N     int               `json:"n"`
		ACLs  []string          `json:"acls"`
		On    bool              `json:"on"`
		Tools []tool            `json:"tools"`
		Meta  map[string]string `json:"meta"`
		Sub   *struct {
			Seconds int64 `json:"seconds"`
		} `json:"sub"`
	}
	for _, tc := range []struct{ body, param, msg string }{
		{`{"name":"a","n":"x"}`, "n", "n must be an integer, not a string"},
		{`{"acls":"api-key:endpoint:*"}`, "acls", "acls must be an array of strings, not a string"},
		{`{"acls":["a",{}]}`, "acls[1]", "acls[1] must be a string, not an object"},
		{`{"on":1}`, "on", "on must be a boolean, not a number"},
		{`{"tools":[{"name":"a"},{"name":"b","timeout_ms":"5"}]}`, "tools[1].timeout_ms", "tools[1].timeout_ms must be an integer, not a string"},
		{`{"meta":{"k":2}}`, "meta.k", "meta.k must be a string, not a number"},
		{`{"sub":{"seconds":1.5}}`, "sub.seconds", "sub.seconds must be an integer, not 1.5"},
		{`{"sub":[]}`, "sub", "sub must be an object, not an array"},
		{`[]`, "", "the body must be an object, not an array"},
		{`{"name":`, "", "the body: not valid JSON: it ends too soon"},
		{`{"nmae":"a"}`, "nmae", `unknown field "nmae"`},
	} {
		t.Run(tc.body, func(t *testing.T) {
			var v body
			err := Decode(httptest.NewRequest("POST", "/", strings.NewReader(tc.body)), 0, &v)
			var he *Error
			require.ErrorAs(t, err, &he)
			require.Equal(t, http.StatusBadRequest, he.Status)
			require.Equal(t, tc.param, he.Param)
			require.Equal(t, tc.msg, he.Message)
			for _, w := range []string{"[]string", "struct", "Go ", "int64", "map[", "json:"} {
				require.NotContains(t, he.Message, w)
			}
		})
	}
}

// TestDecodeStrict: a charset other than UTF-8 is a 415, bytes that are
// not UTF-8 and a key given twice in one object are a 400 naming the key;
// the same key in different objects, and keys inside strings, are fine.
func TestDecodeStrict(t *testing.T) {
	type item struct {
		Name string `json:"name"`
		URL  string `json:"url"`
	}
	type body struct {
		Name    string         `json:"name"`
		Webhook map[string]any `json:"webhook"`
		Tools   []item         `json:"tools"`
		Meta    any            `json:"meta"`
	}
	for _, tc := range []struct {
		name, ctype, body string
		status            int
		param             string
	}{
		{"plain", "application/json", `{"name":"a"}`, 200, ""},
		{"utf-8 charset", "application/json; charset=UTF-8", `{"name":"é"}`, 200, ""},
		{"utf8 charset", "application/json;charset=utf8", `{"name":"a"}`, 200, ""},
		{"latin-1 charset", "application/json; charset=ISO-8859-1", `{"name":"a"}`, 415, "Content-Type"},
		{"utf-16 charset", "application/json; charset=utf-16", `{"name":"a"}`, 415, "Content-Type"},
		{"latin-1 bytes", "application/json", "{\"name\":\"caf\xe9\"}", 400, ""},
		{"utf-16 bytes", "application/json", "\xff\xfe{\x00}\x00", 400, ""},
		{"duplicate top key", "application/json", `{"name":"a","name":"b"}`, 400, "name"},
		{"duplicate nested key", "application/json", `{"webhook":{"url":"https://a","url":"https://b"}}`, 400, "webhook.url"},
		{"duplicate in array item", "application/json", `{"tools":[{"name":"a","url":"u"},{"name":"b","name":"c"}]}`, 400, "tools[1].name"},
		{"duplicate deep", "application/json", `{"meta":[1,[2,{"k":{"x":1,"x":2}}]]}`, 400, "meta[1][1].k.x"},
		{"escaped duplicate", "application/json", `{"name":"a","n\u0061me":"b"}`, 400, "name"},
		{"same key in sibling objects", "application/json", `{"tools":[{"name":"a"},{"name":"b"}],"webhook":{"name":"x"}}`, 200, ""},
		{"key-like strings", "application/json", `{"name":"name","meta":["name","name"]}`, 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/", strings.NewReader(tc.body))
			r.Header.Set("Content-Type", tc.ctype)
			var v body
			err := Decode(r, 0, &v)
			if tc.status == 200 {
				require.NoError(t, err)
				return
			}
			var he *Error
			require.ErrorAs(t, err, &he)
			require.Equal(t, tc.status, he.Status)
			require.Equal(t, tc.param, he.Param)
		})
	}
}

// TestPageOf: page sizes are checked against the store's bounds.
func TestPageOf(t *testing.T) {
	p, err := PageOf(url.Values{}, "page_size", "page_token")
	require.NoError(t, err)
	require.Equal(t, store.DefaultPageSize, p.Size)
	p, err = PageOf(url.Values{"page_size": {"5"}, "page_token": {"tok"}}, "page_size", "page_token")
	require.NoError(t, err)
	require.Equal(t, store.Page{Size: 5, Token: "tok"}, p)
	for _, bad := range []string{"0", "-1", "x", fmt.Sprint(store.MaxPageSize + 1)} {
		_, err = PageOf(url.Values{"page_size": {bad}}, "page_size", "page_token")
		var he *Error
		require.ErrorAs(t, err, &he, bad)
		require.Equal(t, "page_size", he.Param)
	}
}

// TestPrincipal: the principal travels in the context; a request without
// one is the default team's.
func TestPrincipal(t *testing.T) {
	ctx := context.Background()
	require.Nil(t, PrincipalFrom(ctx))
	require.Equal(t, "default", TeamOf(ctx))
	ctx = WithPrincipal(ctx, &Principal{KeyID: "k", TeamID: "team-a"})
	require.Equal(t, "team-a", TeamOf(ctx))
	require.True(t, strings.HasPrefix(NewID("ag"), "ag_"))
	require.NotEqual(t, NewID("ag"), NewID("ag"))
}

// TestDecodeContentTypes: a JSON body is read when it says JSON, says
// nothing, or says curl's -d default (form); what is then not JSON is a
// 400 in the JSON error shape, and another declared type is 415.
func TestDecodeContentTypes(t *testing.T) {
	for _, tc := range []struct {
		ct, body string
		status   int
	}{
		{"application/json", `{"name":"a"}`, 0},
		{"application/json; charset=utf-8", `{"name":"a"}`, 0},
		{"", `{"name":"a"}`, 0},
		{"application/x-www-form-urlencoded", `{"name":"a"}`, 0},
		{"application/merge-patch+json", `{"name":"a"}`, 0},
		{"application/x-www-form-urlencoded", `name=a`, http.StatusBadRequest},
		{"", `name=a`, http.StatusBadRequest},
		{"text/plain", `{"name":"a"}`, http.StatusUnsupportedMediaType},
		{"multipart/form-data; boundary=x", `{"name":"a"}`, http.StatusUnsupportedMediaType},
	} {
		var v struct {
			Name string `json:"name"`
		}
		r := httptest.NewRequest("POST", "/", strings.NewReader(tc.body))
		if tc.ct != "" {
			r.Header.Set("Content-Type", tc.ct)
		}
		err := Decode(r, 0, &v)
		if tc.status == 0 {
			require.NoError(t, err, tc.ct)
			require.Equal(t, "a", v.Name)
			continue
		}
		var he *Error
		require.ErrorAs(t, err, &he, tc.ct)
		require.Equal(t, tc.status, he.Status, tc.ct)
	}
}
