// Package httpx is the HTTP contract shared by every module of the API: the
// one error body, strict JSON decoding, route descriptions with the ACL
// endpoint they belong to, the authenticated principal of a request and the
// audit trail of changes.
package httpx
