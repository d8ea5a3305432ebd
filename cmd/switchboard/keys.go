package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

func init() {
	register("keys", "manage API keys: create|list|rotate|disable|enable|delete", func(env *cliEnv, args []string) error {
		return subcommand(env, "keys", args, map[string]func(*cliEnv, []string) error{
			"create": keysCreate, "list": keysList, "rotate": keysRotate,
			"disable": func(e *cliEnv, a []string) error { return keysSetDisabled(e, a, true) },
			"enable":  func(e *cliEnv, a []string) error { return keysSetDisabled(e, a, false) },
			"delete":  keysDelete,
		})
	})
}

type keyRecord struct {
	APIKeyID            string   `json:"apiKeyId"`
	APIKey              string   `json:"apiKey"`
	RedactedAPIKey      string   `json:"redactedApiKey"`
	Name                string   `json:"name"`
	Disabled            bool     `json:"disabled"`
	ExpireTime          string   `json:"expireTime"`
	QPS                 int      `json:"qps"`
	QPM                 int      `json:"qpm"`
	ACLStrings          []string `json:"aclStrings"`
	ManagementKey       bool     `json:"managementKey"`
	OldSecretExpireTime string   `json:"oldSecretExpireTime"`
}

func teamOf(env *cliEnv, flagVal string) string {
	if flagVal != "" {
		return flagVal
	}
	if t := env.getenv("SWITCHBOARD_TEAM_ID"); t != "" {
		return t
	}
	return "default"
}

func (e *cliEnv) keyTable(keys []keyRecord) error {
	rows := make([][]string, 0, len(keys))
	for _, k := range keys {
		state := "active"
		if k.Disabled {
			state = "disabled"
		} else if k.ExpireTime != "" {
			if t, err := time.Parse(time.RFC3339Nano, k.ExpireTime); err == nil && !time.Now().Before(t) {
				state = "expired"
			}
		}
		kind := "api"
		if k.ManagementKey {
			kind = "api+mgmt"
		}
		rows = append(rows, []string{k.APIKeyID, k.Name, k.RedactedAPIKey, kind, state, strings.Join(k.ACLStrings, " "), orDash(k.ExpireTime)})
	}
	return e.table([]string{"ID", "NAME", "KEY", "KIND", "STATE", "ACLS", "EXPIRES"}, rows)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// parseWhen accepts an RFC 3339 time or a duration from now ("24h").
func parseWhen(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return time.Now().Add(d).UTC().Format(time.RFC3339), nil
	}
	if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
		return "", fmt.Errorf("%q is neither a duration (24h) nor an RFC 3339 time", s)
	}
	return s, nil
}

func keysCreate(env *cliEnv, args []string) error {
	fs, asJSON := newFlags(env, "keys create")
	name := fs.String("name", "", "key name (required)")
	team := fs.String("team", "", "team id (default: SWITCHBOARD_TEAM_ID or default)")
	var acls stringList
	fs.Var(&acls, "acl", "ACL string, repeatable (api-key:endpoint:<name>, api-key:model:<name>, * wildcards)")
	qps := fs.Int("qps", 0, "requests per second (0: unlimited)")
	qpm := fs.Int("qpm", 0, "requests per minute (0: unlimited)")
	expire := fs.String("expire", "", "expiry: RFC 3339 time or duration from now (e.g. 720h)")
	mgmt := fs.Bool("management", false, "also a management key (may manage keys and read the audit log)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	exp, err := parseWhen(*expire)
	if err != nil {
		return err
	}
	c, err := env.client()
	if err != nil {
		return err
	}
	body := map[string]any{"name": *name, "acls": []string(acls), "qps": *qps, "qpm": *qpm, "managementKey": *mgmt}
	if exp != "" {
		body["expireTime"] = exp
	}
	var raw json.RawMessage
	if err := c.do("POST", "/auth/teams/"+url.PathEscape(teamOf(env, *team))+"/api-keys", nil, body, &raw); err != nil {
		return err
	}
	if *asJSON {
		return env.printJSON(raw)
	}
	var k keyRecord
	if err := json.Unmarshal(raw, &k); err != nil {
		return err
	}
	if err := env.keyTable([]keyRecord{k}); err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "\nAPI key (shown once, store it now):\n%s\n", k.APIKey)
	return nil
}

