package call

// NoteContext is the entry of a call record that says what an
// agent-routed call ran with; its Data is a *Context.
const NoteContext = "context"

// Context is what an agent-routed call ran with: its variables, the ones
// its agent's instructions and greeting named that it did not define, its
// agent, and how its number's context_url answered.
type Context struct {
	// Variables are the call's variables by full name (caller.number,
	// sip.X-Account-Id, variables.plan, …).
	Variables map[string]string `json:"variables"`
	// Missing are the variables the instructions or the greeting named
	// that the call did not define: they rendered empty.
	Missing []string `json:"missing"`
	// AgentID is the agent that took the call.
	AgentID string `json:"agent_id,omitempty"`
	// ContextURL is how the number's context_url answered; nil when the
	// number has none (or the call was placed).
	ContextURL *ContextFetch `json:"context_url,omitempty"`
}

// ContextFetch is how a call's context_url answered.
type ContextFetch struct {
	// LatencyMS is how long the request took.
	LatencyMS float64 `json:"latency_ms"`
	// Applied lists what the answer set (variables, instructions,
	// greeting, agent_id); empty when it set nothing or was not used.
	Applied []string `json:"applied"`
	// Error says why the answer was not used: the call went on with its
	// agent's defaults.
	Error string `json:"error,omitempty"`
}
