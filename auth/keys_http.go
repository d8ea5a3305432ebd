package auth

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"switchboard/api/httpx"
	"switchboard/store"
)

// keyJSON is the API key record of the management interface (camelCase).
type keyJSON struct {
	APIKeyID       string   `json:"apiKeyId"`
	APIKey         string   `json:"apiKey,omitempty"`
	RedactedAPIKey string   `json:"redactedApiKey"`
	UserID         string   `json:"userId"`
	TeamID         string   `json:"teamId"`
	Name           string   `json:"name"`
	CreateTime     string   `json:"createTime"`
	ModifyTime     string   `json:"modifyTime"`
	Disabled       bool     `json:"disabled"`
	ExpireTime     string   `json:"expireTime,omitempty"`
	QPS            int      `json:"qps,omitempty"`
	QPM            int      `json:"qpm,omitempty"`
	TPM            string   `json:"tpm,omitempty"`
	ACLStrings     []string `json:"aclStrings"`
	// ManagementKey is the appliance's extension: the key may also call
	// the /auth and /audit management paths.
	ManagementKey       bool   `json:"managementKey"`
	OldSecretExpireTime string `json:"oldSecretExpireTime,omitempty"`
}

func ts(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func toKeyJSON(k *store.APIKey, secret string, now time.Time) keyJSON {
	j := keyJSON{
		APIKeyID: k.ID, APIKey: secret, RedactedAPIKey: k.Redacted, UserID: k.UserID, TeamID: k.TeamID, Name: k.Name,
		CreateTime: ts(k.CreateTime), ModifyTime: ts(k.ModifyTime), Disabled: k.Disabled, ExpireTime: ts(k.ExpireTime),
		QPS: k.QPS, QPM: k.QPM, TPM: k.TPM, ACLStrings: k.ACLs, ManagementKey: k.Management,
	}
	if j.ACLStrings == nil {
		j.ACLStrings = []string{}
	}
	if k.OldHash != "" && now.Before(k.OldExpire) {
		j.OldSecretExpireTime = ts(k.OldExpire)
	}
	return j
}

// Routes lists the key management, self-description and audit routes.
func (s *KeyService) Routes() []httpx.Route {
	m := func(method, pattern, endpoint string, h func(http.ResponseWriter, *http.Request) error) httpx.Route {
		return httpx.Route{Method: method, Pattern: pattern, Endpoint: endpoint, Access: httpx.Management, Handler: h}
	}
	rts := []httpx.Route{
		m(http.MethodPost, "/auth/teams/{teamId}/api-keys", EndpointAPIKeys, s.create),
		m(http.MethodGet, "/auth/teams/{teamId}/api-keys", EndpointAPIKeys, s.list),
		m(http.MethodPut, "/auth/api-keys/{apiKeyId}", EndpointAPIKeys, s.update),
		m(http.MethodDelete, "/auth/api-keys/{apiKeyId}", EndpointAPIKeys, s.delete),
		m(http.MethodPost, "/auth/api-keys/{apiKeyId}/rotate", EndpointAPIKeys, s.rotate),
		m(http.MethodGet, "/auth/api-keys/{apiKeyId}/propagation", EndpointAPIKeys, s.propagation),
		m(http.MethodGet, "/auth/teams/{teamId}/models", EndpointAPIKeys, s.models),
		m(http.MethodGet, "/auth/teams/{teamId}/endpoints", EndpointAPIKeys, s.endpoints),
		m(http.MethodGet, "/audit/teams/{teamId}/events", EndpointAudit, s.auditEvents),
		// Any key with a non-empty ACL may describe itself.
		{Method: http.MethodGet, Pattern: "/v1/api-key", Access: httpx.APIKey, Handler: s.self},
	}
	if s.fleet != nil {
		// For the other nodes of the fleet only (signed).
		rts = append(rts, s.keyStateRoute())
	}
	return rts
}

// team checks the path's team against the caller's.
func team(r *http.Request) (string, error) {
	t := r.PathValue("teamId")
	if p := httpx.PrincipalFrom(r.Context()); p == nil || p.TeamID != t {
		return "", httpx.NotFound("team %q not found", t)
	}
	return t, nil
}

// ownKey loads a key of the caller's team (404 otherwise).
func (s *KeyService) ownKey(r *http.Request) (*store.APIKey, error) {
	id := r.PathValue("apiKeyId")
	k, err := s.st.Keys().Get(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && k.TeamID != httpx.PrincipalFrom(r.Context()).TeamID) {
		return nil, httpx.NotFound("API key %q not found", id)
	}
	return k, err
}

func parseTime(param, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, httpx.BadRequest(param, "%s must be an RFC 3339 timestamp", param)
	}
	return t.UTC(), nil
}

