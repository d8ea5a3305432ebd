package main

import (
	"encoding/json"
	"net/url"
	"strconv"
)

func init() {
	register("audit", "read the audit log", auditCmd)
}

func auditCmd(env *cliEnv, args []string) error {
	fs, asJSON := newFlags(env, "audit")
	team := fs.String("team", "", "team id")
	query := fs.String("query", "", "full-text filter over descriptions")
	user := fs.String("user", "", "only events by this user id")
	from := fs.String("from", "", "events at or after: RFC 3339 time or duration ago (e.g. 1h)")
	to := fs.String("to", "", "events before: RFC 3339 time")
	desc := fs.Bool("desc", true, "newest first")
	limit := fs.Int("limit", 50, "how many events (1 to 100)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	q := url.Values{"pageSize": {strconv.Itoa(*limit)}}
	if *desc {
		q.Set("orderBy", "TIME_DESCENDING")
	}
	if *query != "" {
		q.Set("eventFilter.query", *query)
	}
	if *user != "" {
		q.Set("eventFilter.userId", *user)
	}
	if *from != "" {
		v, err := parseAgo(*from)
		if err != nil {
			return err
		}
		q.Set("eventTimeFrom", v)
	}
	if *to != "" {
		q.Set("eventTimeTo", *to)
	}
	c, err := env.client()
	if err != nil {
		return err
	}
	var raw json.RawMessage
	if err := c.do("GET", "/audit/teams/"+url.PathEscape(teamOf(env, *team))+"/events", q, nil, &raw); err != nil {
		return err
	}
	if *asJSON {
		return env.printJSON(raw)
	}
	var page struct {
		Events []struct {
			EventTime   string `json:"eventTime"`
			Action      string `json:"action"`
			Resource    string `json:"resource"`
			Description string `json:"description"`
			User        struct {
				UserID string `json:"userId"`
			} `json:"user"`
		} `json:"events"`
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		return err
	}
	rows := make([][]string, 0, len(page.Events))
	for _, e := range page.Events {
		rows = append(rows, []string{e.EventTime, e.User.UserID, e.Action, e.Resource, e.Description})
	}
	return env.table([]string{"TIME", "USER", "ACTION", "RESOURCE", "DESCRIPTION"}, rows)
}
