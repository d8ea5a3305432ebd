package records

import "switchboard/call"

// LiveCalls is what the Service reads of the calls in progress.
type LiveCalls interface {
	// LiveSnapshots returns the current view of every live call.
	LiveSnapshots() []call.Snapshot
	// LiveSnapshot returns the current view of one live call.
	LiveSnapshot(id string) (call.Snapshot, bool)
}

// FromManager reads the live calls of a call manager.
func FromManager(m *call.Manager) LiveCalls { return managerLive{m} }

type managerLive struct{ m *call.Manager }

func (l managerLive) LiveSnapshots() []call.Snapshot {
	cs := l.m.List()
	out := make([]call.Snapshot, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Snapshot())
	}
	return out
}

func (l managerLive) LiveSnapshot(id string) (call.Snapshot, bool) {
	c, ok := l.m.Get(id)
	if !ok {
		return call.Snapshot{}, false
	}
	return c.Snapshot(), true
}

// Join reads several sources of live calls, in order: a call found in
// more than one is taken from the first.
func Join(sources ...LiveCalls) LiveCalls { return joined(sources) }

type joined []LiveCalls

func (j joined) LiveSnapshots() []call.Snapshot {
	var out []call.Snapshot
	seen := map[string]bool{}
	for _, src := range j {
		for _, s := range src.LiveSnapshots() {
			if !seen[s.ID] {
				seen[s.ID] = true
				out = append(out, s)
			}
		}
	}
	return out
}

func (j joined) LiveSnapshot(id string) (call.Snapshot, bool) {
	for _, src := range j {
		if s, ok := src.LiveSnapshot(id); ok {
			return s, true
		}
	}
	return call.Snapshot{}, false
}