func validateLimits(qps, qpm int, tpm string) error {
	if qps < 0 {
		return httpx.BadRequest("qps", "qps must not be negative")
	}
	if qpm < 0 {
		return httpx.BadRequest("qpm", "qpm must not be negative")
	}
	if tpm != "" {
		if n, err := strconv.ParseInt(tpm, 10, 64); err != nil || n < 0 {
			return httpx.BadRequest("tpm", "tpm must be a non-negative integer string")
		}
	}
	return nil
}

func validateACLs(param string, acls []string) error {
	for i, a := range acls {
		if _, err := ParseACL(a); err != nil {
			return httpx.BadRequest(param+"["+strconv.Itoa(i)+"]", "%v", err)
		}
	}
	return nil
}

type createKeyRequest struct {
	Name          string   `json:"name"`
	ACLs          []string `json:"acls"`
	QPS           int      `json:"qps"`
	QPM           int      `json:"qpm"`
	TPM           string   `json:"tpm"`
	ExpireTime    string   `json:"expireTime"`
	ManagementKey bool     `json:"managementKey"`
}

func (s *KeyService) create(w http.ResponseWriter, r *http.Request) error {
	teamID, err := team(r)
	if err != nil {
		return err
	}
	var req createKeyRequest
	if err := httpx.Decode(r, 0, &req); err != nil {
		return err
	}
	if strings.TrimSpace(req.Name) == "" {
		return httpx.BadRequest("name", "name is required")
	}
	if err := validateACLs("acls", req.ACLs); err != nil {
		return err
	}
	if err := validateLimits(req.QPS, req.QPM, req.TPM); err != nil {
		return err
	}
	exp, err := parseTime("expireTime", req.ExpireTime)
	if err != nil {
		return err
	}
	now := s.now().UTC()
	if !exp.IsZero() && !exp.After(now) {
		return httpx.BadRequest("expireTime", "expireTime must be in the future")
	}
	p := httpx.PrincipalFrom(r.Context())
	secret := NewKeySecret()
	k := &store.APIKey{
		ID: httpx.NewID("key"), TeamID: teamID, UserID: p.UserID, Name: req.Name, Hash: HashKey(secret), Redacted: Redact(secret),
		ACLs: req.ACLs, QPS: req.QPS, QPM: req.QPM, TPM: req.TPM, ExpireTime: exp, Management: req.ManagementKey,
		ModifiedBy: p.UserID, CreateTime: now, ModifyTime: now,
	}
	err = s.st.Tx(r.Context(), func(tx store.Store) error {
		if err := tx.Keys().Create(r.Context(), k); err != nil {
			return err
		}
		return httpx.Audit(r.Context(), tx, "api_key.create", "api_key/"+k.ID, "created API key "+k.Name+" ("+k.Redacted+")")
	})
	s.cache.clear() // after the commit: no lookup can refill it with the old key
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, toKeyJSON(k, secret, now))
	return nil
}

