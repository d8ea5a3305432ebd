package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
)

func init() {
	register("agents", "manage agents: create|list|get|update|delete", func(env *cliEnv, args []string) error {
		return subcommand(env, "agents", args, map[string]func(*cliEnv, []string) error{
			"create": agentsCreate, "list": agents.list, "get": agents.get, "update": agentsUpdate, "delete": agents.delete,
		})
	})
}

// agentRecord is the part of an agent the table shows.
type agentRecord struct {
	AgentID      string `json:"agent_id"`
	Name         string `json:"name"`
	Voice        string `json:"voice"`
	Model        string `json:"model"`
	Language     string `json:"language"`
	Greeting     string `json:"greeting"`
	Instructions string `json:"instructions"`
	UpdatedAt    string `json:"updated_at"`
}

// agents is the /v1/agents collection for the generic commands.
var agents = resource[agentRecord]{noun: "agents", what: "agent", path: "/v1/agents", field: "agents", table: (*cliEnv).agentTable}

func (e *cliEnv) agentTable(as []agentRecord) error {
	rows := make([][]string, 0, len(as))
	for _, a := range as {
		rows = append(rows, []string{a.AgentID, a.Name, a.Voice, a.Model, orDash(a.Language), orDash(clip(a.Greeting, 40)),
			orDash(clip(a.Instructions, 40)), a.UpdatedAt})
	}
	return e.table([]string{"ID", "NAME", "VOICE", "MODEL", "LANGUAGE", "GREETING", "INSTRUCTIONS", "UPDATED"}, rows)
}

// clip shortens s to one line of at most n characters.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// agentBody builds a create or update body from the flags that were
// given; --instructions-file reads the instructions from a file.
func agentBody(env *cliEnv, args []string, name string, wantID bool) (id string, body map[string]any, asJSON bool, err error) {
	fs, jsonFlag := newFlags(env, name)
	fields := map[string]*string{
		"name":         fs.String("name", "", "agent name (required on create)"),
		"instructions": fs.String("instructions", "", "system prompt"),
		"voice":        fs.String("voice", "", "voice: eve (default), ara, rex, sal, leo"),
		"model":        fs.String("model", "", "model: svc-voice-latest (default), svc-voice-think-fast-1.0, svc-voice-fast-1.0"),
		"language":     fs.String("language", "", "BCP-47 language (en, en-US, pt-BR) or auto; empty clears it on update"),
		"greeting":     fs.String("greeting", "", "spoken when a call is answered; empty clears it on update"),
	}
	instrFile := fs.String("instructions-file", "", "read the instructions from this file")
	if wantID {
		if id, err = idAndFlags(fs, args, "agent id"); err != nil {
			return "", nil, false, err
		}
	} else {
		if err = fs.Parse(args); err != nil {
			return "", nil, false, err
		}
		if fs.NArg() != 0 {
			return "", nil, false, fmt.Errorf("unexpected argument %q", fs.Arg(0))
		}
	}
	set := setFlags(fs)
	body = map[string]any{}
	for k, v := range fields {
		if set[k] {
			body[k] = *v
		}
	}
	if set["instructions-file"] {
		if set["instructions"] {
			return "", nil, false, errors.New("--instructions and --instructions-file are exclusive")
		}
		b, err := os.ReadFile(*instrFile)
		if err != nil {
			return "", nil, false, fmt.Errorf("read the instructions: %w", err)
		}
		body["instructions"] = string(b)
	}
	return id, body, *jsonFlag, nil
}

func agentsCreate(env *cliEnv, args []string) error {
	_, body, asJSON, err := agentBody(env, args, "agents create", false)
	if err != nil {
		return err
	}
	if _, ok := body["name"]; !ok {
		body["name"] = "" // let the server name the missing field
	}
	c, err := env.client()
	if err != nil {
		return err
	}
	var raw json.RawMessage
	if err := c.do("POST", "/v1/agents", nil, body, &raw); err != nil {
		return err
	}
	return agents.print(env, raw, asJSON)
}

func agentsUpdate(env *cliEnv, args []string) error {
	id, body, asJSON, err := agentBody(env, args, "agents update", true)
	if err != nil {
		return err
	}
	if len(body) == 0 {
		return errors.New("nothing to change: give at least one flag")
	}
	c, err := env.client()
	if err != nil {
		return err
	}
	var raw json.RawMessage
	if err := c.do("PATCH", "/v1/agents/"+url.PathEscape(id), nil, body, &raw); err != nil {
		return err
	}
	return agents.print(env, raw, asJSON)
}
