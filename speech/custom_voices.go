package speech

import (
	"net/http"

	"switchboard/api/httpx"
)

// handleCustomVoices is GET /v1/custom-voices in the spec's shape of a
// voice list ({"voices": [{"voice_id", "name"}]}). The appliance clones no
// voices (the spec's creation from a reference clip is not served: the
// path answers 405 to POST), so the voices it can speak are its built-in
// ones: listed here, a client that looks its custom voices up before it
// names one as voice_id (in /v1/tts, a realtime session's voice, an
// agent) finds exactly the ids this appliance takes.
func (s *Service) handleCustomVoices(w http.ResponseWriter, r *http.Request) error {
	httpx.WriteJSON(w, http.StatusOK, map[string][]Voice{"voices": Voices})
	return nil
}