func keysList(env *cliEnv, args []string) error {
	fs, asJSON := newFlags(env, "keys list")
	team := fs.String("team", "", "team id")
	active := fs.Bool("active-only", false, "hide disabled and expired keys")
	var filters stringList
	fs.Var(&filters, "acl-filter", "keep keys holding this ACL string, repeatable")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c, err := env.client()
	if err != nil {
		return err
	}
	q := url.Values{"pageSize": {"100"}} // the server's largest page
	if *active {
		q.Set("activeOnly", "true")
	}
	for _, f := range filters {
		q.Add("aclFilters", f)
	}
	raws, err := c.listAll("/auth/teams/"+url.PathEscape(teamOf(env, *team))+"/api-keys", q, "apiKeys", "paginationToken", "paginationToken")
	if err != nil {
		return err
	}
	all := make([]keyRecord, len(raws))
	for i, r := range raws {
		if err := json.Unmarshal(r, &all[i]); err != nil {
			return err
		}
	}
	if *asJSON {
		return env.printJSON(map[string]any{"apiKeys": nonNil(raws)})
	}
	return env.keyTable(all)
}

func nonNil(r []json.RawMessage) []json.RawMessage {
	if r == nil {
		return []json.RawMessage{}
	}
	return r
}

func keysRotate(env *cliEnv, args []string) error {
	fs, asJSON := newFlags(env, "keys rotate")
	grace := fs.String("old-expire", "", "how long the old secret stays valid: duration (e.g. 1h) or RFC 3339 time; default 24h, at most 7 days")
	expire := fs.String("expire", "", "expiry of the new secret (default: inherit)")
	id, err := idAndFlags(fs, args, "key id")
	if err != nil {
		return err
	}
	body := map[string]any{}
	if v, err := parseWhen(*grace); err != nil {
		return err
	} else if v != "" {
		body["oldSecretExpireTime"] = v
	}
	if v, err := parseWhen(*expire); err != nil {
		return err
	} else if v != "" {
		body["expireTime"] = v
	}
	c, err := env.client()
	if err != nil {
		return err
	}
	var raw json.RawMessage
	if err := c.do("POST", "/auth/api-keys/"+url.PathEscape(id)+"/rotate", nil, body, &raw); err != nil {
		return err
	}
	if *asJSON {
		return env.printJSON(raw)
	}
	var k keyRecord
	if err := json.Unmarshal(raw, &k); err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "rotated %s; the old secret stays valid until %s\nnew API key (shown once, store it now):\n%s\n", k.APIKeyID, k.OldSecretExpireTime, k.APIKey)
	return nil
}

func keysSetDisabled(env *cliEnv, args []string, disabled bool) error {
	fs, asJSON := newFlags(env, "keys disable")
	id, err := idAndFlags(fs, args, "key id")
	if err != nil {
		return err
	}
	c, err := env.client()
	if err != nil {
		return err
	}
	var raw json.RawMessage
	body := map[string]any{"apiKey": map[string]any{"disabled": disabled}, "fieldMask": "disabled"}
	if err := c.do("PUT", "/auth/api-keys/"+url.PathEscape(id), nil, body, &raw); err != nil {
		return err
	}
	if *asJSON {
		return env.printJSON(raw)
	}
	fmt.Fprintf(env.stdout, "%s disabled=%s\n", id, strconv.FormatBool(disabled))
	return nil
}

func keysDelete(env *cliEnv, args []string) error {
	fs, _ := newFlags(env, "keys delete")
	id, err := idAndFlags(fs, args, "key id")
	if err != nil {
		return err
	}
	c, err := env.client()
	if err != nil {
		return err
	}
	if err := c.do("DELETE", "/auth/api-keys/"+url.PathEscape(id), nil, nil, nil); err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "deleted %s\n", id)
	return nil
}

// parseAgo accepts an RFC 3339 time or a duration before now ("1h").
func parseAgo(s string) (string, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return time.Now().Add(-d).UTC().Format(time.RFC3339), nil
	}
	return parseWhen(s)
}
