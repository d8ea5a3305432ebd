package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// cliEnv is what an admin command needs from the process: its output
// streams and environment, so tests can run commands in-process too.
type cliEnv struct {
	stdout, stderr io.Writer
	getenv         func(string) string
}

// OwnerKeyFile is the name of the owner key file in the data directory.
const OwnerKeyFile = "owner.key"

// apiClient talks to the daemon's HTTP API.
type apiClient struct {
	base string
	key  string
	http *http.Client
}

// newClient reads SWITCHBOARD_URL (default http://127.0.0.1:8080) and
// SWITCHBOARD_API_KEY, falling back to the owner key file in the data
// directory (SWITCHBOARD_DATA_DIR, default ./var) when on the same host.
func (e *cliEnv) client() (*apiClient, error) {
	base := e.getenv("SWITCHBOARD_URL")
	if base == "" {
		base = "http://127.0.0.1:8080"
	}
	key := e.getenv("SWITCHBOARD_API_KEY")
	if key == "" {
		dir := e.getenv("SWITCHBOARD_DATA_DIR")
		if dir == "" {
			dir = "./var"
		}
		b, err := os.ReadFile(filepath.Join(dir, OwnerKeyFile))
		if err != nil {
			return nil, errors.New("no API key: set SWITCHBOARD_API_KEY, or run on the daemon's host where " +
				filepath.Join(dir, OwnerKeyFile) + " is readable (SWITCHBOARD_DATA_DIR)")
		}
		key = strings.TrimSpace(string(b))
	}
	return &apiClient{base: strings.TrimRight(base, "/"), key: key, http: &http.Client{Timeout: 30 * time.Second}}, nil
}

// apiError is the server's error body, shown as the command's error.
type apiError struct {
	Status  int
	Code    string `json:"code"`
	Message string `json:"message"`
	Param   string `json:"param"`
}

func (e *apiError) Error() string {
	s := fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
	if e.Param != "" {
		s += " (param " + e.Param + ")"
	}
	return s
}

// do sends a request with an optional JSON body and decodes the JSON answer
// into out (when not nil). A non-2xx answer becomes an *apiError.
func (c *apiClient) do(method, path string, query url.Values, body, out any) error {
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach the daemon at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		var eb struct {
			Error *apiError `json:"error"`
		}
		if json.Unmarshal(raw, &eb) == nil && eb.Error != nil {
			eb.Error.Status = resp.StatusCode
			return eb.Error
		}
		return &apiError{Status: resp.StatusCode, Code: "http_error", Message: strings.TrimSpace(string(raw))}
	}
	if out != nil {
		if rm, ok := out.(*json.RawMessage); ok {
			*rm = raw
			return nil
		}
		return json.Unmarshal(raw, out)
	}
	return nil
}

// newFlags makes a flag set for a sub-command that reports errors as
// errors (not exits) and knows --json.
func newFlags(env *cliEnv, name string) (*flag.FlagSet, *bool) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	return fs, fs.Bool("json", false, "print the server's JSON instead of a table")
}

