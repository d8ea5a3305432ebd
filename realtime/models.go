package realtime

// DefaultModel is the model of a session that names none.
const DefaultModel = "svc-voice-latest"

// Model is one realtime model the appliance serves.
type Model struct {
	// Name is the model name of session.model, ?model= and ACLs.
	Name string
	// Reasoning says whether the model takes reasoning.effort.
	Reasoning bool
	// Description is one line for listings.
	Description string
}

// models are the spec's realtime models, the recommended one first.
var models = [...]Model{
	{Name: "svc-voice-latest", Reasoning: true, Description: "the recommended realtime voice model"},
	{Name: "svc-voice-think-fast-1.0", Reasoning: true, Description: "realtime voice model with reasoning"},
	{Name: "svc-voice-fast-1.0", Reasoning: false, Description: "realtime voice model without reasoning, lowest latency"},
}

// Models returns the realtime models, the recommended one first. The
// slice is a fresh copy.
func Models() []Model {
	out := make([]Model, len(models))
	copy(out, models[:])
	return out
}

// LookupModel returns the model named name.
func LookupModel(name string) (Model, bool) {
	for _, m := range models {
		if m.Name == name {
			return m, true
		}
	}
	return Model{}, false
}
