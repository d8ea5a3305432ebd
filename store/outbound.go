package store

import (
	"context"
	"time"
)

// OutboundSlot is one placed call in progress, counted against its team's
// outbound.max_concurrent wherever in the fleet it runs.
type OutboundSlot struct {
	ID        string
	TeamID    string
	NodeID    string
	StartTime time.Time
}

// OutboundAdmit decides a reservation from the team's rate state (the
// theoretical arrival time of its calls-per-second GCRA, zero when new)
// and its number of slots held by live nodes: it returns the new
// arrival time, or an error that refuses the reservation.
type OutboundAdmit func(tat time.Time, active int) (time.Time, error)

// OutboundStore keeps the fleet-wide state of the outbound limits.
type OutboundStore interface {
	// Reserve holds slot for its team when admit allows it: admit runs with
	// the team's state locked, so that two nodes reserving at once are
	// decided one after the other. An error from admit is returned as it
	// is, and nothing is stored.
	Reserve(ctx context.Context, slot *OutboundSlot, admit OutboundAdmit) error
	// Release frees a slot (nothing when it is gone already).
	Release(ctx context.Context, id string) error
	// ReleaseNode frees every slot of a node (its calls ended with it) and
	// says how many it freed.
	ReleaseNode(ctx context.Context, nodeID string) (int, error)
}

// Outbound returns the outbound limits' store.
func (s *DB) Outbound() OutboundStore { return sqlOutbound{s.q, s} }

type sqlOutbound struct {
	q  querier
	db *DB
}

func (s sqlOutbound) Reserve(ctx context.Context, slot *OutboundSlot, admit OutboundAdmit) error {
	return s.db.Tx(ctx, func(st Store) error {
		q := st.(*DB).q
		// A write first: it locks the team's row on PostgreSQL until the
		// commit, and takes SQLite's write lock before anything is read.
		if _, err := q.ExecContext(ctx, `INSERT INTO outbound_teams(team_id, tat_us) VALUES (?, 0)
			ON CONFLICT (team_id) DO UPDATE SET tat_us = outbound_teams.tat_us`, slot.TeamID); err != nil {
			return mapErr("reserve outbound slot", err)
		}
		var tatUS int64
		if err := q.QueryRowContext(ctx, `SELECT tat_us FROM outbound_teams WHERE team_id = ?`, slot.TeamID).Scan(&tatUS); err != nil {
			return mapErr("reserve outbound slot", err)
		}
		// The slots of a node the fleet found lost (or that stopped) ended
		// with it.
		if _, err := q.ExecContext(ctx, `DELETE FROM outbound_slots WHERE team_id = ? AND node_id IN
			(SELECT id FROM nodes WHERE state IN (?, ?))`, slot.TeamID, NodeLost, NodeStopped); err != nil {
			return mapErr("reserve outbound slot", err)
		}
		var active int
		if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM outbound_slots WHERE team_id = ?`, slot.TeamID).Scan(&active); err != nil {
			return mapErr("reserve outbound slot", err)
		}
		var tat time.Time
		if tatUS != 0 {
			tat = fromUS(tatUS)
		}
		next, err := admit(tat, active)
		if err != nil {
			return err
		}
		if _, err := q.ExecContext(ctx, `INSERT INTO outbound_slots(id, team_id, node_id, start_us) VALUES (?,?,?,?)`,
			slot.ID, slot.TeamID, slot.NodeID, toUS(slot.StartTime)); err != nil {
			return mapErr("reserve outbound slot", err)
		}
		_, err = q.ExecContext(ctx, `UPDATE outbound_teams SET tat_us = ? WHERE team_id = ?`, optUS0(next), slot.TeamID)
		return mapErr("reserve outbound slot", err)
	})
}

func (s sqlOutbound) Release(ctx context.Context, id string) error {
	_, err := s.q.ExecContext(ctx, `DELETE FROM outbound_slots WHERE id = ?`, id)
	return mapErr("release outbound slot", err)
}

func (s sqlOutbound) ReleaseNode(ctx context.Context, nodeID string) (int, error) {
	res, err := s.q.ExecContext(ctx, `DELETE FROM outbound_slots WHERE node_id = ?`, nodeID)
	if err != nil {
		return 0, mapErr("release node's outbound slots", err)
	}
	n, err := res.RowsAffected()
	return int(n), mapErr("release node's outbound slots", err)
}
