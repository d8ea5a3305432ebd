package speech

import "strings"

// Voice is a built-in voice.
type Voice struct {
	// ID is the voice_id clients send (matched case-insensitively).
	ID string `json:"voice_id"`
	// Name is the display name.
	Name string `json:"name"`
	// Variant is the espeak-ng voice variant the local engine uses
	// (appended to the language, e.g. "en+f3").
	Variant string `json:"-"`
}

// DefaultVoice is the voice used when a request names none.
const DefaultVoice = "eve"

// Voices is the list of built-in voices, shared with the agent runtime.
var Voices = []Voice{
	{ID: "eve", Name: "Eve", Variant: "f3"},
	{ID: "ara", Name: "Ara", Variant: "f4"},
	{ID: "rex", Name: "Rex", Variant: "m3"},
	{ID: "sal", Name: "Sal", Variant: "m1"},
	{ID: "leo", Name: "Leo", Variant: "m7"},
}

// LookupVoice finds a built-in voice by id, case-insensitively; an empty id
// is the default voice.
func LookupVoice(id string) (Voice, bool) {
	if id == "" {
		id = DefaultVoice
	}
	for _, v := range Voices {
		if strings.EqualFold(v.ID, id) {
			return v, true
		}
	}
	return Voice{}, false
}
