package auth

// Endpoint names, as used in "api-key:endpoint:<name>" ACL strings.
const (
	EndpointPhoneNumbers  = "phone-numbers"
	EndpointAgents        = "agents"
	EndpointCalls         = "calls"
	EndpointRealtime      = "realtime"
	EndpointClientSecrets = "client-secrets"
	EndpointTTS           = "tts"
	EndpointSTT           = "stt"
	EndpointAPIKeys       = "api-keys"
	EndpointAudit         = "audit"
	EndpointUsage         = "usage"
)

// Endpoint describes one endpoint name an ACL can grant.
type Endpoint struct {
	// Name is the ACL name, e.g. "calls".
	Name string
	// Description is one line for the docs (docs/security.md).
	Description string
	// Management marks endpoints that administer the appliance itself.
	Management bool
}

var endpoints = [...]Endpoint{
	{EndpointPhoneNumbers, "phone-number records: routing, SIP credentials, webhooks (/v2/phone-numbers)", false},
	{EndpointAgents, "voice agent definitions: model, voice, instructions, tools", false},
	{EndpointCalls, "live and past calls: list, inspect, transfer, hang up (/v1/calls)", false},
	{EndpointRealtime, "realtime voice model sessions over WebSocket (/v1/realtime)", false},
	{EndpointClientSecrets, "mint ephemeral realtime client secrets for browsers and devices", false},
	{EndpointTTS, "text to speech", false},
	{EndpointSTT, "speech to text", false},
	{EndpointAPIKeys, "API key management: create, list, update, rotate, delete", true},
	{EndpointAudit, "audit event log", true},
	{EndpointUsage, "usage time series of call minutes (/v1/billing/teams/{team_id}/usage)", true},
}

// Endpoints returns the appliance's endpoint names with one-line
// descriptions, in documentation order. The slice is a fresh copy.
func Endpoints() []Endpoint {
	out := make([]Endpoint, len(endpoints))
	copy(out, endpoints[:])
	return out
}

// EndpointNames returns the endpoint names in documentation order.
func EndpointNames() []string {
	out := make([]string, len(endpoints))
	for i, e := range endpoints {
		out[i] = e.Name
	}
	return out
}

// IsEndpoint reports whether name is one of [Endpoints].
func IsEndpoint(name string) bool {
	for _, e := range endpoints {
		if e.Name == name {
			return true
		}
	}
	return false
}
