package agent

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVarsRender(t *testing.T) {
	v := Vars{VarCallerNumber: "+14155550123", VarCallerName: "", "sip.X-Account-Id": "42", "variables.plan": "gold"}
	out, missing := v.Render("Caller {{caller.number}} ({{ caller.name }}), account {{sip.x-account-id}}, plan {{variables.plan}}, " +
		"tier {{variables.tier}}, uui {{sip.User-to-User}}, again {{variables.tier}}, literal {{ not closed, {single}")
	require.Equal(t, "Caller +14155550123 (), account 42, plan gold, tier , uui , again , literal {{ not closed, {single}", out)
	require.Equal(t, []string{"variables.tier", "sip.User-to-User"}, missing, "undefined: empty, listed once in order")
	out, missing = v.Render("no placeholders")
	require.Equal(t, "no placeholders", out)
	require.Nil(t, missing)
	require.True(t, HasPlaceholders("Hi {{caller.name}}"))
	require.False(t, HasPlaceholders("Hi {caller.name}"))
}

func TestCheckTemplate(t *testing.T) {
	require.NoError(t, CheckTemplate("{{caller.number}} {{caller.name}} {{called.number}} {{call.id}} {{sip.X-Account-Id}} {{sip.user-to-user}} {{variables.plan_2}}"))
	for _, bad := range []string{"{{caller}}", "{{callee.number}}", "{{sip.}}", "{{variables.a.b}}", "{{variables.}}", "{{plan}}", "{{sip.X.Y}}"} {
		require.Error(t, CheckTemplate(bad), bad)
	}
}

func TestParseVariables(t *testing.T) {
	got, err := ParseVariables(json.RawMessage(`{"plan":"gold","visits":3,"vip":true,"ratio":-1.5e2,"note":null,"Name_2-x":"ü"}`))
	require.NoError(t, err)
	require.Equal(t, map[string]string{"plan": "gold", "visits": "3", "vip": "true", "ratio": "-1.5e2", "note": "", "Name_2-x": "ü"}, got)
	for _, empty := range []string{``, `null`, ` `} {
		got, err = ParseVariables(json.RawMessage(empty))
		require.NoError(t, err)
		require.Empty(t, got)
	}
	many := map[string]string{}
	for i := 0; i <= MaxVariables; i++ {
		many[strings.Repeat("v", 1+i%60)+string(rune('a'+i%26))] = "x"
	}
	manyJSON, _ := json.Marshal(many)
	big := map[string]string{}
	for i := 0; i < 8; i++ {
		big[string(rune('a'+i))] = strings.Repeat("x", MaxVariableValue)
	}
	bigJSON, _ := json.Marshal(big)
	for raw, param := range map[string]string{
		`[1]`:              "variables",
		`"x"`:              "variables",
		`{"a":{"b":1}}`:    "variables.a",
		`{"a":[1]}`:        "variables.a",
		`{"bad name":"x"}`: "variables.bad name",
		`{"a.b":"x"}`:      "variables.a.b",
		`{"long":"` + strings.Repeat("x", MaxVariableValue+1) + `"}`: "variables.long",
		string(manyJSON): "variables",
		string(bigJSON):  "variables",
	} {
		_, err := ParseVariables(json.RawMessage(raw))
		var ve *VariableError
		require.True(t, errors.As(err, &ve), "%.60s: %v", raw, err)
		require.Equal(t, param, ve.Param(), "%.60s", raw)
	}
}
