package httpx

import (
	"context"
	"net/url"
	"strconv"

	"switchboard/store"
)

// PageOf reads a listing's page from the query: sizeParam (1 to
// store.MaxPageSize, default store.DefaultPageSize; 400 naming it
// otherwise) and tokenParam. The spellings differ between the spec's
// documents (page_size, pageSize), so the caller names them.
func PageOf(q url.Values, sizeParam, tokenParam string) (store.Page, error) {
	p := store.Page{Size: store.DefaultPageSize, Token: q.Get(tokenParam)}
	if v := q.Get(sizeParam); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > store.MaxPageSize {
			return p, BadRequest(sizeParam, "%s must be an integer from 1 to %d", sizeParam, store.MaxPageSize)
		}
		p.Size = n
	}
	return p, nil
}

// TeamOf is the team of the request's caller; "default" on a request
// without one.
func TeamOf(ctx context.Context) string {
	if p := PrincipalFrom(ctx); p != nil && p.TeamID != "" {
		return p.TeamID
	}
	return "default"
}
