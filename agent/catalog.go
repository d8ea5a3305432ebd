package agent

import (
	"strings"

	"switchboard/realtime"
	"switchboard/speech"
)

// DefaultVoice is the voice of an agent that names none.
const DefaultVoice = "eve"

// DefaultModel is the realtime model of an agent that names none.
const DefaultModel = realtime.DefaultModel

// Voices lists the voice ids an agent may use, lower-case: the speech
// package's voices (speech.Voices is the one list).
var Voices = func() []string {
	ids := make([]string, len(speech.Voices))
	for i, v := range speech.Voices {
		ids[i] = strings.ToLower(v.ID)
	}
	return ids
}()

// Models lists the realtime models an agent may use (realtime.Models).
var Models = func() []string {
	var names []string
	for _, m := range realtime.Models() {
		names = append(names, m.Name)
	}
	return names
}()

// KnownVoice reports whether id (case-insensitive) is a voice of Voices.
func KnownVoice(id string) bool {
	_, ok := speech.LookupVoice(id)
	return ok && id != ""
}

// KnownModel reports whether m is a model of Models.
func KnownModel(m string) bool {
	for _, v := range Models {
		if v == m {
			return true
		}
	}
	return false
}
