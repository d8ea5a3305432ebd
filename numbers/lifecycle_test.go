package numbers_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/store"
)

func TestDeleteAndTeams(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	m := e.ok("POST", "/v2/phone-numbers", map[string]any{"origin": "byo_trunk", "name": "A", "phone_number": "+14155550140",
		"webhook": map[string]any{"url": "https://a.example/h"}})
	id := obj(m, "phone_number")["phone_number_id"].(string)
	path := "/v2/phone-numbers/" + id

	// Another team sees a 404 in the JSON error shape, and an empty list.
	for _, method := range []string{"GET", "DELETE"} {
		status, raw, body := e.do(method, path, "team-b", nil)
		require.Equal(t, http.StatusNotFound, status, raw)
		require.Equal(t, "not_found", obj(body, "error")["code"])
	}
	_, _, list := e.do("GET", "/v2/phone-numbers", "team-b", nil)
	require.Equal(t, []any{}, list["phone_numbers"])

	require.Equal(t, map[string]any{}, e.ok("DELETE", path, nil))
	e.fails("GET", path, nil, http.StatusNotFound, "")
	e.fails("DELETE", path, nil, http.StatusNotFound, "")
	_, err := e.st.Numbers().Webhook(ctx, id)
	require.ErrorIs(t, err, store.ErrNotFound, "the webhook goes with its number")
	_, err = e.svc.Resolve(ctx, "+14155550140")
	require.Error(t, err)
	// The number can be registered again.
	e.ok("POST", "/v2/phone-numbers", map[string]any{"origin": "byo_trunk", "name": "A", "phone_number": "+14155550140"})
}

func TestAuditEvents(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	id := obj(e.ok("POST", "/v2/phone-numbers", map[string]any{"origin": "byo_trunk", "name": "Audited", "phone_number": "+14155550150",
		"sip_auth": map[string]any{"auth_username": "u", "auth_password": "audit-secret-pw"}}), "phone_number")["phone_number_id"].(string)
	e.ok("PATCH", "/v2/phone-numbers/"+id, map[string]any{"name": "Audited 2"})
	e.fails("PATCH", "/v2/phone-numbers/"+id, map[string]any{"name": ""}, http.StatusBadRequest, "name")
	e.ok("DELETE", "/v2/phone-numbers/"+id, nil)

	evs, _, err := e.st.Audit().List(ctx, "team_a", store.AuditQuery{})
	require.NoError(t, err)
	var actions []string
	for _, ev := range evs {
		if ev.Resource == "phone_number/"+id {
			actions = append(actions, ev.Action)
			require.Equal(t, "user_a", ev.UserID)
			require.Equal(t, "key_a", ev.KeyID)
			require.NotContains(t, ev.Description, "audit-secret-pw")
		}
	}
	require.Equal(t, []string{"phone_number.create", "phone_number.update", "phone_number.delete"}, actions, "one event per change, none for the failed patch")
}

// failingStore makes PutWebhook fail inside transactions, after the number
// row was written.
type failingStore struct{ store.Store }

type failingNumbers struct{ store.NumberStore }

var errInjected = errors.New("injected webhook failure")

func (s failingStore) Numbers() store.NumberStore { return failingNumbers{s.Store.Numbers()} }

func (s failingStore) Tx(ctx context.Context, fn func(store.Store) error) error {
	return s.Store.Tx(ctx, func(tx store.Store) error { return fn(failingStore{tx}) })
}

func (n failingNumbers) Create(ctx context.Context, p *store.PhoneNumber, w *store.Webhook) error {
	if err := n.NumberStore.Create(ctx, p, nil); err != nil {
		return err
	}
	if w != nil {
		return n.PutWebhook(ctx, w)
	}
	return nil
}

func (failingNumbers) PutWebhook(context.Context, *store.Webhook) error { return errInjected }

