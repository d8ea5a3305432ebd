package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"
)

func init() {
	register("numbers", "manage phone numbers: create|list|get|update|delete", func(env *cliEnv, args []string) error {
		return subcommand(env, "numbers", args, map[string]func(*cliEnv, []string) error{
			"create": numbersCreate, "list": phoneNumbers.list, "get": phoneNumbers.get, "update": numbersUpdate, "delete": phoneNumbers.delete,
		})
	})
}

// numberRecord is the part of a phone-number record the table shows.
type numberRecord struct {
	PhoneNumberID string `json:"phone_number_id"`
	PhoneNumber   string `json:"phone_number"`
	Name          string `json:"name"`
	Origin        string `json:"origin"`
	AgentID       string `json:"agent_id"`
	AgentName     string `json:"agent_name"`
	WebhookID     string `json:"webhook_id"`
	SIPHost       string `json:"sip_host"`
	SIPAuth       struct {
		AuthUsername     string   `json:"auth_username"`
		AllowedAddresses []string `json:"allowed_addresses"`
	} `json:"sip_auth"`
	Webhook *struct {
		URL string `json:"url"`
	} `json:"webhook"`
}

// numberResponse is the answer of create and update.
type numberResponse struct {
	PhoneNumber numberRecord `json:"phone_number"`
	Webhook     *struct {
		WebhookID             string `json:"webhook_id"`
		DispatchSigningSecret string `json:"dispatch_signing_secret"`
	} `json:"webhook"`
}

// phoneNumbers is the /v2/phone-numbers collection for the generic commands.
var phoneNumbers = resource[numberRecord]{noun: "numbers", what: "phone number", path: "/v2/phone-numbers", field: "phone_numbers", table: (*cliEnv).numberTable}

func (e *cliEnv) numberTable(ns []numberRecord) error {
	rows := make([][]string, 0, len(ns))
	for _, n := range ns {
		route := "-"
		switch {
		case n.AgentID != "":
			route = "agent " + n.AgentID
			if n.AgentName != "" {
				route += " (" + n.AgentName + ")"
			}
		case n.Webhook != nil:
			route = "webhook " + n.Webhook.URL
		case n.WebhookID != "":
			route = "webhook " + n.WebhookID
		}
		auth := "-"
		if n.SIPAuth.AuthUsername != "" {
			auth = "digest " + n.SIPAuth.AuthUsername
		}
		if len(n.SIPAuth.AllowedAddresses) > 0 {
			if auth == "-" {
				auth = ""
			} else {
				auth += ", "
			}
			auth += strings.Join(n.SIPAuth.AllowedAddresses, " ")
		}
		rows = append(rows, []string{n.PhoneNumberID, n.PhoneNumber, n.Name, n.Origin, route, auth, orDash(n.SIPHost)})
	}
	return e.table([]string{"ID", "NUMBER", "NAME", "ORIGIN", "ROUTE", "SIP AUTH", "SIP HOST"}, rows)
}

// printNumberResponse prints a create or update answer; a webhook secret
// created by it is shown this once.
func (e *cliEnv) printNumberResponse(raw json.RawMessage, asJSON bool) error {
	if asJSON {
		return e.printJSON(raw)
	}
	var r numberResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return err
	}
	if err := e.numberTable([]numberRecord{r.PhoneNumber}); err != nil {
		return err
	}
	if r.Webhook != nil && r.Webhook.DispatchSigningSecret != "" {
		fmt.Fprintf(e.stdout, "\nWebhook %s signing secret (shown once, store it now):\n%s\n", r.Webhook.WebhookID, r.Webhook.DispatchSigningSecret)
	}
	return nil
}

// numberFlags are the flags create and update share.
type numberFlags struct {
	name, number, agent                                *string
	webhookURL, webhookName, webhookAuthURL, hookToken *string
	username, password, passwordFile                   *string
	allow                                              stringList
}

func addNumberFlags(fs *flag.FlagSet) *numberFlags {
	f := &numberFlags{
		name:           fs.String("name", "", "name of the number"),
		number:         fs.String("number", "", "E.164 number (byo_trunk only), e.g. +14155550100"),
		agent:          fs.String("agent", "", "agent id the number routes to (exclusive with --webhook-url)"),
		webhookURL:     fs.String("webhook-url", "", "http(s) URL that receives signed realtime.call.incoming events"),
		webhookName:    fs.String("webhook-name", "", "webhook name (default: the number's name)"),
		webhookAuthURL: fs.String("webhook-auth-url", "", "OAuth token-exchange URL (needs --webhook-auth-token)"),
		hookToken:      fs.String("webhook-auth-token", "", "bearer token or OAuth client credential for the webhook"),
		username:       fs.String("auth-username", "", "SIP digest username (with --auth-password)"),
		password:       fs.String("auth-password", "", "SIP digest password, 8 to 128 characters (see also --auth-password-file)"),
		passwordFile:   fs.String("auth-password-file", "", "read the SIP digest password from this file (keeps it out of ps)"),
	}
	fs.Var(&f.allow, "allow", "source CIDR or IP allowed to send INVITEs, repeatable")
	return f
}

