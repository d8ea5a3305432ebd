package auth

import (
	"errors"
	"net/http"

	"switchboard/api/httpx"
	"switchboard/store"
)

type auditUser struct {
	UserID string `json:"userId"`
}

type auditJSON struct {
	EventTime   string    `json:"eventTime"`
	EventID     string    `json:"eventId"`
	Description string    `json:"description"`
	User        auditUser `json:"user"`
	// Action and Resource are the appliance's structured form of the
	// description.
	Action   string `json:"action"`
	Resource string `json:"resource"`
	APIKeyID string `json:"apiKeyId,omitempty"`
}

// auditEvents is GET /audit/teams/{teamId}/events.
func (s *KeyService) auditEvents(w http.ResponseWriter, r *http.Request) error {
	teamID, err := team(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	aq := store.AuditQuery{
		UserID: q.Get("eventFilter.userId"), EventID: q.Get("eventFilter.eventId"), Query: q.Get("eventFilter.query"),
	}
	if aq.Page, err = httpx.PageOf(q, "pageSize", "pageToken"); err != nil {
		return err
	}
	if aq.From, err = parseTime("eventTimeFrom", q.Get("eventTimeFrom")); err != nil {
		return err
	}
	if aq.To, err = parseTime("eventTimeTo", q.Get("eventTimeTo")); err != nil {
		return err
	}
	switch q.Get("orderBy") {
	case "", "TIME_ASCENDING":
	case "TIME_DESCENDING":
		aq.Descending = true
	default:
		return httpx.BadRequest("orderBy", "orderBy must be TIME_ASCENDING or TIME_DESCENDING")
	}
	evs, next, err := s.st.Audit().List(r.Context(), teamID, aq)
	if errors.Is(err, store.ErrBadPageToken) {
		return httpx.BadRequest("pageToken", "invalid pageToken")
	}
	if err != nil {
		return err
	}
	out := struct {
		Events        []auditJSON `json:"events"`
		NextPageToken string      `json:"nextPageToken,omitempty"`
	}{Events: []auditJSON{}, NextPageToken: next}
	for _, e := range evs {
		out.Events = append(out.Events, auditJSON{EventTime: ts(e.Time), EventID: e.ID, Description: e.Description,
			User: auditUser{UserID: e.UserID}, Action: e.Action, Resource: e.Resource, APIKeyID: e.KeyID})
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}