func TestFailedRequestLeavesNothing(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, func(st store.Store) store.Store { return failingStore{st} })
	e.fails("POST", "/v2/phone-numbers", map[string]any{"origin": "byo_trunk", "name": "x", "phone_number": "+14155550160",
		"webhook": map[string]any{"url": "https://a.example/h"}}, http.StatusInternalServerError, "")
	_, err := e.st.Numbers().ByNumber(ctx, "+14155550160")
	require.ErrorIs(t, err, store.ErrNotFound, "the number row was rolled back")
	evs, _, err := e.st.Audit().List(ctx, "team_a", store.AuditQuery{})
	require.NoError(t, err)
	require.Empty(t, evs)

	// A patch that fails on its new webhook keeps the old state too.
	ag := e.newAgent("x")
	id := obj(e.ok("POST", "/v2/phone-numbers", map[string]any{"origin": "byo_trunk", "name": "y", "phone_number": "+14155550161", "agent_id": ag}),
		"phone_number")["phone_number_id"].(string)
	e.fails("PATCH", "/v2/phone-numbers/"+id, map[string]any{"name": "z", "agent_id": nil, "webhook": map[string]any{"url": "https://a.example/h"}},
		http.StatusInternalServerError, "")
	n := e.ok("GET", "/v2/phone-numbers/"+id, nil)
	require.Equal(t, "y", n["name"])
	require.Equal(t, ag, n["agent_id"])
}

func TestPagination(t *testing.T) {
	e := newEnv(t, nil)
	ag := e.newAgent("Pager")
	var want []string
	for i := 0; i < 7; i++ {
		n := obj(e.ok("POST", "/v2/phone-numbers", map[string]any{"origin": "byo_trunk", "name": fmt.Sprint("n", i),
			"phone_number": fmt.Sprintf("+1415555017%d", i), "agent_id": ag}), "phone_number")
		want = append(want, n["phone_number_id"].(string))
	}
	var got []string
	tok, pages := "", 0
	for {
		path := "/v2/phone-numbers?page_size=3"
		if tok != "" {
			path += "&page_token=" + tok
		}
		m := e.ok("GET", path, nil)
		pages++
		for _, v := range m["phone_numbers"].([]any) {
			n := v.(map[string]any)
			require.Equal(t, "Pager", n["agent_name"])
			got = append(got, n["phone_number_id"].(string))
		}
		next, ok := m["next_page_token"].(string)
		if !ok {
			break
		}
		require.NotEmpty(t, next)
		tok = next
	}
	require.Equal(t, 3, pages)
	require.ElementsMatch(t, want, got)
	require.Len(t, got, 7, "no duplicates across pages")

	for _, q := range []string{"page_size=0", "page_size=101", "page_size=x"} {
		e.fails("GET", "/v2/phone-numbers?"+q, nil, http.StatusBadRequest, "page_size")
	}
	e.fails("GET", "/v2/phone-numbers?page_token=%21%21", nil, http.StatusBadRequest, "page_token")
	require.Len(t, e.ok("GET", "/v2/phone-numbers?page_size=100", nil)["phone_numbers"], 7)
}

func TestConcurrentAllocation(t *testing.T) {
	e := newEnv(t, nil)
	const n = 6 // the pool holds 3 DIDs
	type result struct {
		status int
		number string
		code   string
	}
	results := make(chan result, n)
	for i := 0; i < n; i++ {
		go func() {
			req, _ := http.NewRequest("POST", e.url+"/v2/phone-numbers", strings.NewReader(`{"origin":"svc_provisioned","name":"race"}`))
			req.Header.Set("Authorization", "Bearer team-a")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				results <- result{status: -1, code: err.Error()}
				return
			}
			defer resp.Body.Close()
			var body struct {
				PhoneNumber struct {
					E164 string `json:"phone_number"`
				} `json:"phone_number"`
				Error struct{ Code string } `json:"error"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&body)
			results <- result{resp.StatusCode, body.PhoneNumber.E164, body.Error.Code}
		}()
	}
	got := map[string]bool{}
	exhausted := 0
	for i := 0; i < n; i++ {
		r := <-results
		switch r.status {
		case http.StatusOK:
			require.False(t, got[r.number], "%s handed out twice", r.number)
			got[r.number] = true
		case http.StatusConflict:
			require.Equal(t, "pool_exhausted", r.code)
			exhausted++
		default:
			t.Fatalf("unexpected answer %+v", r)
		}
	}
	require.Len(t, got, 3)
	require.Equal(t, n-3, exhausted)
}