// setFlags reports which flags were given on the command line.
func setFlags(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// sipAuth builds the sip_auth object from the flags that were given, or
// nil when none was.
func (f *numberFlags) sipAuth(set map[string]bool) (map[string]any, error) {
	sa := map[string]any{}
	password := *f.password
	if set["auth-password-file"] {
		if set["auth-password"] {
			return nil, errors.New("--auth-password and --auth-password-file are exclusive")
		}
		b, err := os.ReadFile(*f.passwordFile)
		if err != nil {
			return nil, fmt.Errorf("read the password: %w", err)
		}
		password = strings.TrimRight(string(b), "\r\n")
		set["auth-password"] = true
	}
	if set["auth-username"] || set["auth-password"] {
		sa["auth_username"], sa["auth_password"] = *f.username, password
	}
	if set["allow"] {
		sa["allowed_addresses"] = []string(f.allow)
	}
	if len(sa) == 0 {
		return nil, nil
	}
	return sa, nil
}

// webhook builds the webhook object from the flags that were given, or nil.
func (f *numberFlags) webhook(set map[string]bool) map[string]any {
	wh := map[string]any{}
	for _, p := range []struct {
		flag, field string
		v           *string
	}{{"webhook-url", "url", f.webhookURL}, {"webhook-name", "name", f.webhookName},
		{"webhook-auth-url", "auth_url", f.webhookAuthURL}, {"webhook-auth-token", "auth_token", f.hookToken}} {
		if set[p.flag] {
			wh[p.field] = *p.v
		}
	}
	if len(wh) == 0 {
		return nil
	}
	return wh
}

func numbersCreate(env *cliEnv, args []string) error {
	fs, asJSON := newFlags(env, "numbers create")
	origin := fs.String("origin", "", "svc_provisioned or byo_trunk (default: byo_trunk with --number, else svc_provisioned)")
	areaCode := fs.String("area-code", "", "3-digit US area code to pick a pool number from (svc_provisioned)")
	f := addNumberFlags(fs)
	of := addOutboundFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := setFlags(fs)
	if *origin == "" {
		*origin = "svc_provisioned"
		if *f.number != "" {
			*origin = "byo_trunk"
		}
	}
	body := map[string]any{"origin": *origin, "name": *f.name}
	if *f.number != "" {
		body["phone_number"] = *f.number
	}
	if *areaCode != "" {
		body["area_code"] = *areaCode
	}
	if *f.agent != "" {
		body["agent_id"] = *f.agent
	}
	sa, err := f.sipAuth(set)
	if err != nil {
		return err
	}
	if sa != nil {
		body["sip_auth"] = sa
	}
	if wh := f.webhook(set); wh != nil {
		body["webhook"] = wh
	}
	ob, err := of.body(set)
	if err != nil {
		return err
	}
	if ob != nil {
		body["outbound_trunk"] = ob
	}
	c, err := env.client()
	if err != nil {
		return err
	}
	var raw json.RawMessage
	if err := c.do("POST", "/v2/phone-numbers", nil, body, &raw); err != nil {
		return err
	}
	return env.printNumberResponse(raw, *asJSON)
}

func numbersUpdate(env *cliEnv, args []string) error {
	fs, asJSON := newFlags(env, "numbers update")
	f := addNumberFlags(fs)
	noAgent := fs.Bool("no-agent", false, "remove the agent route")
	noWebhook := fs.Bool("no-webhook", false, "remove the webhook (and its secret)")
	noDigest := fs.Bool("no-digest", false, "remove the SIP digest credentials")
	noAllow := fs.Bool("no-allow", false, "remove every allowed source address")
	of := addOutboundFlags(fs)
	noOutbound := fs.Bool("no-outbound", false, "remove the outbound trunk")
	id, err := idAndFlags(fs, args, "phone number id")
	if err != nil {
		return err
	}
	set := setFlags(fs)
	body := map[string]any{}
	if set["name"] {
		body["name"] = *f.name
	}
	if set["number"] {
		body["phone_number"] = *f.number
	}
	switch {
	case *noAgent && set["agent"]:
		return errors.New("--agent and --no-agent are exclusive")
	case *noAgent:
		body["agent_id"] = nil
	case set["agent"]:
		body["agent_id"] = *f.agent
	}
	wh := f.webhook(set)
	switch {
	case *noWebhook && wh != nil:
		return errors.New("--no-webhook and --webhook-* are exclusive")
	case *noWebhook:
		body["webhook"] = nil
	case wh != nil:
		body["webhook"] = wh
	}
	sa, err := f.sipAuth(set)
	if err != nil {
		return err
	}
	if *noDigest || *noAllow {
		if sa == nil {
			sa = map[string]any{}
		}
		if *noDigest {
			if _, ok := sa["auth_username"]; ok {
				return errors.New("--no-digest and --auth-username/--auth-password are exclusive")
			}
			sa["auth_username"], sa["auth_password"] = nil, nil
		}
		if *noAllow {
			if _, ok := sa["allowed_addresses"]; ok {
				return errors.New("--no-allow and --allow are exclusive")
			}
			sa["allowed_addresses"] = nil
		}
	}
	if sa != nil {
		body["sip_auth"] = sa
	}
	ob, err := of.body(set)
	switch {
	case err != nil:
		return err
	case *noOutbound && ob != nil:
		return errors.New("--no-outbound and --outbound-* are exclusive")
	case *noOutbound:
		body["outbound_trunk"] = nil
	case ob != nil:
		body["outbound_trunk"] = ob
	}
	if len(body) == 0 {
		return errors.New("nothing to change: give at least one flag")
	}
	c, err := env.client()
	if err != nil {
		return err
	}
	var raw json.RawMessage
	if err := c.do("PATCH", "/v2/phone-numbers/"+url.PathEscape(id), nil, body, &raw); err != nil {
		return err
	}
	return env.printNumberResponse(raw, *asJSON)
}
