package records

import (
	"context"
	"errors"
	"fmt"

	"switchboard/store"
)

// DefaultTeam owns calls whose number is unknown (deleted meanwhile) when
// no other default is configured.
const DefaultTeam = "default"

// teams finds the team of a call from its phone number, remembering the
// numbers it has looked up.
type teams struct {
	st       store.Store
	fallback string
	seen     map[string]string
}

func newTeams(st store.Store, fallback string) *teams {
	return &teams{st: st, fallback: fallback, seen: map[string]string{}}
}

// of returns the team of the number numberID; a number that no longer
// exists belongs to the default team.
func (t *teams) of(ctx context.Context, numberID string) (string, error) {
	if numberID == "" {
		return t.fallback, nil
	}
	if team, ok := t.seen[numberID]; ok {
		return team, nil
	}
	team := t.fallback
	n, err := t.st.Numbers().Get(ctx, numberID)
	switch {
	case err == nil && n.TeamID != "":
		team = n.TeamID
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return "", fmt.Errorf("team of number %s: %w", numberID, err)
	}
	t.seen[numberID] = team
	return team, nil
}