// printJSON writes v indented.
func (e *cliEnv) printJSON(v any) error {
	if rm, ok := v.(json.RawMessage); ok {
		var buf bytes.Buffer
		if err := json.Indent(&buf, rm, "", "  "); err != nil {
			return err
		}
		buf.WriteByte('\n')
		_, err := e.stdout.Write(buf.Bytes())
		return err
	}
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table prints rows under a header, aligned.
func (e *cliEnv) table(header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// subcommand dispatches "noun verb args…" to the verb's function.
func subcommand(env *cliEnv, noun string, args []string, verbs map[string]func(*cliEnv, []string) error) error {
	if len(args) == 0 {
		return usageError(noun, verbs)
	}
	fn, ok := verbs[args[0]]
	if !ok {
		return usageError(noun, verbs)
	}
	return fn(env, args[1:])
}

func usageError(noun string, verbs map[string]func(*cliEnv, []string) error) error {
	names := make([]string, 0, len(verbs))
	for v := range verbs {
		names = append(names, v)
	}
	sort.Strings(names)
	return fmt.Errorf("usage: switchboard %s %s", noun, strings.Join(names, "|"))
}

// positionals parses flags that may stand before, between or after the
// positional arguments, and requires exactly n of those.
func positionals(fs *flag.FlagSet, args []string, what string, n int) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(pos) != n {
		return nil, fmt.Errorf("%s required", what)
	}
	return pos, nil
}

// idAndFlags is positionals for a command that takes one id.
func idAndFlags(fs *flag.FlagSet, args []string, what string) (string, error) {
	pos, err := positionals(fs, args, "exactly one "+what+" is", 1)
	if err != nil {
		return "", err
	}
	return pos[0], nil
}

// listAll reads every page of a listing: field is the JSON array of the
// page, tokenParam and tokenField name the page token in the query and in
// the answer.
func (c *apiClient) listAll(path string, q url.Values, field, tokenParam, tokenField string) ([]json.RawMessage, error) {
	out := []json.RawMessage{}
	for {
		var page map[string]json.RawMessage
		if err := c.do("GET", path, q, nil, &page); err != nil {
			return nil, err
		}
		var items []json.RawMessage
		if raw, ok := page[field]; ok {
			if err := json.Unmarshal(raw, &items); err != nil {
				return nil, err
			}
		}
		out = append(out, items...)
		var next string
		if raw, ok := page[tokenField]; ok {
			_ = json.Unmarshal(raw, &next)
		}
		if next == "" {
			return out, nil
		}
		q.Set(tokenParam, next)
	}
}

// resource describes an API collection for the generic list, get and
// delete commands: its path, the JSON field of a listing, and how a
// record prints as a table.
type resource[T any] struct {
	noun  string // "agents"
	what  string // "agent" (messages)
	path  string // "/v1/agents"
	field string // "agents"
	table func(*cliEnv, []T) error
}

// list prints every record of the collection (no arguments).
func (r resource[T]) list(env *cliEnv, args []string) error {
	fs, asJSON := newFlags(env, r.noun+" list")
	if _, err := positionals(fs, args, "no argument is", 0); err != nil {
		return err
	}
	c, err := env.client()
	if err != nil {
		return err
	}
	raws, err := c.listAll(r.path, url.Values{"page_size": {"100"}}, r.field, "page_token", "next_page_token")
	if err != nil {
		return err
	}
	if *asJSON {
		return env.printJSON(map[string]any{r.field: raws})
	}
	all := make([]T, len(raws))
	for i, raw := range raws {
		if err := json.Unmarshal(raw, &all[i]); err != nil {
			return err
		}
	}
	return r.table(env, all)
}

// get prints one record.
func (r resource[T]) get(env *cliEnv, args []string) error {
	fs, asJSON := newFlags(env, r.noun+" get")
	id, err := idAndFlags(fs, args, r.what+" id")
	if err != nil {
		return err
	}
	c, err := env.client()
	if err != nil {
		return err
	}
	var raw json.RawMessage
	if err := c.do("GET", r.path+"/"+url.PathEscape(id), nil, nil, &raw); err != nil {
		return err
	}
	return r.print(env, raw, *asJSON)
}

// print shows one record as JSON or as a one-row table.
func (r resource[T]) print(env *cliEnv, raw json.RawMessage, asJSON bool) error {
	if asJSON {
		return env.printJSON(raw)
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	return r.table(env, []T{v})
}

// delete removes one record.
func (r resource[T]) delete(env *cliEnv, args []string) error {
	fs, asJSON := newFlags(env, r.noun+" delete")
	id, err := idAndFlags(fs, args, r.what+" id")
	if err != nil {
		return err
	}
	c, err := env.client()
	if err != nil {
		return err
	}
	var raw json.RawMessage
	if err := c.do("DELETE", r.path+"/"+url.PathEscape(id), nil, nil, &raw); err != nil {
		return err
	}
	if asJSON != nil && *asJSON {
		return env.printJSON(raw)
	}
	fmt.Fprintf(env.stdout, "deleted %s %s\n", r.what, id)
	return nil
}
