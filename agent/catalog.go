package agent

import "strings"

// DefaultVoice is the voice of an agent that names none.
const DefaultVoice = "eve"

// DefaultModel is the realtime model of an agent that names none.
const DefaultModel = "svc-voice-latest"

// Voices lists the built-in voice ids, lower-case. It is the one place that
// says which voices an agent may use; the speech engines extend it when
// they add voices.
var Voices = []string{"eve", "ara", "rex", "sal", "leo"}

// Models lists the realtime models an agent may use.
var Models = []string{"svc-voice-latest", "svc-voice-think-fast-1.0", "svc-voice-fast-1.0"}

// KnownVoice reports whether id (case-insensitive) is a voice of Voices.
func KnownVoice(id string) bool {
	id = strings.ToLower(id)
	for _, v := range Voices {
		if v == id {
			return true
		}
	}
	return false
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