func (s *KeyService) list(w http.ResponseWriter, r *http.Request) error {
	teamID, err := team(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	kq := store.KeyQuery{Now: s.now()}
	if kq.Page, err = httpx.PageOf(q, "pageSize", "paginationToken"); err != nil {
		return err
	}
	if v := q.Get("activeOnly"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return httpx.BadRequest("activeOnly", "activeOnly must be true or false")
		}
		kq.ActiveOnly = b
	}
	for _, f := range q["aclFilters"] {
		for _, a := range strings.Split(f, ",") {
			if a = strings.TrimSpace(a); a != "" {
				kq.ACLFilters = append(kq.ACLFilters, a)
			}
		}
	}
	if err := validateACLs("aclFilters", kq.ACLFilters); err != nil {
		return err
	}
	keys, next, err := s.st.Keys().List(r.Context(), teamID, kq)
	if errors.Is(err, store.ErrBadPageToken) {
		return httpx.BadRequest("paginationToken", "invalid paginationToken")
	}
	if err != nil {
		return err
	}
	out := struct {
		APIKeys         []keyJSON `json:"apiKeys"`
		PaginationToken string    `json:"paginationToken,omitempty"`
	}{APIKeys: []keyJSON{}, PaginationToken: next}
	now := s.now()
	for _, k := range keys {
		out.APIKeys = append(out.APIKeys, toKeyJSON(k, "", now))
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

type updateKeyRequest struct {
	APIKey *struct {
		Name          *string  `json:"name"`
		ACLStrings    []string `json:"aclStrings"`
		ACLs          []string `json:"acls"`
		QPS           *int     `json:"qps"`
		QPM           *int     `json:"qpm"`
		TPM           *string  `json:"tpm"`
		Disabled      *bool    `json:"disabled"`
		ExpireTime    *string  `json:"expireTime"`
		ManagementKey *bool    `json:"managementKey"`
	} `json:"apiKey"`
	FieldMask string `json:"fieldMask"`
}

func (s *KeyService) update(w http.ResponseWriter, r *http.Request) error {
	k, err := s.ownKey(r)
	if err != nil {
		return err
	}
	var req updateKeyRequest
	if err := httpx.Decode(r, 0, &req); err != nil {
		return err
	}
	if req.APIKey == nil {
		return httpx.BadRequest("apiKey", "apiKey is required")
	}
	if strings.TrimSpace(req.FieldMask) == "" {
		return httpx.BadRequest("fieldMask", "fieldMask must name the fields to modify")
	}
	a := req.APIKey
	for _, f := range strings.Split(req.FieldMask, ",") {
		switch f = strings.TrimPrefix(strings.TrimSpace(f), "apiKey."); f {
		case "name":
			if a.Name == nil || strings.TrimSpace(*a.Name) == "" {
				return httpx.BadRequest("apiKey.name", "name must not be empty")
			}
			k.Name = *a.Name
		case "aclStrings", "acls":
			acls := a.ACLStrings
			if acls == nil {
				acls = a.ACLs
			}
			if err := validateACLs("apiKey.aclStrings", acls); err != nil {
				return err
			}
			k.ACLs = acls
		case "qps":
			k.QPS = deref(a.QPS)
		case "qpm":
			k.QPM = deref(a.QPM)
		case "tpm":
			k.TPM = deref(a.TPM)
		case "disabled":
			k.Disabled = deref(a.Disabled)
		case "expireTime":
			exp, err := parseTime("apiKey.expireTime", deref(a.ExpireTime))
			if err != nil {
				return err
			}
			k.ExpireTime = exp
		case "managementKey":
			if k.ID == OwnerKeyID && !deref(a.ManagementKey) {
				return httpx.BadRequest("apiKey.managementKey", "the owner key stays a management key")
			}
			k.Management = deref(a.ManagementKey)
		default:
			return httpx.BadRequest("fieldMask", "unknown or read-only field %q in fieldMask", f)
		}
	}
	if err := validateLimits(k.QPS, k.QPM, k.TPM); err != nil {
		return err
	}
	p := httpx.PrincipalFrom(r.Context())
	now := s.now().UTC()
	k.ModifyTime, k.ModifiedBy = now, p.UserID
	err = s.st.Tx(r.Context(), func(tx store.Store) error {
		if err := tx.Keys().Update(r.Context(), k); err != nil {
			return err
		}
		return httpx.Audit(r.Context(), tx, "api_key.update", "api_key/"+k.ID, "updated API key "+k.Name+" ("+req.FieldMask+")")
	})
	s.cache.clear() // after the commit: no lookup can refill it with the old key
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, toKeyJSON(k, "", now))
	return nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

type rotateRequest struct {
	ExpireTime          string `json:"expireTime"`
	OldSecretExpireTime string `json:"oldSecretExpireTime"`
}

func (s *KeyService) rotate(w http.ResponseWriter, r *http.Request) error {
	k, err := s.ownKey(r)
	if err != nil {
		return err
	}
	var req rotateRequest
	if r.ContentLength != 0 {
		if err := httpx.Decode(r, 0, &req); err != nil {
			return err
		}
	}
	now := s.now().UTC()
	exp, err := parseTime("expireTime", req.ExpireTime)
	if err != nil {
		return err
	}
	if !exp.IsZero() && !exp.After(now) {
		return httpx.BadRequest("expireTime", "expireTime must be in the future")
	}
	oldExp, err := parseTime("oldSecretExpireTime", req.OldSecretExpireTime)
	if err != nil {
		return err
	}
	if oldExp, err = OldSecretExpiry(now, oldExp, s.grace); err != nil {
		return httpx.BadRequest("oldSecretExpireTime", "%v", err)
	}
	secret := NewKeySecret()
	p := httpx.PrincipalFrom(r.Context())
	k.OldHash, k.OldExpire = k.Hash, oldExp
	k.Hash, k.Redacted = HashKey(secret), Redact(secret)
	if !exp.IsZero() {
		k.ExpireTime = exp
	}
	k.ModifyTime, k.ModifiedBy = now, p.UserID
	err = s.st.Tx(r.Context(), func(tx store.Store) error {
		if err := tx.Keys().Update(r.Context(), k); err != nil {
			return err
		}
		return httpx.Audit(r.Context(), tx, "api_key.rotate", "api_key/"+k.ID,
			"rotated API key "+k.Name+"; old secret valid until "+ts(oldExp))
	})
	s.cache.clear() // after the commit: no lookup can refill it with the old key
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, toKeyJSON(k, secret, now))
	return nil
}

func (s *KeyService) delete(w http.ResponseWriter, r *http.Request) error {
	k, err := s.ownKey(r)
	if err != nil {
		return err
	}
	if k.ID == OwnerKeyID {
		return httpx.Conflict("apiKeyId", "the owner key cannot be deleted; rotate it instead")
	}
	err = s.st.Tx(r.Context(), func(tx store.Store) error {
		if err := tx.Keys().Delete(r.Context(), k.ID); err != nil {
			return err
		}
		return httpx.Audit(r.Context(), tx, "api_key.delete", "api_key/"+k.ID, "deleted API key "+k.Name+" ("+k.Redacted+")")
	})
	s.cache.clear() // after the commit: no lookup can refill it with the old key
	if err != nil {
		return err
	}
	s.limiter.Forget(k.ID)
	httpx.WriteJSON(w, http.StatusOK, struct{}{})
	return nil
}

// propagation reports, per node, whether the node authorizes the key as it
// is stored: a node of a fleet sees a change made on another node within
// keyCacheTTL; one that is down or does not answer is false.
func (s *KeyService) propagation(w http.ResponseWriter, r *http.Request) error {
	k, err := s.ownKey(r)
	if err != nil {
		return err
	}
	nodes, err := s.propagationOf(r.Context(), k)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"icPropagation": nodes})
	return nil
}

// self is GET /v1/api-key: the calling key describes itself.
func (s *KeyService) self(w http.ResponseWriter, r *http.Request) error {
	p := httpx.PrincipalFrom(r.Context())
	k, err := s.st.Keys().Get(r.Context(), p.KeyID)
	if err != nil {
		return err
	}
	acls := k.ACLs
	if acls == nil {
		acls = []string{}
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{
		"acls": acls, "api_key_blocked": false, "api_key_disabled": k.Disabled, "api_key_id": k.ID,
		"create_time": ts(k.CreateTime), "modified_by": k.ModifiedBy, "modify_time": ts(k.ModifyTime), "name": k.Name,
		"redacted_api_key": k.Redacted, "team_blocked": false, "team_id": k.TeamID, "user_id": k.UserID,
	})
	return nil
}
